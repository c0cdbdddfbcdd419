// comm_hook.cpp: the per-bucket work of DDP's communication hooks
// (torch/distributed/algorithms/ddp_comm_hooks: default_hooks.py, quantization_hooks.py,
// powerSGD_hook.py).
#include "core/comm_hook.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"

namespace gradsync {
namespace {

using Kind = HookStep::Kind;

HookStep kernel(std::string name, double bytes, int kernels = 1) {
  HookStep s;
  s.kind = Kind::kKernel;
  s.name = std::move(name);
  s.bytes = static_cast<Bytes>(bytes);
  s.kernels = kernels;
  return s;
}

HookStep collective(Kind kind, std::string name, Bytes bytes, DType dtype) {
  HookStep s;
  s.kind = kind;
  s.name = std::move(name);
  s.bytes = bytes;
  s.dtype = dtype;
  return s;
}

HookStep matmul(std::string name, double flops, double bytes, int kernels) {
  HookStep s;
  s.kind = Kind::kMatmul;
  s.name = std::move(name);
  s.flops = flops;
  s.bytes = static_cast<Bytes>(bytes);
  s.kernels = kernels;
  return s;
}

[[noreturn]] void bad_hook(std::string_view text, std::string_view why) {
  throw ConfigError(fmt::format(
      "comm hook \"{}\": {}; expected none, fp16, bf16, quantize or powersgd[:rank=R,start_iter=S]", text, why));
}

int parse_int(std::string_view text, std::string_view all, std::string_view key, int min) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min)
    bad_hook(all, fmt::format("{} \"{}\" must be an integer from {} to {}", key, text, min,
                              std::numeric_limits<int>::max()));
  return v;
}

}  // namespace

std::string comm_hook_name(const CommHook& h) {
  switch (h.kind) {
    case CommHookKind::kNone:
      return "none";
    case CommHookKind::kFP16:
      return "fp16";
    case CommHookKind::kBF16:
      return "bf16";
    case CommHookKind::kQuantize:
      return "quantize";
    case CommHookKind::kPowerSGD:
      return fmt::format("powersgd:rank={},start_iter={}", h.powersgd_rank, h.powersgd_start_iter);
  }
  return "?";
}

PowerSgdSplit powersgd_split(const CommHook& h, const std::vector<std::vector<std::int64_t>>& shapes) {
  // Matrices (view(shape[0], -1)) worth compressing, (n + m) r 2 < n m; the rest (vectors and
  // small matrices) is allreduced uncompressed.
  PowerSgdSplit s;
  for (const auto& shape : shapes) {
    double numel = 1;
    for (std::int64_t d : shape) numel *= static_cast<double>(d);
    s.elements += numel;
    if (shape.size() < 2) {
      s.uncompressed += numel;
      continue;
    }
    const double n = static_cast<double>(shape[0]);
    const double m = numel / n;
    const double r = std::min({n, m, static_cast<double>(h.powersgd_rank)});
    if ((n + m) * r * 2 >= n * m) {
      s.uncompressed += numel;
      continue;
    }
    ++s.matrices;
    s.p_elems += n * r;
    s.q_elems += m * r;
    s.mm_flops += 2 * n * m * r;
    s.mm_bytes += 4 * (n * m + n * r + m * r);
  }
  return s;
}

double powersgd_state_bytes(const CommHook& h, const std::vector<std::vector<std::int64_t>>& shapes, DType grad) {
  if (h.kind != CommHookKind::kPowerSGD) return 0;
  const PowerSgdSplit s = powersgd_split(h, shapes);
  return (s.elements + s.p_elems + s.q_elems) * static_cast<double>(dtype_bytes(grad));
}

