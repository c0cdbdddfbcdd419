// scenario_fuzz.cpp: libFuzzer harness for the YAML scenario reader (core/scenario.cpp).
#include "core/scenario.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gradsync::fuzz::expect_clean(data, size, [](std::string_view text) {
    const gradsync::Scenario s = gradsync::parse_scenario(text, "fuzz.yaml");
    (void)gradsync::scenario_json(s).dump();
  });
}
