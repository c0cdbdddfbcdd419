// scenario_keys.cpp: the scenario key table and how its values are read, stored and written.
#include "core/scenario_keys.hpp"
#include "core/nccl_release.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/bucket_plan.hpp"
#include "core/comm_hook.hpp"
#include "core/error.hpp"
#include "core/nccl_knobs.hpp"
#include "core/pytorch_version.hpp"
#include "core/scenario_table.hpp"
#include "core/text.hpp"
#include "core/units.hpp"

namespace gradsync {

using json = nlohmann::ordered_json;

namespace {

std::string lower(std::string_view s) { return ascii_lower(s); }
std::string_view trim(std::string_view s) { return trim_blanks(s); }

std::string choices_text(const ScenarioKey& k) {
  std::string out;
  for (std::size_t i = 0; i < k.choices.size(); ++i) {
    out += i == 0 ? "" : i + 1 == k.choices.size() ? " or " : ", ";
    out += k.choices[i];
  }
  return out;
}

json parse_count(const ScenarioKey& k, std::string_view text) {
  std::int64_t v = 0;
  const std::string_view t = trim(text);
  const char* first = t.data() + (!t.empty() && t.front() == '+' ? 1 : 0);
  const auto [end, ec] = std::from_chars(first, t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < k.min || v > k.max) {
    // NCCL's channel knobs take any C int (the key's adjust clamps it as NCCL does).
    if (k.min == std::numeric_limits<std::int32_t>::min() && k.max == std::numeric_limits<std::int32_t>::max())
      throw ConfigError("expected an integer (a C int, as NCCL reads it)");
    throw ConfigError(fmt::format("expected an integer from {} to {}", k.min, k.max));
  }
  return k.adjust ? k.adjust(v) : v;
}

json parse_mib(const ScenarioKey& k, std::string_view text) {
  const std::string_view t = trim(text);
  // min 0: 0 is taken too (DDP(bucket_cap_mb=0): every gradient closes its bucket; a first bucket
  // of 0 closes with its first gradient).
  const bool zero = k.min == 0;
  const bool first = k.name == std::string_view("first_bucket_mb");
  const std::string expected =
      fmt::format("expected a size in MiB {} (25, 0.5{}) or with a unit (25MiB, 512KiB, 1GiB), at most {} MiB",
                  zero ? ">= 0" : "> 0",
                  !zero   ? ""
                  : first ? "; 0: the first bucket holds one gradient"
                          : "; 0: one bucket per gradient",
                  k.max);
  double mib = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), mib);
  if (!t.empty() && ec == std::errc() && end == t.data() + t.size()) {
    // A bare number is MiB, as PyTorch's bucket_cap_mb.
  } else if (ec == std::errc::result_out_of_range) {
    throw ConfigError(expected);
  } else {
    try {
      mib = static_cast<double>(parse_size(t)) / static_cast<double>(kMiB);
    } catch (const ConfigError&) {
      throw ConfigError(expected + size_unit_case_hint(t));
    }
  }
  if (zero && mib == 0) return 0.0;
  if (!std::isfinite(mib) || !(mib > 0) || mib > static_cast<double>(k.max)) throw ConfigError(expected);
  // A whole number of bytes, as PyTorch's int(bucket_cap_mb * 1024 * 1024) makes it.
  if (mib * static_cast<double>(kMiB) < 1) throw ConfigError(expected + " (at least one byte)");
  return mib;
}

// parse_nccl_switch: NCCL reads its switches as integers (0 off, 1 on); "yes" would read as 0 there,
// so only 0, 1 and a scenario file's true and false are taken.
json parse_nccl_switch(std::string_view text) {
  const std::string t = lower(trim(text));
  if (t == "1" || t == "true") return true;
  if (t == "0" || t == "false") return false;
  throw ConfigError("expected 0 or 1 (NCCL reads the variable as an integer; a scenario file may say true or false)");
}

json parse_switch(std::string_view text) {
  const std::string t = lower(trim(text));
  if (t == "true" || t == "yes" || t == "on" || t == "1") return true;
  if (t == "false" || t == "no" || t == "off" || t == "0") return false;
  throw ConfigError("expected true or false (or yes/no, on/off, 1/0)");
}

}  // namespace

