// routes_test.cpp: shortest paths, bottlenecks, NCCL path classes and peer-to-peer.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>

#include "core/error.hpp"
#include "topologies/dot_parser.hpp"
#include "topologies/generators.hpp"
#include "topologies/routes.hpp"
#include "topologies/topology.hpp"

namespace gradsync {
namespace {

TEST(Routes, Dgx1DirectNvlinkAndThroughAGpu) {
  const Topology t = load_topology("dgx1-v100");
  Routes routes(t);
  const Route direct = routes.gpu_route(0, 3);
  EXPECT_EQ(direct.path_class, PathClass::kNVL);
  EXPECT_EQ(direct.hops.size(), 1u);
  EXPECT_DOUBLE_EQ(direct.bottleneck_Bps, 40e9);  // the two-link pair at NCCL's 20 GB/s per NVLink
  EXPECT_TRUE(direct.p2p);
  // 0 and 5 share no NVLink: two NVLink hops through GPU 1 or 4 beat the PCIe/QPI path.
  const Route nvb = routes.gpu_route(0, 5);
  EXPECT_EQ(nvb.path_class, PathClass::kNVB);
  EXPECT_EQ(nvb.hops.size(), 2u);
  EXPECT_DOUBLE_EQ(nvb.latency_s, 2 * 100e-9);
  // cudaDeviceCanAccessPeer: NVLink does not forward through GPU 1 and PCIe crosses QPI, so a CUDA
  // copy (DataParallel's gather) goes through host memory; NCCL's P2P relays it (transports/p2p).
  EXPECT_FALSE(nvb.p2p);
}

// Among paths of as many hops the widest wins, as NCCL's ncclTopoSetPaths keeps it: GPU 0 reaches
// 7 through 4 over two double links (40 GB/s), not through 3 (0-3 double, 3-7 single: 20). The
// cube-mesh maps onto itself by i -> i xor 4, and so do the bottlenecks.
TEST(Routes, AmongPathsAsShortTheWidestWins) {
  const Topology t = load_topology("dgx1-v100");
  Routes routes(t);
  const Route wide = routes.gpu_route(0, 7);
  ASSERT_EQ(wide.hops.size(), 2u);
  EXPECT_DOUBLE_EQ(wide.bottleneck_Bps, 40e9);
  EXPECT_EQ(t.vertex(wide.vertices[1]).name, "gpu4");
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) {
        EXPECT_DOUBLE_EQ(routes.gpu_route(a, b).bottleneck_Bps, routes.gpu_route(a ^ 4, b ^ 4).bottleneck_Bps)
            << a << " -> " << b;
        EXPECT_DOUBLE_EQ(routes.gpu_route(a, b).bottleneck_Bps, routes.gpu_route(b, a).bottleneck_Bps)
            << a << " <-> " << b;
      }
}

// Routes are counted in hops, as NCCL's ncclTopoSetPaths counts them, not in latency: an NVLink
// bridge slower to cross (100 ns) than two PCIe links (2 x 20 ns) is still the one hop between the
// two GPUs, NVL at the bridge's 56 GB/s, not PIX through the switch at PCIe's share.
TEST(Routes, FewerHopsWinOverLowerLatency) {
  const Topology t = read_topology_dot(R"(graph g {
  cpu [kind="cpu", host="h"]; sw [kind="pcie_switch", host="h"];
  g0 [kind="gpu", model="a100-pcie-80gb", host="h"]; g1 [kind="gpu", model="a100-pcie-80gb", host="h"];
  cpu -- sw [type="pcie", bw="31.5GBps", latency="20ns"];
  g0 -- sw [type="pcie", bw="31.5GBps", latency="20ns"]; g1 -- sw [type="pcie", bw="31.5GBps", latency="20ns"];
  g0 -- g1 [type="nvlink", bw="14.0625GBps", latency="100ns", links="4"];
})",
                                       "t.dot");
  Routes routes(t);
  const Route r = routes.gpu_route(0, 1);
  EXPECT_EQ(r.path_class, PathClass::kNVL);
  EXPECT_EQ(r.hops.size(), 1u);
  EXPECT_DOUBLE_EQ(r.latency_s, 100e-9);
  EXPECT_DOUBLE_EQ(r.bottleneck_Bps, routes.gpu_route(1, 0).bottleneck_Bps);
  EXPECT_GT(r.bottleneck_Bps, 40e9);
}

