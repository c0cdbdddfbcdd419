// compute_test_util.hpp: what the compute and memory cost tests share: a GPU of round numbers
// and a small model of one layer of each common kind.
#pragma once

#include "models/model.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync::test {

// A GPU with round numbers: 100 TFLOP/s bf16, 1 TB/s.
inline GpuSpec round_gpu() {
  GpuSpec g;
  g.key = "round";
  g.fp32_flops = 10e12;
  g.tf32_flops = 50e12;
  g.bf16_flops = 100e12;
  g.fp16_flops = 100e12;
  g.memory_bytes = 16 * kGiB;
  g.memory_bandwidth_Bps = 1e12;
  return g;
}

inline constexpr const char* kModel = R"(format: gradsync-model/2
name: small
defaults: {batch: 8, seq_len: 128}
input: {bytes: 8*T}
output: {elements: 1024*T}
parameters:
  - {name: fc.weight, shape: [1024, 1024]}
  - {name: fc.bias, shape: [1024]}
  - {name: conv.weight, shape: [64, 3, 7, 7]}
layers:
  - {name: fc, kind: linear, params: [fc.weight, fc.bias], in: 1024, out: 1024, tokens: T}
  - {name: conv, kind: conv2d, params: [conv.weight], in: 3, out: 64, kernel: 7, stride: 2, padding: 3, height: 224, width: 224}
  - {name: attn, kind: attention, heads: 12, head_dim: 64, q_len: T, causal: true}
  - {name: add, kind: elementwise, op: add, elements: 1024*T}
)";

}  // namespace gradsync::test
