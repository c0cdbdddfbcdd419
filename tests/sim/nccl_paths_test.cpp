// nccl_paths_test.cpp: NCCL's paths as simulated against their closed forms: NVLS on an H100
// NVSwitch node, a ring over two nodes' NICs, SHM through host memory; NCCL's chunking of a
// call (pipeline_sync_s) and its choice of algorithm. One SimGrid engine per process.
#include <gtest/gtest.h>

#include <array>

#include <cmath>

#include "sim/engine.hpp"
#include "sim/nccl_info.hpp"
#include "sim/nccl_model.hpp"
#include "sim/nccl_options.hpp"
#include "sim/shm_duplex.hpp"
#include "sim/simulate.hpp"
#include "tests/support/in_child.hpp"
#include "topologies/channels.hpp"
#include "topologies/generators.hpp"
#include "topologies/routes.hpp"

namespace gradsync::sim {
namespace {

constexpr double kMiB = 1024.0 * 1024;
constexpr double kGiB = 1024 * kMiB;

// simulate: one collective per size, one after the other, in this process's engine.
std::vector<CollectivePoint> simulate(const Topology& topo, int gpus, Collective c, std::vector<double> sizes,
                                      NcclSettings nccl = {}) {
  CollectiveSweep sw;
  sw.gpus = gpus;
  sw.op = c;
  sw.sizes = std::move(sizes);
  sw.nccl = nccl;
  sw.fidelity = "aggregate";
  return simulate_collectives(sw, topo);
}

const double kNvlinkHandshake = 3.4e-6;  // NCCL 2.27 tuning.cc hwLat[NVLINK][RING][SIMPLE]

// NVLS on 8 H100s: NCCL's graph has 8 channels of 40 GB/s inside the node, an algorithm bandwidth
// of 8 x 40 x 5/6 GB/s; its latency is 25 us (hwLat NVLS). NCCL cuts a call into rounds of 16
// launched channels x 8 heads x a chunk: 128 KiB from 1 GiB up, 32 KiB below 64 MiB. A round
// cut smaller than 128 KiB pays a handshake; the pipeline's fill one round and its handshake.
TEST(Nvls, UncontendedAllreduceTakesTheModelsTime) {
  const Topology topo = load_topology("dgx-h100");
  const Routes routes(topo);
  const double route = routes.gpu_route(0, 1).latency_s;
  const double alg = 8 * 40e9 * 5.0 / 6.0;
  const double ops = 16.0 * 8;
  struct Case {
    double bytes, chunk;
  };
  const std::vector<Case> cases{{32 * kMiB, 32 * 1024.0}, {kGiB, 128 * 1024.0}};
  const std::vector<CollectivePoint> points = simulate(topo, 8, Collective::kAllreduce, {32 * kMiB, kGiB});
  ASSERT_EQ(points.size(), 2u);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    const CollectivePoint& p = points[i];
    EXPECT_EQ(p.choice.algorithm, Algorithm::kNvls);
    const double extra_rounds = k.bytes / (ops * k.chunk) - k.bytes / (ops * 128 * 1024);
    const double fill = std::min(k.bytes, ops * k.chunk) / alg + kNvlinkHandshake;
    const double expected = 25e-6 + extra_rounds * kNvlinkHandshake + fill + k.bytes / alg + route;
    EXPECT_NEAR(p.time_s, expected, 1e-6 * expected) << k.bytes;
  }
}

// NCCL_MAX_CTAS=4 leaves an NVLS kernel 4 of its 16 blocks (nvls.cc: nvlsChannels = max(minCTAs,
// min(maxCTAs, 16))); each block moves its share at its default rate, so the payload takes 16/4
// times as long. NCCL's tuning model still plans with the graph (NVLS is still chosen); rounds of
// 4 blocks x 8 heads x 128 KiB. NCCL_MAX_NCHANNELS=4 leaves NVLS as it was.
TEST(Nvls, MaxCtasBoundsItsBlocksAndMaxNchannelsDoesNot) {
  const Topology topo = load_topology("dgx-h100");
  const Routes routes(topo);
  const double route = routes.gpu_route(0, 1).latency_s;
  const double alg = 8 * 40e9 * 5.0 / 6.0;
  // time: one 1 GiB NVLS allreduce under `nccl`, from a child process (one engine per process);
  // negative where another algorithm ran.
  const auto time = [&](NcclSettings nccl) {
    const std::vector<double> t = testing_support::in_child([&] {
      const std::vector<CollectivePoint> p = simulate(topo, 8, Collective::kAllreduce, {kGiB}, nccl);
      return std::vector<double>{p.size() == 1 && p[0].choice.algorithm == Algorithm::kNvls ? p[0].time_s : -1.0};
    });
    return t.empty() ? -2.0 : t.front();
  };
  NcclSettings ctas;
  ctas.nvls_max_channels = 4;
  ctas.max_channels = 4;
  const double four = time(ctas);
  const double fill = 4.0 * 8 * 128 * 1024 / alg + kNvlinkHandshake;
  const double expected = 25e-6 + fill + kGiB / (alg * 4 / 16) + route;
  EXPECT_NEAR(four, expected, 1e-6 * expected);
  NcclSettings rings;
  rings.max_channels = 4;
  const double plain = time(rings);
  const double dflt = time({});
  EXPECT_GT(dflt, 0);
  EXPECT_EQ(plain, dflt);
  EXPECT_GT(four, 3.5 * dflt);
}

// Two DGX A100s, 8 HDR NICs each: a ring's eight channels leave each node by their own NIC, so
// its bus bandwidth is bounded by 8 NICs x the rate of the NIC's path: the 25 GB/s line rate
// behind PCIe Gen4 x16, which carries 24 GB/s of payload (NCCL's ring graph: 8 x 24 GB/s). Its
// time is NCCL's model (latency, then S at 8 x 24 GB/s x 16/30) plus the P2P read handshakes of
// its hops inside the nodes (16 launched channels: 1 GiB is 4 MiB per rank and channel, 2 loops
// of 2 slices in each of 30 steps) plus the route latency of every step (the network hop's, which the ring waits for).
// in_child: simulate's points' times and algorithms, from a child process (one engine per
// process: the test's own run needs this one's).
std::vector<std::pair<double, int>> in_child(const Topology& topo, int gpus, std::vector<double> sizes,
                                             NcclSettings nccl = {}) {
  const std::vector<double> flat = testing_support::in_child([&] {
    std::vector<double> out;
    for (const CollectivePoint& p : simulate(topo, gpus, Collective::kAllreduce, sizes, nccl)) {
      out.push_back(p.time_s);
      out.push_back(static_cast<double>(p.choice.algorithm));
    }
    return out;
  });
  std::vector<std::pair<double, int>> out;
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) out.emplace_back(flat[i], static_cast<int>(flat[i + 1]));
  return out;
}

