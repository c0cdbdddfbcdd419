// transports_test.cpp: NCCL's transport for a pair of GPUs, as NCCL 2.27 picks it (P2P, then SHM,
// then NET) under its defaults and knobs.
#include <gtest/gtest.h>

#include <cmath>

#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "topologies/channels.hpp"
#include "topologies/dot_parser.hpp"
#include "topologies/generators.hpp"
#include "topologies/routes.hpp"
#include "topologies/topology.hpp"
#include "topologies/transports/transport.hpp"

namespace gradsync {
namespace {

Hop hop_of(const Topology& t, int from, int to, TransportOptions o = {}) {
  const Routes routes(t);
  const Transports tr(t, routes, o);
  return tr.hop(from, to);
}

TEST(Transports, A100sOverNvlinkReadTheirPeersMemoryH100sWrite) {
  const Hop a = hop_of(load_topology("dgx-a100"), 0, 1);
  EXPECT_EQ(a.kind, TransportKind::kP2P);
  EXPECT_EQ(a.name, "P2P/CUMEM/read");
  EXPECT_TRUE(a.read);
  EXPECT_EQ(a.route.path_class, PathClass::kNVL);
  const Hop h = hop_of(load_topology("dgx-h100"), 0, 1);
  EXPECT_EQ(h.name, "P2P/CUMEM");
  EXPECT_FALSE(h.read);
  // Before NCCL 2.19 (NCCL_CUMEM_ENABLE off by default) the buffers are shared by CUDA IPC, and
  // NCCL's log says P2P/IPC.
  TransportOptions old;
  old.nccl = {2, 18};
  EXPECT_EQ(hop_of(load_topology("dgx-a100"), 0, 1, old).name, "P2P/IPC/read");
  EXPECT_EQ(hop_of(load_topology("dgx-h100"), 0, 1, old).name, "P2P/IPC");
}

TEST(Transports, GeforceBoardsHaveNoPcieP2pAndGoThroughHostMemory) {
  const Topology t = generate_pcie({.gpu = "rtx-2080-ti", .gpus = 2, .sockets = 1, .gpus_per_switch = 0});
  const Hop h = hop_of(t, 0, 1);
  EXPECT_EQ(h.kind, TransportKind::kShm);
  EXPECT_EQ(h.name, "SHM/direct/direct");
  EXPECT_EQ(h.route.path_class, PathClass::kPHB);
  // NCCL plans the path at 6/5 through an Intel root complex (search.cc followPath, topo.h
  // INTEL_P2P_OVERHEAD); the bytes, stored into host memory and loaded back, are not the peer
  // traffic that factor is for, and cross PCIe once each way at the path's rate.
  EXPECT_DOUBLE_EQ(h.search_factor, 6.0 / 5.0);
  EXPECT_DOUBLE_EQ(h.wire_factor, 1.0);
  EXPECT_DOUBLE_EQ(h.duplex_cap_Bps, kShmDuplexBps);  // Turing: 4 GB/s each way once both ways
  const Topology ada = generate_pcie({.gpu = "rtx-4090", .gpus = 2, .sockets = 1, .gpus_per_switch = 0});
  EXPECT_EQ(hop_of(ada, 0, 1).kind, TransportKind::kShm);
  EXPECT_TRUE(std::isinf(hop_of(ada, 0, 1).duplex_cap_Bps));  // Ada: no duplex limit
  // A driver that enables P2P on them (tinygrad's): the same pair goes peer to peer, if the P2P
  // level allows PHB.
  const Topology on = generate_pcie({.gpu = "rtx-2080-ti", .gpus = 2, .sockets = 1, .gpus_per_switch = 0, .p2p = "on"});
  EXPECT_EQ(hop_of(on, 0, 1).kind, TransportKind::kShm);  // PHB is beyond NCCL's default level PXB
  EXPECT_EQ(hop_of(on, 0, 1, {.p2p_level = PathClass::kPHB}).kind, TransportKind::kP2P);
  // Peer traffic through the Intel root complex: 64 B TLPs, 6/5 on the wire and in the plan.
  EXPECT_DOUBLE_EQ(hop_of(on, 0, 1, {.p2p_level = PathClass::kPHB}).wire_factor, 6.0 / 5.0);
  EXPECT_DOUBLE_EQ(hop_of(on, 0, 1, {.p2p_level = PathClass::kPHB}).search_factor, 6.0 / 5.0);
}

// Through an ARM (or AMD) root complex the peer path costs no 6/5: NCCL counts it only through an
// Intel one (search.cc followPath, INTEL_P2P_OVERHEAD). A cpu of vendor "arm" was refused until
// 2026-12-02.
TEST(Transports, PeerTrafficThroughAnArmRootComplexCostsNoIntelOverhead) {
  const std::string dot = R"(graph g {
  cpu0 [kind="cpu", host="h0", vendor="arm"];
  gpu0 [kind="gpu", model="rtx-2080-ti", host="h0", p2p="true"];
  gpu1 [kind="gpu", model="rtx-2080-ti", host="h0", p2p="true"];
  gpu0 -- cpu0 [type="pcie", bw="15.75GBps", latency="1us"];
  gpu1 -- cpu0 [type="pcie", bw="15.75GBps", latency="1us"];
}
)";
  const Hop arm = hop_of(read_topology_dot(dot, "t.dot"), 0, 1, {.p2p_level = PathClass::kPHB});
  EXPECT_EQ(arm.kind, TransportKind::kP2P);
  EXPECT_DOUBLE_EQ(arm.wire_factor, 1.0);
  EXPECT_DOUBLE_EQ(arm.search_factor, 1.0);
  std::string intel = dot;
  intel.replace(intel.find("\"arm\""), 5, "\"intel\"");
  EXPECT_DOUBLE_EQ(hop_of(read_topology_dot(intel, "t.dot"), 0, 1, {.p2p_level = PathClass::kPHB}).wire_factor,
                   6.0 / 5.0);
}

