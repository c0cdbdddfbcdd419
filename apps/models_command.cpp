// models_command.cpp: `gradsync models list` and `gradsync models show NAME`: the zoo, parameter
// counts, FLOPs, predicted single-GPU forward/backward/optimizer time and memory.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/cli.hpp"
#include "apps/scenario_args.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/pytorch_version.hpp"
#include "core/text.hpp"
#include "models/compute_cost.hpp"
#include "models/memory_cost.hpp"
#include "models/model.hpp"
#include "models/op_cost.hpp"
#include "models/scenario_basics.hpp"
#include "reports/table.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync::apps {
namespace {

struct ShowOptions {
  std::string model;
  std::int64_t batch = 0;  // --batch: --batch-per-gpu's shorter name (0: not given)
  std::string gpu;         // --gpu; empty: the measured step's GPU where it is a known one, else kDefaultShowGpu
  bool json = false;
  ScenarioArgs args;  // the scenario keys of one GPU's step (kShowKeys), as simulate takes them
};

// kShowKeys: the scenario keys that decide one GPU's step, under the same flags, values and
// defaults as simulate's (core/scenario_table.cpp); the cluster's, DDP's and NCCL's are not here.

const std::vector<std::string> kShowKeys = {"batch_per_gpu",   "seq_len",    "precision",      "mixed_precision",
                                            "compile",         "attention",  "channels_last",  "pad_to_multiple_of",
                                            "pytorch_version", "optimizer",  "optimizer_impl", "set_to_none",
                                            "zero_grad",       "grad_accum", "input",          "grad_scaler",
                                            "clip_grad_norm"};

// precision_of: a parameter dtype as the table names it (fp32, bf16, fp16).
std::string_view precision_of(DType t) {
  return t == DType::kBFloat16 ? "bf16" : t == DType::kFloat16 ? "fp16" : t == DType::kFloat64 ? "fp64" : "fp32";
}

std::string with_commas(std::int64_t v) {
  const std::string digits = std::to_string(v);
  std::string s;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

// add_misaligned_row: the products that miss cuBLAS's 16-byte alignment (op_coster.hpp), their
// time and layers, and what fixes them; nothing when every product is aligned.
void add_misaligned_row(reports::Table& t, const Model& m, const ModelCost& cost, const ComputeContext& ctx) {
  double time_s = 0;
  int kernels = 0;
  std::vector<std::string> layers;
  for (std::size_t i = 0; i < cost.layers.size(); ++i) {
    const LayerCost& c = cost.layers[i];
    const int k = c.forward.misaligned_kernels + c.backward.misaligned_kernels;
    if (k == 0) continue;
    time_s += c.forward.misaligned_s + c.backward.misaligned_s;
    kernels += k;
    if (layers.size() < 3)
      layers.push_back(m.layers[i].name);
    else if (layers.size() == 3)
      layers.push_back("...");
  }
  if (kernels == 0) return;
  // The fix the tool can simulate is padding a vocabulary; any other misaligned dimension (ViT's 197
  // tokens, an odd width) is the model's own shape.
  const bool vocabulary =
      products_span_vocabulary(m) && ctx.mode.pad_to_multiple_of == 1 && vocabulary_size(m) % 8 != 0;
  t.add_row(
      {"misaligned GEMMs",
       fmt::format("{} in {} kernels ({}): a dimension not a multiple of 16 bytes, {:.2g}x the aligned time "
                   "on {}; {}",
                   human_duration(time_s), kernels, fmt::join(layers, ", "), 1.0 / rates_for(*ctx.gpu).gemm_misaligned,
                   ctx.gpu->key,
                   vocabulary ? fmt::format("pad the vocabulary ({}) to a multiple of 64: --pad-to-multiple-of 64",
                                            vocabulary_size(m))
                              : "a shape of the model's own (a sequence length, head size or width), which "
                                "--pad-to-multiple-of (a vocabulary's padding) does not change")});
}

// add_winograd_row: the convolution kernels that run as Winograd (models/op_conv.cpp), their time
// and their share of the convolutions' kernels; nothing when none does (16-bit and TF32
// convolutions, and fp32 from Ampere on, run on the tensor cores).
void add_winograd_row(reports::Table& t, const ModelCost& cost) {
  double time_s = 0;
  int kernels = 0;
  for (const LayerCost& c : cost.layers) {
    time_s += c.forward.winograd_s + c.backward.winograd_s;
    kernels += c.forward.winograd_kernels + c.backward.winograd_kernels;
  }
  if (kernels == 0) return;
  t.add_row({"Winograd convolutions",
             fmt::format("{} in {} kernels: cuDNN's F(2x2, 3x3) for 3x3 convolutions at stride 1 in FP32 (2.25x "
                         "fewer multiplies, the transformed tiles through DRAM), where faster than implicit GEMM",
                         human_duration(time_s), kernels)});
}

// class_times: forward and backward GPU time by kernel class (KernelClass), over every layer.
std::array<double, kKernelClasses> class_times(const ModelCost& cost) {
  std::array<double, kKernelClasses> t{};
  for (const LayerCost& c : cost.layers)
    for (std::size_t k = 0; k < kKernelClasses; ++k) t[k] += c.forward.class_s[k] + c.backward.class_s[k];
  return t;
}

// add_class_row: where forward and backward's GPU time goes, by kernel class, largest first, as a
// profiler's kernel table would sum it (the optimizer has its own row).
void add_class_row(reports::Table& t, const ModelCost& cost) {
  const std::array<double, kKernelClasses> times = class_times(cost);
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < kKernelClasses; ++k)
    if (times[k] > 0) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return times[a] > times[b]; });
  std::vector<std::string> parts;
  for (std::size_t k : order)
    parts.push_back(fmt::format("{} {}", kernel_class_name(static_cast<KernelClass>(k)), human_duration(times[k])));
  if (!parts.empty()) t.add_row({"GPU time by class", fmt::format("{}", fmt::join(parts, ", "))});
}

