// contention.hpp: what a compute kernel loses while an NCCL kernel runs beside it on the same GPU
// (DDP's overlap of backward with the bucket allreduces): the SMs that NCCL's blocks hold, and the
// DRAM bandwidth that NCCL's copies take. One model per GPU architecture (contention.cpp), each
// fact with its source.
//
//   const SmSharing s = sm_sharing(gpu_spec("v100"));     // 80 SMs; an NCCL block holds an SM
//   gemm_stretch(80, 80, 1);                              // 2.0: one full wave becomes two
//   memory_stretch(0.8, 0.5);                             // 1.6: a 0.8-of-peak kernel gets 0.5
//
// Closed forms:
// - SM-bound kernels run in waves of one CTA per free SM. A GEMM of `tiles` output tiles takes
//   ceil(tiles / sms) waves alone and ceil(tiles / (sms - held)) beside NCCL (NVIDIA, "Matrix
//   Multiplication Background User's Guide", wave quantisation); kernels of many waves
//   (convolutions, attention) slow in proportion: sms / (sms - held).
// - Memory-bound kernels stream at `demand` of DRAM peak; NCCL's copies take `share` of it; a
//   kernel slows only when both do not fit: max(1, demand / (1 - share)).
#pragma once

#include <string>

#include "core/backend.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {

// SmSharing: how NCCL's kernels and compute kernels share one architecture's SMs.
struct SmSharing {
  int sm_version = 0;
  int sms = 0;                   // the GPU's SM count (gpus.yaml)
  int registers_per_sm = 65536;  // 32-bit registers (CUDA C Programming Guide, "Compute Capabilities")
  int threads_per_sm = 2048;     // resident threads at most (same table)
  // held_per_block: SMs one NCCL block takes from compute kernels (1: the SM; see contention.cpp).
  int held_per_block = 1;
  std::string source;
};

// sm_sharing: the architecture's figures for `gpu` (its SM count, its compute capability's limits).
SmSharing sm_sharing(const GpuSpec& gpu);

// held_sms: SMs that `blocks` NCCL blocks (one per launched channel) take from compute, at most
// all but one (a kernel always makes progress).
int held_sms(const SmSharing& s, int blocks);

// gemm_waves: waves of `tiles` CTAs (one per SM at a time) over `sms` SMs.
double gemm_waves(double tiles, int sms);
// gemm_stretch: how much longer a GEMM of `tiles` output tiles takes with `held` of `sms` SMs
// taken: waves over sms - held against waves over sms (>= 1).
double gemm_stretch(double tiles, int sms, int held);
// linear_stretch: the same for a kernel of many waves: sms / (sms - held).
double linear_stretch(int sms, int held);
// memory_stretch: a memory-bound kernel that streams at `demand` (0-1) of DRAM peak, with NCCL's
// copies taking `share` (0-1) of it: max(1, demand / (1 - share)); `share` is capped at 0.95.
double memory_stretch(double demand, double share);

// contended_time: how long an op of `time_s` with `load` takes while an NCCL kernel runs beside
// it for the whole op, its copies taking `dram_share` of DRAM: its SM-bound kernels at
// load.sm_held_s, its memory-bound ones memory_stretch'd, the rest as alone; never less than the
// host's time when the host, not the GPU, set time_s. An op without a load does not slow.
double contended_time(double time_s, const ComputeLoad& load, double dram_share);

// nccl_dram_bytes: the bytes an NCCL kernel moves through one GPU's DRAM for `in` payload bytes
// received and `out` sent: every byte sent is read from DRAM, every byte received is written to
// it, and a reduction reads its local operand once more per byte received (NCCL's
// recvReduceSend / recvReduceCopy primitives: two sources, one destination).
double nccl_dram_bytes(double in, double out, bool reduces);

}  // namespace gradsync
