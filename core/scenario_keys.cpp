// scenario_keys.cpp: the scenario key table and how its values are read, stored and written.
#include "core/scenario_keys.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "core/bucket_plan.hpp"
#include "core/comm_hook.hpp"
#include "core/error.hpp"
#include "core/nccl_knobs.hpp"
#include "core/pytorch_version.hpp"
#include "core/units.hpp"

namespace gradsync {

using json = nlohmann::ordered_json;

namespace {

// Bounds that keep every product of keys inside 64 bits (global batch = batch x GPUs x
// grad_accum < 2^60) and every run inside memory: beyond them a value is a typo, not a cluster.
constexpr std::int64_t kMaxGpus = 1 << 20;       // 1,048,576 GPUs
constexpr std::int64_t kMaxBatch = 1 << 24;      // samples per GPU
constexpr std::int64_t kMaxSeqLen = 1 << 24;     // tokens per sample
constexpr std::int64_t kMaxGradAccum = 1 << 16;  // micro-steps per optimizer step, each simulated
// Iterations: a simulated steady iteration repeats exactly (the simulator is deterministic), so a
// mean over more than a thousand says nothing more, and their trace would not fit in memory.
constexpr std::int64_t kMaxIterations = 1000;
constexpr std::int64_t kMaxBucketMiB = 1 << 30;  // 1 PiB: far above any model's gradients

// check_comm_hook: parse_comm_hook's rule, its message without the value it quotes (the caller
// names the key and the value).
std::string check_comm_hook(std::string_view text) {
  try {
    (void)parse_comm_hook(text);
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    const std::string prefix = fmt::format("comm hook \"{}\": ", text);
    throw ConfigError(what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what);
  }
  return std::string(text);
}
std::string canonical_algos(std::string_view text) { return canonical_nccl_list(text, kNcclAlgorithms); }
std::string canonical_protos(std::string_view text) { return canonical_nccl_list(text, kNcclProtocols); }
std::string canonical_level(std::string_view text) { return canonical_nccl_level(text); }

// kMaxNcclChannels: NCCL's MAXCHANNELS (64 since 2.25).
constexpr std::int64_t kMaxNcclChannels = 64;

std::vector<ScenarioKey> make_table() {
  using S = Scenario;
  return {
      {.name = "model",
       .flag = "--model",
       .value_name = "NAME|FILE",
       .help = "Model: a zoo name (gradsync models list) or a model file",
       .default_text = "gpt2",
       .kind = KeyKind::kName,
       .field = &S::model},
      {.name = "topology",
       .flag = "--topology",
       .value_name = "NAME|FILE",
       .help = "Cluster: a built-in (dgx-a100, dgx-h100, dgx1-v100, 2x-dgx-a100-hdr, 16x-dgx-h100-ndr, pcie-4gpu, "
               "pcie-2gpu-nvlink-bridge) or a topology file (DOT, GraphML)",
       .default_text = "dgx-a100",
       .kind = KeyKind::kName,
       .field = &S::topology},
      {.name = "gpus",
       .flag = "--gpus",
       .value_name = "N",
       .help = "GPUs used: the first N of the topology (torchrun's world size)",
       .default_text = "every GPU of the topology",
       .kind = KeyKind::kCount,
       .field = &S::gpus,
       .max = kMaxGpus,
       .engine_default = true},
      {.name = "batch_per_gpu",
       .flag = "--batch-per-gpu",
       .value_name = "B",
       .help = "Samples per GPU per micro-step; DP scatters the same global batch B x N",
       .default_text = "the model's",
       .kind = KeyKind::kCount,
       .field = &S::batch_per_gpu,
       .max = kMaxBatch,
       .engine_default = true},
      {.name = "seq_len",
       .flag = "--seq-len",
       .value_name = "T",
       .help = "Sequence length T of a sequence model",
       .default_text = "the model's",
       .kind = KeyKind::kCount,
       .field = &S::seq_len,
       .max = kMaxSeqLen,
       .engine_default = true},
      {.name = "precision",
       .flag = "--precision",
       .value_name = "P",
       .help = "fp32, tf32 (torch.backends.cuda.matmul.allow_tf32), or bf16 / fp16 autocast",
       .default_text = "bf16 where the GPU has it, else fp16",
       .kind = KeyKind::kChoice,
       .field = &S::precision,
       .choices = {"fp32", "tf32", "bf16", "fp16"},
       .engine_default = true},
      {.name = "compile",
       .flag = "--compile",
       .help = "torch.compile(model): pointwise ops and reductions between matrix products fused into generated "
               "kernels (memory traffic only at fusion boundaries, one launch per fused region)",
       .default_text = "false: eager, one kernel per op",
       .kind = KeyKind::kSwitch,
       .field = &S::compile},
      {.name = "attention",
       .flag = "--attention",
       .value_name = "IMPL",
       .help = "math (the T x T scores materialised: eager attention, SDPA's math backend), flash or mem-efficient "
               "(F.scaled_dot_product_attention's fused kernels)",
       .default_text = "math",
       .kind = KeyKind::kChoice,
       .field = &S::attention,
       .choices = {"math", "flash", "mem-efficient"}},
      {.name = "channels_last",
       .flag = "--channels-last",
       .help = "model.to(memory_format=torch.channels_last): convolutions run NHWC without cuDNN's transposes "
               "(fp16/bf16 tensor cores)",
       .default_text = "false: NCHW, as an unmodified script",
       .kind = KeyKind::kSwitch,
       .field = &S::channels_last},
      {.name = "pytorch_version",
       .flag = "--pytorch-version",
       .value_name = "M.N",
       .help = "The PyTorch release whose rules apply: DDP's first iteration (one bucket from 1.12), its first "
               "rebuilt bucket under an explicit bucket_cap_mb (the cap from 2.3, 1 MiB before), static_graph "
               "(from 1.9), torch.optim's foreach default (2.0; a Python loop over the parameters before); "
               "torch.__version__ is accepted",
       .default_text = "2.11",
       .kind = KeyKind::kSpec,
       .field = &S::pytorch_version,
       .canonical = canonical_pytorch_version},
      {.name = "optimizer",
       .flag = "--optimizer",
       .value_name = "OPT",
       .help = "sgd, sgd-momentum, adam or adamw",
       .default_text = "adamw",
       .kind = KeyKind::kChoice,
       .field = &S::optimizer,
       .choices = {"sgd", "sgd-momentum", "adam", "adamw"}},
      {.name = "bucket_cap_mb",
       .flag = "--bucket-cap-mb",
       .value_name = "MiB",
       .help = "DDP(bucket_cap_mb=...): gradient bucket size in MiB, or with a unit (25MiB, 512KiB)",
       .default_text = "25",
       .kind = KeyKind::kSizeMiB,
       .field = &S::bucket_cap_mb,
       .reach = KeyReach::kDdp,
       .max = kMaxBucketMiB,
       .engine_default = true},
      {.name = "first_bucket_mb",
       .flag = "--first-bucket-mb",
       .value_name = "MiB",
       .help = "The first rebuilt bucket's cap (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES)",
       .default_text = "1 without bucket_cap_mb, else bucket_cap_mb (PyTorch >= 2.3)",
       .kind = KeyKind::kSizeMiB,
       .field = &S::first_bucket_mb,
       .reach = KeyReach::kDdp,
       .max = kMaxBucketMiB,
       .engine_default = true},
      {.name = "grad_accum",
       .flag = "--grad-accum",
       .value_name = "N",
       .help = "Micro-steps per optimizer step, all but the last under DDP's no_sync()",
       .default_text = "1",
       .kind = KeyKind::kCount,
       .field = &S::grad_accum,
       .max = kMaxGradAccum},
      {.name = "comm_hook",
       .flag = "--comm-hook",
       .value_name = "HOOK",
       .help = "DDP comm hook: none, fp16, bf16, quantize, powersgd[:rank=R,start_iter=S]",
       .default_text = "none",
       .kind = KeyKind::kSpec,
       .field = &S::comm_hook,
       .reach = KeyReach::kDdp,
       .canonical = check_comm_hook},
      {.name = "find_unused_parameters",
       .flag = "--find-unused-parameters",
       .help = "DDP(find_unused_parameters=True)",
       .default_text = "false",
       .kind = KeyKind::kSwitch,
       .field = &S::find_unused_parameters,
       .reach = KeyReach::kDdp},
      {.name = "static_graph",
       .flag = "--static-graph",
       .help = "DDP(static_graph=True)",
       .default_text = "false",
       .kind = KeyKind::kSwitch,
       .field = &S::static_graph,
       .reach = KeyReach::kDdp},
      {.name = "gradient_as_bucket_view",
       .flag = "--gradient-as-bucket-view",
       .help = "DDP(gradient_as_bucket_view=True)",
       .default_text = "false",
       .kind = KeyKind::kSwitch,
       .field = &S::gradient_as_bucket_view,
       .reach = KeyReach::kDdp},
      {.name = "iterations",
       .flag = "--iterations",
       .value_name = "N",
       .help = "Optimizer steps simulated",
       .default_text = "5",
       .kind = KeyKind::kCount,
       .field = &S::iterations,
       .max = kMaxIterations},
      {.name = "warmup",
       .flag = "--warmup",
       .value_name = "N",
       .help = "Leading steps left out of the steady-state mean (fewer than iterations)",
       .default_text = "3",
       .kind = KeyKind::kCount,
       .field = &S::warmup,
       .min = 0,
       .max = kMaxIterations - 1},
      {.name = "fidelity",
       .flag = "--fidelity",
       .value_name = "F",
       .help = "Collectives as flows: step (every ring step and chunk), aggregate (one flow per rank, channel and "
               "phase) or auto (aggregate where step would issue more than 4000 flows)",
       .default_text = "auto",
       .kind = KeyKind::kChoice,
       .field = &S::fidelity,
       .choices = {"step", "aggregate", "auto"}},
      {.name = "calibration",
       .flag = "--calibration",
       .value_name = "FILE",
       .help = "calibration.yaml of `gradsync calibrate`: measured compute, copy and collective times replace the "
               "roofline and network models",
       .default_text = "none: the roofline and network models",
       .kind = KeyKind::kName,
       .field = &S::calibration,
       .engine_default = true},
      // NCCL's knobs, as NCCL's environment variables (NCCL 2.27 src/init.cc, src/graph/*.cc):
      // `--nccl NAME=VALUE`, the same names in a scenario file, as CSV columns and with --vary.
      {.name = "NCCL_ALGO",
       .flag = "--algo",
       .value_name = "ALGOS",
       .help = "NCCL_ALGO: ring, tree, nvls, nvlstree, a comma list of them, or ^list to exclude",
       .default_text = "unset: NCCL's tuning model picks per call",
       .kind = KeyKind::kSpec,
       .field = &S::nccl_algo,
       .canonical = canonical_algos,
       .engine_default = true,
       .nccl = true,
       .aliases = {"algo"}},
      {.name = "NCCL_PROTO",
       .flag = "--proto",
       .value_name = "PROTOS",
       .help = "NCCL_PROTO: ll, ll128, simple, a comma list of them, or ^list to exclude",
       .default_text = "unset: NCCL's tuning model picks per call",
       .kind = KeyKind::kSpec,
       .field = &S::nccl_proto,
       .canonical = canonical_protos,
       .engine_default = true,
       .nccl = true,
       .aliases = {"proto"}},
      {.name = "NCCL_P2P_DISABLE",
       .value_name = "0|1",
       .help = "NCCL_P2P_DISABLE=1: no peer-to-peer between GPUs; one host's GPUs go through host memory (SHM)",
       .default_text = "0",
       .kind = KeyKind::kSwitch,
       .field = &S::nccl_p2p_disable,
       .nccl = true},
      {.name = "NCCL_P2P_LEVEL",
       .value_name = "LEVEL",
       .help = "NCCL_P2P_LEVEL: the farthest path P2P takes: LOC, NVL, NVB, PIX, PXB, PHB, SYS (or 0-5)",
       .default_text = "unset: PXB, SYS for 2 GPUs on AMD",
       .kind = KeyKind::kSpec,
       .field = &S::nccl_p2p_level,
       .canonical = canonical_level,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_SHM_DISABLE",
       .value_name = "0|1",
       .help = "NCCL_SHM_DISABLE=1: no SHM transport; GPUs of one host without P2P go through the network",
       .default_text = "0",
       .kind = KeyKind::kSwitch,
       .field = &S::nccl_shm_disable,
       .nccl = true},
      {.name = "NCCL_NVLS_ENABLE",
       .value_name = "0|1|2",
       .help = "NCCL_NVLS_ENABLE: NVLink SHARP (the NVSwitch reduces) on H100, H200, B200: 0 off, 1 on, 2 auto",
       .default_text = "unset: 2",
       .kind = KeyKind::kSpec,
       .field = &S::nccl_nvls_enable,
       .canonical = canonical_nccl_nvls,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_MIN_NCHANNELS",
       .value_name = "N",
       .help = "NCCL_MIN_NCHANNELS: at least N channels (rings repeated)",
       .default_text = "unset",
       .kind = KeyKind::kCount,
       .field = &S::nccl_min_nchannels,
       .max = kMaxNcclChannels,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_MAX_NCHANNELS",
       .value_name = "N",
       .help = "NCCL_MAX_NCHANNELS: at most N channels of those NCCL's search finds",
       .default_text = "unset",
       .kind = KeyKind::kCount,
       .field = &S::nccl_max_nchannels,
       .max = kMaxNcclChannels,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_NET_GDR_LEVEL",
       .value_name = "LEVEL",
       .help = "NCCL_NET_GDR_LEVEL: the farthest GPU-NIC path GPUDirect RDMA takes (as NCCL_P2P_LEVEL); farther, "
               "data goes through host memory",
       .default_text = "unset: PXB",
       .kind = KeyKind::kSpec,
       .field = &S::nccl_net_gdr_level,
       .canonical = canonical_level,
       .engine_default = true,
       .nccl = true},
      {.name = "NCCL_IB_DISABLE",
       .value_name = "0|1",
       .help = "NCCL_IB_DISABLE=1: TCP sockets instead of InfiniBand/RoCE verbs: no GPUDirect RDMA",
       .default_text = "0",
       .kind = KeyKind::kSwitch,
       .field = &S::nccl_ib_disable,
       .nccl = true},
  };
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// valid_utf8: well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // the n continuation bytes are missing
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += n + 1;
  }
  return true;
}

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
    throw ConfigError(fmt::format("expected an integer from {} to {}", k.min, k.max));
  }
  return v;
}

