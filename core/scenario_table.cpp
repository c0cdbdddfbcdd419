// scenario_table.cpp: the rows of the scenario key table (scenario_keys.hpp): every key's name,
// flag, help, default, kind, bounds and canonical form.
#include "core/scenario_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>

#include "core/comm_hook.hpp"
#include "core/error.hpp"
#include "core/nccl_release.hpp"
#include "core/pytorch_version.hpp"
#include "core/scenario.hpp"
#include "core/text.hpp"

namespace gradsync {
namespace {

// Bounds that keep every product of keys inside 64 bits (global batch = batch x GPUs x
// grad_accum < 2^60) and every run inside memory: beyond them a value is a typo, not a cluster.
constexpr std::int64_t kMaxGpus = 1 << 20;                  // 1,048,576 GPUs
constexpr std::int64_t kMaxBatch = 1 << 24;                 // samples per GPU
constexpr std::int64_t kMaxSeqLen = 1 << 24;                // tokens per sample
constexpr std::int64_t kMaxGradAccum = 1 << 16;             // micro-steps per optimizer step, each simulated
constexpr std::int64_t kMaxGlobalBatch = kMaxBatch * 1024;  // 2^34: a per-GPU batch within kMaxBatch on 1,024 GPUs
// Iterations: a simulated steady iteration repeats exactly (the simulator is deterministic), so a
// mean over more than a thousand says nothing more, and their trace would not fit in memory.
constexpr std::int64_t kMaxIterations = 1000;
constexpr std::int64_t kMaxBucketMiB = 1 << 30;  // 1 PiB: far above any model's gradients

// check_comm_hook: parse_comm_hook's rule, its message without the value it quotes (the caller
// names the key and the value).
// The canonical text is the hook as it runs, its options resolved ("powersgd:rank=2" records
// "powersgd:rank=2,start_iter=1000"; "allreduce" records "none").
std::string check_comm_hook(std::string_view text) {
  try {
    return comm_hook_name(parse_comm_hook(text));
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    const std::string prefix = fmt::format("comm hook \"{}\": ", text);
    throw ConfigError(what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what);
  }
}

// canonical_gpu_spread: a percentage from 0 to 20 (the paper's worst cluster spread 22% from
// fastest to slowest GPU is far below a 20% standard deviation), written as {:g} writes it.
std::string canonical_gpu_spread(std::string_view text) {
  const std::string t(trim_blanks(text));
  // Decimal digits with at most one point, as the other numeric keys take them (no 0x10, 1e1).
  const bool decimal = !t.empty() && t.find_first_not_of("0123456789.") == std::string::npos &&
                       std::count(t.begin(), t.end(), '.') <= 1 && t != ".";
  char* end = nullptr;
  const double v = decimal ? std::strtod(t.c_str(), &end) : -1.0;
  if (!decimal || end != t.c_str() + t.size() || !std::isfinite(v) || v < 0 || v > 20)
    throw ConfigError(
        "expected a percentage from 0 to 20 (1.5: one GPU's compute rate varies by 1.5% about the median)");
  return fmt::format("{:g}", v);
}

constexpr std::int64_t kMaxPadMultiple = 1 << 16;  // far above any vocabulary padding in use (64, 128)

}  // namespace

std::vector<ScenarioKey> make_scenario_table() {
  using S = Scenario;
  std::vector<ScenarioKey> table{
      {.name = "model",
       .flag = "--model",
       .value_name = "NAME|FILE",
       .help = "Model: a zoo name (bert-base, bert-large, bert-base-pretraining, bert-large-pretraining, gpt2, "
               "gpt2-hf, gpt2-medium, gpt2-large, gpt2-xl, llama2-7b, nanogpt, resnet18, resnet50, resnet101, vgg16, "
               "vit-b-16; gradsync list models) or a model file",
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
      {.name = "nnodes",
       .flag = "--nnodes",
       .value_name = "N",
       .help = "torchrun --nnodes: the first N hosts of the topology take part (with nproc_per_node: gpus = "
               "nnodes x nproc_per_node)",
       .default_text = "the hosts the GPUs span",
       .kind = KeyKind::kCount,
       .field = &S::nnodes,
       .max = kMaxGpus,
       .engine_default = true},
      {.name = "nproc_per_node",
       .flag = "--nproc-per-node",
       .value_name = "P",
       .help = "torchrun --nproc-per-node: ranks on each node (P of its GPUs; with nnodes: gpus = nnodes x P)",
       .default_text = "every GPU of each node",
       .kind = KeyKind::kCount,
       .field = &S::nproc_per_node,
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
      {.name = "global_batch",
       .flag = "--global-batch",
       .value_name = "G",
       .help = "Samples per optimizer step over all GPUs, as a script that fixes its global batch gives it: each "
               "rank's batch_per_gpu is G / (gpus x grad_accum), which must divide; with --vary gpus, the same G at "
               "every GPU count (strong scaling). Not with batch_per_gpu",
       .default_text = "batch_per_gpu x gpus x grad_accum",
       .kind = KeyKind::kCount,
       .field = &S::global_batch,
       .max = kMaxGlobalBatch,
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
       .default_text = "bf16 where the GPU has it, else fp16; fp32 before PyTorch 1.6, which had no autocast",
       .kind = KeyKind::kChoice,
       .field = &S::precision,
       .choices = {"fp32", "tf32", "bf16", "fp16"},
       .engine_default = true},
      {.name = "mixed_precision",
       .flag = "--mixed-precision",
       .value_name = "STYLE",
       .help = "How bf16 or fp16 runs: autocast (torch.autocast: products and convolutions in 16 bits; softmax, "
               "layer norm and losses in float32; casts between) or master-weights (the model itself in 16 bits, "
               "as model.half(), apex amp O2, DeepSpeed's and Megatron-LM's fp16/bf16 run it: every op, gradient "
               "and DDP bucket in 16 bits, the optimizer updating float32 master copies)",
       .default_text = "autocast",
       .kind = KeyKind::kChoice,
       .field = &S::mixed_precision,
       .choices = {"autocast", "master-weights"}},
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
               "(fp16/bf16 tensor cores, and fp32/tf32 ones from Ampere on, which run as TF32)",
       .default_text = "false: NCHW, as an unmodified script",
       .kind = KeyKind::kSwitch,
       .field = &S::channels_last},
      {.name = "pad_to_multiple_of",
       .flag = "--pad-to-multiple-of",
       .value_name = "N",
       .help = "model.resize_token_embeddings(len(tokenizer), pad_to_multiple_of=N) (nanoGPT: vocab_size 50304): "
               "the vocabulary, the first embedding's rows, padded to a multiple of N in every product that spans "
               "it, so that cuBLAS's aligned kernels run them, and in every per-token table (the embedding, an "
               "untied output projection): DDP's buckets, the optimizer and memory hold the padded rows",
       .default_text = "1: the model's vocabulary as it is",
       .kind = KeyKind::kCount,
       .field = &S::pad_to_multiple_of,
       .max = kMaxPadMultiple},
      {.name = "pytorch_version",
       .flag = "--pytorch-version",
       .value_name = "M.N",
       .help = "The PyTorch release whose rules apply: DDP's first iteration (one bucket from 1.12), its first "
               "rebuilt bucket under an explicit bucket_cap_mb (the cap from 2.3, 1 MiB before), static_graph "
               "(from 1.9), the Reducer's division by the world size (in each gradient's copy from 1.6; the whole "
               "bucket once full before), buckets rebuilt from the gradient-ready order (from 1.6), torch.optim's "
               "foreach default (2.0; a Python loop over the parameters "
               "before); "
               "torch.__version__ is accepted",
       .default_text = "2.11",
       .kind = KeyKind::kSpec,
       .field = &S::pytorch_version,
       .canonical = canonical_pytorch_version},
      {.name = "nccl_version",
       .flag = "--nccl-version",
       .value_name = "M.N",
       .help = "The NCCL release the run links (2.21, or 2.21.5 as NCCL's tags name it), whose default P2P level "
               "applies: P2P up to PHB in 2.4; across sockets (SYS) on AMD CPUs through 2.22 and on Intel ones "
               "(PHB) in 2.7-2.8; from 2.23 no farther than PXB but for 2 GPUs on AMD; auto: the release "
               "PyTorch's binaries bundle for --pytorch-version (2.28 for 2.11, 2.21 for 2.5-2.6). NCCL's "
               "tuning model: 2.27's before 2.28, then the release's (2.28, 2.29; 2.30 takes 2.29's)",
       .default_text = "auto",
       .kind = KeyKind::kSpec,
       .field = &S::nccl_version,
       .canonical = canonical_nccl_version},
      {.name = "optimizer",
       .flag = "--optimizer",
       .value_name = "OPT",
       .help = "sgd, sgd-momentum, adam or adamw; none: no optimizer.step() (a benchmark that times forward "
               "and backward only; zero_grad still runs)",
       .default_text = "adamw",
       .kind = KeyKind::kChoice,
       .field = &S::optimizer,
       .choices = {"sgd", "sgd-momentum", "adam", "adamw", "none"}},
      {.name = "optimizer_impl",
       .flag = "--optimizer-impl",
       .value_name = "IMPL",
       .help = "torch.optim's implementation: foreach (multi-tensor kernels: the default from PyTorch 2.0), fused "
               "(fused=True: one kernel per tensor list), for-loop (foreach=False: a Python loop over the "
               "parameters, the default before 2.0), apex (NVIDIA apex's FusedAdam, FusedLAMB or FusedSGD: "
               "fused multi-tensor kernels in any release, as NVIDIA's DeepLearningExamples run them), or auto: the "
               "default of --pytorch-version",
       .default_text = "auto",
       .kind = KeyKind::kChoice,
       .field = &S::optimizer_impl,
       .choices = {"auto", "foreach", "fused", "for-loop", "apex"}},
      {.name = "set_to_none",
       .flag = "--set-to-none",
       .value_name = "auto|true|false",
       .help = "optimizer.zero_grad(set_to_none=...): false writes zeros into every gradient each step "
               "(_foreach_zero_, or a fill_ per parameter with the for-loop optimizer); auto: the default of "
               "--pytorch-version (True from 2.0)",
       .default_text = "auto",
       .kind = KeyKind::kChoice,
       .field = &S::set_to_none,
       .choices = {"auto", "true", "false"}},
      {.name = "zero_grad",
       .flag = "--zero-grad",
       .value_name = "true|false",
       .help = "the loop calls optimizer.zero_grad() (or model.zero_grad()) every step; --zero-grad=false: it never "
               "does, as PyTorch's DDP benchmark loops, so each backward's AccumulateGrad adds into the gradients "
               "the last step left (a read of both and a write per parameter) and set_to_none does not apply",
       .default_text = "true",
       .kind = KeyKind::kSwitch,
       .field = &S::zero_grad},
      {.name = "input",
       .flag = "--input",
       .value_name = "WHERE",
       .help = "where each batch starts: pageable (a DataLoader's default pin_memory=False, then x.to(device): "
               "the host waits for the copy), pinned (pin_memory=True and x.to(device, non_blocking=True): the "
               "copy is queued and the host goes on) or device (already on the GPU: synthetic data, as PyTorch's "
               "DDP benchmark); the copy runs on the current stream either way",
       .default_text = "pageable",
       .kind = KeyKind::kChoice,
       .field = &S::input,
       .choices = {"pageable", "pinned", "device"}},
      {.name = "bucket_cap_mb",
       .flag = "--bucket-cap-mb",
       .value_name = "MiB",
       .help = "DDP(bucket_cap_mb=...): gradient bucket size in MiB, or with a unit (25MiB, 512KiB); 0: one bucket "
               "per gradient, as DDP makes it",
       .default_text = "25",
       .kind = KeyKind::kSizeMiB,
       .field = &S::bucket_cap_mb,
       .reach = KeyReach::kDdp,
       .min = 0,
       .max = kMaxBucketMiB,
       .engine_default = true},
      {.name = "first_bucket_mb",
       .flag = "--first-bucket-mb",
       .value_name = "MiB",
       .help = "The first rebuilt bucket's cap (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES); 0: the first "
               "bucket holds one gradient, as bucket_cap_mb 0 makes every bucket",
       .default_text = "1 without bucket_cap_mb, else bucket_cap_mb (PyTorch >= 2.3)",
       .kind = KeyKind::kSizeMiB,
       .field = &S::first_bucket_mb,
       .reach = KeyReach::kDdp,
       .min = 0,
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
      {.name = "broadcast_buffers",
       .flag = "--broadcast-buffers",
       .value_name = "true|false",
       .help = "DDP(broadcast_buffers=...): before every synced forward, rank 0's buffers (BatchNorm statistics) "
               "are broadcast to every rank; --broadcast-buffers=false as PyTorch's DDP benchmark sets it",
       .default_text = "true",
       .kind = KeyKind::kSwitch,
       .field = &S::broadcast_buffers,
       .reach = KeyReach::kDdp},
      {.name = "allreduce_after_backward",
       .flag = "--allreduce-after-backward",
       .help = "reduce the gradients only after the whole backward, bucket by bucket in order: apex's "
               "DDP(delay_allreduce=True), or DDP's no_sync() with a manual allreduce; nothing overlaps backward",
       .default_text = "false",
       .kind = KeyKind::kSwitch,
       .field = &S::allreduce_after_backward,
       .reach = KeyReach::kDdp},
      {.name = "clip_grad_norm",
       .flag = "--clip-grad-norm",
       .help = "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm) before every optimizer step, as "
               "nanoGPT does: a norm over every gradient, then every gradient scaled",
       .default_text = "false",
       .kind = KeyKind::kSwitch,
       .field = &S::clip_grad_norm},
      {.name = "grad_scaler",
       .flag = "--grad-scaler",
       .value_name = "auto|true|false",
       .help = "torch.cuda.amp.GradScaler around backward and the optimizer step: the loss scaled, every gradient "
               "unscaled and checked for inf/NaN in one pass, and (unless the optimizer is fused) the host waiting "
               "for the GPU before optimizer.step(); auto: with fp16 autocast, which needs it",
       .default_text = "auto",
       .kind = KeyKind::kChoice,
       .field = &S::grad_scaler,
       .choices = {"auto", "true", "false"}},
      {.name = "iterations",
       .flag = "--iterations",
       .value_name = "N",
       .help = "Optimizer steps simulated (bench, validate: run)",
       .default_text = "5",
       .kind = KeyKind::kCount,
       .field = &S::iterations,
       .max = kMaxIterations},
      {.name = "warmup",
       .flag = "--warmup",
       .value_name = "N",
       .help = "Leading steps left out of the steady-state mean (fewer than iterations; unset, 3 or iterations - 1 "
               "where fewer run, per point under sweep --vary iterations)",
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
      {.name = "gpu_spread_pct",
       .flag = "--gpu-spread-pct",
       .value_name = "PCT",
       .help = "How unalike the job's GPUs run, in percent: the standard deviation of one GPU's sustained compute "
               "rate about its model's median (power management and manufacturing variation; Sinha et al., SC22). "
               "A synchronous step waits for the slowest GPU, so N GPUs run SM-bound kernels at the pace of the "
               "slowest of N; 0: alike. Not applied with a calibration, whose times were measured",
       .default_text = "1.5",
       .kind = KeyKind::kSpec,
       .field = &S::gpu_spread_pct,
       .canonical = canonical_gpu_spread,
       .decimal = true},
  };
  std::vector<ScenarioKey> nccl = nccl_scenario_keys();
  table.insert(table.end(), std::make_move_iterator(nccl.begin()), std::make_move_iterator(nccl.end()));
  return table;
}

}  // namespace gradsync