TEST(Routes, PcieSwitchAndCpuClasses) {
  const Topology t = load_topology("pcie-4gpu");
  Routes routes(t);
  const Route pix = routes.gpu_route(0, 1);
  EXPECT_EQ(pix.path_class, PathClass::kPIX);
  EXPECT_FALSE(pix.p2p);               // RTX 4090: GeForce boards have no PCIe peer-to-peer
  EXPECT_EQ(pix.vertices.size(), 3u);  // gpu0, pcie0, gpu1
  const Route sys = routes.gpu_route(1, 2);
  EXPECT_EQ(sys.path_class, PathClass::kSYS);
  EXPECT_FALSE(sys.p2p);  // staged through host memory, as NCCL's default P2P level (PXB) says
  // gpu1 - pcie0 - cpu0 - cpu1 - pcie1 - gpu2: 5 links, bottleneck the Intel sockets' link at
  // NCCL's 10 GB/s (SKL_QPI_BW; its PCIe x16 Gen4 links carry 24).
  EXPECT_EQ(sys.hops.size(), 5u);
  EXPECT_DOUBLE_EQ(sys.bottleneck_Bps, 10e9);
  EXPECT_NEAR(sys.latency_s, 4 * 150e-9 + 100e-9, 1e-15);
}

TEST(Routes, DirectionsFollowTheRoute) {
  const Topology t = load_topology("pcie-4gpu");
  Routes routes(t);
  const Route there = routes.gpu_route(0, 3);
  const Route back = routes.gpu_route(3, 0);
  ASSERT_EQ(there.hops.size(), back.hops.size());
  for (std::size_t i = 0; i < there.hops.size(); ++i) {
    const DirectedLink& h = there.hops[i];
    const TopoLink& l = t.link(t.links()[h.link]);
    // forward means the route walks from the link's first end to its second.
    EXPECT_EQ(h.forward ? l.a : l.b, there.vertices[i]);
    EXPECT_EQ(h.forward ? l.b : l.a, there.vertices[i + 1]);
    const DirectedLink& r = back.hops[back.hops.size() - 1 - i];
    EXPECT_EQ(r.link, h.link);
    EXPECT_NE(r.forward, h.forward);
  }
}

TEST(Routes, PxbPhbAndNet) {
  const std::string text = R"(graph g {
  g0 [kind="gpu", model="a100", host="h"]; g1 [kind="gpu", model="a100", host="h"];
  g2 [kind="gpu", model="a100", host="h"]; g3 [kind="gpu", model="a100", host="h2"];
  root [kind="pcie_switch", host="h"]; s0 [kind="pcie_switch", host="h"]; s1 [kind="pcie_switch", host="h"];
  cpu [kind="cpu", host="h"]; nic [kind="nic", host="h"]; nic2 [kind="nic", host="h2"];
  sw [kind="switch"];
  g0 -- s0 [type="pcie", bw="31.5GBps", latency="1ns"]; g1 -- s1 [type="pcie", bw="31.5GBps", latency="1ns"];
  s0 -- root [type="pcie", bw="31.5GBps", latency="1ns"]; s1 -- root [type="pcie", bw="31.5GBps", latency="1ns"];
  root -- cpu [type="pcie", bw="31.5GBps", latency="1ns"]; g2 -- cpu [type="pcie", bw="16GBps", latency="1ns"];
  cpu -- nic [type="pcie", bw="31.5GBps", latency="1ns"]; nic -- sw [type="infiniband", bw="200Gbps", latency="1us"];
  sw -- nic2 [type="infiniband", bw="200Gbps", latency="1us"]; nic2 -- g3 [type="pcie", bw="31.5GBps", latency="1ns"];
})";
  const Topology t = read_topology_dot(text, "t.dot");
  Routes routes(t);
  EXPECT_EQ(routes.gpu_route(0, 1).path_class, PathClass::kPXB);
  EXPECT_TRUE(routes.gpu_route(0, 1).p2p);
  EXPECT_EQ(routes.gpu_route(0, 2).path_class, PathClass::kPHB);
  EXPECT_DOUBLE_EQ(routes.gpu_route(0, 2).bottleneck_Bps, 16e9 * 12 / 15.75);  // PCIe's payload share
  const Route net = routes.gpu_route(2, 3);
  EXPECT_EQ(net.path_class, PathClass::kNET);
  EXPECT_FALSE(net.p2p);
  EXPECT_DOUBLE_EQ(net.bottleneck_Bps, 16e9 * 12 / 15.75);
  EXPECT_NEAR(net.latency_s, 2e-6 + 3e-9, 1e-15);
}

