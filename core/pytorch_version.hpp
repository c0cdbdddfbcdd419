// pytorch_version.hpp: the PyTorch release whose rules a run follows (scenario key
// pytorch_version), and the rules that changed across releases.
//
//   const PytorchVersion v = parse_pytorch_version("1.13.0a0");   // {1, 13}
//   first_bucket_follows_cap(v)                                    // false: 1 MiB first bucket
#pragma once

#include <string>
#include <string_view>

namespace gradsync {

struct PytorchVersion {
  int major = 2;
  int minor = 11;
  bool operator<(const PytorchVersion& o) const { return major != o.major ? major < o.major : minor < o.minor; }
  bool at_least(int ma, int mi) const { return !(*this < PytorchVersion{ma, mi}); }
  std::string text() const;  // "2.11"
};

// kNewestPytorch: the default, the newest release whose rules gradsync models (2.11).
inline constexpr PytorchVersion kNewestPytorch{2, 11};
// kOldestPytorch: the oldest modelled (1.4: DDP's buckets rebuilt from the gradient-ready order).
inline constexpr PytorchVersion kOldestPytorch{1, 4};

// parse_pytorch_version reads "2.3", "1.13.0a0", "2.4.1+cu121" (torch.__version__); ConfigError
// naming the text otherwise, or for a release before 1.4.
PytorchVersion parse_pytorch_version(std::string_view text);
// canonical_pytorch_version: "M.N" of a parsed version (the scenario key's canonical form).
std::string canonical_pytorch_version(std::string_view text);

// The rules (each with the change that introduced it):
// first_bucket_follows_cap: an explicit bucket_cap_mb also caps the first rebuilt bucket
// (2.3; before, the first bucket kept torch.distributed._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB).
inline bool first_bucket_follows_cap(PytorchVersion v) { return v.at_least(2, 3); }
// single_initial_bucket: without find_unused_parameters (or with static_graph) the first
// iteration's plan is one bucket of every gradient (pytorch/pytorch#72843, 1.12; before,
// [1 MiB, cap] as with find_unused_parameters).
inline bool single_initial_bucket(PytorchVersion v) { return v.at_least(1, 12); }
// divides_per_parameter: the Reducer divides each gradient by the world size as it copies it into
// its bucket (at::native::mul_out, one kernel per parameter; pytorch/pytorch#40358, commit 8066fba,
// 1.6); before, it copied each gradient (bucket_view.copy_) and divided the whole bucket once its
// last gradient was in (replica.contents.div_(process_group_->getSize()) in
// Reducer::mark_variable_ready, torch/csrc/distributed/c10d/reducer.cpp:322 at v1.4.0): one more
// kernel per bucket.
inline bool divides_per_parameter(PytorchVersion v) { return v.at_least(1, 6); }
// rebuilds_buckets: after the first synced backward the Reducer rebuilds the buckets once, in the
// order the gradients became ready (pytorch/pytorch#35137, "implement dynamic bucket order in DDP",
// reviewed 2020-04-16 after 1.5's branch: 1.6); before, every iteration keeps the constructed
// buckets (model.parameters() reversed, limits [1 MiB, cap]).
inline bool rebuilds_buckets(PytorchVersion v) { return v.at_least(1, 6); }
// has_static_graph: DDP's static graph (pytorch/pytorch#54995, 1.9): the private call
// ddp_model._set_static_graph() in 1.9 and 1.10, the constructor's static_graph=True from 1.11
// (pytorch/pytorch#71459, "[PT1.11] make static graph to be stable").
inline bool has_static_graph(PytorchVersion v) { return v.at_least(1, 9); }
// static_graph_call: how a script of release `v` turns it on.
inline const char* static_graph_call(PytorchVersion v) {
  return v.at_least(1, 11) ? "DDP(model, static_graph=True)" : "ddp_model._set_static_graph() after DDP(model)";
}
// foreach_optimizers: torch.optim uses its multi-tensor (foreach) implementations on CUDA by
// default and zero_grad sets gradients to None (2.0; before, a Python loop over the parameters and
// zero_grad filling zeros).
inline bool foreach_optimizers(PytorchVersion v) { return v.at_least(2, 0); }
// Features a script can use only from some release, refused before it (check_scenario_keys):
// has_compile: torch.compile (2.0). has_sdpa: F.scaled_dot_product_attention, its flash and
// memory-efficient kernels (2.0). has_comm_hooks: DDP.register_comm_hook with the hooks of
// torch.distributed.algorithms.ddp_comm_hooks, fp16 compression, quantization and PowerSGD (1.8;
// 1.7 had a prototype without that module). has_bf16_comm_hook: bf16_compress_hook
// (pytorch/pytorch#63260, August 2021: 1.10). has_bf16_autocast: autocast to bfloat16 on CUDA
// (torch.autocast's dtype, 1.10). has_channels_last: torch.channels_last (1.5). has_amp_autocast:
// torch.cuda.amp.autocast, the fp16 autocast (1.6; apex's amp before it). has_fused_adam: Adam's
// fused=True (1.13); AdamW's came in 2.0 (has_fused_adamw).
inline bool has_compile(PytorchVersion v) { return v.at_least(2, 0); }
inline bool has_sdpa(PytorchVersion v) { return v.at_least(2, 0); }
inline bool has_comm_hooks(PytorchVersion v) { return v.at_least(1, 8); }
inline bool has_bf16_comm_hook(PytorchVersion v) { return v.at_least(1, 10); }
inline bool has_bf16_autocast(PytorchVersion v) { return v.at_least(1, 10); }
inline bool has_channels_last(PytorchVersion v) { return v.at_least(1, 5); }
inline bool has_amp_autocast(PytorchVersion v) { return v.at_least(1, 6); }
inline bool has_fused_adam(PytorchVersion v) { return v.at_least(1, 13); }
inline bool has_fused_adamw(PytorchVersion v) { return v.at_least(2, 0); }
// has_fused_sgd: SGD's fused=True (pytorch/pytorch#116585, "[mta] Fused SGD", 2024-01: 2.3).
inline bool has_fused_sgd(PytorchVersion v) { return v.at_least(2, 3); }
// has_set_to_none: Optimizer.zero_grad(set_to_none=...) (1.7; zero_grad() took no argument before).
inline bool has_set_to_none(PytorchVersion v) { return v.at_least(1, 7); }
// has_gradient_as_bucket_view: DDP(gradient_as_bucket_view=True) (pytorch/pytorch#44344,
// 2020-09: 1.7).
inline bool has_gradient_as_bucket_view(PytorchVersion v) { return v.at_least(1, 7); }
// matmul_tf32_by_default: torch.backends.cuda.matmul.allow_tf32 defaulted to True from 1.7 (when
// TF32 came) to 1.11, and to False from 1.12 (pytorch/pytorch#76509): a float32 script on Ampere
// or later ran its matmuls as TF32 in those releases.
inline bool matmul_tf32_by_default(PytorchVersion v) { return v.at_least(1, 7) && !v.at_least(1, 12); }
// cudnn_tf32_by_default: torch.backends.cudnn.allow_tf32 came with TF32 in 1.7 and has defaulted to
// True since; before, every float32 convolution ran in float32 (there was no TF32 to allow).
inline bool cudnn_tf32_by_default(PytorchVersion v) { return v.at_least(1, 7); }

// clip_grad_norm_syncs: before PyTorch 1.10, torch.nn.utils.clip_grad_norm_ branched in Python on a
// tensor the GPU computed (`if clip_coef < 1:`, and in 1.9 also `if total_norm.isnan() or
// total_norm.isinf():`), so the host waited for every kernel queued before it (the backward and
// DDP's allreduces) before it issued the scaling and the optimizer (pytorch/pytorch#60691); from
// 1.10 the coefficient is clamped on the GPU and nothing waits (pytorch/pytorch#61042).
inline bool clip_grad_norm_syncs(PytorchVersion v) { return !v.at_least(1, 10); }
// adam_lerps_first_moment: Adam and AdamW update their first moment with one lerp_ kernel
// (exp_avg.lerp_(grad, 1 - beta1), _foreach_lerp_ in the foreach path) instead of mul_ then add_
// (pytorch/pytorch#104796, "[optim] use lerp whenever possible", merged 2023-07-11: 2.1).
inline bool adam_lerps_first_moment(PytorchVersion v) { return v.at_least(2, 1); }

}  // namespace gradsync