const std::vector<ScenarioKey>& scenario_table() {
  static const std::vector<ScenarioKey> table = make_scenario_table();
  return table;
}

const ScenarioKey* find_scenario_key(std::string_view name) {
  std::string n(name);
  if (n.rfind("--", 0) == 0) n.erase(0, 2);
  std::replace(n.begin(), n.end(), '-', '_');
  const auto same = [&](std::string_view candidate, bool any_case) {
    return any_case ? lower(candidate) == lower(n) : candidate == n;
  };
  for (const ScenarioKey& k : scenario_table()) {
    if (same(k.name, k.nccl)) return &k;
    for (std::string_view a : k.aliases)
      if (same(a, k.nccl && a.rfind("NCCL_", 0) == 0)) return &k;  // NCCL's names in any case
  }
  return nullptr;
}

std::vector<std::string_view> nccl_names(const ScenarioKey& k) {
  std::vector<std::string_view> out;
  if (!k.nccl) return out;
  out.push_back(k.name);
  for (std::string_view a : k.aliases)
    if (a.rfind("NCCL_", 0) == 0) out.push_back(a);
  return out;
}

std::string nccl_knob_names() {
  std::string out;
  for (const ScenarioKey& k : scenario_table()) {
    const std::vector<std::string_view> names = nccl_names(k);
    if (names.empty()) continue;
    out += (out.empty() ? "" : ", ") + std::string(names.front());
    for (std::size_t i = 1; i < names.size(); ++i) out += " (or " + std::string(names[i]) + ")";
  }
  return out;
}

std::string_view nccl_name_as_given(const ScenarioKey& k, std::string_view given) {
  for (std::string_view n : nccl_names(k))
    if (lower(n) == lower(given)) return n;
  return k.name;
}

const ScenarioKey& scenario_key(std::string_view name) {
  if (const ScenarioKey* k = find_scenario_key(name)) return *k;
  throw std::logic_error(fmt::format("scenario_key: no key \"{}\"", name));
}

std::string nearest_key_hint(std::string_view name, bool with_strategy) {
  std::string n = lower(name);
  if (n.rfind("--", 0) == 0) n.erase(0, 2);
  std::replace(n.begin(), n.end(), '-', '_');
  NearestName nearest(n);
  const auto consider = [&](std::string_view candidate, std::string_view shown) {
    nearest.consider(lower(candidate), shown);
  };
  if (with_strategy) consider("strategy", "strategy");
  for (const ScenarioKey& k : scenario_table()) {
    consider(k.name, k.name);
    for (std::string_view a : k.aliases) consider(a, k.name);
  }
  return nearest.hint();
}