// NVLSTree between two DGX H100s with 1, 2 or 4 NICs each: NCCL's NVLS graph across nodes has a
// channel per head, a NIC's local GPU (search.cc: "NVLS search only tries to find NIC:GPU
// combinations to compute the heads"), each at its NIC's 48 GB/s; only the heads cross the network,
// each with S / heads. At 1 GiB the time is that of the heads' shares, S / (NICs x 48 x 5/6 GB/s)
// (the NVSwitch's part is faster), plus NCCL's latencies and pipeline: within 5% (NCCL_ALGO=NVLSTree:
// NCCL's model prefers the tree here). Every GPU was a head until 2026-12-01, and each one's flow,
// its wire bytes stretched to its rate, took its NIC for itself: four on a NIC took 4x as long.
TEST(Nvls, TreeSharesBetweenNodesShareTheirNics) {
  NcclSettings nvls_tree;
  nvls_tree.request = CollectiveRequest::only(Algorithm::kNvlsTree, Protocol::kSimple);
  // NCCL 2.27: from 2.28 NVLS and NVLSTree need two channels of the graph, one NIC per node gives
  // one (tests/sim/nccl_tuning_228_test.cpp).
  nvls_tree.request.nccl = {2, 27};
  for (int nics : {1, 2, 4}) {
    const Topology topo = generate_fat_tree({.nodes = 2, .node = "dgx-h100", .nics_per_node = nics});
    const Routes routes(topo);
    const Channels ch = build_channels(topo, routes, first_ranks(16));
    ASSERT_TRUE(ch.nvls);
    EXPECT_EQ(ch.nvls->channels, nics);
    ASSERT_EQ(ch.nvls->heads.size(), 2u);
    EXPECT_EQ(ch.nvls->heads[0].size(), static_cast<std::size_t>(nics));
    EXPECT_EQ(ch.nvls->heads[1].size(), static_cast<std::size_t>(nics));
    EXPECT_DOUBLE_EQ(ch.nvls->bw_inter_Bps, 48e9);
    const double inter = kGiB / (nics * 48e9 * 5.0 / 6.0);
    const std::vector<std::pair<double, int>> p = in_child(topo, 16, {kGiB}, nvls_tree);  // an engine each
    ASSERT_EQ(p.size(), 1u);
    EXPECT_GT(p[0].first, inter) << nics;
    EXPECT_LT(p[0].first, 1.05 * inter) << nics;
  }
}