// throw_if_oom: a step that does not fit the GPU is an impossible request (README's exit table:
// 1), as simulate and compare make it, once the table (or JSON) saying so is out.
void throw_if_oom(const MemoryBreakdown& mem, const GpuSpec& gpu) {
  if (!mem.oom) return;
  throw RuntimeError(
      fmt::format("out of memory: the step needs {} of the {}'s {} (gradsync advise names what "
                  "would make it fit)",
                  human_bytes(mem.total), gpu.key, human_bytes(mem.capacity)));
}

void show_model(const ShowOptions& o, std::ostream& out) {
  Model m = load_model_arg(o.model);
  // The step's keys as simulate reads them: defaults, then the flags (a bad value names its flag).
  sim::Scenario s = scenario_of(o.args);
  s.model = o.model;
  apply_model_defaults(s, o.args);  // an imported model's optimizer and grad_accum, where no flag gives them
  const auto given = [&](const char* key) { return o.args.given.at(key)->count() > 0; };
  if (o.batch > 0) {
    if (given("batch_per_gpu"))
      throw UsageError(
          fmt::format("--batch {} and --batch-per-gpu {}: one of them (--batch is --batch-per-gpu's "
                      "shorter name)",
                      o.batch, s.batch_per_gpu));
    s.batch_per_gpu = o.batch;
  }
  const GpuSpec* gpu = nullptr;
  bool measured_gpu_unknown = false;  // a measured step on a device gpus.yaml does not hold (a CPU's)
  // Without --gpu, a model imported from a GPU's trace is shown on that GPU (the device name
  // torch.profiler records is nvidia-smi's, which gpu_spec reads); until 2026-12-02 it was shown on
  // an A100 whatever the trace ran on.
  if (o.gpu.empty() && m.measured) {
    try {
      gpu = &gpu_spec(m.measured->device);
    } catch (const ConfigError&) {
      gpu = nullptr;  // a CPU trace ("cpu"), or a GPU gpus.yaml does not hold: the default, said
      measured_gpu_unknown = true;
    }
  }
  try {
    if (gpu == nullptr) gpu = &gpu_spec(o.gpu.empty() ? kDefaultShowGpu : o.gpu);
  } catch (const ConfigError& e) {
    throw UsageError(fmt::format("--gpu: {}", e.what()));
  }
  ScenarioBasics basics;
  resolve_located(o.args, [&] {
    basics = resolve_basics(s, m, *gpu);
    return s;
  });
  ComputeContext ctx;
  ctx.gpu = gpu;
  ctx.precision = basics.precision;
  apply_framework(ctx, s);
  ctx.batch = basics.batch;
  ctx.seq_len = basics.seq_len;
  ctx.input = input_location(s);
  const Optimizer opt = basics.optimizer;
  const ModelCost cost = model_cost(m, ctx);
  // Micro-steps after the first add into the gradients the first left (grad_accum).
  ComputeContext later_ctx = ctx;
  later_ctx.grads_defined = true;
  const ModelCost later = s.grad_accum > 1 ? model_cost(m, later_ctx) : cost;
  const KernelCost step = optimizer_cost(m, opt, ctx.optimizer_impl, ctx);
  // One GPU runs the plain module (no DDP wrapper): its memory, as DataParallel over one device
  // holds it. DDP's gradient buckets, which a one-GPU DDP run would add, are shown beside it.
  MemoryOptions mo;
  mo.optimizer = opt;
  mo.strategy = Strategy::kDP;
  mo.dp_one_device = true;
  const MemoryBreakdown mem = memory_cost(m, ctx, mo);
  MemoryOptions ddp_mo;
  ddp_mo.optimizer = opt;
  const double ddp_buckets = memory_cost(m, ctx, ddp_mo).buckets;
  const double samples = static_cast<double>(ctx.batch) * static_cast<double>(s.grad_accum);
  const double tokens = samples * (m.default_seq_len ? static_cast<double>(ctx.seq_len) : 1.0);
  const ClipStep clip = clip_step(m, ctx, clip_grad_norm_syncs(parse_pytorch_version(s.pytorch_version)));
  const double step_s = single_gpu_step_s(cost, step, s.grad_accum, &later, s.clip_grad_norm ? &clip : nullptr);

  if (o.json) {
    nlohmann::ordered_json j;
    j["name"] = m.name;
    j["description"] = m.description;
    j["source"] = m.source;
    j["total_params"] = m.total_params();
    j["parameter_bytes"] = m.parameter_bytes();
    j["buffer_bytes"] = m.buffer_bytes();
    j["batch"] = ctx.batch;
    if (m.default_seq_len) j["seq_len"] = ctx.seq_len;
    j["gpu"] = ctx.gpu->key;
    j["precision"] = precision_name(ctx.precision);
    j["optimizer"] = optimizer_name(opt);
    j["optimizer_impl"] = s.optimizer_impl == "apex"                      ? "apex"
                          : ctx.optimizer_impl == OptimizerImpl::kFused   ? "fused"
                          : ctx.optimizer_impl == OptimizerImpl::kForEach ? "foreach"
                                                                          : "for-loop";
    j["zero_grad_fills"] = ctx.zero_grad_fill;
    j["grad_accum"] = s.grad_accum;
    j["pytorch_version"] = s.pytorch_version;
    j["compile"] = ctx.mode.compile;
    j["attention"] = std::string(attention_impl_name(ctx.mode.attention));
    // The settings that change the numbers below, so that two outputs can be told apart.
    j["mixed_precision"] = ctx.mode.master_weights ? "master-weights" : "autocast";
    j["channels_last"] = ctx.mode.channels_last;
    j["pad_to_multiple_of"] = ctx.mode.pad_to_multiple_of;
    j["forward_flops"] = cost.forward_flops;
    j["backward_flops"] = cost.backward_flops;
    {
      // A measured step has no kernel classes: the trace's phases are what ran (empty).
      const std::array<double, kKernelClasses> times = class_times(cost);
      auto& by_class = j["gpu_s_by_class"] = nlohmann::ordered_json::object();
      for (std::size_t k = 0; k < kKernelClasses && !m.measured; ++k)
        if (times[k] > 0) by_class[std::string(kernel_class_name(static_cast<KernelClass>(k)))] = times[k];
    }
    j["forward_s"] = cost.forward_s;
    j["backward_s"] = cost.backward_s;
    j["optimizer_s"] = step.time_s;
    j["clip_grad_norm"] = s.clip_grad_norm;
    // clip_grad_norm_'s kernels (with scaler.unscale_ where only clipping needs it), 0 without it.
    j["clip_grad_norm_s"] = s.clip_grad_norm ? clip.unscale.time_s + clip.norm.time_s + clip.scale.time_s : 0.0;
    j["input"] = s.input;
    j["input_s"] = cost.input.time_s;  // the batch's copy from the host (0: already on the GPU)
    // GradScaler's kernels (scale before each backward, unscale, update) and the host's wait.
    j["grad_scaler"] = ctx.grad_scaler;
    j["grad_scaler_s"] = ctx.grad_scaler ? cost.scaler_scale.time_s * s.grad_accum + cost.scaler_unscale.time_s +
                                               cost.scaler_update.time_s
                                         : 0.0;
    // The step as the GPU runs it: the host issues ahead while kernels run, so it is not the sum of
    // the phases above (each layer there is the larger of its GPU and host time).
    j["step_s"] = step_s;
    j["samples_per_s"] = samples / step_s;
    if (m.default_seq_len) j["tokens_per_s"] = tokens / step_s;
    if (m.measured) {
      const MeasuredStep& ms = *m.measured;
      j["measured"] = {
          {"trace", ms.trace},
          {"device", ms.device},
          {"batch", ms.batch},
          {"steps", ms.steps},
          {"optimizer_steps", ms.optimizer_steps},
          {"optimizer", ms.optimizer.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(ms.optimizer)},
          {"grad_accum", ms.grad_accum},
          {"step_s", ms.step_s},
          {"forward_s", ms.forward_s},
          {"backward_s", ms.backward_s},
          {"optimizer_s", ms.optimizer_s},
          {"other_s", ms.other_s}};
    }
    j["memory"] = {{"parameters", bytes_json(mem.parameters)},
                   {"gradients", bytes_json(mem.gradients)},
                   {"optimizer_state", bytes_json(mem.optimizer_state)},
                   {"activations", bytes_json(mem.activations)},
                   {"loss", bytes_json(mem.loss)},
                   {"ddp_buckets", bytes_json(ddp_buckets)},
                   {"context", bytes_json(mem.context)},
                   {"optimizer_temporaries", bytes_json(mem.optimizer_temporaries)},
                   {"peak_in_optimizer", bytes_json(mem.peak_in_optimizer)},
                   {"total", bytes_json(mem.total)},
                   {"capacity", bytes_json(mem.capacity)},
                   {"oom", mem.oom}};
    auto& params = j["parameters"] = nlohmann::ordered_json::array();
    for (const auto& p : m.parameters) {
      params.push_back({{"name", p.name}, {"shape", p.shape}, {"numel", p.numel()}, {"dtype", dtype_name(p.dtype)}});
    }
    auto& bufs = j["buffers"] = nlohmann::ordered_json::array();
    for (const auto& b : m.buffers) {
      if (!b.registered) continue;
      bufs.push_back({{"name", b.name}, {"shape", b.shape}, {"numel", b.numel()}, {"dtype", dtype_name(b.dtype)}});
    }
    auto& layers = j["layers"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
      const auto& l = m.layers[i];
      const auto& c = cost.layers[i];
      layers.push_back({{"name", l.name},
                        {"kind", layer_kind_name(l.kind)},
                        {"forward_flops", c.forward.flops},
                        {"forward_s", c.forward.time_s},
                        {"backward_s", c.backward.time_s}});
    }
    out << json_text(j, 2) << '\n';
    throw_if_oom(mem, *ctx.gpu);
    return;
  }

  out << fmt::format("# gradsync models show {}{}{}\n", m.name, m.description.empty() ? "" : ": ", m.description);
  out << fmt::format("# from {}{}{}\n", m.origin, m.source.empty() ? "" : "; ", m.source);
  out << fmt::format("# on one {} ({}), {}, batch {}{}{}, optimizer {}; {}; PyTorch {}\n", ctx.gpu->key, ctx.gpu->name,
                     precision_name(ctx.precision), ctx.batch,
                     s.grad_accum > 1 ? fmt::format(" x {} micro-steps", s.grad_accum) : "",
                     m.default_seq_len ? fmt::format(", seq_len {}", ctx.seq_len) : "",
                     optimizer_text(s, precision_name(ctx.precision)),
                     execution_mode_text(effective_mode(m, ctx.mode), has_attention(m)), s.pytorch_version);
  for (const std::string& inert : inert_settings(m, ctx.mode)) out << fmt::format("# {}: it changes nothing\n", inert);
  // The precision asked for against the one the release runs (resolve_basics), as simulate says it.
  if (s.precision == "fp32" && ctx.precision == Precision::kTF32)
    out << fmt::format(
        "# fp32: PyTorch {} runs float32 matmuls as TF32 on the {} by default "
        "(torch.backends.cuda.matmul.allow_tf32 was True from 1.7 to 1.11), so this runs as --precision tf32\n",
        s.pytorch_version, ctx.gpu->key);
  if (s.precision == "tf32" && ctx.precision == Precision::kFP32)
    out << fmt::format(
        "# tf32: the {} has no TF32 tensor cores (they came with Ampere): allow_tf32 leaves its "
        "float32 as it is, so this runs as --precision fp32\n",
        ctx.gpu->key);
  out << "#\n";
  if (m.measured) {
    const MeasuredStep& ms = *m.measured;
    out << fmt::format(
        "# times: measured in {} on {} ({} step{} at batch {}{}), in proportion to batch{} from there; forward "
        "includes the step's other {} (zero_grad, data, gaps); --gpu, --precision and --optimizer do not change "
        "them\n#\n",
        ms.trace, ms.device, ms.steps, ms.steps == 1 ? "" : "s", ms.batch,
        ms.seq_len ? fmt::format(", seq_len {}", *ms.seq_len) : "", ms.seq_len ? " x T" : "",
        human_duration(ms.other_s));
    if (measured_gpu_unknown)
      out << fmt::format(
          "# GPU: {} is no GPU of topologies/hardware/gpus.yaml, so the memory and the other rows are "
          "those of {} (the default; --gpu G for another), while the times stay as measured on {}\n#\n",
          ms.device, ctx.gpu->key, ms.device);
  }
  reports::Table t({{"quantity", "", true}, {"value", "", true}});
  // Their dtypes as the file has them: one, or each in order of first use ("fp32 and fp64").
  std::vector<std::string> dtypes;
  for (const auto& p : m.parameters)
    if (std::string d(precision_of(p.dtype)); std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end())
      dtypes.push_back(d);
  if (dtypes.empty()) dtypes.emplace_back("fp32");
  std::string dtype_text = dtypes.front();
  for (std::size_t i = 1; i < dtypes.size(); ++i) dtype_text += (i + 1 == dtypes.size() ? " and " : ", ") + dtypes[i];
  t.add_row({"parameters", fmt::format("{} ({} tensors, {} {})", with_commas(m.total_params()), m.parameters.size(),
                                       human_bytes(static_cast<double>(m.parameter_bytes())), dtype_text)});
  t.add_row({"buffers", fmt::format("{} tensors, {}",
                                    std::count_if(m.buffers.begin(), m.buffers.end(),
                                                  [](const Buffer& b) { return b.registered; }),
                                    human_bytes(static_cast<double>(m.buffer_bytes())))});
  t.add_row({"layers", std::to_string(m.layers.size())});
  t.add_row({"input/sample", fmt::format("{}{}", human_bytes(static_cast<double>(m.input_bytes.eval(ctx.seq_len))),
                                         m.input_what.empty() ? "" : fmt::format(" ({})", m.input_what))});
  t.add_row({"output/sample", fmt::format("{} elements{}", with_commas(m.output_elements.eval(ctx.seq_len)),
                                          m.output_what.empty() ? "" : fmt::format(" ({})", m.output_what))});
  t.add_row({"forward FLOPs", fmt::format("{:.4g} per sample", cost.forward_flops / static_cast<double>(ctx.batch))});
  int fwd_kernels = 0, bwd_kernels = 0;
  double fwd_host = 0, bwd_host = 0, fwd_bytes = 0, bwd_bytes = 0;
  for (const LayerCost& c : cost.layers) {
    fwd_kernels += c.forward.kernels;
    bwd_kernels += c.backward.kernels;
    fwd_host += c.forward.host_time(ctx.efficiency.launch_s);
    bwd_host += c.backward.host_time(ctx.efficiency.launch_s);
    fwd_bytes += c.forward.bytes;
    bwd_bytes += c.backward.bytes;
  }
  if (m.measured) {
    // The trace's times, as measured: the roofline's kernels, bytes and classes are not what ran.
    t.add_row({"forward", fmt::format("{} (measured, with the step's other time)", human_duration(cost.forward_s))});
    t.add_row({"backward", fmt::format("{} (measured)", human_duration(cost.backward_s))});
  } else {
    t.add_row({"forward", fmt::format("{} ({} kernels, {} moved, host {})", human_duration(cost.forward_s), fwd_kernels,
                                      human_bytes(fwd_bytes), human_duration(fwd_host))});
    t.add_row({"backward", fmt::format("{} ({} kernels, {} moved, host {})", human_duration(cost.backward_s),
                                       bwd_kernels, human_bytes(bwd_bytes), human_duration(bwd_host))});
    add_misaligned_row(t, m, cost, ctx);
    add_winograd_row(t, cost);
    add_class_row(t, cost);
  }
  if (cost.input.kernels > 0)
    t.add_row(
        {"input copy", fmt::format("{} ({} a step over PCIe Gen{} x{} from {} memory{})",
                                   human_duration(cost.input.time_s), human_bytes(cost.input.bytes), ctx.gpu->pcie_gen,
                                   ctx.gpu->pcie_lanes, s.input, cost.input_waits ? ": the host waits for it" : "")});
  if (s.clip_grad_norm)
    t.add_row({"clip_grad_norm_",
               fmt::format("{} (the norm of {} gradients, then each scaled{}{})",
                           human_duration(clip.unscale.time_s + clip.norm.time_s + clip.scale.time_s),
                           trainable_gradients(m).second, clip.unscale.kernels > 0 ? ", after scaler.unscale_" : "",
                           clip.syncs ? "; the host reads the norm" : "")});
  t.add_row({"optimizer", human_duration(step.time_s)});
  t.add_row({"step (1 GPU)", fmt::format("{}, {:.4g} samples/s{}", human_duration(step_s), samples / step_s,
                                         m.default_seq_len ? fmt::format(", {:.4g} tokens/s", tokens / step_s) : "")});
  t.add_row({"memory: params+bufs", human_bytes(mem.parameters)});
  t.add_row({"memory: grads", human_bytes(mem.gradients)});
  t.add_row({"memory: optimizer", human_bytes(mem.optimizer_state)});
  t.add_row({"memory: activations", human_bytes(mem.activations)});
  t.add_row({"memory: loss", human_bytes(mem.loss)});
  t.add_row({"memory: under DDP",
             fmt::format("+{} of gradient buckets, not in this one-GPU total", human_bytes(ddp_buckets))});
  t.add_row({"memory: context", human_bytes(mem.context)});
  if (mem.optimizer_temporaries > 0)
    t.add_row({"memory: temporaries",
               fmt::format("{} more while optimizer.step() runs (the saved tensors and the loss are freed by "
                           "then): {} at that point",
                           human_bytes(mem.optimizer_temporaries), human_bytes(mem.optimizer_peak))});
  t.add_row(
      {"memory: total", fmt::format("{} of {}: {}{}", human_bytes(mem.total), human_bytes(mem.capacity),
                                    mem.oom ? "OUT OF MEMORY" : "fits",
                                    mem.peak_in_optimizer ? " (the peak is in optimizer.step(), not backward)" : "")});
  t.print(out);
  throw_if_oom(mem, *ctx.gpu);
}

}  // namespace

