// channels_test.cpp: NCCL-like rings and trees, with the cases that would catch a naive ring
// (rank order, ignoring links): every DGX-1 hop on NVLink, the A100 NVSwitch bandwidth reached,
// the CPU link crossed once each way on a PCIe box, each node left once per channel.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/text.hpp"

#include <map>
#include <set>

#include "core/error.hpp"
#include "topologies/channels.hpp"
#include "topologies/dot_parser.hpp"
#include "topologies/generators.hpp"
#include "topologies/transports/transport.hpp"

namespace gradsync {
namespace {

// expect_fits checks the search's bookkeeping independently: the channels together never use
// more than a link direction carries of payload, and every ring visits each rank exactly once.
// Links between network switches (a fabric's core) are the simulator's to share, as NCCL's
// search sees the network only through the NICs.
void expect_fits(const Topology& t, const Channels& ch) {
  std::map<std::size_t, double> used;
  for (const RingChannel& r : ch.rings) {
    ASSERT_EQ(r.order.size(), ch.ranks.size());
    EXPECT_EQ(std::set<int>(r.order.begin(), r.order.end()), std::set<int>(ch.ranks.begin(), ch.ranks.end()));
    ASSERT_EQ(r.hops.size(), r.order.size());
    for (std::size_t i = 0; i < r.hops.size(); ++i) {
      EXPECT_EQ(r.hops[i].route.from, t.gpu(r.order[i]));
      EXPECT_EQ(r.hops[i].route.to, t.gpu(r.order[(i + 1) % r.order.size()]));
      for (const DirectedLink& h : r.hops[i].route.hops) used[h.slot()] += ch.channel_bw_Bps * r.hops[i].search_factor;
    }
  }
  for (const auto& [slot, bw] : used) {
    const TopoLink& l = t.link(t.links()[slot / 2]);
    if (t.vertex(l.a).kind == VertexKind::kSwitch && t.vertex(l.b).kind == VertexKind::kSwitch) continue;
    EXPECT_LE(bw, t.link(t.links()[slot / 2]).payload_bw_Bps * (1 + 1e-9)) << "link " << slot / 2;
  }
}

TEST(Channels, Dgx1EveryRingHopIsNvlinkAndAllSixLinksAreUsed) {
  const Topology t = load_topology("dgx1-v100");
  Routes routes(t);
  const Channels ch = build_channels(t, routes, first_ranks(8));
  expect_fits(t, ch);
  for (const RingChannel& r : ch.rings) {
    for (const Hop& h : r.hops) {
      const Route& hop = h.route;
      EXPECT_EQ(hop.path_class, PathClass::kNVL);
      ASSERT_EQ(hop.hops.size(), 1u);  // a direct NVLink, not through another GPU
      EXPECT_EQ(t.link(t.links()[hop.hops[0].link]).type, LinkType::kNvlink);
    }
  }
  // Six NVLinks per GPU at NCCL's 20 GB/s: 120 GB/s per direction; NCCL 2.27's own search finds
  // 3 channels of 40 GB/s and doubles them to 6 of 20 (ncclTopoDupChannels).
  EXPECT_DOUBLE_EQ(ch.total_bw_Bps(), 120e9);
  EXPECT_EQ(ch.rings.size(), 6u);
  EXPECT_EQ(ch.intra_class, PathClass::kNVL);
}

TEST(Channels, DgxA100ChannelsReachTheGpuNvlinkBandwidth) {
  const Topology t = load_topology("dgx-a100");
  Routes routes(t);
  const Channels ch = build_channels(t, routes, first_ranks(8));
  expect_fits(t, ch);
  // NCCL 2.27 on a DGX A100: 6 channels of 40 GB/s (12 NVLinks x 20 GB/s into the NVSwitch),
  // doubled to 12 of 20 GB/s.
  const GpuSpec& a100 = gpu_spec("a100-sxm4-80gb");
  EXPECT_DOUBLE_EQ(ch.total_bw_Bps(), a100.nvlink_links * 20e9);
  EXPECT_DOUBLE_EQ(ch.channel_bw_Bps, 20e9);
  EXPECT_EQ(ch.rings.size(), 12u);
  EXPECT_EQ(ch.rings[0].order, first_ranks(8));
  EXPECT_EQ(ch.rings[6].order, ch.rings[0].order);  // the doubled channels repeat the rings
}

TEST(Channels, Pcie4GpuRingCrossesTheCpuLinkOnceEachWay) {
  const Topology t = load_topology("pcie-4gpu");
  Routes routes(t);
  const Channels ch = build_channels(t, routes, first_ranks(4));
  expect_fits(t, ch);
  ASSERT_FALSE(ch.rings.empty());
  for (const RingChannel& r : ch.rings) {
    int forward = 0, backward = 0;
    for (const Hop& hop : r.hops)
      for (const DirectedLink& h : hop.route.hops)
        if (t.link(t.links()[h.link]).type == LinkType::kCpuLink) ++(h.forward ? forward : backward);
    EXPECT_EQ(forward, 1);
    EXPECT_EQ(backward, 1);
  }
  EXPECT_EQ(ch.intra_class, PathClass::kSYS);
  // RTX 4090s have no PCIe P2P: every hop goes through host memory (NCCL's SHM), up and down the
  // PCIe switch's uplink, at 6/5 through the Intel root complex; the sockets' link carries NCCL's
  // 10 GB/s (SKL_QPI_BW). One channel of 10 GB/s, NCCL's model of such a box.
  for (const RingChannel& r : ch.rings)
    for (const Hop& h : r.hops) EXPECT_EQ(h.kind, TransportKind::kShm);
  EXPECT_DOUBLE_EQ(ch.total_bw_Bps(), 10e9);
  EXPECT_EQ(ch.rings.size(), 1u);
}

TEST(Channels, TwoDgxA100RingLeavesEachNodeOncePerChannel) {
  const Topology t = load_topology("2x-dgx-a100-hdr");
  Routes routes(t);
  const Channels ch = build_channels(t, routes, first_ranks(16));
  expect_fits(t, ch);
  ASSERT_EQ(ch.hosts.size(), 2u);
  std::set<VertexId> nics;
  for (const RingChannel& r : ch.rings) {
    int leaving[2] = {0, 0};
    for (const Hop& h : r.hops) {
      const Route& hop = h.route;
      const int from = t.host_of(t.rank_of(hop.from));
      const int to = t.host_of(t.rank_of(hop.to));
      if (from != to) {
        ++leaving[from];
        EXPECT_EQ(hop.path_class, PathClass::kNET);
      } else {
        EXPECT_EQ(hop.path_class, PathClass::kNVL);
      }
    }
    EXPECT_EQ(leaving[0], 1);
    EXPECT_EQ(leaving[1], 1);
    ASSERT_EQ(r.chains.size(), 2u);
    nics.insert(r.nics[0]);
  }
  // Eight channels, one per HDR NIC, each as fast as a GPU's and a NIC's PCIe Gen4 x16 (NCCL's
  // 24 GB/s, below HDR's 25): 8 x 24 GB/s leave each node, NCCL 2.27's graph for this machine.
  EXPECT_EQ(ch.rings.size(), 8u);
  EXPECT_EQ(nics.size(), 8u);
  EXPECT_DOUBLE_EQ(ch.total_bw_Bps(), 192e9);
}

TEST(Channels, WithoutP2pAndShmANodesGpusJoinThroughItsNics) {
  // NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1: inside a node NCCL goes out through a NIC and back
  // (paths.cc: the pair's path becomes PATH_NET); every hop of the ring is then NET.
  const Topology t = load_topology("2x-dgx-a100-hdr");
  Routes routes(t);
  const Transports transports(t, routes, {.p2p_disable = true, .shm_disable = true});
  const Channels ch = build_channels(t, routes, first_ranks(16), transports);
  ASSERT_FALSE(ch.rings.empty());
  expect_fits(t, ch);
  for (const RingChannel& r : ch.rings)
    for (const Hop& h : r.hops) {
      EXPECT_EQ(h.kind, TransportKind::kNet);
      EXPECT_EQ(h.route.path_class, PathClass::kNET);
    }
  // On one node whose NICs reach no network, nothing joins them: the error says so.
  const Topology one = load_topology("dgx-a100");
  Routes one_routes(one);
  const Transports none(one, one_routes, {.p2p_disable = true, .shm_disable = true});
  EXPECT_THROW(build_channels(one, one_routes, first_ranks(8), none), ConfigError);
}

TEST(Channels, SubsetsAndSingleGpu) {
  const Topology t = load_topology("dgx-a100");
  Routes routes(t);
  const Channels one = build_channels(t, routes, {3});
  EXPECT_TRUE(one.rings.empty());
  const Channels two = build_channels(t, routes, {0, 5});
  expect_fits(t, two);
  EXPECT_DOUBLE_EQ(two.total_bw_Bps(), 240e9);
  const auto error = [&](const std::vector<int>& ranks) {
    try {
      build_channels(t, routes, ranks);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({0, 8}), "topologies/dgx-a100.dot: GPU rank 8 does not exist; the topology has 8 GPUs (ranks 0-7)");
  EXPECT_EQ(error({1, 1}), "topologies/dgx-a100.dot: GPU rank 1 selected twice");
}

// Hosts meet through NICs: a PCIe (or CPU) link between two hosts' nodes is refused when the file
// is read, naming the link's line (the channel search would otherwise find no NIC to ring through).
TEST(Channels, HostsJoinedByPcieAreRefused) {
  const std::string text = R"(graph g {
  a [kind="gpu", model="a100", host="h0"]; s [kind="pcie_switch", host="h0"]; b [kind="gpu", model="a100", host="h1"];
  a -- s [type="pcie", bw="25GBps", latency="0ns"];
  s -- b [type="pcie", bw="25GBps", latency="0ns"];
})";
  try {
    (void)read_topology_dot(text, "t.dot");
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "t.dot:4: link s -- b: a pcie link between host \"h0\" and host \"h1\"; PCIe and CPU links stay "
                 "inside one machine: join hosts through their NICs and a network switch");
  }
  const std::string cpus = R"(graph g {
  a [kind="gpu", model="a100", host="h0"]; c0 [kind="cpu", host="h0"]; c1 [kind="cpu", host="h1"];
  b [kind="gpu", model="a100", host="h1"];
  a -- c0 [type="pcie", bw="25GBps", latency="0ns"]; b -- c1 [type="pcie", bw="25GBps", latency="0ns"];
  c0 -- c1 [type="cpu_link", bw="20GBps", latency="0ns"];
})";
  try {
    (void)read_topology_dot(cpus, "t.dot");
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("t.dot:5: link c0 -- c1: a cpu_link link between host"), std::string::npos)
        << e.what();
  }
}

