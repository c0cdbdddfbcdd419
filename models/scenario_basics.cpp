// scenario_basics.cpp: model, precision, optimizer, batch and the numeric keys of a scenario.
#include "models/scenario_basics.hpp"

#include <fmt/format.h>

#include <optional>

#include "core/pytorch_version.hpp"
#include "core/scenario_keys.hpp"
#include "models/op_cost.hpp"

namespace gradsync {

Model scenario_model(const Scenario& s) {
  return scenario_field("model", s.model, [&] { return load_model(s.model); });
}

ScenarioBasics resolve_basics(const Scenario& s, Model& model, const GpuSpec& gpu) {
  check_scenario_keys(s);  // every key's own rule (core/scenario_keys.hpp), and warmup < iterations
  ScenarioBasics r;
  r.precision = scenario_field("precision", s.precision, [&] {
    // The default: bf16 where the GPU has it and the release's autocast takes it (1.10), else fp16
    // autocast; before torch.cuda.amp (1.6) there was no autocast, and the default is float32.
    const PytorchVersion version = parse_pytorch_version(s.pytorch_version);
    const bool bf16 = gpu.bf16_flops && has_bf16_autocast(version);
    const Precision fallback =
        !has_amp_autocast(version) && s.mixed_precision != "master-weights" ? Precision::kFP32 : Precision::kFP16;
    // A model imported from a measured step runs in the precision it was measured in (its memory).
    const std::optional<Precision> measured = model.measured ? model.measured->precision : std::nullopt;
    Precision p = !s.precision.empty() ? parse_precision(s.precision)
                  : measured           ? *measured
                  : bf16               ? Precision::kBF16
                                       : fallback;
    // float32 from 1.7 to 1.11 on a GPU with TF32 tensor cores: matmuls ran as TF32 by default
    // (convolutions do from 1.7 on, cudnn.allow_tf32; before 1.7 neither): the run is tf32.
    if (p == Precision::kFP32 && gpu.sm_version >= 80 &&
        matmul_tf32_by_default(parse_pytorch_version(s.pytorch_version)))
      p = Precision::kTF32;
    // TF32 before Ampere: allow_tf32 has no tensor cores to use, float32 stays float32 (the run is fp32).
    if (p == Precision::kTF32 && gpu.sm_version > 0 && gpu.sm_version < 80) p = Precision::kFP32;
    if (s.precision.empty() && measured) {
      // The measured step's precision, which no key gave: the model file's field is named.
      try {
        gpu.peak_flops(p);
      } catch (const ConfigError& e) {
        throw UsageError(
            fmt::format("{} measured.precision {} (the precision its step was measured in, the default "
                        "of runs of the model): {}; give --precision to run it in another",
                        model.origin, precision_name(p), e.what()));
      }
    }
    gpu.peak_flops(p);
    return p;
  });
  if (s.mixed_precision == "master-weights")
    scenario_field("mixed_precision", s.mixed_precision, [&] {
      half_model(model, r.precision);
      return 0;
    });
  scenario_field("attention", s.attention, [&] {
    // A model without attention never calls F.scaled_dot_product_attention: the key changes
    // nothing there (the header says so) and its kernels' limits do not apply.
    const ExecutionMode mode = effective_mode(model, execution_mode(s.compile, s.attention));
    check_attention_precision(mode, r.precision);
    check_attention_gpu(mode, gpu.sm_version, gpu.name, parse_pytorch_version(s.pytorch_version));
    // A model that calls F.scaled_dot_product_attention registers no mask of its own (nanoGPT).
    for (Buffer& b : model.buffers) b.registered = !(b.math_attention_only && mode.attention != AttentionImpl::kMath);
    return 0;
  });
  // resize_token_embeddings(pad_to_multiple_of=N) widens the parameters, not only the products.
  pad_vocabulary(model, s.pad_to_multiple_of);
  r.optimizer = parse_optimizer(s.optimizer);
  // torch.optim.Adam and AdamW refuse sparse gradients ("Adam does not support sparse gradients,
  // please consider SparseAdam instead", adam.py); SGD takes them.
  if (r.optimizer == Optimizer::kAdam || r.optimizer == Optimizer::kAdamW) {
    for (const Parameter& p : model.parameters) {
      if (!p.sparse_grad || !p.requires_grad) continue;
      throw ConfigError(fmt::format(
          "optimizer \"{}\": {}'s parameter {} has a sparse gradient (sparse_grad: nn.Embedding(sparse=True)), "
          "which torch.optim.{} refuses (\"does not support sparse gradients, please consider SparseAdam "
          "instead\"); expected sgd or sgd-momentum (SparseAdam is not modelled), or a dense embedding",
          s.optimizer, model.name, p.name, r.optimizer == Optimizer::kAdam ? "Adam" : "AdamW"));
    }
  }
  r.batch = s.batch_per_gpu > 0 ? s.batch_per_gpu : model.default_batch;
  if (s.seq_len > 0)
    scenario_field("seq_len", std::to_string(s.seq_len), [&] {
      model.check_seq_len(s.seq_len);
      return 0;
    });
  r.seq_len = model.seq_len(s.seq_len > 0 ? std::optional<std::int64_t>(s.seq_len) : std::nullopt);
  // Sizes that overflow at this batch and sequence length name the keys that set them.
  scenario_field(s.batch_per_gpu > 0 ? "batch_per_gpu" : "seq_len",
                 s.batch_per_gpu > 0 ? std::to_string(s.batch_per_gpu) : std::to_string(r.seq_len), [&] {
                   model.check_sizes(r.seq_len, r.batch);
                   return 0;
                 });
  r.hook = parse_comm_hook(s.comm_hook);
  return r;
}

void apply_measured_defaults(Scenario& s, const Model& m, const std::function<bool(std::string_view)>& left) {
  if (!m.measured) return;
  if (!m.measured->optimizer.empty() && left("optimizer")) s.optimizer = m.measured->optimizer;
  if (m.measured->grad_accum > 1 && left("grad_accum")) s.grad_accum = m.measured->grad_accum;
}

void apply_framework(ComputeContext& ctx, const Scenario& s) {
  ctx.mode = execution_mode(s.compile, s.attention);
  ctx.mode.channels_last = s.channels_last;
  ctx.mode.pad_to_multiple_of = s.pad_to_multiple_of;
  ctx.mode.master_weights = s.mixed_precision == "master-weights";
  const PytorchVersion version = parse_pytorch_version(s.pytorch_version);
  ctx.foreach = foreach_optimizers(version);
  ctx.lerp_moments = adam_lerps_first_moment(version);
  ctx.cudnn_tf32 = cudnn_tf32_by_default(version);
  const std::string& impl = s.optimizer_impl;
  // apex.optimizers' Fused* run the same kind of kernels as fused=True: multi_tensor_apply over
  // the whole parameter list, one launch per chunk of tensors (apex/csrc/multi_tensor_adam.cu).
  ctx.optimizer_impl = impl == "fused" || impl == "apex" ? OptimizerImpl::kFused
                       : impl == "foreach"               ? OptimizerImpl::kForEach
                       : impl == "for-loop"              ? OptimizerImpl::kSingleTensor
                       : ctx.foreach                     ? OptimizerImpl::kForEach
                                                         : OptimizerImpl::kSingleTensor;
  // zero_grad's default became set_to_none=True in PyTorch 2.0, with the foreach optimizers.
  ctx.zero_grad_fill = s.zero_grad && (s.set_to_none == "false" || (s.set_to_none == "auto" && !ctx.foreach));
  // A loop without zero_grad leaves every gradient a tensor after the first step: each later
  // backward's AccumulateGrad adds into it (torch/csrc/autograd/functions/accumulate_grad.h).
  ctx.grads_defined = ctx.zero_grad_fill || !s.zero_grad;
  ctx.grad_scaler = uses_grad_scaler(s, precision_name(ctx.precision));
}

std::string optimizer_text(const Scenario& s, std::string_view precision) {
  ComputeContext ctx;
  apply_framework(ctx, s);
  const char* impl = s.optimizer_impl == "apex"                      ? "apex fused"
                     : ctx.optimizer_impl == OptimizerImpl::kFused   ? "fused"
                     : ctx.optimizer_impl == OptimizerImpl::kForEach ? "foreach"
                                                                     : "for-loop";
  // Without an optimizer step the implementation shows only in zero_grad's fill, when it fills.
  const char* zeroing = !s.zero_grad         ? ", no zero_grad: gradients accumulate"
                        : ctx.zero_grad_fill ? ", zero_grad fills zeros"
                                             : "";
  if (s.optimizer == "none" && !ctx.zero_grad_fill && s.zero_grad)
    return fmt::format("none{}", s.clip_grad_norm ? " after clip_grad_norm_" : "");
  return fmt::format("{} ({}{}){}{}", s.optimizer, impl, zeroing, s.clip_grad_norm ? " after clip_grad_norm_" : "",
                     uses_grad_scaler(s, precision) ? " under GradScaler" : "");
}

ScenarioFacts scenario_facts(const ScenarioBasics& b, const Model& model, int gpus) {
  ScenarioFacts f;
  f.gpus = gpus;
  f.batch_per_gpu = b.batch;
  if (model.default_seq_len) f.seq_len = b.seq_len;
  f.precision = std::string(precision_name(b.precision));
  return f;
}

}  // namespace gradsync