TEST(Transports, GpusBehindOnePcieSwitchUseP2pUnlessDisabled) {
  const Topology t = generate_pcie({.gpu = "a40", .gpus = 2, .sockets = 1, .gpus_per_switch = 2});
  EXPECT_EQ(hop_of(t, 0, 1).kind, TransportKind::kP2P);
  EXPECT_EQ(hop_of(t, 0, 1).route.path_class, PathClass::kPIX);
  EXPECT_EQ(hop_of(t, 0, 1, {.p2p_disable = true}).kind, TransportKind::kShm);
  EXPECT_EQ(hop_of(t, 0, 1, {.p2p_level = PathClass::kNVL}).kind, TransportKind::kShm);  // PIX is farther
}

TEST(Transports, TwoGpusOnAmdTakeP2pAcrossTheHostBridge) {
  // paths.cc: on AMD CPUs with at most two GPUs NCCL's default P2P level is SYS.
  const Topology amd = generate_pcie({.gpu = "a40", .gpus = 2, .sockets = 1, .gpus_per_switch = 0, .cpu = "amd"});
  EXPECT_EQ(hop_of(amd, 0, 1).kind, TransportKind::kP2P);
  EXPECT_EQ(hop_of(amd, 0, 1).route.path_class, PathClass::kPHB);
  const Topology intel = generate_pcie({.gpu = "a40", .gpus = 2, .sockets = 1, .gpus_per_switch = 0});
  EXPECT_EQ(hop_of(intel, 0, 1).kind, TransportKind::kShm);
}