// NCCL_P2P_DISABLE=1 diverts a node's GPU-to-GPU paths through the CPU (paths.cc), so rings take
// SHM; NVLS's multicast memory is reached over each GPU's NVLink to the NVSwitch, which it does
// not divert: the allreduce is still NVLS and takes the same time, on one node and across two
// (NVLSTree, whose flows between nodes take the NICs either way).
void expect_p2p_off_keeps_nvls(const char* topology, int gpus, Algorithm algorithm) {
  const Topology topo = load_topology(topology);
  const std::vector<double> sizes{64 * kMiB, kGiB};
  const std::vector<std::pair<double, int>> base = in_child(topo, gpus, sizes);
  ASSERT_EQ(base.size(), sizes.size());
  NcclSettings off;
  off.transport.p2p_disable = true;
  const std::vector<CollectivePoint> p2p_off = simulate(topo, gpus, Collective::kAllreduce, sizes, off);
  ASSERT_EQ(p2p_off.size(), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(base[i].second, static_cast<int>(algorithm)) << sizes[i];
    EXPECT_EQ(p2p_off[i].choice.algorithm, algorithm) << sizes[i];
    EXPECT_NEAR(p2p_off[i].time_s, base[i].first, 1e-9 * base[i].first) << sizes[i];
  }
}

TEST(Nvls, P2pDisabledKeepsTheNvswitchPathOnOneNode) { expect_p2p_off_keeps_nvls("dgx-h100", 8, Algorithm::kNvls); }

TEST(Nvls, P2pDisabledKeepsTheNvswitchPathAcrossTwoNodes) {
  expect_p2p_off_keeps_nvls("16x-dgx-h100-ndr", 16, Algorithm::kNvlsTree);
}

// NCCL_MAX_NCHANNELS: one block moves a channel's data, however many NVLinks the NVSwitch spreads
// it over, and NCCL's search never plans a channel above 40 GB/s on an A100 (search.cc
// speedArrayIntra[0]): one channel of 8 A100s reaches at most 40 GB/s busbw and four at most 160,
// not the links' 240. With one launched block per ring (NCCL_MAX_NCHANNELS bounds the blocks, not
// the rings), each block's P2P read handshakes (two per 2 MiB chunk and ring step) and the
// latencies take up to 15% of it at 1 GiB.
TEST(Channels, EachMovesAtMostItsSpeedNotTheLinks) {
  const Topology topo = load_topology("dgx-a100");
  NcclSettings one;
  one.request = CollectiveRequest::only(Algorithm::kRing, Protocol::kSimple);
  one.max_channels = 1;
  NcclSettings four = one;
  four.max_channels = 4;
  const std::vector<std::pair<double, int>> single = in_child(topo, 8, {kGiB}, one);
  const std::vector<CollectivePoint> quad = simulate(topo, 8, Collective::kAllreduce, {kGiB}, four);
  ASSERT_EQ(single.size(), 1u);
  ASSERT_EQ(quad.size(), 1u);
  const double cap = nccl_speeds(false, 80).front();
  ASSERT_DOUBLE_EQ(cap, 40e9);
  const double bus = 2.0 * 7 / 8 * kGiB;  // nccl-tests' busbw bytes of an allreduce on 8 ranks
  const double single_bw = bus / single[0].first;
  EXPECT_LE(single_bw, cap);
  EXPECT_GE(single_bw, 0.85 * cap);
  EXPECT_LE(quad[0].busbw_GBps * 1e9, 4 * cap);
  EXPECT_GE(quad[0].busbw_GBps * 1e9, 0.85 * 4 * cap);
}