// A link slower than every speed NCCL's search tries (3 GB/s of PCIe carries 2.3 of payload,
// below the 3 GB/s at the end of speedArrayIntra): NCCL falls back to one channel in simple
// order at 0.1 GB/s (search.cc) rather than failing, and so does gradsync; a link slower still
// than that fallback is an error that says so.
TEST(Channels, NoRingAtAnySpeedFallsBackToNcclsSimpleOrder) {
  const auto dot = [](const std::string& bw) {
    return "graph g { cpu0 [kind=\"cpu\", host=\"n0\"]; sw [kind=\"pcie_switch\", host=\"n0\"];\n"
           "  a [kind=\"gpu\", model=\"a100\", host=\"n0\"]; b [kind=\"gpu\", model=\"a100\", host=\"n0\"];\n"
           "  sw -- cpu0 [type=\"pcie\", bw=\"31.5GBps\", latency=\"150ns\"];\n"
           "  a -- sw [type=\"pcie\", bw=\"" +
           bw +
           "\", latency=\"150ns\"];\n"
           "  b -- sw [type=\"pcie\", bw=\"31.5GBps\", latency=\"150ns\"]; }\n";
  };
  const Topology slow = read_topology_dot(dot("3GBps"), "slow.dot");
  const Routes routes(slow);
  const Channels ch = build_channels(slow, routes, first_ranks(2));
  EXPECT_TRUE(ch.fallback);
  ASSERT_EQ(ch.rings.size(), 1u);
  EXPECT_DOUBLE_EQ(ch.channel_bw_Bps, 0.1e9);
  const Topology fine = read_topology_dot(dot("31.5GBps"), "fine.dot");
  const Routes fine_routes(fine);
  EXPECT_FALSE(build_channels(fine, fine_routes, first_ranks(2)).fallback);
  const Topology slower = read_topology_dot(dot("50MBps"), "slower.dot");
  const Routes slower_routes(slower);
  try {
    build_channels(slower, slower_routes, first_ranks(2));
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "slower.dot: no ring through GPUs 0,1 fits the links, not even at the 0.1 GB/s NCCL falls back to: a "
                 "link on their paths carries less than that (the slowest: line 4: a--sw, 3.81e+07 B/s of payload "
                 "per direction), or no transport joins two of them (NCCL_P2P_DISABLE and NCCL_SHM_DISABLE leave "
                 "only the network between GPUs of one node)");
  }
}

