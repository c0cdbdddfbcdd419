// calibration_fuzz.cpp: libFuzzer harness for the calibration reader (core/calibration.cpp); a
// calibration that loads is also written back and queried, as `simulate --calibration` does.
#include "core/calibration.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gradsync::fuzz::expect_clean(data, size, [](std::string_view text) {
    const gradsync::Calibration c = gradsync::parse_calibration(text, "fuzz.yaml");
    (void)gradsync::calibration_yaml(c);
    for (double bytes : {0.0, 1.0, 4096.0, 1e12}) {
      (void)c.compute_time(gradsync::OpKind::kMatmul, bytes * 1000, bytes);
      (void)c.collective_time(gradsync::Collective::kAllreduce, c.ranks, bytes);
    }
  });
}
