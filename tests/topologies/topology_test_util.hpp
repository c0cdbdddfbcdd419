// topology_test_util.hpp: reading a topology text that should fail, for the reader tests
// (topology_reader_test.cpp, topology_attributes_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "topologies/topology.hpp"

namespace gradsync::topology_test {

// dot_error / graphml_error: the error reading `text` gives, or "no error".
inline std::string dot_error(const std::string& text) {
  try {
    read_topology_dot(text, "t.dot");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

inline std::string graphml_error(const std::string& text) {
  try {
    read_topology_graphml(text, "t.graphml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

// kGraphmlKeys: the <key> declarations of every attribute a GraphML topology test reads (kind,
// model and host on nodes; type, bw and latency on edges).
inline const std::string kGraphmlKeys = R"(  <key id="kind" for="node" attr.name="kind" attr.type="string"/>
  <key id="model" for="node" attr.name="model" attr.type="string"/>
  <key id="host" for="node" attr.name="host" attr.type="string"/>
  <key id="type" for="edge" attr.name="type" attr.type="string"/>
  <key id="bw" for="edge" attr.name="bw" attr.type="string"/>
  <key id="latency" for="edge" attr.name="latency" attr.type="string"/>
)";

// replace: `s` with its first `from` made `to` (which must be there).
inline std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  return s.replace(p, from.size(), to);
}

// kTwoA100s: two A100s on one NVSwitch; tests break one thing at a time.
inline const std::string kTwoA100s = R"(// two A100s
graph g {
  gpu0 [kind="gpu", model="a100", host="h0"];
  gpu1 [kind="gpu", model="a100", host="h0"];
  nvs [kind="nvswitch", host="h0"];
  gpu0 -- nvs [type="nvlink", bw="25GBps", latency="100ns", links="12"];
  gpu1 -- nvs [type="nvlink", bw="25GBps", latency="100ns", links="12"];
}
)";

}  // namespace gradsync::topology_test
