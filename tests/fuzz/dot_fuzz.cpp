// dot_fuzz.cpp: libFuzzer harness for the DOT topology reader (topologies/topology_dot.cpp).
#include "tests/fuzz/fuzz_target.hpp"
#include "topologies/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gradsync::fuzz::expect_clean(data, size, [](std::string_view text) {
    const gradsync::Topology t = gradsync::read_topology_dot(text, "fuzz.dot");
    (void)gradsync::write_topology_dot(t);  // a topology that loads can be written back
  });
}
