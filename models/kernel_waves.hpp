// kernel_waves.hpp: how much of a GPU a GEMM keeps busy. cuBLAS runs one thread block (CTA) per
// output tile and the GPU as many at once as it has SMs, so a GEMM takes whole waves of them and
// the last wave may run partly empty (NVIDIA, "Matrix Multiplication Background User's Guide", section "Wave
// Quantization"). With fewer tiles than SMs the libraries split the reduction dimension K across more CTAs (split-K:
// CUTLASS's "Parallel Reduction Split-K" and "Serial Split-K"), each partial product then summed: the CTAs fill one
// wave at the cost of writing and reading the partial sums.
//
//   gemm_waves_of({1, 1568, 512, 4608}, 128, 80);   // 13 x 4 = 52 tiles on a V100's 80 SMs:
//                                                  // efficiency 52/80, split 1 (52 > 80/2)
//   gemm_waves_of({1, 768, 768, 122880}, 128, 132); // a weight gradient: 36 tiles on an H100's
//                                                  // 132 SMs, K split in 3: 108 CTAs, 108/132
#pragma once

namespace gradsync {

// GemmShape: C (m x n) = A (m x k) B (k x n), `batch` of them (batched or grouped).
struct GemmShape {
  double batch = 1, m = 0, n = 0, k = 0;
};

// Waves: the fraction of the SMs' time a kernel's CTAs keep busy over its whole waves, and the
// split of K that gave it (1: none).
struct Waves {
  double efficiency = 1;
  double split = 1;
  double ctas = 1;  // tiles x split: what NCCL's held SMs are counted against (contention.hpp)
};

// gemm_waves_of: `tile` x `tile` output tiles over `sms` SMs; when there are fewer tiles than SMs,
// K is split into as many slices as fill one wave, each at least one tile deep (a slice thinner
// than a tile would read more of A and B than it computes with).
Waves gemm_waves_of(const GemmShape& g, int tile, int sms);

}  // namespace gradsync
