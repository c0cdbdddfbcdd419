// op_conv.cpp: a convolution's kernel time (op_coster.hpp, OpCoster::conv): cuDNN's implicit-GEMM
// convolutions at the conv rates of kernel_rates.cpp, and on the SIMT units (FP32 before Ampere)
// its Winograd algorithms where they are faster.
//
// Winograd (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016,
// section 4): F(2x2, 3x3) computes each 2x2 block of outputs from a 4x4 tile of the input with 16
// multiplies, where direct convolution does 4 x 9 = 36: 2.25 times fewer. cuDNN has it forward
// and for both gradients (CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD[_NONFUSED], BWD_DATA_ALGO_WINOGRAD
// [_NONFUSED], BWD_FILTER_ALGO_WINOGRAD_NONFUSED), for 3x3 filters at stride 1 (op_coster.hpp
// winograd_eligible); it also has F(4x4, 3x3), 4 times fewer multiplies with costlier transforms,
// and the smaller gain is taken. The non-fused algorithm writes the transformed tiles to DRAM and
// reads them back: the input's transform holds 16 values for every 4 input positions (tiles
// overlap at stride 2), 4 times the input, and so does the output's before its inverse transform;
// each written once and read once, 8 times the activations the convolution reads and writes. So a
// layer of few channels (few multiplies per transformed value) is bound by that traffic and gains
// nothing, and a wide one gains the 2.25. cudnn.benchmark = True times every algorithm and keeps
// the fastest, and cuDNN's heuristics pick the same way for these shapes: the faster of the two
// is taken. On the tensor cores (fp16, bf16, TF32) cuDNN runs implicit GEMM: counted FLOPs.
//
// Waves. cuDNN's FP32 kernels are GEMMs of output tiles named in the kernel (volta_scudnn_128x128_*,
// also 128x64 and 128x32 variants; volta_sgemm_128x128_*); the 128x128 tile of the GEMMs
// (KernelRates::tile) is taken, and they run in whole waves over the SMs as cuBLAS's do
// (kernel_waves.hpp): the forward as implicit GEMM of (N Ho Wo) x C_out over
// 9 C_in, the input's gradient of (N H W) x C_in over 9 C_out, the weight's of C_out x 9 C_in over
// N Ho Wo (split along it when the tiles are few); Winograd's 16 products of (tiles) x C_out over
// C_in, and so on. A small batch of the deep layers (7x7 at batch 32: 1568 rows) fills a fraction
// of the last wave. The SIMT rate conv_fp32 is of full waves; the tensor-core conv rates were
// chosen without waves and keep them flat.
#include <algorithm>
#include <cmath>

#include "models/kernel_waves.hpp"
#include "models/op_coster.hpp"

namespace gradsync::op_detail {

namespace {
constexpr double kWinogradF2x3Gain = 36.0 / 16.0;
constexpr double kWinogradTraffic = 2.0 * (16.0 / 4.0);  // written and read, 4x the tensor
}  // namespace

Kernel OpCoster::conv(std::size_t i, int pass, double bytes) const {
  const Op& op = m_.ops[i];
  const Sizes& s = sizes_[i];
  const double flops = s.flops;
  const GpuSpec& g = *ctx_.gpu;
  double peak = 0, eff = r_.conv;
  bool simt = false;
  if (ctx_.precision == Precision::kFP32 || ctx_.precision == Precision::kTF32) {
    const bool tf32 = tf32_convs();
    peak = tf32 ? g.tf32_flops : g.fp32_flops;
    if (!tf32) {
      eff = r_.conv_fp32;
      simt = true;
    }
  } else {
    peak = g.peak_flops(ctx_.precision);
    eff = r_.conv_16bit;
  }
  Kernel k{flops, bytes, 0};
  k.call = HostCall::kCudnn;
  double compute = flops / (peak * eff);
  double moved = bytes;
  if (simt && op.conv && !s.in.empty() && !s.out.empty()) {
    // in channels, height, width, out channels, kernel h, w, stride, padding, groups
    const auto& c = *op.conv;
    const double cin = static_cast<double>(c[0]), cout = static_cast<double>(c[3]);
    const double taps = static_cast<double>(c[4] * c[5]) / std::max<double>(1.0, static_cast<double>(c[8]));
    const double out_pos = s.out[0] / std::max(1.0, cout);  // N Ho Wo
    const double in_pos = s.in[0] / std::max(1.0, cin);     // N H W
    const GemmShape direct = pass == 0   ? GemmShape{1, out_pos, cout, taps * cin}
                             : pass == 1 ? GemmShape{1, in_pos, cin, taps * cout}
                                         : GemmShape{1, cout, taps * cin, out_pos};
    const double direct_s = compute / gemm_waves_of(direct, r_.tile, g.sms).efficiency;
    compute = direct_s;
    // The model format records no dilation; a stride-1 convolution of dilation 1 has Ho = H + 2p - 2
    // (and Wo likewise), so one whose outputs are not that many per input is dilated, and cuDNN's
    // Winograd kernels do not take it (cuDNN API reference: dilation 1 only).
    const double h = static_cast<double>(c[1]), w_in = static_cast<double>(c[2]), pad = static_cast<double>(c[7]);
    const bool undilated =
        h > 0 && w_in > 0 && std::abs(out_pos / in_pos - (h + 2 * pad - 2) * (w_in + 2 * pad - 2) / (h * w_in)) < 1e-9;
    if (winograd_eligible(op) && undilated) {
      // F(2x2, 3x3): one 4x4 tile per 2x2 outputs; 16 products, one per position in the tile.
      const double tiles = out_pos / 4.0;
      const GemmShape w = pass == 0   ? GemmShape{16, tiles, cout, cin}
                          : pass == 1 ? GemmShape{16, tiles, cin, cout}
                                      : GemmShape{16, cout, cin, tiles};
      const double w_compute = flops / (peak * eff * kWinogradF2x3Gain) / gemm_waves_of(w, r_.tile, g.sms).efficiency;
      const double act = s.in[0] * plans_[i].in_bytes[0] + s.out[0] * plans_[i].out_bytes[0];
      const double w_moved = bytes + kWinogradTraffic * act;
      if (std::max(w_compute, dram(w_moved)) < std::max(direct_s, dram(bytes))) {
        compute = w_compute;
        moved = w_moved;
        k.bytes = moved;
        k.winograd = true;
      }
    }
  }
  k.time = std::max({compute, dram(moved), r_.min_kernel_s});
  // Convolutions run many waves of implicit-GEMM tiles: they slow in proportion to the SMs lost.
  return bound(k, compute, dram(moved), compute * linear_stretch(sharing_.sms, held_));
}

}  // namespace gradsync::op_detail
