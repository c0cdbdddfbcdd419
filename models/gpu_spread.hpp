// gpu_spread.hpp: GPUs of one model do not run alike. Manufacturing variation and each board's
// power management give identical GPUs of a cluster different sustained clocks (Sinha et al.,
// "Not All GPUs Are Created Equal: Characterizing Variability in Large-Scale, Accelerator-Rich
// Systems", SC22, arXiv 2208.11035: V100s of Summit, Vortex, Longhorn and Frontera's RTX 5000s,
// SGEMM, ResNet-50, BERT, LAMMPS). A synchronous step (every DDP allreduce, DataParallel's gather)
// waits for the slowest of its GPUs, so N GPUs run compute-bound kernels at the pace of the
// slowest of N draws, where one GPU runs at the median.
//
//   expected_slowest(1) == 0;  expected_slowest(2) == 1 / sqrt(pi) (0.5642);  expected_slowest(8) == 1.4236
//   slowest_gpu_factor(8, 0.015) == 1 + 0.015 * 1.4236
#pragma once

#include <string>

#include "core/scenario.hpp"

namespace gradsync {

// kGpuSpread: the standard deviation of a GPU's sustained compute rate about the median of its
// model, as a fraction. The paper reports an average 8% performance variation between a
// cluster's GPUs of one SKU (max 22%), outliers aside (up to 1.5x slower than the median); read
// as the spread of a box plot's whiskers, about +/-2.7 standard deviations of a normal spread,
// that is 8% / 5.4 = 1.5%. This constant is not fitted to a case. The multi-GPU steps of
// validation/published/ddp_steps.yaml were checked against it; README "GPUs are not alike" lists
// the result.
inline constexpr double kGpuSpread = 0.015;

// expected_slowest: E[max of n independent standard normal draws] (0 for n <= 1), by numerical
// integration of n x phi(x) Phi(x)^(n-1) (exact to 1e-9 for n up to 1e6).
double expected_slowest(int n);

// slowest_gpu_factor: how much longer the slowest of `gpus` GPUs takes over a compute-bound
// kernel than the median GPU, with a spread of `spread` (a fraction): 1 + spread x
// expected_slowest(gpus). 1 for one GPU or no spread.
double slowest_gpu_factor(int gpus, double spread);

// gpu_spread: the scenario's gpu_spread_pct as a fraction (checked by the scenario key table).
double gpu_spread(const Scenario& s);

// slowest_gpu_text: what the header says of it for a run of `gpus` GPUs ("" where nothing slows:
// one GPU, no spread, or a calibration): "SM-bound kernels at the slowest of 8 GPUs' pace, +2.1%
// (gpu_spread_pct 1.5)".
std::string slowest_gpu_text(const Scenario& s, int gpus);

}  // namespace gradsync