std::string scenario_key_names() {
  std::string out;
  for (const ScenarioKey& k : scenario_table()) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

json parse_key_value(const ScenarioKey& k, std::string_view text) {
  switch (k.kind) {
    case KeyKind::kName: {
      if (trim(text).empty()) throw ConfigError("expected a name or a file, not an empty text");
      // A key an engine resolves (calibration) is unset by the word its default says: none.
      if (k.engine_default && trim(text) == "none") return std::string();
      if (!valid_utf8(text)) throw ConfigError("expected UTF-8 text (the value has bytes that are not UTF-8)");
      for (char c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
          throw ConfigError("expected a name or a file without control characters");
      return std::string(text);
    }
    case KeyKind::kChoice: {
      const std::string t = lower(trim(text));
      for (std::string_view c : k.choices)
        if (c == t) return std::string(c);
      throw ConfigError("expected " + choices_text(k));
    }
    case KeyKind::kSpec: {
      const std::string t(trim(text));
      if (!valid_utf8(t)) throw ConfigError("expected UTF-8 text (the value has bytes that are not UTF-8)");
      return k.canonical(t);
    }
    case KeyKind::kCount:
      return parse_count(k, text);
    case KeyKind::kSizeMiB:
      return parse_mib(k, text);
    case KeyKind::kSwitch:
      return k.nccl ? parse_nccl_switch(text) : parse_switch(text);
  }
  throw std::logic_error("parse_key_value: unknown kind");
}

void set_key(Scenario& s, const ScenarioKey& k, const json& v) {
  std::visit(
      [&](auto member) {
        using T = std::decay_t<decltype(s.*member)>;
        if constexpr (std::is_same_v<T, std::optional<double>>) {
          s.*member = v.is_null() ? std::nullopt : std::optional<double>(v.get<double>());
        } else if constexpr (std::is_same_v<T, std::string>) {
          s.*member = v.is_null() ? std::string() : v.get<std::string>();
        } else if constexpr (std::is_same_v<T, bool>) {
          s.*member = v.get<bool>();
        } else {
          s.*member = v.is_null() ? T{0} : static_cast<T>(v.get<std::int64_t>());
        }
      },
      k.field);
}

json key_value(const Scenario& s, const ScenarioKey& k) {
  return std::visit(
      [&](auto member) -> json {
        const auto& v = s.*member;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::optional<double>>) {
          return v ? json(*v) : json(nullptr);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v.empty() && k.engine_default ? json(nullptr) : json(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          return v;
        } else {
          return v == 0 && k.engine_default ? json(nullptr) : json(static_cast<std::int64_t>(v));
        }
      },
      k.field);
}

std::string value_text(const json& v) {
  if (v.is_null()) return "default";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return fmt::format("{}", v.get<std::int64_t>());
  return fmt::format("{}", v.get<double>());
}

std::string key_help(const ScenarioKey& k) { return fmt::format("{} (default: {})", k.help, k.default_text); }

void check_scenario_keys(const Scenario& s) {
  for (const ScenarioKey& k : scenario_table()) {
    const json v = key_value(s, k);
    if (v.is_null() || k.kind == KeyKind::kSwitch) continue;
    try {
      (void)parse_key_value(k, value_text(v));
      // A number that does not survive its text (0.1 MiB) is checked as a number too.
      if (k.kind == KeyKind::kSizeMiB && !((v.get<double>() > 0 || (k.min == 0 && v.get<double>() == 0)) &&
                                           v.get<double>() <= static_cast<double>(k.max)))
        throw ConfigError(fmt::format("expected a size in MiB {}, at most {} MiB", k.min == 0 ? ">= 0" : "> 0", k.max));
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{} \"{}\": {}", k.name, value_text(v), e.what()));
    }
  }
  // Engine defaults written as 0 / negative by code are errors too (flags and files cannot say them).
  if (s.gpus < 0 || s.batch_per_gpu < 0 || s.seq_len < 0) {
    const auto& [name, value] = s.gpus < 0            ? std::pair{"gpus", static_cast<std::int64_t>(s.gpus)}
                                : s.batch_per_gpu < 0 ? std::pair{"batch_per_gpu", s.batch_per_gpu}
                                                      : std::pair{"seq_len", s.seq_len};
    throw ConfigError(fmt::format("{} \"{}\": expected an integer >= 1", name, value));
  }
  const PytorchVersion version = parse_pytorch_version(s.pytorch_version);
  if (s.static_graph && !has_static_graph(version)) {
    throw ConfigError(
        fmt::format("static_graph: DDP's static graph exists from PyTorch 1.9 (ddp_model._set_static_graph(); the "
                    "constructor's static_graph=True from 1.11); pytorch_version is {}",
                    s.pytorch_version));
  }
  // What the script could not call in that release (core/pytorch_version.hpp).
  const auto before = [&](const std::string& what, const char* since) {
    throw ConfigError(fmt::format("{} came with PyTorch {}; pytorch_version is {}", what, since, s.pytorch_version));
  };
  if (s.compile && !has_compile(version)) before("compile: torch.compile", "2.0");
  if ((s.attention == "flash" || s.attention == "mem-efficient") && !has_sdpa(version))
    before(fmt::format("attention {}: F.scaled_dot_product_attention", s.attention), "2.0");
  if (s.channels_last && !has_channels_last(version)) before("channels_last: torch.channels_last", "1.5");
  if (s.comm_hook != "none" && !s.comm_hook.empty()) {
    if (!has_comm_hooks(version))
      before(fmt::format("comm_hook {}: DDP's comm hooks (torch.distributed.algorithms.ddp_comm_hooks)", s.comm_hook),
             "1.8");
    if (s.comm_hook == "bf16" && !has_bf16_comm_hook(version)) before("comm_hook bf16: bf16_compress_hook", "1.10");
  }
  // TF32 came with PyTorch 1.7 (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32):
  // a script of an earlier release cannot turn it on.
  if (s.precision == "tf32" && !version.at_least(1, 7))
    before("precision tf32: torch.backends.cuda.matmul.allow_tf32 and cudnn.allow_tf32", "1.7");
  if (s.precision == "bf16" && s.mixed_precision != "master-weights" && !has_bf16_autocast(version))
    before("precision bf16: autocast to bfloat16 on CUDA", "1.10 (fp16 before it)");
  if (s.precision == "fp16" && s.mixed_precision != "master-weights" && !has_amp_autocast(version))
    before("precision fp16: torch.cuda.amp.autocast", "1.6 (before it, mixed_precision master-weights: apex amp O2)");
  if (s.grad_scaler == "true") {
    if (s.mixed_precision == "master-weights")
      throw ConfigError(
          "grad_scaler true: GradScaler serves autocast; a 16-bit model (mixed_precision master-weights, apex amp "
          "O2) scales the loss through its own optimizer wrapper");
    if (s.optimizer == "none")
      throw ConfigError("grad_scaler true: scaler.step(optimizer) needs an optimizer; optimizer is none");
    if (!has_amp_autocast(version)) before("grad_scaler true: torch.cuda.amp.GradScaler", "1.6");
  }
  if (s.optimizer_impl == "fused") {
    if (s.optimizer == "adam" && !has_fused_adam(version)) before("optimizer_impl fused: Adam(fused=True)", "1.13");
    if (s.optimizer == "adamw" && !has_fused_adamw(version)) before("optimizer_impl fused: AdamW(fused=True)", "2.0");
    if ((s.optimizer == "sgd" || s.optimizer == "sgd-momentum") && !has_fused_sgd(version))
      before("optimizer_impl fused: SGD(fused=True)", "2.3");
  }
  // torch._foreach_* and torch.optim._multi_tensor came with 1.7 (the foreach= argument with 1.12).
  if (s.optimizer_impl == "foreach" && !version.at_least(1, 7))
    before(
        "optimizer_impl foreach: torch.optim's multi-tensor optimizers (torch.optim._multi_tensor; foreach= from "
        "1.12)",
        "1.7");
  // bfloat16 collectives need ncclBfloat16 (NCCL 2.10): ProcessGroupNCCL refuses a bf16 tensor
  // under an older NCCL.
  const bool bf16_collectives =
      s.comm_hook == "bf16" || (s.precision == "bf16" && s.mixed_precision == "master-weights");
  if (bf16_collectives) {
    const NcclRelease nccl = resolve_nccl_release(s.nccl_version, s.pytorch_version);
    if (!nccl.at_least(2, 10)) {
      throw ConfigError(fmt::format(
          "{}: bfloat16 collectives need ncclBfloat16, from NCCL 2.10; the run links NCCL {}",
          s.comm_hook == "bf16" ? "comm_hook bf16" : "precision bf16 (mixed_precision master-weights)", nccl.text()));
    }
  }
  if (s.gradient_as_bucket_view && !has_gradient_as_bucket_view(version))
    before("gradient_as_bucket_view: DDP(gradient_as_bucket_view=True)", "1.7");
  // Every micro-step is simulated (and traced): the grid's bounds allow 65,536 x 1,000 of them,
  // hours of work and a hundred gigabytes of trace. At most kMaxMicroSteps a run.
  constexpr std::int64_t kMaxMicroSteps = 10000;
  if (static_cast<std::int64_t>(s.grad_accum) * s.iterations > kMaxMicroSteps) {
    throw ConfigError(fmt::format(
        "grad_accum \"{}\": {} micro-steps over {} iterations; expected at most {} micro-steps a run (grad_accum x "
        "iterations), each simulated: fewer iterations (the steady mean needs one past warmup) or a smaller grad_accum",
        s.grad_accum, static_cast<std::int64_t>(s.grad_accum) * s.iterations, s.iterations, kMaxMicroSteps));
  }
  if (s.warmup >= s.iterations) {
    throw ConfigError(
        fmt::format("warmup \"{}\": expected 0..{} (fewer than iterations {}, so that a steady iteration is left)",
                    s.warmup, s.iterations - 1, s.iterations));
  }
}