TEST(Transports, TheDefaultP2pLevelFollowsTheNcclRelease) {
  // paths.cc of each release (p2p.cc in 2.4): what NCCL's P2P reaches without NCCL_P2P_LEVEL.
  EXPECT_EQ(default_p2p_level({2, 4}, false, 8), PathClass::kPHB);  // not across root complexes
  EXPECT_EQ(default_p2p_level({2, 4}, true, 8), PathClass::kPHB);
  EXPECT_EQ(default_p2p_level({2, 6}, false, 8), PathClass::kSYS);  // Broadwell only: PXB
  EXPECT_EQ(default_p2p_level({2, 7}, false, 8), PathClass::kPHB);  // Intel other than Broadwell
  EXPECT_EQ(default_p2p_level({2, 8}, false, 8), PathClass::kPHB);
  EXPECT_EQ(default_p2p_level({2, 9}, false, 8), PathClass::kPXB);
  EXPECT_EQ(default_p2p_level({2, 7}, true, 8), PathClass::kSYS);
  EXPECT_EQ(default_p2p_level({2, 22}, true, 8), PathClass::kSYS);  // AMD: P2P whenever it can
  EXPECT_EQ(default_p2p_level({2, 22}, false, 2), PathClass::kPXB);
  EXPECT_EQ(default_p2p_level({2, 23}, true, 8), PathClass::kPXB);  // 2.23: PXB...
  EXPECT_EQ(default_p2p_level({2, 23}, true, 2), PathClass::kSYS);  // ...but pairs on AMD
  EXPECT_EQ(default_p2p_level({2, 28}, false, 2), PathClass::kPXB);

  // Four A40s on the root ports of two EPYC sockets (pairs SYS apart): PyTorch 2.6's NCCL 2.21
  // goes peer to peer across the sockets, 2.7's NCCL 2.26 through host memory.
  const Topology amd = generate_pcie({.gpu = "a40", .gpus = 4, .sockets = 2, .gpus_per_switch = 0, .cpu = "amd"});
  const Routes routes(amd);
  int far = -1;
  for (int g = 1; g < 4 && far < 0; ++g)
    if (routes.gpu_route(0, g).path_class == PathClass::kSYS) far = g;
  ASSERT_GT(far, 0);
  EXPECT_EQ(hop_of(amd, 0, far, {.nccl = {2, 21}}).kind, TransportKind::kP2P);
  EXPECT_EQ(hop_of(amd, 0, far, {.nccl = {2, 26}}).kind, TransportKind::kShm);
  EXPECT_EQ(hop_of(amd, 0, far, {.p2p_level = PathClass::kSYS, .nccl = {2, 26}}).kind, TransportKind::kP2P);
  // Two A40s on one Xeon's root ports (PHB): P2P with NCCL 2.7 (PyTorch 1.6-1.9), not from 2.9.
  const Topology intel = generate_pcie({.gpu = "a40", .gpus = 2, .sockets = 1, .gpus_per_switch = 0});
  EXPECT_EQ(hop_of(intel, 0, 1, {.nccl = {2, 7}}).kind, TransportKind::kP2P);
  EXPECT_EQ(hop_of(intel, 0, 1, {.nccl = {2, 10}}).kind, TransportKind::kShm);
}

// NCCL counts the communicator's GPUs on a machine, not the machine's (ncclTopoGetSystem adds a
// peer's GPU when it shares the host): two of four GPUs on an AMD host are a pair to NCCL >= 2.23,
// whose default P2P level is then SYS, so they go peer to peer across the host bridge; all four
// go through host memory.
TEST(Transports, TheP2pLevelCountsTheCommunicatorsGpusOnTheMachine) {
  const Topology amd = generate_pcie({.gpu = "a40", .gpus = 4, .sockets = 1, .gpus_per_switch = 0, .cpu = "amd"});
  const Routes routes(amd);
  ASSERT_EQ(routes.gpu_route(0, 1).path_class, PathClass::kPHB);
  const TransportOptions o{.nccl = {2, 28}};
  EXPECT_EQ(Transports(amd, routes, o).hop(0, 1).kind, TransportKind::kShm);
  EXPECT_EQ(Transports(amd, routes, o, 4).hop(0, 1).kind, TransportKind::kShm);
  EXPECT_EQ(Transports(amd, routes, o, 2).hop(0, 1).kind, TransportKind::kP2P);
  EXPECT_EQ(Transports(amd, routes, o, 3).hop(0, 1).kind, TransportKind::kShm);
}