// Within a machine a route stays inside it, as NCCL's paths within a node do (paths.cc): two NICs
// on one leaf switch are a shorter way between g0 and g1 (2 x 1 ns of InfiniBand) than the 10 us
// through the CPU, but a path that leaves by one NIC and returns by the other is NET between
// nodes. A machine whose parts meet only through the network (h2: g2 and g3, each with its own
// NIC) still gets a route, through the fabric.
TEST(Routes, AMachinesRoutesStayInsideIt) {
  const std::string machine = R"(graph g {
  g0 [kind="gpu", model="a100", host="h"]; g1 [kind="gpu", model="a100", host="h"];
  cpu [kind="cpu", host="h"]; n0 [kind="nic", host="h"]; n1 [kind="nic", host="h"];
  leaf [kind="switch"];
  g0 -- cpu [type="pcie", bw="31.5GBps", latency="5us"]; g1 -- cpu [type="pcie", bw="31.5GBps", latency="5us"];
  g0 -- n0 [type="pcie", bw="31.5GBps", latency="1ns"]; g1 -- n1 [type="pcie", bw="31.5GBps", latency="1ns"];
  n0 -- leaf [type="infiniband", bw="200Gbps", latency="1ns"]; n1 -- leaf [type="infiniband", bw="200Gbps", latency="1ns"];
)";
  const Topology t = read_topology_dot(machine + "}", "t.dot");
  Routes routes(t);
  const Route inside = routes.gpu_route(0, 1);
  EXPECT_EQ(inside.path_class, PathClass::kPHB);
  EXPECT_EQ(inside.hops.size(), 2u);
  EXPECT_DOUBLE_EQ(inside.latency_s, 10e-6);
  // A "machine" whose GPUs meet only through the network is two machines: refused, named.
  const std::string split = R"(
  g2 [kind="gpu", model="a100", host="h2"]; g3 [kind="gpu", model="a100", host="h2"];
  n2 [kind="nic", host="h2"]; n3 [kind="nic", host="h2"];
  g2 -- n2 [type="pcie", bw="31.5GBps", latency="1ns"]; g3 -- n3 [type="pcie", bw="31.5GBps", latency="1ns"];
  n2 -- leaf [type="infiniband", bw="200Gbps", latency="1ns"]; n3 -- leaf [type="infiniband", bw="200Gbps", latency="1ns"];
})";
  try {
    (void)read_topology_dot(machine + split, "t.dot");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "t.dot:9: node g3: gpu of host \"h2\" reaches gpu g2 of the same host only through the network; a "
              "machine's GPUs meet inside it (nvlink, pcie, cpu_link): give the two parts their own host names, or "
              "join them");
  }
}

// four_gpus: DOT declarations of GPUs g0..g3 of `model` on host h.
std::string four_gpus(const std::string& model) {
  std::string out;
  for (int i = 0; i < 4; ++i) out += fmt::format("  g{} [kind=\"gpu\", model=\"{}\", host=\"h\"];\n", i, model);
  return out;
}