TEST(Channels, SixteenDgxH100UseEveryNic) {
  const Topology t = load_topology("16x-dgx-h100-ndr");
  Routes routes(t);
  const Channels ch = build_channels(t, routes, first_ranks(t.gpu_count()));
  expect_fits(t, ch);
  EXPECT_EQ(ch.hosts.size(), 16u);
  // Eight NDR NICs of 400 Gb/s per node behind PCIe Gen5 x16 (NCCL's 48 GB/s): 8 x 48.
  EXPECT_DOUBLE_EQ(ch.total_bw_Bps(), 8 * 48e9);
  EXPECT_EQ(ch.trees[0].size(), 16u);
}

// Tree checks: a spanning tree over n nodes with consistent parent/child links.
void expect_tree(const std::vector<TreeNode>& tree) {
  const int n = static_cast<int>(tree.size());
  int roots = 0;
  for (int r = 0; r < n; ++r) {
    if (tree[static_cast<std::size_t>(r)].parent < 0) ++roots;
    for (int c : tree[static_cast<std::size_t>(r)].children) {
      if (c < 0) continue;
      ASSERT_LT(c, n);
      EXPECT_EQ(tree[static_cast<std::size_t>(c)].parent, r) << "child " << c << " of " << r;
    }
    // every node reaches the root
    int v = r, steps = 0;
    while (tree[static_cast<std::size_t>(v)].parent >= 0 && steps++ <= n) v = tree[static_cast<std::size_t>(v)].parent;
    EXPECT_LE(steps, n);
  }
  EXPECT_EQ(roots, 1);
}

