// kernel_rates.cpp: the achievable rates of each kernel class per GPU architecture, and the
// execution modes' names (op_cost.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "models/op_cost.hpp"

namespace gradsync {

std::string_view attention_impl_name(AttentionImpl a) {
  switch (a) {
    case AttentionImpl::kMath:
      return "math";
    case AttentionImpl::kFlash:
      return "flash";
    case AttentionImpl::kMemEfficient:
      return "mem-efficient";
  }
  return "math";
}

ExecutionMode execution_mode(bool compile, std::string_view attention) {
  ExecutionMode m;
  m.compile = compile;
  for (AttentionImpl a : {AttentionImpl::kMath, AttentionImpl::kFlash, AttentionImpl::kMemEfficient})
    if (attention == attention_impl_name(a)) {
      m.attention = a;
      return m;
    }
  throw ConfigError(fmt::format("attention \"{}\": expected math, flash or mem-efficient", attention));
}

std::string execution_mode_text(const ExecutionMode& m, bool attention) {
  std::string text = m.compile ? "torch.compile" : "eager";
  if (attention) text += fmt::format(", {} attention", attention_impl_name(m.attention));
  if (m.channels_last) text += ", channels_last";
  return text;
}

bool has_attention(const Model& m) {
  return std::any_of(m.ops.begin(), m.ops.end(), [](const Op& op) { return op.attention.has_value(); });
}

KernelRates rates_for(const GpuSpec& gpu) {
  KernelRates r;
  const int sm = gpu.sm_version;
  if (sm == 86 || sm == 89) {
    // GA102/AD102 count two FP32 operations per clock and lane in their datasheet peak; one of
    // the two datapaths is shared with integer work, and cuBLAS SGEMM reaches about half of it.
    r.gemm_fp32 = 0.50;
  }
  if (sm >= 90) {
    // Hopper's dense tensor peak (989 TFLOP/s bf16 on H100 SXM) is reached less closely by
    // cuBLAS at model sizes than Ampere's 312.
    r.gemm_tensor = 0.70;
  }
  return r;
}

}  // namespace gradsync