bool uses_grad_scaler(const Scenario& s, std::string_view precision) {
  if (s.grad_scaler != "auto") return s.grad_scaler == "true";
  return precision == "fp16" && s.mixed_precision != "master-weights" && s.optimizer != "none";
}

void apply_global_batch(Scenario& s, int gpus) {
  if (s.global_batch <= 0) return;
  const std::int64_t micro = static_cast<std::int64_t>(gpus) * s.grad_accum;
  if (micro <= 0) return;
  if (s.global_batch % micro != 0) {
    throw ConfigError(fmt::format(
        "global_batch {}: {} GPU{} x grad_accum {} = {} micro-batches per optimizer step do not divide it; expected "
        "a multiple of {} (each rank's DataLoader batch is global_batch / (gpus x grad_accum))",
        s.global_batch, gpus, gpus == 1 ? "" : "s", s.grad_accum, micro, micro));
  }
  const std::int64_t per_gpu = s.global_batch / micro;
  if (s.batch_per_gpu > 0 && s.batch_per_gpu != per_gpu) {
    throw ConfigError(fmt::format(
        "global_batch {} disagrees with batch_per_gpu {} x {} GPU{} x grad_accum {} = {}; give one or the other",
        s.global_batch, s.batch_per_gpu, gpus, gpus == 1 ? "" : "s", s.grad_accum, s.batch_per_gpu * micro));
  }
  s.batch_per_gpu = per_gpu;
}

