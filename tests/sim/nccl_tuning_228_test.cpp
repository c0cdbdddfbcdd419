// nccl_tuning_228_test.cpp: what NCCL 2.28 and 2.29 changed in the tuning model (tuning.cc at
// v2.28.9-1 and v2.29.7-1, sim/nccl_model.cpp): NVLS's estimate and with it NCCL's choice, while
// the simulated calls keep 2.27's rate and latency; and the NVLS graph's bwInter on one node
// (search.cc, pass 2). Closed forms from NCCL's code.
#include <gtest/gtest.h>

#include <vector>

#include "sim/engine.hpp"
#include "sim/nccl_model.hpp"
#include "topologies/channels.hpp"
#include "topologies/generators.hpp"
#include "topologies/routes.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {
namespace {

constexpr double kGiB228 = 1024.0 * 1024 * 1024;

Channels h100s(int n) {
  const Topology topo = load_topology("dgx-h100");
  const Routes routes(topo);
  return build_channels(topo, routes, first_ranks(n));
}

CollectiveRequest release(NcclRelease r, std::optional<Algorithm> a = std::nullopt) {
  CollectiveRequest q = a ? CollectiveRequest::only(*a, std::nullopt) : CollectiveRequest{};
  q.nccl = r;
  return q;
}

// On one node nothing the NVLS search follows is inter, so its second pass raises bwInter a speed
// at a time (sm90: 60, 50, 40, ... GB/s) while below twice bwIntra, up to the top: 8 H100s 40/60,
// 6 of them 50/60, 4 of them 60/60.
TEST(NcclTuning228, OneNodesNvlsGraphRaisesBwInterTowardTwiceBwIntra) {
  auto engine = create_engine();
  const auto graph = [](int n) {
    const Channels ch = h100s(n);
    return std::pair{ch.nvls->bw_intra_Bps / 1e9, ch.nvls->bw_inter_Bps / 1e9};
  };
  EXPECT_EQ(graph(8), (std::pair{40.0, 60.0}));
  EXPECT_EQ(graph(6), (std::pair{50.0, 60.0}));
  EXPECT_EQ(graph(4), (std::pair{60.0, 60.0}));
}

// NVLS's model: 2.27 nChannels x min(bwIntra, bwInter) x 5/6; 2.28 nChannels x min(bwIntra x 0.85 x
// (nChannels - 1) / nChannels x 2, bwInter) x nRanks / nsteps. 8 H100s: 8 x 40 x 5/6 = 266.7 GB/s
// against 8 x min(59.5, 60) x 8/14 = 272.0; 6 of them: 6 x 50 x 5/6 = 250 against 6 x min(70.8, 60)
// x 6/10 = 216.
TEST(NcclTuning228, NvlsEstimateFollowsTheRelease) {
  auto engine = create_engine();
  const auto alg = [](int n, NcclRelease r) {
    return choose_collective(Collective::kAllreduce, kGiB228, h100s(n), release(r, Algorithm::kNvls)).alg_bw_Bps / 1e9;
  };
  EXPECT_NEAR(alg(8, {2, 27}), 8 * 40 * 5.0 / 6, 1e-6);
  EXPECT_NEAR(alg(8, {2, 28}), 8 * (40 * 0.85 * 7 / 8 * 2) * 8 / 14.0, 1e-4);
  EXPECT_NEAR(alg(6, {2, 27}), 6 * 50 * 5.0 / 6, 1e-6);
  EXPECT_NEAR(alg(6, {2, 29}), 6 * 60 * 6 / 10.0, 1e-4);
}

// What the simulated call spends does not move with the estimate: the NVLS rate and the latency
// stay 2.27's (measured NVLS calls match it: validation/published, h100x6 and h100x8 cases).
TEST(NcclTuning228, TheSimulatedCallKeeps227sRateAndLatency) {
  auto engine = create_engine();
  const Channels six = h100s(6);
  const CollectiveChoice old = choose_collective(Collective::kAllreduce, kGiB228, six, release({2, 27}, Algorithm::kNvls));
  const CollectiveChoice now = choose_collective(Collective::kAllreduce, kGiB228, six, release({2, 29}, Algorithm::kNvls));
  EXPECT_DOUBLE_EQ(now.rate_Bps, old.rate_Bps);
  EXPECT_DOUBLE_EQ(now.latency_s, old.latency_s);
  EXPECT_NE(now.alg_bw_Bps, old.alg_bw_Bps);
  // Two nodes: NVLSTree's network latency is 20.9 us in 2.28's model, 14 in 2.27's; the call
  // spends 2.27's, while 2.28 chooses by its own.
  const Topology two = generate_fat_tree({.nodes = 2, .node = "dgx-h100"});
  const Channels ch = build_channels(two, Routes(two), first_ranks(16));
  const CollectiveChoice t27 =
      choose_collective(Collective::kAllreduce, kGiB228, ch, release({2, 27}, Algorithm::kNvlsTree));
  const CollectiveChoice t28 =
      choose_collective(Collective::kAllreduce, kGiB228, ch, release({2, 28}, Algorithm::kNvlsTree));
  EXPECT_DOUBLE_EQ(t28.latency_s, t27.latency_s);
  EXPECT_GT(t28.predicted_s - kGiB228 / t28.alg_bw_Bps, t27.latency_s);  // 2 x (20.9 - 14) us more in its model
}

// From 2.28 NVLS and NVLSTree need at least two channels of the NVLS graph ("NVLS/NVLStree needs at
// least 2 channels"): two DGX H100s with one NIC each have one, so NCCL 2.28 does not offer
// NVLSTree there where 2.27 did.
TEST(NcclTuning228, NvlsTreeNeedsTwoChannelsFrom228) {
  auto engine = create_engine();
  const Topology one = generate_fat_tree({.nodes = 2, .node = "dgx-h100", .nics_per_node = 1});
  const Channels ch = build_channels(one, Routes(one), first_ranks(16));
  ASSERT_EQ(ch.nvls->channels, 1);
  CollectiveRequest q = release({2, 27}, Algorithm::kNvlsTree);
  EXPECT_EQ(choose_collective(Collective::kAllreduce, kGiB228, ch, q).algorithm, Algorithm::kNvlsTree);
  q.nccl = {2, 28};
  q.strict = false;  // what a run that asks for NVLSTree and cannot have it falls back to
  EXPECT_NE(choose_collective(Collective::kAllreduce, kGiB228, ch, q).algorithm, Algorithm::kNvlsTree);
}

// NCCL 2.29.2's own choice on 4 and 6 H100s of one NVSwitch node from 256 MiB up (its debug lines,
// validation/published/nccl_tests.yaml, waynehacking8 and ncclcollbench cases): Ring at 4, NVLS at 6.
TEST(NcclTuning228, TwoTwentyNineChoosesRingOnFourH100sAndNvlsOnSix) {
  auto engine = create_engine();
  for (double bytes : {256.0 * 1024 * 1024, kGiB228, 8 * kGiB228}) {
    EXPECT_EQ(choose_collective(Collective::kAllreduce, bytes, h100s(4), release({2, 29})).algorithm, Algorithm::kRing);
    EXPECT_EQ(choose_collective(Collective::kAllreduce, bytes, h100s(6), release({2, 29})).algorithm, Algorithm::kNvls);
  }
}

}  // namespace
}  // namespace gradsync::sim