TEST(TwoNodes, RingReachesNicsTimesTheirPathsRate) {
  const Topology topo = load_topology("2x-dgx-a100-hdr");
  NcclSettings ring;
  ring.request = CollectiveRequest::only(Algorithm::kRing, Protocol::kSimple);
  const std::vector<CollectivePoint> points = simulate(topo, 16, Collective::kAllreduce, {kGiB, 16 * kGiB}, ring);
  const double bound = 8 * 24e9;
  const double alg = bound * 16 / 30;
  const Routes routes(topo);
  const Channels ch = build_channels(topo, routes, first_ranks(16));
  double route = 0;
  for (const RingChannel& rc : ch.rings)
    for (const Hop& h : rc.hops) route = std::max(route, h.route.latency_s);
  for (const CollectivePoint& p : points) {
    // The ring crosses the network, which paces it: the A100s' P2P read handshakes pass while its
    // network hops move (no sync_s), their latency being NCCL's model's (x1.4 for Simple).
    EXPECT_DOUBLE_EQ(p.choice.sync_s, 0.0);
    EXPECT_NEAR(p.choice.alg_bw_Bps, alg, 1e-3);
    const double expected = p.choice.latency_s + p.bytes / alg + 30 * route;
    EXPECT_NEAR(p.time_s, expected, 1e-6 * expected) << p.bytes;
    EXPECT_LE(p.busbw_GBps * 1e9, bound);
  }
  EXPECT_GE(points.back().busbw_GBps * 1e9, 0.99 * bound);  // 16 GiB: latency costs 0.2%
}

// Two GeForce GPUs on CPU root ports: no P2P, so NCCL's SHM: each byte leaves one GPU into host
// memory and enters the other, on PCIe Gen3 x16 (12 GB/s of payload; NCCL plans the path at 6/5
// through the Intel root complex, but these are not the peer bytes that factor is for).
// Broadcast goes one way and reaches it: a chain of two over one channel: T = base + hwLat PCI +
// route + S / 12 GB/s. Allreduce goes both ways
// through each GPU, and a Turing GPU then moves kShmDuplexBps (4 GB/s) each way, all channels
// together: a ring of two allreduces S in 2 steps of S/2: T = base + 2 (hwLat + route) + S / 4 GB/s.
TEST(Shm, TwoGeforceGpusBroadcastAtTheHostPathRateAndAllreduceAtTheDuplexRate) {
  const Topology topo = generate_pcie({.gpu = "rtx-2080-ti", .gpus = 2, .sockets = 1, .gpus_per_switch = 0});
  const std::vector<double> bc = testing_support::in_child(
      [&] { return std::vector<double>{simulate(topo, 2, Collective::kBroadcast, {kGiB}).at(0).busbw_GBps}; });
  ASSERT_EQ(bc.size(), 1u);
  // One way: the host path's rate less the chain's pipeline fill, not the duplex limit.
  EXPECT_GT(bc[0], 11.4);
  EXPECT_LE(bc[0], 12.0);
  const Routes routes(topo);
  const double route = routes.gpu_route(0, 1).latency_s;  // GPU 0 -> CPU -> GPU 1: both PCIe legs
  const CollectivePoint ar = simulate(topo, 2, Collective::kAllreduce, {kGiB}).at(0);
  EXPECT_EQ(ar.choice.algorithm, Algorithm::kRing);
  EXPECT_EQ(ar.choice.protocol, Protocol::kSimple);
  const double expected = 8.4e-6 + 2 * (5.7e-6 + route) + kGiB / kShmDuplexBps;
  EXPECT_NEAR(ar.time_s, expected, 1e-6 * expected);
  EXPECT_NEAR(ar.busbw_GBps, 4.0, 0.01);
}

