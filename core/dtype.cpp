// dtype.cpp: element types and precisions (see dtype.hpp).
#include "core/dtype.hpp"

#include <fmt/format.h>

#include <array>

#include "core/error.hpp"
#include "core/text.hpp"

namespace gradsync {
namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t bytes;
};
constexpr std::array<DTypeInfo, 9> kDTypes{{{DType::kFloat32, "float32", 4},
                                            {DType::kFloat16, "float16", 2},
                                            {DType::kBFloat16, "bfloat16", 2},
                                            {DType::kFloat64, "float64", 8},
                                            {DType::kInt64, "int64", 8},
                                            {DType::kInt32, "int32", 4},
                                            {DType::kInt8, "int8", 1},
                                            {DType::kUInt8, "uint8", 1},
                                            {DType::kBool, "bool", 1}}};

const DTypeInfo& info(DType t) {
  for (const auto& d : kDTypes) {
    if (d.type == t) return d;
  }
  throw std::logic_error("dtype: unknown enumerator");
}
}  // namespace

std::size_t dtype_bytes(DType t) { return info(t).bytes; }
std::string_view dtype_name(DType t) { return info(t).name; }

DType parse_dtype(std::string_view text) {
  for (const auto& d : kDTypes) {
    if (d.name == text) return d.type;
  }
  if (text == "fp32" || text == "float") return DType::kFloat32;
  if (text == "fp16" || text == "half") return DType::kFloat16;
  if (text == "bf16") return DType::kBFloat16;
  if (text == "long") return DType::kInt64;
  throw ConfigError(fmt::format(
      "dtype \"{}\" is unknown; expected float32, float16, bfloat16, float64, int64, int32, int8, uint8 or bool",
      text));
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kFP32:
      return "fp32";
    case Precision::kTF32:
      return "tf32";
    case Precision::kBF16:
      return "bf16";
    case Precision::kFP16:
      return "fp16";
  }
  return "?";
}

Precision parse_precision(std::string_view text) {
  const std::string t = ascii_lower(text);  // "BF16" as "bf16", as every word-valued key and flag
  for (Precision p : {Precision::kFP32, Precision::kTF32, Precision::kBF16, Precision::kFP16}) {
    if (precision_name(p) == t) return p;
  }
  throw ConfigError(fmt::format("precision \"{}\" is unknown; expected fp32, tf32, bf16 or fp16", text));
}

std::size_t activation_bytes(Precision p) { return p == Precision::kBF16 || p == Precision::kFP16 ? 2 : 4; }

}  // namespace gradsync
