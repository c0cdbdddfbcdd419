// topology_hints_test.cpp: bad topology files whose error names the likely slip: a node only an
// edge names, bits written for bytes, a host apart for an uncabled NIC.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "topologies/topology.hpp"
#include "topology_test_util.hpp"

namespace gradsync {
namespace {

using topology_test::dot_error;
using topology_test::replace;

using topology_test::kTwoA100s;

// Two H100 hosts, each with a NIC; only host a's is cabled to the switch.
const std::string kTwoHosts = R"(graph g {
  a0 [kind="gpu", model="h100", host="a"];
  an [kind="nic", host="a"];
  b0 [kind="gpu", model="h100", host="b"];
  bn [kind="nic", host="b"];
  sw [kind="switch"];
  a0 -- an [type="pcie", bw="63GBps", latency="150ns"];
  b0 -- bn [type="pcie", bw="63GBps", latency="150ns"];
  an -- sw [type="infiniband", bw="400Gbps", latency="1us"];
}
)";

// A DOT node that only an edge names (DOT makes it silently) is said to be undeclared, with the
// declared node its name is nearest; it said "missing attribute kind" until 2026-12-01.
TEST(TopologyReaderErrors, ANodeOnlyAnEdgeNamesIsUndeclared) {
  EXPECT_EQ(dot_error(replace(kTwoA100s, "gpu1 -- nvs", "gpu1 -- nvz")),
            "t.dot:7: node nvz: an edge names it, but no statement declares it (did you mean \"nvs\"?); declare it "
            "with its kind (one of gpu, cpu, pcie_switch, nvswitch, nic, switch) or correct the edge");
}

// Bits for bytes: an NVLink at under half its generation's rate, or a network port faster than
// 1.6 Tb/s, is a unit slip and refused with the figure meant (both were accepted until 2026-12-01).
TEST(TopologyReaderErrors, BitsForBytesOnNvlinkAndNetworkPortsAreRefused) {
  EXPECT_EQ(dot_error(replace(kTwoA100s, "bw=\"25GBps\"", "bw=\"25Gbps\"")),
            "t.dot:6: edge gpu0--nvs: gpu gpu0 (NVIDIA A100 SXM4 80GB) has NVLinks of 25.00 GB/s per direction "
            "(topologies/hardware/gpus.yaml nvlink.per_link), and this nvlink edge gives 3.12 GB/s per link; an "
            "NVLink runs at its generation's rate (a figure in bits, Gbps, for bytes, GBps?): expected 25.00GBps");
  // Both hosts cabled, over Ethernet; host a's port written in bytes.
  const std::string net = replace(kTwoHosts, "an -- sw [type=\"infiniband\", bw=\"400Gbps\", latency=\"1us\"];",
                                  "an -- sw [type=\"ethernet\", bw=\"400GBps\", latency=\"1us\"];\n"
                                  "  bn -- sw [type=\"ethernet\", bw=\"400Gbps\", latency=\"1us\"];");
  EXPECT_EQ(dot_error(net),
            "t.dot:9: edge an--sw: 400 GB/s (3200 Gb/s) per link; no network port runs faster than "
            "1.6 Tb/s (a figure in bytes, GBps, for bits, Gbps?): expected a NIC's line rate such as "
            "\"400Gbps\"");
  EXPECT_EQ(dot_error(replace(net, "bw=\"400GBps\"", "bw=\"800Gbps\"")), "no error");
  // A PCIe switch's uplink to the NIC written in bytes (Gen5 x16 is 504 Gb/s); the GPU's own port
  // is checked against its datasheet elsewhere.
  const std::string pcie = replace(kTwoHosts, "  a0 -- an [type=\"pcie\", bw=\"63GBps\", latency=\"150ns\"];",
                                   "  ps [kind=\"pcie_switch\", host=\"a\"];\n"
                                   "  a0 -- ps [type=\"pcie\", bw=\"63GBps\", latency=\"150ns\"];\n"
                                   "  ps -- an [type=\"pcie\", bw=\"504GBps\", latency=\"150ns\"];\n"
                                   "  bn -- sw [type=\"infiniband\", bw=\"400Gbps\", latency=\"1us\"];");
  EXPECT_EQ(dot_error(pcie),
            "t.dot:9: edge ps--an: 504 GB/s (4032 Gb/s) per link; no PCIe link runs faster than Gen6 x16's "
            "128 GB/s (a figure in bytes, GBps, for bits, Gbps?): expected a port's rate such as \"63GBps\" "
            "(Gen5 x16)");
  EXPECT_EQ(dot_error(replace(pcie, "bw=\"504GBps\"", "bw=\"504Gbps\"")), "no error");
}

// Two hosts apart because one host's NIC has no network link: the NIC is named (it said only "gpu
// cannot reach gpu" until 2026-12-01, a new user's report).
TEST(TopologyReaderErrors, AHostApartNamesItsUncabledNic) {
  EXPECT_EQ(dot_error(kTwoHosts),
            "t.dot:4: node b0: gpu cannot reach gpu a0 (no path of links between them: host b's nic bn "
            "(line 5) has no infiniband or ethernet link to a network switch)");
}

}  // namespace
}  // namespace gradsync