// Three GPUs: the middle of a broadcast's chain receives and sends through host memory, so the
// chain moves at the duplex rate; RTX 4090s (Ada) have no such limit: their host path's rate.
TEST(Shm, ChainMiddlesAreDuplexAdaGpusAreNotLimited) {
  const Topology ada = generate_pcie({.gpu = "rtx-4090", .gpus = 2, .sockets = 1, .gpus_per_switch = 0});
  const std::vector<double> ar = testing_support::in_child(
      [&] { return std::vector<double>{simulate(ada, 2, Collective::kAllreduce, {kGiB}).at(0).busbw_GBps}; });
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_NEAR(ar[0], 24.0, 0.05);  // Gen4 x16: 24 GB/s of payload
  const Topology t3 = generate_pcie({.gpu = "rtx-2080-ti", .gpus = 3, .sockets = 1, .gpus_per_switch = 0});
  const CollectivePoint bc = simulate(t3, 3, Collective::kBroadcast, {kGiB}).at(0);
  EXPECT_GT(bc.busbw_GBps, 3.9);  // the duplex rate less the chain's pipeline fill
  EXPECT_LE(bc.busbw_GBps, 4.0);
}

// Where the limit binds, without simulating: a ring both ways; a broadcast or reduce on two GPUs
// one way; a chain of three at its middle; Ada not at all; `collectives`' note only where it binds.
TEST(Shm, DuplexLimitBindsWhereAGpuSendsAndReceives) {
  const Topology two = generate_pcie({.gpu = "rtx-2080-ti", .gpus = 2, .sockets = 1, .gpus_per_switch = 0});
  const Topology three = generate_pcie({.gpu = "rtx-2080-ti", .gpus = 3, .sockets = 1, .gpus_per_switch = 0});
  const Topology ada = generate_pcie({.gpu = "rtx-4090", .gpus = 2, .sockets = 1, .gpus_per_switch = 0});
  const Routes r2(two), r3(three), ra(ada);
  const Channels c2 = build_channels(two, r2, first_ranks(2));
  const Channels c3 = build_channels(three, r3, first_ranks(3));
  const Channels ca = build_channels(ada, ra, first_ranks(2));
  for (Collective c : {Collective::kAllreduce, Collective::kAllgather, Collective::kReduceScatter})
    EXPECT_EQ(shm_duplex_cap_Bps(c2, c, Algorithm::kRing, 0), kShmDuplexBps);
  EXPECT_TRUE(std::isinf(shm_duplex_cap_Bps(c2, Collective::kBroadcast, Algorithm::kRing, 0)));
  EXPECT_TRUE(std::isinf(shm_duplex_cap_Bps(c2, Collective::kReduce, Algorithm::kRing, 1)));
  EXPECT_EQ(shm_duplex_cap_Bps(c3, Collective::kBroadcast, Algorithm::kRing, 2), kShmDuplexBps);
  EXPECT_EQ(shm_duplex_cap_Bps(c3, Collective::kReduce, Algorithm::kRing, 0), kShmDuplexBps);
  EXPECT_TRUE(std::isinf(shm_duplex_cap_Bps(ca, Collective::kAllreduce, Algorithm::kRing, 0)));
  EXPECT_EQ(nccl_info(two, 2, {}, Collective::kAllreduce).shm_duplex_Bps, kShmDuplexBps);
  EXPECT_EQ(nccl_info(two, 2, {}, Collective::kBroadcast).shm_duplex_Bps, 0);
  EXPECT_EQ(nccl_info(ada, 2, {}, Collective::kAllreduce).shm_duplex_Bps, 0);
}

