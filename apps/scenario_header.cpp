// scenario_header.cpp: the `#` lines above every command's table that describe a resolved scenario
// and how it was run (scenario_args.hpp scenario_header).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "apps/scenario_args.hpp"
#include "core/comm_hook.hpp"
#include "core/error.hpp"
#include "core/nccl_release.hpp"
#include "core/scenario_keys.hpp"
#include "core/text.hpp"
#include "models/gpu_spread.hpp"
#include "models/model.hpp"
#include "models/op_cost.hpp"
#include "models/scenario_basics.hpp"
#include "reports/advice.hpp"
#include "sim/nccl_model.hpp"
#include "sim/simulate.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync::apps {

using sim::Scenario;

namespace {

// mib_text: a size in MiB as a header shows it: ten significant digits, as `gradsync buckets`
// writes it, the value to give DDP's bucket_cap_mb for the same bytes (50MB is 47.68371582).
std::string mib_text(const nlohmann::ordered_json& v) {
  if (!v.is_number()) return value_text(v);
  const double mib = v.get<double>();
  // A whole number as it is (1073741824, not 1.07374e+09); below 16 KiB also the bytes DDP caps
  // at (int(bucket_cap_mb * 1024 * 1024)).
  if (mib == std::floor(mib) && std::abs(mib) < 1e15) return fmt::format("{:.0f}", mib);
  if (mib > 0 && mib < 1.0 / 64) return fmt::format("{:.10g} ({} B)", mib, static_cast<std::int64_t>(mib * 1048576.0));
  return fmt::format("{:.10g}", mib);
}

// bucket_text: a bucket's cap with its unit: MiB as mib_text, and below 16 KiB the whole bytes
// DDP caps it at (int(bucket_cap_mb * 1024 * 1024)), not "9.91821e-05 MiB".
std::string bucket_text(const nlohmann::ordered_json& v) {
  if (!v.is_number() || v.get<double>() <= 0 || v.get<double>() >= 1.0 / 64) return mib_text(v) + " MiB";
  return fmt::format("{} B", static_cast<std::int64_t>(v.get<double>() * 1048576.0));
}

}  // namespace

