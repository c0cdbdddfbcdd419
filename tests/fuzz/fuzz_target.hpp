// fuzz_target.hpp: what every loader harness under tests/fuzz/ checks. A loader given any bytes
// either returns or throws gradsync::Error (a located, clear message); anything else (a crash, a
// sanitizer report, another exception, a hang) is a bug. `expect_clean` runs one loader so.
//
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
//     return fuzz::expect_clean(data, size, [](std::string_view text) { parse_model(text, "fuzz.yaml"); });
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.hpp"

namespace gradsync::fuzz {

template <typename Load>
int expect_clean(const std::uint8_t* data, std::size_t size, Load load) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    load(text);
  } catch (const Error&) {
    // A clear, located error: what a bad file must get. Any other exception escapes and aborts.
  }
  return 0;
}

}  // namespace gradsync::fuzz
