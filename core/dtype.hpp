// dtype.hpp: tensor element types by their PyTorch names, and the training precisions.
//
//   parse_dtype("bfloat16") == DType::kBFloat16;  dtype_bytes(DType::kBFloat16) == 2
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gradsync {

// DType is a tensor element type; names follow torch.dtype without the "torch." prefix.
enum class DType { kFloat32, kFloat16, kBFloat16, kFloat64, kInt64, kInt32, kInt8, kUInt8, kBool };

// dtype_bytes is the size of one element.
std::size_t dtype_bytes(DType t);
// dtype_name is PyTorch's name: "float32", "bfloat16", ...
std::string_view dtype_name(DType t);
// parse_dtype reads a PyTorch name (also "fp32", "fp16", "bf16"); ConfigError otherwise.
DType parse_dtype(std::string_view text);

// Precision is how a step computes: fp32, tf32 (fp32 storage, TF32 tensor-core matmuls), or
// autocast mixed precision in bf16 or fp16 (parameters, gradients and optimizer state stay fp32).
enum class Precision { kFP32, kTF32, kBF16, kFP16 };

// precision_name is the flag spelling: "fp32", "tf32", "bf16", "fp16".
std::string_view precision_name(Precision p);
// parse_precision reads the flag spelling; ConfigError naming the text otherwise.
Precision parse_precision(std::string_view text);
// activation_bytes is the element size of activations under a precision (4, or 2 with autocast).
std::size_t activation_bytes(Precision p);

}  // namespace gradsync
