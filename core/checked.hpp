// checked.hpp: size arithmetic that refuses to wrap. Every loader that multiplies or adds sizes
// read from a file (parameter shapes, T expressions, element and byte totals, link counts) goes
// through these, so that a value too large for 64 bits is one clear error naming what overflowed,
// never a wrapped count that silently passes.
//
//   const std::int64_t n = checked_mul(rows, cols, "parameters[3] \"fc.weight\" shape [2^40, 2^40]");
//   // ConfigError: parameters[3] "fc.weight" shape [2^40, 2^40]: 1099511627776 x 1099511627776
//   //              does not fit in 64 bits
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "core/error.hpp"

namespace gradsync {

// checked_mul: a * b; ConfigError "<what>: a x b does not fit in 64 bits" on overflow.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw ConfigError(fmt::format("{}: {} x {} does not fit in 64 bits", what, a, b));
  return r;
}

// checked_add: a + b; ConfigError "<what>: a + b does not fit in 64 bits" on overflow.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw ConfigError(fmt::format("{}: {} + {} does not fit in 64 bits", what, a, b));
  return r;
}

// checked_product: the product of dims (1 for none), checked at every step.
inline std::int64_t checked_product(std::span<const std::int64_t> dims, std::string_view what) {
  std::int64_t n = 1;
  for (const std::int64_t d : dims) n = checked_mul(n, d, what);
  return n;
}

}  // namespace gradsync
