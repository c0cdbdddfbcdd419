// nvls_pipeline_test.cpp: the fill of NVLSTree's pipeline across nodes (pipeline_sync_s) against
// its closed form: NVLS's fill (one round at the algorithm bandwidth and one network step's
// latency) plus the first round's trip up the tree between nodes and back down, 2 x log2(nodes)
// hops of half a round through the node's NICs. One SimGrid engine per process.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/engine.hpp"
#include "sim/nccl_model.hpp"
#include "topologies/channels.hpp"
#include "topologies/generators.hpp"
#include "topologies/routes.hpp"

namespace gradsync::sim {
namespace {

constexpr double kFillKiB = 1024.0;
constexpr double kFillMiB = 1024 * kFillKiB;
constexpr double kFillGiB = 1024 * kFillMiB;
constexpr double kFillAlgBps = 200e9;  // any: the fill's first term is a round at this rate

// nvls_tree_fill: the closed form for `nodes` nodes of 8 H100s, a call cut into rounds of `chunk`
// per launched channel and GPU of a node; each round beyond those 128 KiB chunks would make pays
// one more network step.
double nvls_tree_fill(const Channels& ch, double bytes, double chunk, int nodes) {
  const double round = std::min(bytes, ch.nvls->launched * 8 * chunk);
  const double net_step = hop_latency_s(HopKind::kNet, Algorithm::kNvlsTree, Protocol::kSimple);
  const double inter = ch.nvls->channels * (nodes <= 2 ? ch.nvls->bw_inter_Bps : ch.nvls->bw_inter_Bps / 2);
  const double hops = 2 * std::log2(nodes);
  const double extra_rounds = std::ceil(bytes / round) - std::ceil(bytes / (ch.nvls->launched * 8 * 128 * kFillKiB));
  return round / kFillAlgBps + net_step + hops * (round / 2) / inter + extra_rounds * net_step;
}

Channels h100_fat_tree(int nodes) {
  const Topology topo = generate_fat_tree({.nodes = nodes, .node = "dgx-h100"});
  const Routes routes(topo);
  return build_channels(topo, routes, first_ranks(8 * nodes));
}

TEST(NvlsTreePipeline, TheFirstRoundCrossesTheNetworkUpAndBackDown) {
  auto engine = create_engine();
  const Channels two = h100_fat_tree(2);
  ASSERT_TRUE(two.nvls);
  ASSERT_GT(two.nvls->bw_inter_Bps, 0);
  const auto sync = [&](const Channels& ch, double bytes) {
    return pipeline_sync_s(Collective::kAllreduce, bytes, ch, Algorithm::kNvlsTree, Protocol::kSimple, kFillAlgBps);
  };
  // 1 GiB and 256 MiB: 128 KiB chunks (enqueue.cc calcCollChunking), rounds of 16 x 8 x 128 KiB.
  EXPECT_NEAR(sync(two, kFillGiB), nvls_tree_fill(two, kFillGiB, 128 * kFillKiB, 2), 1e-12);
  EXPECT_NEAR(sync(two, 256 * kFillMiB), nvls_tree_fill(two, 256 * kFillMiB, 128 * kFillKiB, 2), 1e-12);
  // The network's part is what NVLS on one node does not pay: half a 16 MiB round each way through
  // the NICs, 2 hops over two nodes.
  const double net = 2 * (8 * kFillMiB) / (two.nvls->channels * two.nvls->bw_inter_Bps);
  EXPECT_NEAR(sync(two, kFillGiB) -
                  (16 * kFillMiB / kFillAlgBps + hop_latency_s(HopKind::kNet, Algorithm::kNvlsTree, Protocol::kSimple)),
              net, 1e-12);
  // Four nodes: 64 KiB chunks (NCCL_NVLSTREE_MAX_CHUNKSIZE), 4 hops at half the inter-node rate.
  const Channels four = h100_fat_tree(4);
  ASSERT_TRUE(four.nvls);
  EXPECT_NEAR(sync(four, kFillGiB), nvls_tree_fill(four, kFillGiB, 64 * kFillKiB, 4), 1e-12);
  // The fill grows with the round, not the call: a larger call pays it once.
  EXPECT_NEAR(sync(two, 4 * kFillGiB), sync(two, kFillGiB), 1e-12);
}

}  // namespace
}  // namespace gradsync::sim