CommHook parse_comm_hook(std::string_view text) {
  CommHook h;
  // Names and option keys in any case ("FP16", "PowerSGD:Rank=2"); errors quote the text as given.
  const std::string lowered = ascii_lower(text);
  const std::size_t colon = lowered.find(':');
  const std::string_view name = std::string_view(lowered).substr(0, colon);
  if (name == "none" || name == "allreduce") {
    h.kind = CommHookKind::kNone;
  } else if (name == "fp16") {
    h.kind = CommHookKind::kFP16;
  } else if (name == "bf16") {
    h.kind = CommHookKind::kBF16;
  } else if (name == "quantize") {
    h.kind = CommHookKind::kQuantize;
  } else if (name == "powersgd") {
    h.kind = CommHookKind::kPowerSGD;
  } else {
    bad_hook(text, "unknown hook");
  }
  if (colon == std::string_view::npos) return h;
  if (h.kind != CommHookKind::kPowerSGD) bad_hook(text, "only powersgd takes options");
  std::string_view rest = std::string_view(lowered).substr(colon + 1);
  if (rest.empty()) bad_hook(text, "no options after ':' (rank=R, start_iter=S, or drop the ':')");
  std::set<std::string_view> seen;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (item.empty()) bad_hook(text, "an empty option (a ',' too many); expected rank=R or start_iter=S");
    const std::size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    if (!seen.insert(key).second) bad_hook(text, fmt::format("option \"{}\" given twice; give it once", key));
    if (key == "rank") {
      h.powersgd_rank = parse_int(value, text, key, 1);
    } else if (key == "start_iter") {
      // PowerSGDState: start_powerSGD_iter must be > 1 with error feedback or warm start.
      h.powersgd_start_iter = parse_int(value, text, key, 2);
    } else {
      bad_hook(text, fmt::format("unknown option \"{}\" (rank, start_iter)", key));
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return h;
}

std::vector<HookStep> hook_steps(const CommHook& h, const std::vector<std::vector<std::int64_t>>& shapes, int world,
                                 int iteration, DType grad) {
  double elements = 0;
  for (const auto& shape : shapes) {
    double n = 1;
    for (std::int64_t d : shape) n *= static_cast<double>(d);
    elements += n;
  }
  const double s4 = static_cast<double>(dtype_bytes(grad)) * elements;  // the bucket's bytes
  const Bytes bucket_bytes = static_cast<Bytes>(s4);
  std::vector<HookStep> steps;
  switch (h.kind) {
    case CommHookKind::kNone:
      steps.push_back(collective(Kind::kAllreduce, "allreduce", bucket_bytes, grad));
      break;
    case CommHookKind::kFP16:
    case CommHookKind::kBF16: {
      // buffer.to(half).div_(world); allreduce; bucket.buffer().copy_(result).
      const DType t = h.kind == CommHookKind::kFP16 ? DType::kFloat16 : DType::kBFloat16;
      if (grad == t) {
        // A bucket of that type already: to() returns it and copy_ into itself does nothing.
        steps.push_back(kernel("divide", 2 * s4));
        steps.push_back(collective(Kind::kAllreduce, "allreduce", bucket_bytes, t));
        break;
      }
      steps.push_back(kernel("compress", s4 + 2 * elements + 4 * elements, 2));
      steps.push_back(collective(Kind::kAllreduce, "allreduce", static_cast<Bytes>(2 * elements), t));
      steps.push_back(kernel("decompress", 2 * elements + s4));
      break;
    }
    case CommHookKind::kQuantize: {
      // MinMaxObserver (min and max reductions), allgather of [scale, zero_point] (2 floats),
      // quantize to uint8, allgather of the quantized bucket, then per rank dequantize and add,
      // and a division by the world size.
      steps.push_back(kernel("observe", s4, 2));
      steps.push_back(collective(Kind::kAllgather, "allgather_qparams", 8, DType::kFloat32));
      steps.push_back(kernel("quantize", s4 + elements));
      steps.push_back(collective(Kind::kAllgather, "allgather", static_cast<Bytes>(elements), DType::kUInt8));
      steps.push_back(kernel("dequantize", world * (elements + s4 + 3 * s4) + 2 * s4, 2 * world + 1));
      break;
    }
    case CommHookKind::kPowerSGD: {
      if (iteration - 1 < h.powersgd_start_iter) {
        // _allreduce_fut: tensor.div_(world) then a plain allreduce.
        steps.push_back(kernel("divide", 2 * s4));
        steps.push_back(collective(Kind::kAllreduce, "allreduce", bucket_bytes, grad));
        break;
      }
      // P, Q and the uncompressed tensors are in the bucket's dtype (powerSGD_hook: dtype =
      // input_tensor.dtype), so a 16-bit model's move and touch half the bytes of a float32 one's.
      const PowerSgdSplit split = powersgd_split(h, shapes);
      const double eb = static_cast<double>(dtype_bytes(grad));
      const double uncompressed = split.uncompressed, p_elems = split.p_elems, q_elems = split.q_elems;
      const double mm_flops = split.mm_flops, mm_bytes = split.mm_bytes * eb / 4;
      const int matrices = split.matrices;
      const double r = h.powersgd_rank;
      // Error feedback (add the error, keep a copy), then P = M Q on the compute stream.
      steps.push_back(kernel("powersgd:error_feedback", 3 * s4 + 2 * s4, 2));
      steps.push_back(kernel("powersgd:flatten", 2 * eb * uncompressed));
      if (matrices > 0) steps.push_back(matmul("powersgd:compute_p", mm_flops, mm_bytes, matrices));
      steps.push_back(
          collective(Kind::kAllreduce, "allreduce_uncompressed", static_cast<Bytes>(eb * uncompressed), grad));
      steps.push_back(kernel("powersgd:unflatten", 3 * eb * uncompressed, 2));
      if (matrices == 0) break;
      steps.push_back(collective(Kind::kAllreduce, "allreduce_p", static_cast<Bytes>(eb * p_elems), grad));
      // Gram-Schmidt on every P (r normalisations and r(r-1)/2 projections), then Q = M^T P.
      steps.push_back(
          kernel("powersgd:orthogonalize", eb * p_elems * (r + 1) * 2, matrices * static_cast<int>(r * (r + 1) / 2)));
      steps.push_back(matmul("powersgd:compute_q", mm_flops, mm_bytes, matrices));
      steps.push_back(collective(Kind::kAllreduce, "allreduce_q", static_cast<Bytes>(eb * q_elems), grad));
      // M = P Q^T, divide by world size, new error = input - M.
      steps.push_back(matmul("powersgd:decompress", mm_flops, mm_bytes, matrices));
      steps.push_back(kernel("powersgd:error_update", 2 * s4 + 3 * s4, 2));
      break;
    }
  }
  return steps;
}

}  // namespace gradsync