TEST(Transports, ShmDisabledLeavesTheNetworkOrNothing) {
  const Topology t = generate_pcie({.gpu = "rtx-2080-ti", .gpus = 2, .sockets = 1, .gpus_per_switch = 0});
  // This machine has no NIC: nothing connects the pair, a clear error.
  EXPECT_THROW(hop_of(t, 0, 1, {.shm_disable = true}), ConfigError);
}

TEST(Transports, NetworkWithGpuDirectRdmaUnlessTooFarOrSockets) {
  const Topology t = load_topology("2x-dgx-a100-hdr");
  const Hop gdr = hop_of(t, 0, 8);
  EXPECT_EQ(gdr.kind, TransportKind::kNet);
  EXPECT_EQ(gdr.name, "NET/IB/GDRDMA");
  EXPECT_EQ(gdr.route.path_class, PathClass::kNET);
  // GPU and NIC share a PCIe switch (PXB at most): NCCL_NET_GDR_LEVEL=PIX is nearer than that on a
  // DGX A100, where they sit under two levels of switches.
  const Hop host = hop_of(t, 0, 8, {.net_gdr_level = PathClass::kNVL});
  EXPECT_EQ(host.name, "NET/IB");
  EXPECT_GT(host.route.hops.size(), gdr.route.hops.size());  // staged through host memory
  EXPECT_EQ(hop_of(t, 0, 8, {.ib_disable = true}).name, "NET/Socket");
  // Staged through an Intel host's memory (DGX H100s): NCCL plans the legs at 6/5, but the copies
  // into and out of host memory are not peer traffic and move at the path's rate.
  const Topology h = load_topology("16x-dgx-h100-ndr");
  const Hop staged = hop_of(h, 0, 8, {.net_gdr_level = PathClass::kNVL});
  EXPECT_EQ(staged.name, "NET/IB");
  EXPECT_DOUBLE_EQ(staged.search_factor, 6.0 / 5.0);
  EXPECT_DOUBLE_EQ(staged.wire_factor, 1.0);
  EXPECT_DOUBLE_EQ(hop_of(h, 0, 8).wire_factor, 1.0);  // GPUDirect RDMA under one PCIe switch
}

