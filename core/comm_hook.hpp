// comm_hook.hpp: DDP communication hooks, what each sends and computes per bucket
// (SEMANTICS.md §2): default allreduce; fp16 and bf16 compression; per-tensor quantization to
// uint8 over allgather; PowerSGD with rank r from a start iteration.
//
//   const CommHook h = parse_comm_hook("powersgd:rank=4,start_iter=10");
//   hook_traffic(h, bucket_shapes, world, iteration).collectives  // what goes on the wire
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"

namespace gradsync {

enum class CommHookKind { kNone, kFP16, kBF16, kQuantize, kPowerSGD };

// CommHook: the registered hook and its state options.
struct CommHook {
  CommHookKind kind = CommHookKind::kNone;
  // PowerSGDState: matrix_approximation_rank (default 1) and start_powerSGD_iter (default 1000;
  // PyTorch requires > 1 with error feedback or warm start, both on by default).
  int powersgd_rank = 1;
  int powersgd_start_iter = 1000;
};

// comm_hook_name: "none", "fp16", "bf16", "quantize", "powersgd:rank=R,start_iter=S".
std::string comm_hook_name(const CommHook& h);
// parse_comm_hook reads "none" (or "allreduce"), "fp16", "bf16", "quantize", "powersgd" with
// optional ":rank=R,start_iter=S". ConfigError naming the text and the choices otherwise.
CommHook parse_comm_hook(std::string_view text);

// HookStep is one thing a hook does for a bucket, in order: a kernel (on the compute stream when
// before the first collective, as the hook body runs in the autograd thread; on the comm stream
// after it, in a future's callback) or a collective.
struct HookStep {
  enum class Kind { kKernel, kMatmul, kAllreduce, kAllgather } kind = Kind::kKernel;
  std::string name;  // "compress", "allreduce", "powersgd:p", ...
  Bytes bytes = 0;   // collective: each rank's buffer; kernel: bytes read plus written
  DType dtype = DType::kFloat32;
  double flops = 0;  // matmul
  int kernels = 1;
};

// hook_steps: what hook `h` does for one bucket of gradients of type `grad` (float32; a 16-bit
// model's bf16 or fp16) with the given tensor shapes, in a group of `world` ranks, in synced
// iteration `iteration` (1-based; PowerSGD compresses from iteration start_iter + 1 on, as its
// state counts iterations from 0). Without a hook the bucket is one allreduce in its own type.
std::vector<HookStep> hook_steps(const CommHook& h, const std::vector<std::vector<std::int64_t>>& shapes, int world,
                                 int iteration, DType grad = DType::kFloat32);

// PowerSgdSplit: how PowerSGD treats a bucket's tensors: the matrices it compresses (P: n x r and
// Q: m x r elements each) and the elements it allreduces uncompressed.
struct PowerSgdSplit {
  double elements = 0, uncompressed = 0, p_elems = 0, q_elems = 0, mm_flops = 0, mm_bytes = 0;
  int matrices = 0;
};
PowerSgdSplit powersgd_split(const CommHook& h, const std::vector<std::vector<std::int64_t>>& shapes);

// powersgd_state_bytes: the memory PowerSGDState keeps once it compresses (0 for another hook):
// with its defaults (use_error_feedback, warm_start) one error tensor the size of each bucket
// (state.error_dict) and each compressed matrix's P and Q (state.p_memory_dict, q_memory_dict),
// in the gradients' type (powerSGD_hook.py).
double powersgd_state_bytes(const CommHook& h, const std::vector<std::vector<std::int64_t>>& shapes, DType grad);

// powersgd_never_compresses: whether `h` is PowerSGD and a run of `iterations` synced iterations
// ends before it compresses (it compresses from iteration start_iter + 1; before, its hook is a
// plain allreduce: PowerSGDState's start_powerSGD_iter, default 1000).
inline bool powersgd_never_compresses(const CommHook& h, int iterations) {
  return h.kind == CommHookKind::kPowerSGD && iterations <= h.powersgd_start_iter;
}

// hook_divides: whether the hook divides by the world size itself (then the Reducer's copy into
// the bucket does not).
inline bool hook_divides(const CommHook& h) { return h.kind != CommHookKind::kNone; }

}  // namespace gradsync
