// contention.cpp: compute kernels beside NCCL's kernels, per GPU architecture (contention.hpp).
//
// Why an NCCL block takes a whole SM from compute kernels, on every architecture gradsync knows:
// - NCCL runs one block per channel (NCCL_MAX_NCHANNELS: "each channel uses one CUDA block"),
//   of NCCL_MAX_NTHREADS = 640 threads (512 before NCCL 2.12; src/include/device.h).
// - Every NCCL kernel is compiled `__launch_bounds__(NCCL_MAX_NTHREADS, 1)` (src/device/
//   common.h, generate.py): one block per SM, so the compiler may give each of its 640 threads
//   up to 65536 / 640 = 102 registers, nearly the whole register file.
// - A GEMM or convolution CTA of cuBLAS/cuDNN (128-256 threads at 128-255 registers, tens to
//   hundreds of KiB of shared memory) no longer fits on that SM; it waits for another SM.
// The register file is 64 Ki 32-bit registers per SM from Volta (7.0) to Blackwell (12.0), so the
// rule holds on all of them; what differs per architecture is the SM count and the resident
// threads (CUDA C Programming Guide, "Compute Capabilities", table "Technical Specifications per
// Compute Capability").
#include "models/contention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gradsync {
namespace {

struct ArchLimits {
  int sm_version;
  int threads_per_sm;
};

// Resident threads per SM by compute capability (CUDA C Programming Guide, "Technical
// Specifications per Compute Capability": 2048 on 7.0, 8.0, 9.0, 10.0; 1024 on 7.5; 1536 on 8.6,
// 8.9, 12.0).
constexpr ArchLimits kArchs[] = {{70, 2048}, {75, 1024}, {80, 2048},  {86, 1536},
                                 {89, 1536}, {90, 2048}, {100, 2048}, {120, 1536}};

}  // namespace

SmSharing sm_sharing(const GpuSpec& gpu) {
  SmSharing s;
  s.sm_version = gpu.sm_version;
  s.sms = std::max(1, gpu.sms);
  for (const ArchLimits& a : kArchs)
    if (a.sm_version == gpu.sm_version) s.threads_per_sm = a.threads_per_sm;
  s.held_per_block = 1;
  s.source = fmt::format(
      "sm_{}: {} SMs of 64 Ki registers and {} threads; an NCCL block (640 threads, launch bounds of one block per "
      "SM) holds one",
      gpu.sm_version, s.sms, s.threads_per_sm);
  return s;
}

int held_sms(const SmSharing& s, int blocks) {
  return std::clamp(std::max(0, blocks) * s.held_per_block, 0, std::max(0, s.sms - 1));
}

double gemm_waves(double tiles, int sms) { return std::ceil(std::max(1.0, tiles) / std::max(1, sms)); }

double gemm_stretch(double tiles, int sms, int held) {
  const int free = std::max(1, sms - std::max(0, held));
  return std::max(1.0, gemm_waves(tiles, free) / gemm_waves(tiles, sms));
}

double linear_stretch(int sms, int held) {
  const int free = std::max(1, sms - std::max(0, held));
  return static_cast<double>(std::max(1, sms)) / free;
}

double memory_stretch(double demand, double share) {
  const double s = std::clamp(share, 0.0, 0.95);
  return std::max(1.0, demand / (1.0 - s));
}

double contended_time(double time_s, const ComputeLoad& load, double dram_share) {
  if (!(load.gpu_s > 0)) return time_s;
  const double rest = std::max(0.0, load.gpu_s - load.sm_s - load.hbm_s);
  const double gpu =
      rest + std::max(load.sm_s, load.sm_held_s) + load.hbm_s * memory_stretch(load.hbm_demand, dram_share);
  const double host = time_s > load.gpu_s ? time_s : 0.0;  // the host issued slower than the GPU ran
  return std::max(gpu, host);
}

double nccl_dram_bytes(double in, double out, bool reduces) { return out + in * (reduces ? 2.0 : 1.0); }

}  // namespace gradsync