// Hosts whose GPUs each sit alone with their own NIC under a PCIe switch (as a DGX H100's):
// GPU 1 reaches NIC 0 only across its CPU (PHB), so without PXN a ring leaving by NIC 0 from GPU 1
// stages in host memory; with PXN (NCCL 2.12 on, unless NCCL_PXN_DISABLE=1) it goes over NVLink
// into GPU 0's memory, which NIC 0 reads directly, and the ring runs at the NIC's speed.
constexpr const char* kOneNicPerGpu = R"(graph t {
  "a.cpu" [kind="cpu", host="a"];
  "a.nvs" [kind="nvswitch", host="a"];
  "a.sw0" [kind="pcie_switch", host="a"];
  "a.sw1" [kind="pcie_switch", host="a"];
  "a.gpu0" [kind="gpu", model="h100", host="a"];
  "a.gpu1" [kind="gpu", model="h100", host="a"];
  "a.nic0" [kind="nic", host="a"];
  "a.nic1" [kind="nic", host="a"];
  "b.cpu" [kind="cpu", host="b"];
  "b.nvs" [kind="nvswitch", host="b"];
  "b.sw0" [kind="pcie_switch", host="b"];
  "b.sw1" [kind="pcie_switch", host="b"];
  "b.gpu0" [kind="gpu", model="h100", host="b"];
  "b.gpu1" [kind="gpu", model="h100", host="b"];
  "b.nic0" [kind="nic", host="b"];
  "b.nic1" [kind="nic", host="b"];
  "leaf" [kind="switch"];
  "a.gpu0" -- "a.nvs" [type="nvlink", bw="25GBps", latency="100ns", links="18"];
  "a.gpu1" -- "a.nvs" [type="nvlink", bw="25GBps", latency="100ns", links="18"];
  "a.cpu" -- "a.sw0" [type="pcie", bw="63GBps", latency="150ns"];
  "a.cpu" -- "a.sw1" [type="pcie", bw="63GBps", latency="150ns"];
  "a.sw0" -- "a.gpu0" [type="pcie", bw="63GBps", latency="150ns"];
  "a.sw1" -- "a.gpu1" [type="pcie", bw="63GBps", latency="150ns"];
  "a.sw0" -- "a.nic0" [type="pcie", bw="63GBps", latency="150ns"];
  "a.sw1" -- "a.nic1" [type="pcie", bw="63GBps", latency="150ns"];
  "b.gpu0" -- "b.nvs" [type="nvlink", bw="25GBps", latency="100ns", links="18"];
  "b.gpu1" -- "b.nvs" [type="nvlink", bw="25GBps", latency="100ns", links="18"];
  "b.cpu" -- "b.sw0" [type="pcie", bw="63GBps", latency="150ns"];
  "b.cpu" -- "b.sw1" [type="pcie", bw="63GBps", latency="150ns"];
  "b.sw0" -- "b.gpu0" [type="pcie", bw="63GBps", latency="150ns"];
  "b.sw1" -- "b.gpu1" [type="pcie", bw="63GBps", latency="150ns"];
  "b.sw0" -- "b.nic0" [type="pcie", bw="63GBps", latency="150ns"];
  "b.sw1" -- "b.nic1" [type="pcie", bw="63GBps", latency="150ns"];
  "a.nic0" -- "leaf" [type="infiniband", bw="400Gbps", latency="500ns"];
  "a.nic1" -- "leaf" [type="infiniband", bw="400Gbps", latency="500ns"];
  "b.nic0" -- "leaf" [type="infiniband", bw="400Gbps", latency="500ns"];
  "b.nic1" -- "leaf" [type="infiniband", bw="400Gbps", latency="500ns"];
})";

TEST(Transports, PxnSendsThroughTheNicsOwnGpuOverNvlink) {
  const Topology t = read_topology_dot(kOneNicPerGpu, "one-nic-per-gpu.dot");
  const Routes routes(t);
  const VertexId nic0 = routes.nic_of(0);
  ASSERT_EQ(t.vertex(nic0).name, "a.nic0");
  const Transports pxn(t, routes, {}, 4);
  const NicLeg leg = pxn.nic_leg(1, nic0, true);
  EXPECT_TRUE(leg.pxn);
  EXPECT_TRUE(leg.gdr);
  std::vector<std::string> names;
  for (VertexId v : leg.route.vertices) names.push_back(t.vertex(v).name);
  EXPECT_EQ(names, (std::vector<std::string>{"a.gpu1", "a.nvs", "a.gpu0", "a.sw0", "a.nic0"}));
  // Only towards the NIC: data coming in lands by GPUDirect RDMA or through host memory, never PXN.
  EXPECT_FALSE(pxn.nic_leg(1, nic0, false).pxn);
  // The NIC's own GPU goes directly.
  EXPECT_FALSE(pxn.nic_leg(0, nic0, true).pxn);
  const Hop hop = pxn.net_hop(1, 2, nic0, routes.nic_of(2), 1);
  EXPECT_EQ(hop.name, "NET/IB/PXN/GDRDMA");
  // Without PXN (NCCL_PXN_DISABLE=1, or NCCL before 2.12) GPU 1's bytes stage in host memory.
  for (const TransportOptions& o : {TransportOptions{.pxn_disable = true}, TransportOptions{.nccl = {2, 11}}}) {
    const Transports none(t, routes, o, 4);
    const NicLeg staged = none.nic_leg(1, nic0, true);
    EXPECT_FALSE(staged.pxn);
    EXPECT_FALSE(staged.gdr);
    EXPECT_EQ(none.net_hop(1, 2, nic0, routes.nic_of(2), 1).name, "NET/IB");
  }
  // The rings: each leaves its node from the GPU after the NIC's own, by PXN, at the NIC's 48 GB/s
  // (NCCL's inter-node speed below 400 Gb/s), two NICs' worth in all (two rings doubled at half the
  // speed, ncclTopoDupChannels), where the staged path would hold them to the CPU's.
  const Channels ch = build_channels(t, routes, first_ranks(4), pxn);
  ASSERT_FALSE(ch.rings.empty());
  EXPECT_DOUBLE_EQ(ch.total_bw_Bps(), 2 * 48e9);
  for (const RingChannel& r : ch.rings)
    for (const Hop& h : r.hops)
      if (h.kind == TransportKind::kNet) {
        EXPECT_EQ(h.name, "NET/IB/PXN/GDRDMA");
      }
  const Transports off(t, routes, {.pxn_disable = true}, 4);
  EXPECT_LT(build_channels(t, routes, first_ranks(4), off).total_bw_Bps(), ch.total_bw_Bps());
}