std::vector<std::string> scenario_header(const Scenario& s, const std::vector<StrategyResult>& rs,
                                         const std::string& what) {
  const StrategyResult& r = rs.front();
  std::vector<std::string> h;
  const std::int64_t per_gpu = r.gpus > 0 ? r.global_batch / s.grad_accum / r.gpus : 0;
  ExecutionMode mode = execution_mode(s.compile, s.attention);
  mode.channels_last = s.channels_last;
  mode.pad_to_multiple_of = s.pad_to_multiple_of;
  mode.master_weights = s.mixed_precision == "master-weights";
  const Model model = load_model(s.model);
  h.push_back(
      fmt::format("gradsync {}: {} on {}, {} x {}, batch {}/GPU (global {}{}){}, {}, {}, {}, input {}; PyTorch {}",
                  what, s.model, s.topology, r.gpus, r.gpu, per_gpu, r.global_batch,
                  s.grad_accum > 1 ? fmt::format(" over {} micro-steps", s.grad_accum) : "",
                  r.tokens_per_sample > 0 ? fmt::format(", seq_len {}", r.tokens_per_sample) : "", r.precision,
                  optimizer_text(s, r.precision),
                  execution_mode_text(effective_mode(model, mode), has_attention(model)), s.input, s.pytorch_version));
  // The DDP settings are said only where DDP ran; DP's broadcast and reduce still run on NCCL.
  const bool ddp =
      std::any_of(rs.begin(), rs.end(), [](const StrategyResult& x) { return x.strategy == Strategy::kDDP; });
  const std::string nccl = fmt::format("{}{}{}", nccl_release_text(s), nccl_knobs_text(s),
                                       r.fidelity.mode.empty() ? "" : fmt::format(", fidelity {}", s.fidelity));
  if (!ddp)
    h.push_back(nccl);
  else
    h.push_back(fmt::format(
        "DDP: bucket_cap_mb {}, first bucket {}, comm hook {}, broadcast_buffers {}{}{}{}{}; {}",
        mib_text(key_value(s, scenario_key("bucket_cap_mb"))),
        bucket_text(key_value(s, scenario_key("first_bucket_mb"))), comm_hook_name(parse_comm_hook(s.comm_hook)),
        s.broadcast_buffers, s.find_unused_parameters ? ", find_unused_parameters" : "",
        s.static_graph ? ", static_graph" : "", s.gradient_as_bucket_view ? ", gradient_as_bucket_view" : "",
        s.allreduce_after_backward ? ", allreduce_after_backward" : "", nccl));
  // A first bucket above the cap is what PyTorch takes too (its first size limit applies to the
  // first bucket only; nothing compares the two), but it delays DDP's first allreduce.
  if (const nlohmann::ordered_json cap = key_value(s, scenario_key("bucket_cap_mb")),
      first = key_value(s, scenario_key("first_bucket_mb"));
      ddp && cap.is_number() && first.is_number() && first.get<double>() > cap.get<double>())
    h.push_back(
        fmt::format("first bucket {} above bucket_cap_mb {}: PyTorch takes it as given, and DDP's first "
                    "allreduce waits for that many bytes of the last layers' gradients",
                    bucket_text(first), mib_text(cap)));
  const bool dp =
      std::any_of(rs.begin(), rs.end(), [](const StrategyResult& x) { return x.strategy == Strategy::kDP; });
  h.push_back(fmt::format(
      "simulated {} iteration{}; steady = mean of iterations {}..{}{}{}", s.iterations, s.iterations == 1 ? "" : "s",
      s.warmup + 1, s.iterations, ddp ? "; DDP times on rank 0" : "",
      dp ? fmt::format("{} DP times of the whole process (all GPUs on one timeline)", ddp ? "," : ";") : ""));
  if (s.compile && std::any_of(rs.begin(), rs.end(), [](const StrategyResult& x) {
        return x.strategy == Strategy::kDP && x.skipped.empty() && x.replicas > 1;
      }))
    h.push_back(
        "DP runs eager: torch.compile does not compile through DataParallel's replica threads "
        "(pytorch/pytorch#94636: \"for multi-gpu it falls back to the non-compile speed\"); DDP is compiled");
  // GPUs are not alike: a synchronous step runs at its slowest GPU's pace (models/gpu_spread.hpp).
  if (const std::string slow = slowest_gpu_text(s, r.gpus); !slow.empty())
    h.push_back(slow + ": GPUs of one model differ, and every step waits for its slowest (README: GPUs are not alike)");
  if (s.warmup == 0) {
    h.push_back(fmt::format(
        "the steady mean includes iteration 1, which is not a steady step: {}a real run's first iteration also pays "
        "its start-up (cuDNN's algorithm search, the caching allocator's first allocations), which gradsync does not "
        "simulate; {} leaves it out",
        ddp ? "DDP's first iteration reduces one bucket after backward (nothing overlapped; PyTorch >= 1.12) and " : "",
        s.iterations >= 2 ? "--warmup 1" : "--iterations 2 or more"));
  }
  // fp16 autocast without loss scaling: torch.amp's docs ("Gradient Scaling"): gradients too small
  // for float16 flush to zero. Simulated as asked; said, with the fixes.
  if (s.precision == "fp16" && s.mixed_precision == "autocast" && s.grad_scaler == "false" && s.optimizer != "none")
    h.push_back(
        "fp16 autocast without GradScaler: gradients below float16's range (about 6e-8) flush to zero and the "
        "updates they carry are lost (torch.amp's docs, \"Gradient Scaling\"); --grad-scaler true, or --precision "
        "bf16 where the GPU has it");
  // static_graph rebuilds DDP's buckets for iteration 3 (core/bucket_plan.hpp): an iteration
  // before it in the steady mean runs on the constructed ones.
  if (ddp) {
    const int rebuilt = sim::bucket_rebuild_iteration(s);
    if (rebuilt > 2 && s.warmup + 1 < rebuilt && s.warmup > 0) {
      h.push_back(
          s.iterations < rebuilt
              ? fmt::format("no steady iteration runs on DDP's rebuilt buckets: with static_graph the Reducer "
                            "rebuilds them for iteration {}; --iterations {} --warmup {} or more reach them",
                            rebuilt, rebuilt, rebuilt - 1)
              : fmt::format("the steady mean includes iteration{} {}, on DDP's constructed buckets: with "
                            "static_graph the Reducer rebuilds them for iteration {}; --warmup {} leaves {} out",
                            rebuilt - 1 - s.warmup == 1 ? "" : "s",
                            rebuilt - 1 - s.warmup == 1 ? std::to_string(s.warmup + 1)
                                                        : fmt::format("{}..{}", s.warmup + 1, rebuilt - 1),
                            rebuilt, rebuilt - 1, rebuilt - 1 - s.warmup == 1 ? "it" : "them"));
    }
  }
  for (const std::string& inert : inert_settings(model, mode)) h.push_back(inert + ": it changes nothing");
  // Without an optimizer step, torch.optim's implementation decides only how zero_grad fills the
  // gradients; where it does not fill them, an implementation other than the release's default
  // (the scenario arrives resolved: auto is that default) changes nothing.
  if (ComputeContext fw; s.optimizer == "none") {
    apply_framework(fw, s);
    const std::string release_default = fw.foreach ? "foreach" : "for-loop";
    if (!fw.zero_grad_fill && s.optimizer_impl != release_default)
      h.push_back(
          fmt::format("--optimizer-impl {}: --optimizer none runs no optimizer step and zero_grad sets no zeros: it "
                      "changes nothing",
                      s.optimizer_impl));
  }
  // A loop that never calls zero_grad has no set_to_none to apply: a value other than the release's
  // default (True from 2.0, when foreach became torch.optim's default) changes nothing.
  if (ComputeContext fw; !s.zero_grad) {
    apply_framework(fw, s);
    const std::string release_default = fw.foreach ? "true" : "false";
    if (s.set_to_none != release_default)
      h.push_back(
          fmt::format("--set-to-none {}: --zero-grad=false never calls zero_grad: it changes nothing", s.set_to_none));
  }
  try {
    // The scenario says fp32; the run (StrategyResult::precision) says what it ran as.
    if (const GpuSpec& g = gpu_spec(r.gpu); s.precision == "fp32" && r.precision == "tf32")
      h.push_back(
          fmt::format("fp32: PyTorch {} runs float32 matmuls as TF32 on the {} by default "
                      "(torch.backends.cuda.matmul.allow_tf32 was True from 1.7 to 1.11), so this runs as "
                      "--precision tf32",
                      s.pytorch_version, g.key));
    if (const GpuSpec& g = gpu_spec(r.gpu); s.precision == "tf32" && g.sm_version > 0 && g.sm_version < 80)
      h.push_back(
          fmt::format("tf32: the {} has no TF32 tensor cores (they came with Ampere): allow_tf32 leaves its "
                      "float32 as it is, so this runs as --precision fp32",
                      g.key));
  } catch (const ConfigError&) {  // no GPU key (a strategy that did not run): say nothing of it
  }
  // A model imported from a profiler trace carries the step measured where it ran: its times are
  // used as they are, whatever GPU, precision or execution mode the scenario names.
  if (model.measured) {
    const MeasuredStep& ms = *model.measured;
    bool same = false;
    try {
      same = ascii_lower(gpu_spec(r.gpu).name) == ascii_lower(ms.device);
    } catch (const ConfigError&) {  // no GPU key (a strategy that did not run): say nothing of it
      same = true;
    }
    // What else the trace decided: the defaults of the model's runs (apply_model_defaults).
    std::vector<std::string> defaults;
    if (!ms.optimizer.empty()) defaults.push_back(fmt::format("optimizer {}", ms.optimizer));
    if (ms.grad_accum > 1) defaults.push_back(fmt::format("grad_accum {}", ms.grad_accum));
    h.push_back(fmt::format(
        "{}'s compute times were measured on {} ({}, batch {}): used as measured, in proportion to batch{}; the "
        "precision and execution mode above do not change them{}",
        model.name, ms.device, ms.trace, ms.batch,
        same ? "" : fmt::format(" on every {} (gradsync does not move a measured step to another GPU)", r.gpu),
        defaults.empty() ? ""
                         : fmt::format("; the trace's {} {} its runs' default (a flag or the scenario file wins)",
                                       fmt::join(defaults, " and "), defaults.size() == 1 ? "is" : "are")));
  }
  // PowerSGD compresses only from start_powerSGD_iter (PowerSGDState's default 1000); before, its
  // hook is a plain allreduce. Say so when no simulated iteration reaches it.
  if (const CommHook hook = parse_comm_hook(s.comm_hook); powersgd_never_compresses(hook, s.iterations)) {
    // The way out: start_iter 2 (the earliest that compresses), or, once it is that low already,
    // iterations enough to reach it (one past the start, and one more to be steady).
    const bool lowest = hook.powersgd_start_iter <= 2;
    h.push_back(fmt::format(
        "PowerSGD compresses from iteration {} (start_powerSGD_iter{}): all {} simulated iterations run its plain "
        "allreduce; {} simulates its steady state",
        hook.powersgd_start_iter + 1, lowest ? "" : "; PowerSGDState's default is 1000", s.iterations,
        lowest ? fmt::format("--iterations {}", std::max(hook.powersgd_start_iter + 2, s.warmup + 2))
               : std::string("--comm-hook powersgd:start_iter=2")));
  } else if (hook.kind == CommHookKind::kPowerSGD && s.warmup < hook.powersgd_start_iter) {
    // Some steady iterations compress and some do not: their mean is neither.
    h.push_back(
        fmt::format("the steady mean mixes PowerSGD's plain allreduce (iterations {}..{}) with its compressed "
                    "iterations (from {}); "
                    "--warmup {} leaves the plain ones out",
                    s.warmup + 1, hook.powersgd_start_iter, hook.powersgd_start_iter + 1, hook.powersgd_start_iter));
  }
  return h;
}

}  // namespace gradsync::apps