TEST(PipelineSync, P2pReadCostsAHandshakePerSliceOfEveryLoop) {
  auto engine = create_engine();
  const Topology topo = load_topology("dgx-a100");
  const Routes routes(topo);
  const Channels ch = build_channels(topo, routes, first_ranks(8));
  ASSERT_TRUE(ch.p2p_read);
  ASSERT_EQ(ch.rings.size(), 12u);  // 24 launched: 2 MiB per rank and channel is a loop of 384 MiB
  const auto sync = [&](double bytes) {
    return pipeline_sync_s(Collective::kAllreduce, bytes, ch, Algorithm::kRing, Protocol::kSimple, 1);
  };
  EXPECT_NEAR(sync(16 * kMiB), 2 * 14 * kNvlinkHandshake, 1e-12);     // one loop, 2 slices a step
  EXPECT_NEAR(sync(384 * kMiB), 2 * 14 * kNvlinkHandshake, 1e-12);    // exactly one loop
  EXPECT_NEAR(sync(1 * kGiB), 3 * 2 * 14 * kNvlinkHandshake, 1e-12);  // three loops
  EXPECT_NEAR(sync(4 * kMiB), 1 * 14 * kNvlinkHandshake, 1e-12);      // 21 KiB parts: one slice
  EXPECT_EQ(pipeline_sync_s(Collective::kAllreduce, kGiB, ch, Algorithm::kRing, Protocol::kLL128, 1), 0);
  // H100s write into their peers: no handshake beyond NCCL's model.
  const Topology h = load_topology("dgx-h100");
  const Routes hr(h);
  const Channels hc = build_channels(h, hr, first_ranks(8));
  EXPECT_FALSE(hc.p2p_read);
  EXPECT_EQ(pipeline_sync_s(Collective::kAllreduce, kGiB, hc, Algorithm::kRing, Protocol::kSimple, 1), 0);
}