// NVLS's graph between nodes follows the NET transport's legs: staged in host memory (GDR level
// below the GPU-NIC path, or NCCL_IB_DISABLE's sockets) the heads' legs cross their CPU's root
// ports, two heads to a PCIe switch, so each head gets half a root port's payload, not the
// GPUDirect path's full rate. The leg itself is what the NET hop carries.
TEST(Transports, NvlsBetweenNodesFollowsTheStagedLegs) {
  const Topology t = load_topology("16x-dgx-h100-ndr");
  const Routes routes(t);
  std::vector<int> ranks;
  for (int r = 0; r < 16; ++r) ranks.push_back(r);
  const Transports gdr(t, routes, {}, 16);
  const Channels direct = build_channels(t, routes, ranks, gdr);
  ASSERT_TRUE(direct.nvls);
  EXPECT_DOUBLE_EQ(direct.nvls->bw_inter_Bps, 48e9);
  for (const TransportOptions& o :
       {TransportOptions{.ib_disable = true}, TransportOptions{.net_gdr_level = PathClass::kNVL}}) {
    const Transports staged(t, routes, o, 16);
    const NicLeg leg = staged.nic_leg(0, routes.nic_of(0), true);
    EXPECT_FALSE(leg.gdr);
    EXPECT_GT(leg.route.hops.size(), gdr.nic_leg(0, routes.nic_of(0), true).route.hops.size());
    // The heads' shared link: the least payload over the heads crossing it, among NCCL's speeds.
    std::map<std::size_t, int> heads;
    for (int r = 0; r < 8; ++r)
      for (const DirectedLink& d : staged.nic_leg(r, routes.nic_of(r), true).route.hops) ++heads[d.slot()];
    double share = std::numeric_limits<double>::infinity();
    for (const DirectedLink& d : leg.route.hops)
      share = std::min(share, t.link(t.links()[d.link]).payload_bw_Bps / heads[d.slot()]);
    double expected = 0;
    for (double s : nccl_speeds(true, 90))
      if (s <= share * (1 + 1e-9)) {
        expected = s;
        break;
      }
    const Channels ch = build_channels(t, routes, ranks, staged);
    ASSERT_TRUE(ch.nvls);
    EXPECT_GT(heads.size(), 0U);
    EXPECT_LT(ch.nvls->bw_inter_Bps, direct.nvls->bw_inter_Bps);
    EXPECT_DOUBLE_EQ(ch.nvls->bw_inter_Bps, expected);
  }
}