void print_model_list(std::ostream& out) {
  reports::Table t(
      {{"model", "", true}, {"params", ""}, {"fp32", "bytes"}, {"layers", ""}, {"batch", ""}, {"seq_len", ""}});
  for (const auto& name : zoo_model_names()) {
    const Model m = load_model(name);
    t.add_row({m.name, with_commas(m.total_params()), human_bytes(static_cast<double>(m.parameter_bytes())),
               std::to_string(m.layers.size()), std::to_string(m.default_batch),
               m.default_seq_len ? std::to_string(*m.default_seq_len) : "-"});
  }
  t.print(out, {"gradsync models list: the built-in zoo (models/zoo/); 'gradsync models show NAME' for details"});
}

void register_models_command(CLI::App& app) {
  CLI::App* models =
      app.add_subcommand("models", "The model zoo: list models, show one's parameters, costs and memory");
  models->require_subcommand(1);

  CLI::App* list = models->add_subcommand("list", "List the built-in models");
  list->callback([] { print_model_list(std::cout); });

  auto o = std::make_shared<ShowOptions>();
  CLI::App* show = models->add_subcommand("show", "Show one model: parameters, FLOPs, single-GPU times, memory");
  show->add_option("model", o->model, "Zoo name (gradsync models list) or path to a model file")->required();
  show->add_option("--gpu", o->gpu,
                   fmt::format("GPU key or alias from topologies/hardware/gpus.yaml (default: the GPU an imported "
                               "model's step was measured on, else {})",
                               kDefaultShowGpu));
  add_scenario_options(show, o->args, kShowKeys);
  show->add_option("--batch", o->batch, "--batch-per-gpu's shorter name")->check(key_range("batch_per_gpu"));
  show->add_flag("--json", o->json, "Write JSON instead of the table");
  o->args.quiet = true;  // NCCL_* variables of the shell do not reach one GPU's step: no note of them
  show->callback([o] { show_model(*o, std::cout); });
  register_import_trace_command(*models);
}

}  // namespace gradsync::apps