// Between A100s over NVLink NCCL reads for Simple and writes for LL and LL128: those calls carry
// 1 / kAmpereNvlinkWriteEfficiency wire bytes more per byte; H100s (always written), Simple and
// calls across nodes carry the protocol's own. NCCL's prediction, and so its choice, is unchanged.
TEST(NcclModel, LlAndLl128WritesBetweenA100sOverNvlinkCostMoreWireThanNcclPlans) {
  auto engine = create_engine();
  const Topology a = load_topology("dgx-a100");
  const Routes ar(a);
  const Channels ach = build_channels(a, ar, first_ranks(8));
  const CollectiveChoice ll128 = choose_collective(Collective::kAllreduce, 16 * kMiB, ach, {});
  ASSERT_EQ(ll128.protocol, Protocol::kLL128);
  EXPECT_DOUBLE_EQ(ll128.write_factor, 1 / kAmpereNvlinkWriteEfficiency);
  EXPECT_DOUBLE_EQ(ll128.wire_bytes_per_byte(), 128.0 / 120.0 / kAmpereNvlinkWriteEfficiency);
  const CollectiveChoice ll = choose_collective(Collective::kAllreduce, 64 * 1024, ach, {});
  ASSERT_EQ(ll.protocol, Protocol::kLL);
  EXPECT_DOUBLE_EQ(ll.wire_bytes_per_byte(), 2 / kAmpereNvlinkWriteEfficiency);
  const CollectiveChoice simple = choose_collective(Collective::kAllreduce, kGiB, ach, {});
  ASSERT_EQ(simple.protocol, Protocol::kSimple);
  EXPECT_DOUBLE_EQ(simple.wire_bytes_per_byte(), 1.0);

  const Topology h = load_topology("dgx-h100");
  const Routes hr(h);
  const Channels hch = build_channels(h, hr, first_ranks(8));
  const CollectiveChoice h128 = choose_collective(Collective::kAllreduce, 16 * kMiB, hch,
                                                  CollectiveRequest::only(Algorithm::kRing, Protocol::kLL128));
  EXPECT_DOUBLE_EQ(h128.wire_bytes_per_byte(), 128.0 / 120.0);

  // A100 PCIe boards bridged in pairs: the ring of 4 also crosses PCIe, where NCCL writes for every
  // protocol and PCIe sets the pace; no NVLink write factor.
  PcieOptions po;
  po.gpu = "a100-pcie-80gb";
  po.gpus = 4;
  po.nvlink_bridge = true;
  const Topology bridged = generate_pcie(po);
  const Routes br(bridged);
  const Channels bch = build_channels(bridged, br, first_ranks(4));
  EXPECT_TRUE(bch.p2p_read);
  EXPECT_NE(bch.intra_class, PathClass::kNVL);
  EXPECT_DOUBLE_EQ(ampere_nvlink_write_factor(Protocol::kLL, bch), 1.0);
  // Nor the read hops' handshakes: PCIe paces that ring, so a bridge never slows it.
  EXPECT_EQ(pipeline_sync_s(Collective::kAllreduce, kGiB, bch, Algorithm::kRing, Protocol::kSimple, 1), 0);
  // The bridged pair alone is one NVLink between A100s.
  const Channels pair = build_channels(bridged, br, first_ranks(2));
  EXPECT_EQ(pair.intra_class, PathClass::kNVL);
  EXPECT_DOUBLE_EQ(ampere_nvlink_write_factor(Protocol::kLL, pair), 1 / kAmpereNvlinkWriteEfficiency);

  // NCCL releases before NVLS (2.17) run rings on an H100 NVSwitch node, and refuse NCCL_ALGO=nvls;
  // NVLSTree needs 2.18.
  const Topology h100 = load_topology("dgx-h100");
  const Routes h100_routes(h100);
  const Channels h100_ch = build_channels(h100, h100_routes, first_ranks(8));
  Scenario nccl214;
  nccl214.nccl_version = "2.14";
  EXPECT_EQ(choose_collective(Collective::kAllreduce, kGiB, h100_ch, nccl_settings(nccl214).request).algorithm,
            Algorithm::kRing);
  EXPECT_EQ(choose_collective(Collective::kAllreduce, kGiB, h100_ch, nccl_settings(Scenario{}).request).algorithm,
            Algorithm::kNvls);
  nccl214.nccl_algo = "nvls";
  EXPECT_THROW(choose_collective(Collective::kAllreduce, kGiB, h100_ch, nccl_settings(nccl214).request), ConfigError);
  Scenario nccl217;
  nccl217.nccl_version = "2.17";
  nccl217.nccl_algo = "nvls";
  EXPECT_EQ(choose_collective(Collective::kAllreduce, kGiB, h100_ch, nccl_settings(nccl217).request).algorithm,
            Algorithm::kNvls);

  // LL128 is NCCL's default only where the ring stays on NVLink (tuning.cc: its default value 2 is
  // tested against typeIntra <= PATH_NVB); NCCL_PROTO set at all enables or disables it as listed,
  // so asked for, or left in by an exclusion of another protocol, it runs over PCIe too.
  for (const double size : {64.0 * 1024, 16 * kMiB, kGiB})
    EXPECT_NE(choose_collective(Collective::kAllreduce, size, bch, {}).protocol, Protocol::kLL128) << size;
  CollectiveRequest ll128_only;
  ll128_only.protocols = "ll128";
  EXPECT_EQ(choose_collective(Collective::kAllreduce, 16 * kMiB, bch, ll128_only).protocol, Protocol::kLL128);
  CollectiveRequest no_ll;
  no_ll.protocols = "^ll";
  const CollectiveChoice mid = choose_collective(Collective::kAllreduce, 1 * kMiB, bch, no_ll);
  EXPECT_NE(mid.protocol, Protocol::kLL);

  const Topology two = load_topology("2x-dgx-a100-hdr");
  const Routes tr(two);
  const Channels tch = build_channels(two, tr, first_ranks(16));
  EXPECT_TRUE(tch.p2p_read);
  EXPECT_DOUBLE_EQ(ampere_nvlink_write_factor(Protocol::kLL128, tch), 1.0);
}