Scenario resolved_scenario(const Scenario& requested, const ScenarioFacts& f) {
  Scenario r = requested;
  if (r.gpus == 0) r.gpus = f.gpus;
  if (r.nnodes == 0) r.nnodes = f.nnodes;
  if (r.nproc_per_node == 0) r.nproc_per_node = f.nproc_per_node;
  if (r.batch_per_gpu == 0) r.batch_per_gpu = f.batch_per_gpu;
  // Samples per optimizer step over every rank, as the run takes them.
  if (r.global_batch == 0) r.global_batch = r.batch_per_gpu * r.gpus * r.grad_accum;
  if (r.seq_len == 0 && f.seq_len) r.seq_len = *f.seq_len;
  if (r.precision.empty()) r.precision = f.precision;
  BucketOptions b;
  b.bucket_cap_mb = requested.bucket_cap_mb;
  b.first_bucket_mb = requested.first_bucket_mb;
  b.pytorch = parse_pytorch_version(requested.pytorch_version);
  const auto mib = [](Bytes bytes) { return static_cast<double>(bytes) / static_cast<double>(kMiB); };
  if (!r.bucket_cap_mb) r.bucket_cap_mb = mib(b.bucket_cap_bytes());
  if (!r.first_bucket_mb) r.first_bucket_mb = mib(b.first_bucket_bytes());
  // torch.optim's implementation and zero_grad's set_to_none: the release's defaults (foreach and
  // True from PyTorch 2.0; a Python loop and filling zeros before), as apply_framework runs them.
  const bool foreach = foreach_optimizers(b.pytorch);
  if (r.optimizer_impl == "auto") r.optimizer_impl = foreach ? "foreach" : "for-loop";
  if (r.set_to_none == "auto") r.set_to_none = foreach ? "true" : "false";
  if (r.grad_scaler == "auto") r.grad_scaler = uses_grad_scaler(r, r.precision) ? "true" : "false";
  // NCCL: the release PyTorch's binaries of that version bundle.
  if (r.nccl_version == "auto") r.nccl_version = resolve_nccl_release("auto", r.pytorch_version).text();
  return r;
}

json requested_json(const Scenario& requested, const Scenario& resolved) {
  json out = json::object();
  for (const ScenarioKey& k : scenario_table()) {
    const json asked = key_value(requested, k);
    if (asked != key_value(resolved, k)) out[std::string(k.name)] = asked.is_null() ? json("default") : asked;
  }
  return out;
}

}  // namespace gradsync