// topologies/README.md's DOT example: it loads, its GPUs reach host memory, and the pair talks P2P
// over the NVSwitch. Without its CPU, P2P still connects the pair (only two GPUs on an AMD host
// would widen the P2P level, and there is no CPU to be AMD), and what is missing is said: no CPU
// socket behind which host memory is.
TEST(Transports, TheReadmeExampleTalksP2pAndAHostWithoutCpuIsNamed) {
  std::ifstream in("topologies/README.md");
  ASSERT_TRUE(in) << "run from the source directory";
  std::string line, dot;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "```dot") {
      inside = true;
      continue;
    }
    if (inside && line == "```") break;
    if (inside) dot += line + "\n";
  }
  ASSERT_NE(dot.find("kind=\"cpu\""), std::string::npos);
  const Topology t = read_topology_dot(dot, "README.dot");
  EXPECT_NO_THROW(check_host_memory(Routes(t)));
  const Hop h = hop_of(t, 0, 1);
  EXPECT_EQ(h.kind, TransportKind::kP2P);
  EXPECT_EQ(h.route.path_class, PathClass::kNVL);

  std::string no_cpu;
  std::istringstream lines(dot);
  while (std::getline(lines, line))
    if (line.find("cpu0") == std::string::npos) no_cpu += line + "\n";
  const Topology bare = read_topology_dot(no_cpu, "bare.dot");
  EXPECT_EQ(hop_of(bare, 0, 1).kind, TransportKind::kP2P);
  try {
    check_host_memory(Routes(bare));
    FAIL() << "expected an error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("bare.dot:", 0), 0u) << e.what();  // at the GPU's line
    EXPECT_NE(std::string(e.what()).find(": GPU gpu0 on host node0 reaches no CPU socket"), std::string::npos)
        << e.what();
  }
  // A CPU linked to the host's switch but declared without host: the slip is named, with its line.
  const Topology slip = read_topology_dot(R"(graph t {
  gpu0 [kind="gpu", model="a100", host="node0"];
  sw [kind="pcie_switch", host="node0"];
  cpu0 [kind="cpu"];
  gpu0 -- sw [type="pcie", bw="25GBps", latency="150ns"];
  sw -- cpu0 [type="pcie", bw="25GBps", latency="150ns"];
})",
                                          "slip.dot");
  try {
    check_host_memory(Routes(slip));
    FAIL() << "expected an error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("; cpu cpu0 (line 4) is linked to host node0's sw but its host is not given;"),
              std::string::npos)
        << e.what();
  }
}

// Host memory is the machine's CPU socket that a GPU reaches with the least latency; a socket it
// cannot reach at all is never chosen, nor asked for a route.
TEST(HostCpu, TheNearestReachableSocketOfTheMachine) {
  const std::string text = R"(graph g {
  gpu0 [kind="gpu", model="rtx-4090", host="h"];
  gpu1 [kind="gpu", model="rtx-4090", host="h"];
  sw [kind="pcie_switch", host="h"];
  lost [kind="cpu", host="h"];
  far [kind="cpu", host="h"];
  near [kind="cpu", host="h"];
  gpu0 -- sw [type="pcie", bw="32GBps", latency="1us"];
  gpu1 -- sw [type="pcie", bw="32GBps", latency="1us"];
  sw -- near [type="pcie", bw="32GBps", latency="1us"];
  near -- far [type="cpu_link", bw="40GBps", latency="2us"];
})";
  const Topology t = read_topology_dot(text, "t.dot");
  const Routes routes(t);
  ASSERT_TRUE(routes.host_cpu(t.gpu(0)).has_value());
  EXPECT_EQ(t.vertex(*routes.host_cpu(t.gpu(0))).name, "near");
  EXPECT_EQ(t.vertex(*routes.host_cpu(t.gpu(1))).name, "near");
  EXPECT_NO_THROW(check_host_memory(routes));
  // Without the socket it is linked to, the GPUs reach none: `far` and `lost` are apart.
  std::string cut = text;
  cut.erase(cut.find("  sw -- near"), cut.find("  near -- far") - cut.find("  sw -- near"));
  const Topology apart = read_topology_dot(cut, "t.dot");
  const Routes apart_routes(apart);
  EXPECT_FALSE(apart_routes.host_cpu(apart.gpu(0)).has_value());
  EXPECT_THROW(check_host_memory(apart_routes), DataError);
}

}  // namespace
}  // namespace gradsync