json parse_mib(const ScenarioKey& k, std::string_view text) {
  const std::string_view t = trim(text);
  const std::string expected =
      fmt::format("expected a size in MiB > 0 (25, 0.5) or with a unit (25MiB, 512KiB, 1GiB), at most {} MiB", k.max);
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
      throw ConfigError(expected);
    }
  }
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
  throw ConfigError("expected 0 or 1 (NCCL reads the variable as an integer; true and false also do)");
}

json parse_switch(std::string_view text) {
  const std::string t = lower(trim(text));
  if (t == "true" || t == "yes" || t == "on" || t == "1") return true;
  if (t == "false" || t == "no" || t == "off" || t == "0") return false;
  throw ConfigError("expected true or false");
}

}  // namespace

const std::vector<ScenarioKey>& scenario_table() {
  static const std::vector<ScenarioKey> table = make_table();
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
      if (same(a, false)) return &k;
  }
  return nullptr;
}

const ScenarioKey& scenario_key(std::string_view name) {
  if (const ScenarioKey* k = find_scenario_key(name)) return *k;
  throw std::logic_error(fmt::format("scenario_key: no key \"{}\"", name));
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
      if (k.kind == KeyKind::kSizeMiB && !(v.get<double>() > 0 && v.get<double>() <= static_cast<double>(k.max)))
        throw ConfigError(fmt::format("expected a size in MiB > 0, at most {} MiB", k.max));
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
  if (s.static_graph && !has_static_graph(parse_pytorch_version(s.pytorch_version))) {
    throw ConfigError(fmt::format("static_graph: DDP(static_graph=True) exists from PyTorch 1.9; pytorch_version is {}",
                                  s.pytorch_version));
  }
  if (s.warmup >= s.iterations) {
    throw ConfigError(
        fmt::format("warmup \"{}\": expected 0..{} (fewer than iterations {}, so that a steady iteration is left)",
                    s.warmup, s.iterations - 1, s.iterations));
  }
}

Scenario resolved_scenario(const Scenario& requested, const ScenarioFacts& f) {
  Scenario r = requested;
  if (r.gpus == 0) r.gpus = f.gpus;
  if (r.batch_per_gpu == 0) r.batch_per_gpu = f.batch_per_gpu;
  if (r.seq_len == 0 && f.seq_len) r.seq_len = *f.seq_len;
  if (r.precision.empty()) r.precision = f.precision;
  BucketOptions b;
  b.bucket_cap_mb = requested.bucket_cap_mb;
  b.first_bucket_mb = requested.first_bucket_mb;
  b.pytorch = parse_pytorch_version(requested.pytorch_version);
  const auto mib = [](Bytes bytes) { return static_cast<double>(bytes) / static_cast<double>(kMiB); };
  if (!r.bucket_cap_mb) r.bucket_cap_mb = mib(b.bucket_cap_bytes());
  if (!r.first_bucket_mb) r.first_bucket_mb = mib(b.first_bucket_bytes());
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
