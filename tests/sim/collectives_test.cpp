// collectives_test.cpp: simulated NCCL collectives against their closed forms on a uniform star
// (every GPU one link of payload bandwidth B and latency a to one NVSwitch), and NCCL's choice of
// algorithm and protocol. One SimGrid engine per process: each test runs in its own process.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "sim/cluster.hpp"
#include "sim/engine.hpp"
#include "sim/nccl_model.hpp"
#include "topologies/channels.hpp"
#include "topologies/link_model.hpp"

namespace gradsync::sim {
namespace {

// B: what 4 NVLinks of an A100 (100 GB/s) carry of payload per direction, NCCL's 20 of every 25
// GB/s (topologies/link_model.hpp): flows move payload at this rate.
constexpr double kLinkBw = 100e9 * 20.0 / 25.0;
constexpr double kLinkLat = 0.5e-6;  // a per link; a GPU-to-GPU route crosses two links
constexpr double kRouteLat = 2 * kLinkLat;

// star: n GPUs on one NVSwitch (the fast path) and one CPU (host memory, slow and far).
std::string star(int n) {
  std::string dot = "graph star {\n  \"cpu\" [kind=\"cpu\", host=\"h\"];\n  \"sw\" [kind=\"nvswitch\", host=\"h\"];\n";
  for (int g = 0; g < n; ++g) {
    dot += fmt::format("  \"gpu{0}\" [kind=\"gpu\", model=\"a100-sxm4-80gb\", host=\"h\"];\n", g);
    dot += fmt::format("  \"gpu{0}\" -- \"sw\" [type=\"nvlink\", bw=\"25GBps\", links=\"4\", latency=\"500ns\"];\n", g);
    dot += fmt::format("  \"gpu{0}\" -- \"cpu\" [type=\"pcie\", bw=\"10GBps\", latency=\"50us\"];\n", g);
  }
  return dot + "}\n";
}

// Run one collective of `bytes` (root 0) on every rank at time 0; returns its record.
CollectiveRecord run_one(int n, Collective c, double bytes_per_channel_unit, SimOptions opts,
                         int* channels_out = nullptr, double* bytes_out = nullptr) {
  auto engine = create_engine();
  const Topology topo = read_topology_dot(star(n), "star.dot");
  const Routes routes(topo);
  SimCluster cluster(topo, routes, n, opts);
  const int channels = static_cast<int>(cluster.channels(n).rings.size());
  const double bytes = bytes_per_channel_unit * channels;
  for (int r = 0; r < n; ++r) {
    ProcessGroup* pg = &cluster.world_group(r);
    cluster.spawn(r, [pg, c, bytes] {
      CollectiveOp op;
      op.name = "test";
      op.bytes = static_cast<Bytes>(bytes);
      WorkPtr w = issue_collective(*pg, c, op, 0);
      w->wait();
    });
  }
  cluster.run();
  if (channels_out) *channels_out = channels;
  if (bytes_out) *bytes_out = bytes;
  EXPECT_EQ(cluster.collectives().size(), 1u);
  return cluster.collectives().at(0);
}

TEST(LinkModel, TheStarsLinkCarriesNcclsPayloadRate) {
  const Topology topo = read_topology_dot(star(2), "star.dot");
  EXPECT_DOUBLE_EQ(topo.link(topo.links()[0]).payload_bw_Bps, kLinkBw);            // gpu0 -- sw
  EXPECT_DOUBLE_EQ(topo.link(topo.links()[1]).payload_bw_Bps, 10e9 * 12 / 15.75);  // gpu0 -- cpu: PCIe
  EXPECT_DOUBLE_EQ(payload_efficiency(LinkType::kNvlink, 80), 0.8);
}

// read_handshakes: A100s over NVLink use P2P read for Simple, one more handshake per slice:
// a ring step moves each rank's part per launched channel (twice the ring channels) in loops of
// 2 MiB, each in 2 slices (1 when the last part is at most 32 KiB). `part` is the bytes of one
// rank per step, all channels together.
double read_handshakes(double part, int steps, int channels) {
  const double launched = 2.0 * channels;
  const double piece = part / launched;
  const double loops = std::ceil(piece / (2.0 * 1024 * 1024));
  const double last = piece - (loops - 1) * 2.0 * 1024 * 1024;
  const double slices = 2 * (loops - 1) + (last > 32768 ? 2 : 1);
  return slices * steps * hop_latency_s(HopKind::kNvlink, Algorithm::kRing, Protocol::kSimple);
}

SimOptions forced(Protocol p, int max_channels = 0) {
  SimOptions o;
  o.nccl = CollectiveRequest::only(Algorithm::kRing, p);
  o.max_channels = max_channels;
  return o;
}

class RingAllreduce : public ::testing::TestWithParam<int> {};

// T = base + 2(n-1) (hop + route latency) + 2(n-1)/n S / B: every step, each GPU's link carries
// its C channels' chunks of S/(n C) at once, so a step takes S/(n B) plus its latency.
TEST_P(RingAllreduce, MatchesTheClosedForm) {
  const int n = GetParam();
  int channels = 0;
  double S = 0;
  const CollectiveRecord rec =
      run_one(n, Collective::kAllreduce, 64.0 * 1024 * 1024 * n, forced(Protocol::kSimple), &channels, &S);
  const double alpha = kRouteLat + hop_latency_s(HopKind::kNvlink, Algorithm::kRing, Protocol::kSimple);
  const double expected = base_latency_s(Algorithm::kRing, Protocol::kSimple) + 2.0 * (n - 1) / n * S / kLinkBw +
                          2.0 * (n - 1) * alpha + read_handshakes(S / n, 2 * (n - 1), channels);
  EXPECT_GE(channels, 1);
  EXPECT_NEAR(rec.end_s - rec.start_s, expected, 1e-6 * expected) << "n=" << n << " channels=" << channels;
}

INSTANTIATE_TEST_SUITE_P(Sizes, RingAllreduce, ::testing::Values(2, 3, 8, 16));

// LL sends 8-byte lines carrying 4 bytes: twice the bytes on the wire, LL's own latencies.
TEST(RingAllreduce, LowLatencyProtocolDoublesTheWireBytes) {
  const int n = 4;
  int channels = 0;
  double S = 0;
  const CollectiveRecord rec = run_one(n, Collective::kAllreduce, 4096.0 * n, forced(Protocol::kLL), &channels, &S);
  const double alpha = kRouteLat + hop_latency_s(HopKind::kNvlink, Algorithm::kRing, Protocol::kLL);
  // 2 wire bytes per payload byte, stored into the peer over the A100s' NVLink (write mode): each
  // step's flow carries its chunk's wire bytes, whole.
  const double step_wire = std::ceil(2 / kAmpereNvlinkWriteEfficiency * S / (n * channels)) * channels;
  const double expected =
      base_latency_s(Algorithm::kRing, Protocol::kLL) + 2.0 * (n - 1) * step_wire / kLinkBw + 2.0 * (n - 1) * alpha;
  EXPECT_NEAR(rec.end_s - rec.start_s, expected, 1e-6 * expected);
}

class Pipelined : public ::testing::TestWithParam<std::tuple<int, Collective>> {};

// One channel, m chunks of c bytes down a chain of n-1 hops: T = base + (n - 1 + m - 1) (hop +
// route latency + c / R), R the fastest NCCL's search lets a channel go on an A100 (one block
// moves a channel's data; search.cc speedArrayIntra[0], 40 GB/s: below the link's B); reduce is
// the same chain run towards the root.
TEST_P(Pipelined, BroadcastAndReduceMatchThePipelineFormula) {
  const auto [n, c] = GetParam();
  const int m = 6;
  const double chunk = chunk_bytes(Protocol::kSimple);
  const CollectiveRecord rec = run_one(n, c, m * chunk, forced(Protocol::kSimple, 1));
  const double speed = nccl_speeds(false, 80).front();
  ASSERT_LT(speed, kLinkBw);  // so that the channel, not the link, sets the pace
  const double stage = kRouteLat + hop_latency_s(HopKind::kNvlink, Algorithm::kRing, Protocol::kSimple) + chunk / speed;
  const double expected = base_latency_s(Algorithm::kRing, Protocol::kSimple) + (n - 1 + m - 1) * stage;
  EXPECT_NEAR(rec.end_s - rec.start_s, expected, 1e-6 * expected) << "n=" << n;
}

INSTANTIATE_TEST_SUITE_P(Sizes, Pipelined,
                         ::testing::Combine(::testing::Values(2, 3, 8),
                                            ::testing::Values(Collective::kBroadcast, Collective::kReduce)));

// Ring allgather: n-1 steps, each GPU forwarding one contribution S per step.
TEST(RingAllgather, MatchesTheClosedForm) {
  const int n = 8;
  double S = 0;
  int channels = 0;
  const CollectiveRecord rec =
      run_one(n, Collective::kAllgather, 8.0 * 1024 * 1024, forced(Protocol::kSimple), &channels, &S);
  const double alpha = kRouteLat + hop_latency_s(HopKind::kNvlink, Algorithm::kRing, Protocol::kSimple);
  const double expected = base_latency_s(Algorithm::kRing, Protocol::kSimple) + (n - 1) * (alpha + S / kLinkBw) +
                          read_handshakes(S, n - 1, channels);
  EXPECT_NEAR(rec.end_s - rec.start_s, expected, 1e-6 * expected);
}

// Ring reduce-scatter: n-1 steps of S/n.
TEST(RingReduceScatter, MatchesTheClosedForm) {
  const int n = 8;
  double S = 0;
  int channels = 0;
  const CollectiveRecord rec =
      run_one(n, Collective::kReduceScatter, 8.0 * 1024 * 1024 * n, forced(Protocol::kSimple), &channels, &S);
  const double alpha = kRouteLat + hop_latency_s(HopKind::kNvlink, Algorithm::kRing, Protocol::kSimple);
  const double expected = base_latency_s(Algorithm::kRing, Protocol::kSimple) + (n - 1) * (alpha + S / n / kLinkBw) +
                          read_handshakes(S / n, n - 1, channels);
  EXPECT_NEAR(rec.end_s - rec.start_s, expected, 1e-6 * expected);
}

// NCCL's choice: LL for small messages (lowest latency), Simple for large ones (full payload);
// tree only for allreduce across nodes, and a forced tree elsewhere is an error.
TEST(NcclModel, PicksLowLatencyForSmallAndSimpleForLargeMessages) {
  auto engine = create_engine();
  const Topology topo = read_topology_dot(star(8), "star.dot");
  const Routes routes(topo);
  const Channels ch = build_channels(topo, routes, first_ranks(8));
  EXPECT_EQ(choose_collective(Collective::kAllreduce, 1024, ch, {}).protocol, Protocol::kLL);
  const CollectiveChoice big = choose_collective(Collective::kAllreduce, 1e9, ch, {});
  EXPECT_EQ(big.protocol, Protocol::kSimple);
  EXPECT_EQ(big.algorithm, Algorithm::kRing);
  EXPECT_THROW(
      choose_collective(Collective::kAllreduce, 1e9, ch, CollectiveRequest::only(Algorithm::kTree, std::nullopt)),
      ConfigError);
}

TEST(NcclModel, TreeAllreduceAcrossNodesCompletes) {
  auto engine = create_engine();
  const Topology topo = load_topology("2x-dgx-a100-hdr");
  const Routes routes(topo);
  SimOptions o;
  o.nccl = CollectiveRequest::only(Algorithm::kTree, std::nullopt);
  SimCluster cluster(topo, routes, 16, o);
  double ring_floor = 0;
  for (int r = 0; r < 16; ++r) {
    ProcessGroup* pg = &cluster.world_group(r);
    cluster.spawn(r, [pg] {
      CollectiveOp op;
      op.name = "tree";
      op.bytes = 256 << 20;
      pg->allreduce(op)->wait();
    });
  }
  cluster.run();
  ASSERT_EQ(cluster.collectives().size(), 1u);
  const CollectiveRecord& rec = cluster.collectives()[0];
  EXPECT_EQ(rec.choice.algorithm, Algorithm::kTree);
  // Every byte crosses the nodes' NICs at least once each way: S / (NIC bandwidth of a node).
  ring_floor = static_cast<double>(256 << 20) / (8 * 24e9);  // PCIe Gen4 x16 at NCCL's 24 GB/s to each NIC
  EXPECT_GT(rec.end_s - rec.start_s, ring_floor);
  // Every GPU sent and received data.
  for (int r = 0; r < 16; ++r) {
    EXPECT_GT(cluster.bytes_out(r, 0), 0) << r;
    EXPECT_GT(cluster.bytes_in(r, 0), 0) << r;
  }
}

// A collective that one rank never joins leaves the others waiting: an error, not a hang.
TEST(SimCluster, ACollectiveSomeRankNeverJoinsIsAnError) {
  auto engine = create_engine();
  const Topology topo = read_topology_dot(star(2), "star.dot");
  const Routes routes(topo);
  SimCluster cluster(topo, routes, 2, {});
  ProcessGroup* pg = &cluster.world_group(0);
  cluster.spawn(0, [pg] { pg->allreduce({"lonely", 1024, DType::kFloat32, -1})->wait(); });
  cluster.spawn(1, [] {});
  try {
    cluster.run();
    FAIL() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("1 of 2 processes unfinished"), std::string::npos) << e.what();
  }
}

// Ranks calling different collectives under one sequence number: c10d would hang or corrupt;
// the simulator names the mismatch.
TEST(SimCluster, MismatchedCollectivesAreNamed) {
  auto engine = create_engine();
  const Topology topo = read_topology_dot(star(2), "star.dot");
  const Routes routes(topo);
  SimCluster cluster(topo, routes, 2, {});
  ProcessGroup* a = &cluster.world_group(0);
  ProcessGroup* b = &cluster.world_group(1);
  cluster.spawn(0, [a] { a->allreduce({"allreduce:bucket0", 1024, DType::kFloat32, 0})->wait(); });
  cluster.spawn(1, [b] { b->allreduce({"allreduce:bucket0", 2048, DType::kFloat32, 0})->wait(); });
  try {
    cluster.run();
    FAIL() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("differs across ranks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gradsync::sim
