// nccl_tuning_test.cpp: NCCL 2.27.7's tuning model (tuning.cc ncclTopoTuneModel) where it depends
// on the graph beyond its bandwidth: the broadcast's latency when the channels are not one ring,
// LL's cap across nodes by CPU vendor, the latency row of a ring through NVB hops, and the tree of
// one GPU per node. Each was found different from NCCL's code by a reading of it (2026-12-02).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/engine.hpp"
#include "sim/nccl_model.hpp"
#include "sim/nccl_options.hpp"
#include "topologies/channels.hpp"
#include "topologies/generators.hpp"
#include "topologies/routes.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {
namespace {

constexpr double kTuneMiB = 1024.0 * 1024;

Channels channels_of(const Topology& topo, const std::vector<int>& ranks) {
  const Routes routes(topo);
  return build_channels(topo, routes, ranks);
}

// tuning.cc: a ring broadcast or reduce pays the hop's latency once where every channel is the same
// ring (sameChannels), else once per step (nRanks steps), the tree's for Simple; across nodes on
// the network's row, with no network overhead. gradsync charged one intra-node hop everywhere, and
// so ran 2 x 8 A100s' broadcasts of 150 KB to 1 MB in Simple where NCCL runs LL (2x slower there).
TEST(NcclTuning, ABroadcastPaysALatencyPerStepWhereTheChannelsAreNotOneRing) {
  auto engine = create_engine();
  const Channels node = channels_of(load_topology("dgx-a100"), first_ranks(8));
  EXPECT_TRUE(node.same_channels);  // every channel the same cycle, either way round
  const auto only = [](Protocol p) { return CollectiveRequest::only(Algorithm::kRing, p); };
  // One NVSwitch node: baseLat + hwLat[NVLINK][RING] once (LL 6.6 + 0.6 us).
  EXPECT_NEAR(choose_collective(Collective::kBroadcast, 4096, node, only(Protocol::kLL)).latency_s, 7.2e-6, 1e-12);
  const Channels two = channels_of(load_topology("2x-dgx-a100-hdr"), first_ranks(16));
  EXPECT_FALSE(two.same_channels);  // each channel on its own rail's NICs
  // 16 steps of hwLat[NET]: LL 6.6 + 16 x 2.7; Simple 8.4 + 16 x the tree's 14.
  EXPECT_NEAR(choose_collective(Collective::kBroadcast, 4096, two, only(Protocol::kLL)).latency_s,
              (6.6 + 16 * 2.7) * 1e-6, 1e-12);
  EXPECT_NEAR(choose_collective(Collective::kReduce, 4096, two, only(Protocol::kSimple)).latency_s,
              (8.4 + 16 * 14.0) * 1e-6, 1e-12);
  // What NCCL then picks: LL at 512 KiB, LL128 at 64 MiB (gradsync ran Simple from 150 KB up).
  EXPECT_EQ(choose_collective(Collective::kBroadcast, 512 * 1024, two, {}).protocol, Protocol::kLL);
  EXPECT_EQ(choose_collective(Collective::kBroadcast, 64 * kTuneMiB, two, {}).protocol, Protocol::kLL128);
  // The DGX-1's rings are six different cycles.
  EXPECT_FALSE(channels_of(load_topology("dgx1-v100"), first_ranks(8)).same_channels);
}

// tuning.cc: llMaxBws is indexed by GPU generation on one node and by CPU vendor across nodes
// (Intel: the Volta row, 39.0 / 20.4 GB/s; AMD: the Ampere row, 22.5 / 19.0). gradsync took the
// GPU's row everywhere (Hopper: 45 on 2 nodes).
TEST(NcclTuning, LlsCapAcrossNodesFollowsTheCpuVendor) {
  auto engine = create_engine();
  const Channels two = channels_of(generate_fat_tree({.nodes = 2, .node = "dgx-h100"}), first_ranks(16));
  ASSERT_FALSE(two.amd);
  const CollectiveRequest ll = CollectiveRequest::only(Algorithm::kRing, Protocol::kLL);
  EXPECT_NEAR(choose_collective(Collective::kAllreduce, kTuneMiB, two, ll).bus_bw_Bps, 39.0e9, 1e3);
  const Channels amd = channels_of(generate_fat_tree({.nodes = 2, .node = "dgx-a100"}), first_ranks(16));
  ASSERT_TRUE(amd.amd);  // the DGX A100's EPYC sockets
  EXPECT_NEAR(choose_collective(Collective::kAllreduce, kTuneMiB, amd, ll).bus_bw_Bps, 22.5e9, 1e3);
  // One node keeps the GPU's row: Hopper 141 GB/s, above what 8 H100s' rings give LL.
  const Channels one = channels_of(load_topology("dgx-h100"), first_ranks(8));
  EXPECT_GT(choose_collective(Collective::kAllreduce, kTuneMiB, one, ll).bus_bw_Bps, 39.0e9);
}

// tuning.cc: intraHw is NVLink's only for a graph whose typeIntra is NVL; a ring through NVB hops
// (two GPUs joined through a third's NVLinks: five GPUs of a DGX-1) takes PCI's latencies.
TEST(NcclTuning, ARingThroughNvbHopsTakesPciLatencies) {
  EXPECT_EQ(hop_kind(PathClass::kNVB), HopKind::kPci);
  EXPECT_EQ(hop_kind(PathClass::kNVL), HopKind::kNvlink);
  auto engine = create_engine();
  const Channels five = channels_of(load_topology("dgx1-v100"), first_ranks(5));
  ASSERT_EQ(five.intra_class, PathClass::kNVB);
  const CollectiveRequest simple = CollectiveRequest::only(Algorithm::kRing, Protocol::kSimple);
  // baseLat 8.4 + 8 steps x hwLat[PCI][RING][SIMPLE] 5.7 us (NVLink's would be 3.4).
  EXPECT_NEAR(choose_collective(Collective::kAllreduce, 4096, five, simple).latency_s, (8.4 + 8 * 5.7) * 1e-6, 1e-12);
}

// One GPU per node: NCCL's search runs the tree pattern TREE (search.cc ncclTopoCompute), which the
// model charges 0.85 of its bandwidth (tuning.cc maxTreePattern).
TEST(NcclTuning, ATreeOfOneGpuPerNodeIsChargedItsPattern) {
  auto engine = create_engine();
  const Topology topo = load_topology("2x-dgx-a100-hdr");
  const CollectiveRequest tree = CollectiveRequest::only(Algorithm::kTree, Protocol::kSimple);
  const Channels one = channels_of(topo, {0, 8});
  // Its graph's channels at the tree's speed inside the node, 0.92 of it and at most Ampere's 23.6
  // GB/s per channel on two nodes (perChMaxTreeBws), then 0.85.
  const double c = one.searched > 0 ? one.searched : static_cast<double>(one.rings.size());
  const double expected = 0.85 * std::min(c * one.tree_bw_intra_Bps * 0.92, c * 23.6e9);
  EXPECT_NEAR(choose_collective(Collective::kAllreduce, kTuneMiB, one, tree).bus_bw_Bps, expected, 1e3);
}

// NCCL 2.20 to 2.27 raise the rings' channels to NVLS's after NCCL_MAX_NCHANNELS (connect.cc
// copyChannels up to nvlsChannels; gone in 2.28.3): on 8 H100s NCCL_MAX_NCHANNELS=4 still runs 16
// ring channels there, and 4 from 2.28 or with NVLS off. gradsync ran 4 in every release.
TEST(NcclTuning, NvlsRaisesTheRingsChannelsFrom220To227) {
  auto engine = create_engine();
  const Channels found = channels_of(load_topology("dgx-h100"), first_ranks(8));
  ASSERT_TRUE(found.nvls);
  const auto launched = [&](NcclRelease release, bool nvls) {
    Channels c = found;
    CollectiveRequest r;
    r.nccl = release;
    r.nvls = nvls;
    limit_nvls_channels(c, 0, 0);
    limit_channels(c, 0, 4, nvls_channel_floor(c, r));
    return launched_channels(c);
  };
  EXPECT_EQ(launched({2, 27}, true), 16);
  EXPECT_EQ(launched({2, 20}, true), 16);
  EXPECT_EQ(launched({2, 19}, true), 4);
  EXPECT_EQ(launched({2, 28}, true), 4);
  EXPECT_EQ(launched({2, 27}, false), 4);  // NCCL_NVLS_ENABLE=0: no NVLS channels to reach
  // NCCL_MAX_CTAS bounds NVLS's blocks, and with them the floor.
  Channels c = found;
  CollectiveRequest r;
  r.nccl = {2, 27};
  limit_nvls_channels(c, 0, 8);
  limit_channels(c, 0, 4, nvls_channel_floor(c, r));
  EXPECT_EQ(launched_channels(c), 8);
}

// connect.cc (2.27): on Hopper across nodes, rings faster than 45 GB/s and fewer than 16 channels
// after the usual doubling are doubled again. Two DGX H100s on 6 rails: 6 rings of 48 GB/s, 24
// channels (gradsync launched 12 until 2026-12-02); on 8 rails 16, already enough.
TEST(NcclTuning, HopperAcrossNodesDoublesFewChannelsAgain) {
  auto engine = create_engine();
  const Channels six =
      channels_of(generate_fat_tree({.nodes = 2, .node = "dgx-h100", .nics_per_node = 6}), first_ranks(16));
  ASSERT_EQ(six.rings.size(), 6u);
  ASSERT_GT(six.channel_bw_Bps, 45e9);
  EXPECT_EQ(launched_channels(six), 24);
  const Channels eight = channels_of(generate_fat_tree({.nodes = 2, .node = "dgx-h100"}), first_ranks(16));
  EXPECT_EQ(launched_channels(eight), 2 * static_cast<int>(eight.rings.size()));
  // One node, or A100s: the usual doubling only.
  const Channels node = channels_of(load_topology("dgx-h100"), first_ranks(8));
  EXPECT_EQ(launched_channels(node), 2 * static_cast<int>(node.rings.size()));
}

}  // namespace
}  // namespace gradsync::sim