TEST(NcclModel, ChoosesNvlsOnH100sForLargeCallsAndRingWhenItIsOff) {
  auto engine = create_engine();
  const Topology topo = load_topology("dgx-h100");
  const Routes routes(topo);
  const Channels ch = build_channels(topo, routes, first_ranks(8));
  ASSERT_TRUE(ch.nvls);
  EXPECT_EQ(choose_collective(Collective::kAllreduce, kGiB, ch, {}).algorithm, Algorithm::kNvls);
  CollectiveRequest off;
  off.nvls = false;
  EXPECT_EQ(choose_collective(Collective::kAllreduce, kGiB, ch, off).algorithm, Algorithm::kRing);
  // NCCL tunes an allgather on its whole output (count x ranks): 2 MiB per rank is a 16 MiB call,
  // past LL's range.
  EXPECT_NE(choose_collective(Collective::kAllgather, 2 * kMiB, ch, off).protocol, Protocol::kLL);
  EXPECT_DOUBLE_EQ(tuning_bytes(Collective::kAllgather, 2 * kMiB, 8), 16 * kMiB);
  EXPECT_DOUBLE_EQ(tuning_bytes(Collective::kReduceScatter, 16 * kMiB, 8), 16 * kMiB);
}

TEST(NcclModel, AcrossTwoNodesTreeOnA100sAndNvlsTreeOnH100s) {
  auto engine = create_engine();
  {
    const Topology topo = load_topology("2x-dgx-a100-hdr");
    const Routes routes(topo);
    const Channels ch = build_channels(topo, routes, first_ranks(16));
    EXPECT_FALSE(ch.nvls);
    // NCCL's tree between the nodes for mid-size calls (its latency grows with log2 nodes), the
    // ring for large ones (the tree's bandwidth is 0.92 of the ring's at most).
    EXPECT_EQ(choose_collective(Collective::kAllreduce, 4 * kMiB, ch, {}).algorithm, Algorithm::kTree);
    EXPECT_EQ(choose_collective(Collective::kAllreduce, kGiB, ch, {}).algorithm, Algorithm::kRing);
  }
  {
    const Topology topo = generate_fat_tree({.nodes = 2, .node = "dgx-h100"});
    const Routes routes(topo);
    const Channels ch = build_channels(topo, routes, first_ranks(16));
    EXPECT_EQ(choose_collective(Collective::kAllreduce, kGiB, ch, {}).algorithm, Algorithm::kNvlsTree);
  }
}

TEST(NcclModel, OneGpuPerNodeTakesTheTreesNetworkLatency) {
  // tuning.cc: "With ppn=1 latencies are fully exposed, use the Tree network latency": a ring of
  // one GPU on each of two nodes pays hwLat[NET][TREE] (LL 5.0, LL128 8.5 us) per network step
  // instead of the ring's (2.7, 4.0); Simple's is 14 either way.
  auto engine = create_engine();
  const Topology topo = load_topology("2x-dgx-a100-hdr");
  const Routes routes(topo);
  const Channels ch = build_channels(topo, routes, {0, 8});
  ASSERT_EQ(ch.nodes(), 2);
  const CollectiveRequest ring_ll = CollectiveRequest::only(Algorithm::kRing, Protocol::kLL);
  const CollectiveChoice c = choose_collective(Collective::kAllreduce, 4096, ch, ring_ll);
  // Two network steps of a 2-rank ring, nothing inside a node: baseLat 6.6 + 2 x 5.0 us.
  EXPECT_NEAR(c.latency_s, (6.6 + 2 * 5.0) * 1e-6, 1e-12);
  // Two GPUs per node keep the ring's own: 6.6 + 4 steps inside (getNetOverhead: 1 us, 2 on AMD)
  // + 2 x 2.7 us.
  const Channels two = build_channels(topo, routes, {0, 1, 8, 9});
  const double overhead = two.amd ? 2.0 : 1.0;
  EXPECT_NEAR(choose_collective(Collective::kAllreduce, 4096, two, ring_ll).latency_s,
              (6.6 + 4 * overhead + 2 * 2.7) * 1e-6, 1e-12);
}

}  // namespace
}  // namespace gradsync::sim
