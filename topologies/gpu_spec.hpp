// gpu_spec.hpp: what gradsync knows about a GPU model, from topologies/hardware/gpus.yaml (each
// number with its datasheet source).
//
//   const GpuSpec& a100 = gpu_spec("a100-sxm4-80gb");   // or an alias: "a100"
//   a100.peak_flops(Precision::kBF16) == 312e12;
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "core/units.hpp"

namespace gradsync {

// GpuSpec is one GPU model: dense peak FLOP/s per precision, memory, links.
struct GpuSpec {
  std::string key;   // "a100-sxm4-80gb"
  std::string name;  // "NVIDIA A100 SXM4 80GB"
  std::string source;
  std::vector<std::string> aliases;
  double fp32_flops = 0;
  double tf32_flops = 0;
  std::optional<double> fp16_flops;  // tensor cores, FP32 accumulate
  std::optional<double> bf16_flops;  // absent: no bf16 tensor cores (V100, Turing)
  // fp16_accumulate_flops: the FP16 tensor rate with FP16 accumulate, where the datasheet lists a
  // higher one than fp16_flops (GeForce boards run FP32 accumulate at half of it).
  std::optional<double> fp16_accumulate_flops;
  Bytes memory_bytes = 0;
  double memory_bandwidth_Bps = 0;
  int nvlink_links = 0;
  double nvlink_bw_Bps = 0;  // per link per direction
  // nvlink_bridge: the NVLink is a bridge joining two PCIe boards (A100/H100 PCIe, A40, TITAN RTX,
  // RTX 2080 Ti/3090), not an SXM module's links to an NVSwitch baseboard or the DGX-1 mesh.
  bool nvlink_bridge = false;
  int pcie_gen = 0;
  int pcie_lanes = 0;
  // pcie_p2p: whether the GPU supports peer-to-peer over PCIe (cudaDeviceCanAccessPeer through a
  // switch or root complex). NVIDIA's data-center GPUs do; GeForce RTX boards do not (their
  // drivers report no PCIe P2P; NVLink-bridged pairs still have P2P over NVLink), so NCCL moves
  // their data through host memory (SHM) instead.
  bool pcie_p2p = true;
  int sms = 0;
  int sm_version = 0;  // compute capability x 10: 80 for A100, 90 for H100

  // half_rate_fp32_accumulate: the tensor cores run FP32 accumulate (fp16_flops, what autocast
  // uses) at half their FP16-accumulate rate, as GeForce boards do (the datasheets round: 330.3
  // against 165.2 TFLOP/s on the RTX 4090, so "about half": at most 1/1.9).
  bool half_rate_fp32_accumulate() const {
    return fp16_flops && fp16_accumulate_flops && *fp16_accumulate_flops >= 1.9 * *fp16_flops;
  }
  // peak_flops is the dense matmul peak for a precision; ConfigError if the GPU lacks it.
  double peak_flops(Precision p) const;
};

// gpu_specs returns every GPU in topologies/hardware/gpus.yaml, in file order.
const std::vector<GpuSpec>& gpu_specs();

// gpu_spec finds a GPU by key or alias; ConfigError listing the known keys otherwise.
const GpuSpec& gpu_spec(std::string_view key_or_alias);

// parse_gpu_specs reads a gpus.yaml text (exposed for tests); `origin` names it in errors.
std::vector<GpuSpec> parse_gpu_specs(std::string_view text, const std::string& origin);

}  // namespace gradsync