// A GPU relays traffic only as NCCL's path search lets it (paths.cc, "allow routing through a GPU
// only as 1 hop"): NVLink in from the source, NVLink out to another GPU. Two bridged pairs on
// different sockets: gpu0 reaches gpu3 over the CPUs (SYS), not through gpu2's NVLink and then its
// PCIe switch (which would be a 3-hop "PIX"); a chain of three NVLinks is not NVB either.
TEST(Routes, AGpuRelaysOnlyNvlinkToNvlinkOneHopFromTheSource) {
  const std::string bridged = "graph g {\n" + four_gpus("a100-pcie-80gb") + R"(
  cpu0 [kind="cpu", host="h"]; cpu1 [kind="cpu", host="h"];
  p0 [kind="pcie_switch", host="h"]; p1 [kind="pcie_switch", host="h"];
  cpu0 -- cpu1 [type="cpu_link", bw="32GBps", latency="100ns"];
  cpu0 -- p0 [type="pcie", bw="32GBps", latency="150ns"]; cpu1 -- p1 [type="pcie", bw="32GBps", latency="150ns"];
  p0 -- g0 [type="pcie", bw="32GBps", latency="150ns"]; p0 -- g1 [type="pcie", bw="32GBps", latency="150ns"];
  p1 -- g2 [type="pcie", bw="32GBps", latency="150ns"]; p1 -- g3 [type="pcie", bw="32GBps", latency="150ns"];
  g0 -- g2 [type="nvlink", bw="25GBps", latency="100ns", links="12"];
  g1 -- g3 [type="nvlink", bw="25GBps", latency="100ns", links="12"];
})";
  const Topology t = read_topology_dot(bridged, "bridged.dot");
  Routes routes(t);
  EXPECT_EQ(routes.gpu_route(0, 2).path_class, PathClass::kNVL);
  EXPECT_EQ(routes.gpu_route(0, 1).path_class, PathClass::kPIX);
  for (const auto& [a, b] : {std::pair{0, 3}, std::pair{3, 0}, std::pair{1, 2}, std::pair{2, 1}}) {
    const Route r = routes.gpu_route(a, b);
    EXPECT_EQ(r.path_class, PathClass::kSYS) << a << "->" << b;
    EXPECT_FALSE(r.p2p) << a << "->" << b;
    for (std::size_t i = 1; i + 1 < r.vertices.size(); ++i)
      EXPECT_NE(t.vertex(r.vertices[i]).kind, VertexKind::kGpu) << a << "->" << b << " passes through a GPU";
  }
  const std::string chain = "graph g {\n" + four_gpus("v100") + R"(
  cpu [kind="cpu", host="h"]; p [kind="pcie_switch", host="h"];
  cpu -- p [type="pcie", bw="16GBps", latency="1us"];
  p -- g0 [type="pcie", bw="16GBps", latency="1us"]; p -- g1 [type="pcie", bw="16GBps", latency="1us"];
  p -- g2 [type="pcie", bw="16GBps", latency="1us"]; p -- g3 [type="pcie", bw="16GBps", latency="1us"];
  g0 -- g1 [type="nvlink", bw="25GBps", latency="10ns"]; g1 -- g2 [type="nvlink", bw="25GBps", latency="10ns"];
  g2 -- g3 [type="nvlink", bw="25GBps", latency="10ns"];
})";
  const Topology c = read_topology_dot(chain, "chain.dot");
  Routes chained(c);
  EXPECT_EQ(chained.gpu_route(0, 2).path_class, PathClass::kNVB);  // one GPU between: NCCL's NVB
  EXPECT_EQ(chained.gpu_route(0, 2).hops.size(), 2u);
  const Route far = chained.gpu_route(0, 3);  // two GPUs between: over the PCIe switch instead
  EXPECT_EQ(far.path_class, PathClass::kPIX);
  EXPECT_EQ(far.hops.size(), 2u);
  EXPECT_EQ(chained.gpu_route(3, 0).path_class, PathClass::kPIX);
}

TEST(Routes, NvswitchAndAcrossNodes) {
  const Topology t = load_topology("2x-dgx-a100-hdr");
  Routes routes(t);
  const Route nvl = routes.gpu_route(0, 7);
  EXPECT_EQ(nvl.path_class, PathClass::kNVL);
  EXPECT_DOUBLE_EQ(nvl.bottleneck_Bps, 240e9);  // 12 NVLinks x NCCL's 20 GB/s into the NVSwitch
  const Route net = routes.gpu_route(0, 8);
  EXPECT_EQ(net.path_class, PathClass::kNET);
  EXPECT_DOUBLE_EQ(net.bottleneck_Bps, 24e9);  // the PCIe Gen4 x16 to an HDR NIC (25 GB/s)
  // gpu -> pcie switch -> nic -> leaf -> nic -> pcie switch -> gpu
  EXPECT_EQ(net.hops.size(), 6u);
}

TEST(Routes, EachGpuHasItsOwnNicAndFabricRoutesNeverCrossAMachine) {
  const Topology t = load_topology("16x-dgx-h100-ndr");
  Routes routes(t);
  // Two GPUs and two NICs per PCIe switch: GPU i takes NIC i.
  for (int g = 0; g < 16; ++g) {
    EXPECT_EQ(t.vertex(routes.nic_of(g)).name, fmt::format("node{}.nic{}", g / 8, g % 8)) << g;
  }
  // Rail 1 to rail 0 goes through the spines, not through a node's PCIe switch and its other NIC.
  const Route r = routes.net_route(1, 8, 1);
  for (std::size_t i = 1; i + 1 < r.vertices.size(); ++i) {
    const TopoVertex& v = t.vertex(r.vertices[i]);
    if (v.kind == VertexKind::kPcieSwitch) {
      EXPECT_TRUE(i == 1 || i + 2 == r.vertices.size()) << v.name;
    }
  }
  EXPECT_EQ(t.vertex(r.vertices[2]).name, "node0.nic1");
  EXPECT_EQ(t.vertex(r.vertices[r.vertices.size() - 3]).name, "node1.nic0");
  // A channel's hop may name its NICs: NIC 0 at both ends, one rail.
  const Route c = routes.net_route(1, 8, routes.nic_of(0), routes.nic_of(8), 1);
  EXPECT_EQ(t.vertex(c.vertices[2]).name, "node0.nic0");
  EXPECT_EQ(c.path_class, PathClass::kNET);
  EXPECT_DOUBLE_EQ(c.bottleneck_Bps, 48e9);  // PCIe Gen5 x16 before a 50 GB/s NDR NIC
}

