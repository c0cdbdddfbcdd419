// trace_fuzz.cpp: libFuzzer harness for the torch.profiler trace reader (models/trace_import.cpp),
// the input of `gradsync models import-trace`.
#include "models/trace_import.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gradsync::fuzz::expect_clean(
      data, size, [](std::string_view text) { (void)gradsync::read_profiler_trace(text, "fuzz.json"); });
}