TEST(Trees, DoubleBinaryTreeIsNccls) {
  // NCCL's illustration (src/graph/trees.cc) for 14 ranks, tree 0: 0 -> 8; 8 -> 4, 12; 4 -> 2, 6;
  // 12 -> 10, 13; 2 -> 1, 3; 10 -> 9, 11.
  const auto trees = double_binary_tree(14);
  const auto& t0 = trees[0];
  EXPECT_EQ(t0[0].parent, -1);
  EXPECT_EQ(t0[0].children[0], 8);
  EXPECT_EQ(t0[8].parent, 0);
  EXPECT_EQ(t0[8].children, (std::array<int, 2>{4, 12}));
  EXPECT_EQ(t0[12].children, (std::array<int, 2>{10, 13}));
  EXPECT_EQ(t0[13].parent, 12);
  EXPECT_EQ(t0[10].children, (std::array<int, 2>{9, 11}));
  // n even: tree 1 mirrors tree 0 (rank r plays n-1-r): root 13, whose child is 5.
  const auto& t1 = trees[1];
  EXPECT_EQ(t1[13].parent, -1);
  EXPECT_EQ(t1[13].children[0], 5);
  EXPECT_EQ(t1[5].parent, 13);
  // n odd: tree 1 is tree 0 shifted by one: root 1.
  const auto odd = double_binary_tree(13);
  EXPECT_EQ(odd[1][1].parent, -1);
  EXPECT_EQ(odd[1][1].children[0], 9);
}

// The tree's bandwidth inside the nodes rises toward twice its inter-node one only as far as its
// chains fit the links (search.cc's second pass retries the whole search): two Intel sockets joined
// by NCCL's 10 GB/s QPI keep a two-node tree at the ring's 10 GB/s (it was 20: the GPUs' PCIe
// bound alone).
TEST(Trees, TheChainsBoundTheTreeInsideTheNodes) {
  const auto tree_intra = [](const char* vendor) {
    std::string dot = "graph t {\n  ib [kind=\"switch\"];\n";
    for (const char* h : {"h0", "h1"}) {
      dot += fmt::format(
          "  {0}_cpu0 [kind=\"cpu\", host=\"{0}\", vendor=\"{1}\"]; {0}_cpu1 [kind=\"cpu\", host=\"{0}\", "
          "vendor=\"{1}\"];\n"
          "  {0}_gpu0 [kind=\"gpu\", model=\"l40s\", host=\"{0}\"]; {0}_gpu1 [kind=\"gpu\", model=\"l40s\", "
          "host=\"{0}\"];\n"
          "  {0}_sw0 [kind=\"pcie_switch\", host=\"{0}\"]; {0}_nic0 [kind=\"nic\", host=\"{0}\"];\n"
          "  {0}_cpu0 -- {0}_cpu1 [type=\"cpu_link\", bw=\"20.8GBps\", latency=\"100ns\", links=\"2\"];\n"
          "  {0}_cpu0 -- {0}_sw0 [type=\"pcie\", bw=\"31.5GBps\", latency=\"150ns\"];\n"
          "  {0}_sw0 -- {0}_gpu0 [type=\"pcie\", bw=\"31.5GBps\", latency=\"150ns\"];\n"
          "  {0}_sw0 -- {0}_nic0 [type=\"pcie\", bw=\"31.5GBps\", latency=\"150ns\"];\n"
          "  {0}_cpu1 -- {0}_gpu1 [type=\"pcie\", bw=\"31.5GBps\", latency=\"150ns\"];\n"
          "  {0}_nic0 -- ib [type=\"infiniband\", bw=\"400Gbps\", latency=\"500ns\"];\n",
          h, vendor);
    }
    const Topology t = read_topology_dot(dot + "}\n", "t.dot");
    const Routes routes(t);
    const Channels ch = build_channels(t, routes, first_ranks(4));
    return std::pair{ch.channel_bw_Bps, ch.tree_bw_intra_Bps};
  };
  const auto [intel_ring, intel_tree] = tree_intra("intel");
  EXPECT_DOUBLE_EQ(intel_ring, 10e9);
  EXPECT_DOUBLE_EQ(intel_tree, 10e9);
  // AMD: P2P across the sockets for two GPUs (NCCL 2.23 on), four rings filling the 16 GB/s
  // xGMI between them, and the chains with them: no room to double.
  const auto [amd_ring, amd_tree] = tree_intra("amd");
  EXPECT_DOUBLE_EQ(amd_ring, 4e9);
  EXPECT_DOUBLE_EQ(amd_tree, amd_ring);
}