// Leaves of 7 ports (3 down) put node 0's NICs 6 and 7 on a leaf with node 1's NIC 0. Node 0's
// NIC 0 to node 1's NIC 0 is fewer switch hops back into node 0 (PCIe, its CPU link) and out by
// its NIC 6 than up through the spines and cores, but a machine forwards nothing between its
// NICs: the route stays in the fabric, and every ring channel runs at the NIC's speed.
TEST(Routes, AFabricRouteNeverEntersAMachineToLeaveByAnotherNic) {
  FatTreeOptions o;
  o.nodes = 4;
  o.node = "dgx-h100";
  o.leaf_ports = 7;
  const Topology t = generate_fat_tree(o);
  const Routes routes(t);
  for (int from = 0; from < 4; ++from) {
    for (int to = 0; to < 4; ++to) {
      if (from == to) continue;
      for (int nic = 0; nic < 8; ++nic) {
        const Route r = routes.net_route(8 * from + nic, 8 * to + nic, 1);
        int machines_entered = 0;
        for (std::size_t i = 1; i < r.vertices.size(); ++i) {
          const bool was_host = !t.vertex(r.vertices[i - 1]).host.empty();
          const bool is_host = !t.vertex(r.vertices[i]).host.empty();
          machines_entered += !was_host && is_host;
        }
        EXPECT_EQ(machines_entered, 1) << from << " -> " << to << " on NIC " << nic;
        EXPECT_DOUBLE_EQ(r.bottleneck_Bps, 48e9) << from << " -> " << to << " on NIC " << nic;
      }
    }
  }
}

TEST(Routes, JoinConcatenates) {
  const Topology t = load_topology("2x-dgx-a100-hdr");
  Routes routes(t);
  const VertexId nic = *t.find("node0.nic0");
  const Route a = routes.route(t.gpu(1), nic);
  const Route b = routes.route(nic, t.gpu(9));
  const Route j = join(t, a, b);
  EXPECT_EQ(j.hops.size(), a.hops.size() + b.hops.size());
  EXPECT_DOUBLE_EQ(j.latency_s, a.latency_s + b.latency_s);
  EXPECT_EQ(j.path_class, PathClass::kNET);
  EXPECT_EQ(a.path_class, PathClass::kPIX);
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

TEST(Routes, EcmpSpreadsFlowsOverSpinesAtEqualLatency) {
  // 16 nodes in 4 leaves: node0 and node4 sit under different leaves, joined by 32 spines.
  const Topology t = generate_fat_tree({.nodes = 16, .node = "dgx-h100"});
  Routes routes(t);
  const VertexId a = *t.find("node0.nic0");
  const VertexId b = *t.find("node4.nic0");
  const Route plain = routes.route(a, b);
  std::set<VertexId> spines;
  for (std::uint64_t flow = 1; flow <= 64; ++flow) {
    const Route r = routes.route(a, b, flow);
    EXPECT_DOUBLE_EQ(r.latency_s, plain.latency_s);
    ASSERT_EQ(r.vertices.size(), 5u);  // nic, leaf, spine, leaf, nic
    EXPECT_EQ(t.vertex(r.vertices[2]).kind, VertexKind::kSwitch);
    spines.insert(r.vertices[2]);
    EXPECT_EQ(routes.route(a, b, flow).vertices, r.vertices);  // deterministic
  }
  EXPECT_GE(spines.size(), 16u);
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

// InfiniBand fat-trees route by destination (D-mod-K): the eight NICs of node 4, reached from
// the eight NICs of node 3 under the other leaf (a ring's hops between nodes), each take their
// own spine, so no two of those flows share a link, whatever their flow labels.
TEST(Routes, InfinibandRoutesByDestinationSoARingsHopsShareNoSpine) {
  const Topology t = generate_fat_tree({.nodes = 8, .node = "dgx-h100"});
  const Routes routes(t);
  std::set<VertexId> spines;
  for (int i = 0; i < 8; ++i) {
    const VertexId a = *t.find(fmt::format("node3.nic{}", i));
    const VertexId b = *t.find(fmt::format("node4.nic{}", i));
    const Route r = routes.fabric_route(a, b, static_cast<std::uint64_t>(i) + 1);
    ASSERT_EQ(r.vertices.size(), 5u);  // nic, leaf, spine, leaf, nic
    spines.insert(r.vertices[2]);
    EXPECT_EQ(routes.fabric_route(a, b, 99).vertices, r.vertices);  // the flow label does not matter
  }
  EXPECT_EQ(spines.size(), 8u);
}

}  // namespace
}  // namespace gradsync
