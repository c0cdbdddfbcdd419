// topology_checks_test.cpp: what a machine and its fabric must be, checked once the graph is
// built (topologies/topology_checks.cpp): a NIC's PCIe link into its host, one kind of cable per
// switch or NIC.
#include <gtest/gtest.h>

#include <string>

#include "topologies/topology.hpp"
#include "topology_test_util.hpp"

namespace gradsync {
namespace {

using topology_test::dot_error;

// A NIC cabled to the network but not into its machine is named, not a GPU that cannot reach
// another through it.
TEST(TopologyReaderErrors, ANicWithoutAPcieLinkIsNamed) {
  const std::string two = R"(graph g {
  a0 [kind="gpu", model="h100", host="a"]; na [kind="nic", host="a"];
  b0 [kind="gpu", model="h100", host="b"]; nb [kind="nic", host="b"]; ib [kind="switch"];
  b0 -- nb [type="pcie", bw="63GBps", latency="1us"];
  na -- ib [type="infiniband", bw="50GBps", latency="1us"]; nb -- ib [type="infiniband", bw="50GBps", latency="1us"];
}
)";
  EXPECT_EQ(dot_error(two),
            "t.dot:2: node na: nic has no pcie link into host \"a\"; expected one to a pcie_switch or cpu of its "
            "host (traffic between hosts goes through it)");
}

// InfiniBand and Ethernet are separate fabrics: a switch cabled to both is named at the second
// kind's edge, with the first's line (it was read as one fabric of NET/IB).
TEST(TopologyReaderErrors, ASwitchOfInfinibandAndEthernetIsRefused) {
  const std::string two = R"(graph g {
  a0 [kind="gpu", model="h100", host="a"]; na [kind="nic", host="a"];
  b0 [kind="gpu", model="h100", host="b"]; nb [kind="nic", host="b"]; sw [kind="switch"];
  a0 -- na [type="pcie", bw="63GBps", latency="1us"]; b0 -- nb [type="pcie", bw="63GBps", latency="1us"];
  na -- sw [type="infiniband", bw="50GBps", latency="1us"];
  nb -- sw [type="ethernet", bw="50GBps", latency="1us"];
}
)";
  EXPECT_EQ(dot_error(two),
            "t.dot:6: link nb -- sw: ethernet on switch sw, whose link to na (line 5) is infiniband; InfiniBand and "
            "Ethernet are separate fabrics: expected every network link of a switch to be of one type");
}

}  // namespace
}  // namespace gradsync