TEST(Trees, SpanningForEverySizeAndLeavesInteriorInTheOther) {
  for (int n = 1; n <= 64; ++n) {
    SCOPED_TRACE(n);
    const auto trees = double_binary_tree(n);
    expect_tree(trees[0]);
    expect_tree(trees[1]);
    if (n % 2 == 0) {
      // The point of two trees: a node that forwards in one tree is a leaf in the other.
      for (int r = 0; r < n; ++r) {
        const auto interior = [&](const std::vector<TreeNode>& t) {
          return t[static_cast<std::size_t>(r)].children[0] >= 0 || t[static_cast<std::size_t>(r)].children[1] >= 0;
        };
        if (r != 0 && r != n - 1) {
          EXPECT_FALSE(interior(trees[0]) && interior(trees[1])) << "rank " << r;
        }
      }
    }
  }
}

TEST(Channels, EveryGeneratorOutputHasRings) {
  std::vector<Topology> tops;
  tops.push_back(generate_nvswitch({.gpu = "h200", .gpus = 4, .nics = 2, .nic_bw = "400Gbps"}));
  tops.push_back(generate_nvswitch({.gpu = "b200", .gpus = 8, .nics = 8, .nic_bw = "400Gbps"}));
  tops.push_back(generate_nvlink_mesh({.gpu = "v100-sxm2-16gb"}));
  tops.push_back(generate_pcie({.gpu = "l4", .gpus = 8, .sockets = 2, .gpus_per_switch = 4, .nvlink_bridge = false}));
  tops.push_back(
      generate_pcie({.gpu = "rtx-3090", .gpus = 4, .sockets = 1, .gpus_per_switch = 0, .nvlink_bridge = true}));
  tops.push_back(generate_fat_tree({.nodes = 4, .node = "dgx1-v100"}));
  tops.push_back(generate_fat_tree({.nodes = 8, .node = "dgx-a100", .nics_per_node = 4, .oversubscription = 2}));
  tops.push_back(generate_fat_tree({.nodes = 3, .node = "dgx-h200", .rail_optimized = true}));
  for (const Topology& t : tops) {
    SCOPED_TRACE(t.comment().substr(0, t.comment().find('\n')));
    Routes routes(t);
    const Channels ch = build_channels(t, routes, first_ranks(t.gpu_count()));
    expect_fits(t, ch);
    EXPECT_GT(ch.total_bw_Bps(), 0);
    // Read back through DOT: the generator's output loads.
    EXPECT_EQ(read_topology_dot(write_topology_dot(t), "g.dot").gpu_count(), t.gpu_count());
  }
}

// An error about many GPUs lists them as runs: one readable line for a thousand.
TEST(Channels, RankRunsJoinConsecutiveRanks) {
  EXPECT_EQ(rank_runs({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(rank_runs({0, 2, 4, 5, 6, 7}), "0,2,4-7");
  EXPECT_EQ(rank_runs({3, 4, 9}), "3,4,9");
  EXPECT_EQ(rank_runs({}), "");
}

}  // namespace
}  // namespace gradsync
