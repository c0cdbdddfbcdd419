// generators_test.cpp: generated machines and clusters: counts, wiring, bisection, bad options.
#include <gtest/gtest.h>

#include <set>

#include <map>

#include <fmt/format.h>

#include "core/error.hpp"
#include "topologies/bisection.hpp"
#include "topologies/channels.hpp"
#include "topologies/generators.hpp"
#include "topologies/gpu_spec.hpp"
#include "topologies/routes.hpp"

namespace gradsync {
namespace {

int count(const Topology& t, VertexKind k) {
  int n = 0;
  for (VertexId v = 0; v < t.vertex_count(); ++v) n += t.vertex(v).kind == k;
  return n;
}

int count(const Topology& t, LinkType type) {
  int n = 0;
  for (LinkId e : t.links()) n += t.link(e).type == type;
  return n;
}

TEST(Generators, NvswitchNode) {
  const Topology t = generate_nvswitch({.gpu = "h100", .gpus = 8, .nics = 8, .nic_bw = "400Gbps"});
  EXPECT_EQ(t.gpu_count(), 8);
  EXPECT_EQ(count(t, VertexKind::kNvswitch), 1);
  EXPECT_EQ(count(t, VertexKind::kPcieSwitch), 4);
  EXPECT_EQ(count(t, VertexKind::kCpu), 2);
  EXPECT_EQ(count(t, VertexKind::kNic), 8);
  EXPECT_EQ(t.link(t.links()[5]).type, LinkType::kNvlink);
  EXPECT_EQ(t.link(t.links()[5]).links, 18);  // H100 SXM5: 18 NVLinks
  // Half the GPUs under each socket send 4 x 18 NVLinks x NCCL's 20.6 GB/s through the NVSwitch,
  // plus what NCCL lets cross the Sapphire Rapids sockets' link, 22 GB/s (payload rates,
  // topologies/link_model.hpp).
  EXPECT_DOUBLE_EQ(bisection(t, first_ranks(8)).bw_Bps, 4 * 18 * 20.6e9 + 22e9);
}

// Without --nics each GPU gets its own NIC (a 4-GPU node does not get a DGX's 8); 0 is no NIC.
TEST(Generators, NvswitchNicsDefaultToOnePerGpu) {
  EXPECT_EQ(count(generate_nvswitch({.gpu = "h100", .gpus = 4}), VertexKind::kNic), 4);
  EXPECT_EQ(count(generate_nvswitch({.gpu = "h100", .gpus = 8}), VertexKind::kNic), 8);
  EXPECT_EQ(count(generate_nvswitch({.gpu = "h100", .gpus = 4, .nics = 0}), VertexKind::kNic), 0);
  // One per GPU up to NCCL's 64 NICs, with no flag left unset claiming a value (it said "--nics -1").
  EXPECT_EQ(count(generate_nvswitch({.gpu = "h100", .gpus = 72}), VertexKind::kNic), 64);
}

TEST(Generators, Dgx1MeshHasSixLinksPerGpu) {
  const Topology t = generate_nvlink_mesh({});
  for (int r = 0; r < 8; ++r) {
    int links = 0;
    for (LinkId e : t.links()) {
      const TopoLink& l = t.link(e);
      if (l.type == LinkType::kNvlink && (l.a == t.gpu(r) || l.b == t.gpu(r))) links += l.links;
    }
    EXPECT_EQ(links, 6) << "gpu" << r;
  }
  EXPECT_EQ(count(t, LinkType::kNvlink), 16);
}

TEST(Generators, PcieBoxes) {
  const Topology direct = generate_pcie({.gpu = "rtx-4090", .gpus = 2, .sockets = 1, .gpus_per_switch = 0});
  EXPECT_EQ(count(direct, VertexKind::kPcieSwitch), 0);
  EXPECT_EQ(count(direct, LinkType::kPcie), 2);
  const Topology bridged =
      generate_pcie({.gpu = "rtx-3090", .gpus = 2, .sockets = 1, .gpus_per_switch = 0, .nvlink_bridge = true});
  EXPECT_EQ(count(bridged, LinkType::kNvlink), 1);
  const Topology eight = generate_pcie({.gpu = "l40s", .gpus = 8, .sockets = 2, .gpus_per_switch = 4});
  EXPECT_EQ(count(eight, VertexKind::kPcieSwitch), 2);
  EXPECT_EQ(count(eight, LinkType::kCpuLink), 1);
  // The header says what was built: groups of gpus_per_switch on each socket, the last one short.
  const Topology three = generate_pcie({.gpu = "rtx-4090", .gpus = 3, .sockets = 1, .gpus_per_switch = 2});
  EXPECT_EQ(count(three, VertexKind::kPcieSwitch), 2);
  EXPECT_NE(three.comment().find(", PCIe switches of 2 and 1 GPUs, one CPU socket"), std::string::npos)
      << three.comment();
  EXPECT_NE(eight.comment().find(", 4 per PCIe switch, split over two CPU sockets"), std::string::npos)
      << eight.comment();
}

// The sockets' link is the CPU family's: two UPI links of 20.8 GB/s between Xeons, four xGMI-2
// links of 32 GB/s between EPYCs (as the DGX A100's), and the header names it.
TEST(Generators, PcieSocketsAreJoinedByTheirVendorsLinks) {
  for (const std::string cpu : {"intel", "amd"}) {
    const Topology t = generate_pcie({.gpu = "l40s", .gpus = 4, .sockets = 2, .gpus_per_switch = 0, .cpu = cpu});
    int seen = 0;
    for (LinkId e : t.links()) {
      const TopoLink& l = t.link(e);
      if (l.type != LinkType::kCpuLink) continue;
      ++seen;
      EXPECT_EQ(l.links, cpu == "amd" ? 4 : 2) << cpu;
      EXPECT_DOUBLE_EQ(l.bw_Bps, cpu == "amd" ? 32e9 : 20.8e9) << cpu;
    }
    EXPECT_EQ(seen, 1) << cpu;
    EXPECT_NE(t.comment().find(cpu == "amd" ? "4 xGMI-2 links of 32 GB/s" : "2 UPI links of 20.8 GB/s"),
              std::string::npos)
        << t.comment();
  }
}

// NCCL's socket-to-socket figure per CPU family (topo.h, 2.26 on: BDW 6, SKL 10, SRP 22, ERP 40,
// AMD 16 GB/s), named by --cpu (a cpu's "model" in a file); the link carries payload at most at it.
TEST(Generators, PcieSocketsCarryNcclsFigureForTheirCpuFamily) {
  const std::pair<std::string, double> cases[] = {
      {"intel", 10e9},           {"skylake", 10e9},        {"cascade-lake", 10e9},   {"broadwell", 6e9},
      {"sapphire-rapids", 22e9}, {"Emerald-Rapids", 40e9}, {"granite-rapids", 22e9}, {"amd", 16e9}};
  for (const auto& [cpu, figure] : cases) {
    const Topology t = generate_pcie({.gpu = "l40s", .gpus = 4, .sockets = 2, .gpus_per_switch = 0, .cpu = cpu});
    for (LinkId e : t.links()) {
      const TopoLink& l = t.link(e);
      if (l.type == LinkType::kCpuLink) {
        EXPECT_DOUBLE_EQ(l.payload_bw_Bps, figure) << cpu;
      }
    }
  }
  try {
    generate_pcie({.gpu = "l40s", .gpus = 2, .cpu = "zen4"});
    ADD_FAILURE() << "--cpu zen4 was taken";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("expected intel, amd or an Intel Xeon family"), std::string::npos) << e.what();
  }
  // The DGX H100 and B200 nodes name their Xeons (8480C Sapphire Rapids, 8570 Emerald Rapids).
  const auto socket_link = [](const Topology& t) {
    for (LinkId e : t.links())
      if (t.link(e).type == LinkType::kCpuLink) return t.link(e).payload_bw_Bps;
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(socket_link(load_topology("dgx-h100")), 22e9);
  EXPECT_DOUBLE_EQ(socket_link(load_topology("dgx-a100")), 16e9);
}

// A node per GPU (a scaling study's layout): the node type's NVSwitch node with one GPU and, by
// default, one NIC; nproc_per_node 1 on it is what a 2-node ring of one GPU each runs.
TEST(Generators, FatTreeOfOneGpuPerNode) {
  const Topology t = generate_fat_tree({.nodes = 4, .node = "dgx-h100", .gpus_per_node = 1});
  EXPECT_EQ(t.gpu_count(), 4);
  EXPECT_EQ(t.hosts().size(), 4u);
  EXPECT_EQ(count(t, VertexKind::kNic), 4);
  EXPECT_NE(t.comment().find("4 dgx-h100s (4 GPUs), 1 NIC of 400Gbps"), std::string::npos) << t.comment();
  EXPECT_NE(t.comment().find("Each node: 1 GPU NVIDIA H100"), std::string::npos) << t.comment();
  const Topology two = generate_fat_tree({.nodes = 2, .node = "dgx-a100", .gpus_per_node = 2, .nics_per_node = 2});
  EXPECT_EQ(two.gpu_count(), 4);
  EXPECT_EQ(count(two, VertexKind::kNic), 4);
  // The node's NIC is named at its own speed only: HDR is 200 Gb/s, so 100 Gb/s is InfiniBand alone.
  EXPECT_NE(two.comment().find("NICs of 200Gbps HDR InfiniBand (ConnectX-6) per node"), std::string::npos)
      << two.comment();
  const Topology slow = generate_fat_tree({.nodes = 2, .node = "dgx-a100", .nic_bw = "100Gbps"});
  EXPECT_NE(slow.comment().find("8 NICs of 100Gbps InfiniBand per node"), std::string::npos) << slow.comment();
}

TEST(Generators, FatTreeLeavesSpinesAndOversubscription) {
  // 32 dgx-h100 nodes, 8 NICs each = 256 NIC ports; QM9700 leaves: 32 down, 32 up.
  const Topology full = generate_fat_tree({.nodes = 32, .node = "dgx-h100"});
  EXPECT_EQ(full.gpu_count(), 256);
  EXPECT_EQ(count(full, VertexKind::kSwitch), 8 + 32);
  const Topology over = generate_fat_tree({.nodes = 32, .node = "dgx-h100", .oversubscription = 2});
  // 2:1 -> 42 down ports per leaf: 5 whole nodes (40 NICs) each, 20 up: 7 leaves, 20 spines.
  EXPECT_EQ(count(over, VertexKind::kSwitch), 7 + 20);
  const double nonblocking = bisection(full, first_ranks(256)).bw_Bps;
  const double oversubscribed = bisection(over, first_ranks(256)).bw_Bps;
  // Every NIC of half the nodes at full speed: 400 Gb/s NDR behind PCIe Gen5 x16 (NCCL's 48 GB/s).
  EXPECT_DOUBLE_EQ(nonblocking, 128 * 48e9);
  EXPECT_LT(oversubscribed, 0.6 * nonblocking);
  // Every NIC on one leaf: no uplinks to thin out, and the header says the flag changed nothing.
  const Topology small = generate_fat_tree({.nodes = 4, .node = "dgx-h100", .oversubscription = 2});
  EXPECT_EQ(count(small, VertexKind::kSwitch), 1);
  EXPECT_NE(small.comment().find("--oversubscription 2 changes nothing: every NIC is on the one leaf"),
            std::string::npos)
      << small.comment();
}

// More leaves than a spine has ports: a third level. Two DGX H100 nodes on 4-port leaves (2 down,
// 2 up) and 4-port spines: 8 leaves in 4 pods of 2, each pod with 2 spines, 2 uplinks each to
// 4 cores; a route between the pods climbs to a core (nic, leaf, spine, core, spine, leaf, nic),

// Leaves take whole nodes, and every leaf has the fullest one's uplinks: a ring over the nodes
// (NIC c of node k to NIC c of node k + 1, as NCCL's rings between DGX nodes) shares no link in
// either direction under D-mod-K routing, whatever the oversubscription. Until 2026-11-30 20-port
// leaves split every third DGX A100 over two leaves and the last, partly filled leaf had fewer
// uplinks: 8 nodes reached 93 GB/s busbw at 1:1 and 168 at 4:1 (collectives, 1 GiB).
TEST(Generators, FatTreeLeavesHoldWholeNodesAndARingSharesNoLink) {
  for (double over : {1.0, 2.0, 4.0}) {
    for (int nodes : {4, 6, 8, 16}) {
      const Topology t = generate_fat_tree({.nodes = nodes, .node = "dgx-a100", .oversubscription = over});
      const Routes routes(t);
      std::map<std::pair<VertexId, VertexId>, int> uses;  // directed link -> flows
      for (int k = 0; k < nodes; ++k) {
        const int next = (k + 1) % nodes;
        std::set<VertexId> leaves;
        for (int c = 0; c < 8; ++c) {
          const int from = 8 * k + c, to = 8 * next + c;
          const Route r = routes.net_route(from, to, routes.nic_of(from), routes.nic_of(to), 1);
          leaves.insert(r.vertices[r.vertices.size() / 2 - 1]);
          for (std::size_t h = 0; h + 1 < r.vertices.size(); ++h) {
            const VertexKind a = t.vertex(r.vertices[h]).kind, b = t.vertex(r.vertices[h + 1]).kind;
            if (a == VertexKind::kSwitch || b == VertexKind::kSwitch) ++uses[{r.vertices[h], r.vertices[h + 1]}];
          }
        }
      }
      for (const auto& [link, n] : uses)
        EXPECT_EQ(n, 1) << nodes << " nodes, " << over << ":1: " << t.vertex(link.first).name << " -> "
                        << t.vertex(link.second).name;
    }
  }
  const Topology t = generate_fat_tree({.nodes = 8, .node = "dgx-a100"});
  EXPECT_NE(t.comment().find("4 leaf switches of 40 ports (20 down, 16 used: 2 whole nodes each), 16 spines"),
            std::string::npos)
      << t.comment();
  // 8:1 leaves 35 down ports, of which whole nodes use 32: 4 spines carry 32 / 8 of them.
  const Topology thin = generate_fat_tree({.nodes = 8, .node = "dgx-a100", .oversubscription = 8});
  EXPECT_NE(thin.comment().find("2 leaf switches of 40 ports (35 down, 32 used: 4 whole nodes each), 4 spines, "
                                "oversubscription 8:1"),
            std::string::npos)
      << thin.comment();
}

// and the fabric stays non-blocking: half the nodes' NICs at full speed across the bisection.
TEST(Generators, FatTreeGrowsAThirdLevelOfPodsAndCores) {
  const Topology t = generate_fat_tree({.nodes = 2, .node = "dgx-h100", .leaf_ports = 4, .spine_ports = 4});
  EXPECT_EQ(count(t, VertexKind::kSwitch), 8 + 4 * 2 + 4);
  EXPECT_TRUE(t.find("pod3.spine1").has_value());
  EXPECT_TRUE(t.find("core3").has_value());
  const Routes routes(t);
  const Route r = routes.route(*t.find("node0.nic0"), *t.find("node1.nic0"));
  ASSERT_EQ(r.vertices.size(), 7u);
  EXPECT_EQ(t.vertex(r.vertices[3]).name.rfind("core", 0), 0u);
  EXPECT_DOUBLE_EQ(bisection(t, first_ranks(16)).bw_Bps, 8 * 48e9);
  // 2,048 nodes (16,384 GPUs) on 64-port switches: 512 leaves, 16 pods of 32 spines, 1,024 cores.
  const Topology big = generate_fat_tree({.nodes = 2048, .node = "dgx-h100"});
  EXPECT_EQ(big.gpu_count(), 16384);
  EXPECT_EQ(count(big, VertexKind::kSwitch), 512 + 16 * 32 + 1024);
}

TEST(Generators, RailOptimizedPutsNicIOnRailI) {
  const Topology t = generate_fat_tree({.nodes = 4, .node = "dgx-a100", .rail_optimized = true});
  // 8 rails, one leaf each (4 nodes fit in 20 down ports).
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 8; ++i) {
      const VertexId nic = *t.find(fmt::format("node{}.nic{}", k, i));
      bool on_rail = false;
      for (auto e : boost::make_iterator_range(boost::out_edges(nic, t.graph())))
        on_rail |= t.vertex(t.other_end(e, nic)).name == fmt::format("leaf{}", i);
      EXPECT_TRUE(on_rail) << k << "," << i;
    }
  }
}

std::string error(auto f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Generators, BadOptions) {
  EXPECT_EQ(error([] { generate_nvswitch({.gpu = "rtx-4090"}); }),
            "--gpu rtx-4090: NVIDIA GeForce RTX 4090 has no NVLink; an NVSwitch fabric needs NVLink GPUs");
  // A PCIe board's NVLink is a bridge to one other board: no NVSwitch baseboard or DGX-1 mesh holds it.
  EXPECT_EQ(error([] { generate_nvswitch({.gpu = "h100-pcie"}); }),
            "--gpu h100-pcie: NVIDIA H100 PCIe 80GB is a PCIe board whose NVLink is a bridge to one other board; an "
            "NVSwitch fabric holds SXM modules (topo generate pcie --nvlink-bridge pairs such boards)");
  EXPECT_EQ(error([] { generate_nvlink_mesh({.gpu = "a100-pcie-40gb"}); }),
            "--gpu a100-pcie-40gb: NVIDIA A100 PCIe 40GB is a PCIe board whose NVLink is a bridge to one other "
            "board; the DGX-1 cube-mesh holds SXM modules (topo generate pcie --nvlink-bridge pairs such boards)");
  // The cube-mesh is the DGX-1's board of 6-NVLink SXM2 modules; later modules sit on NVSwitch.
  EXPECT_EQ(error([] { generate_nvlink_mesh({.gpu = "a100"}); }),
            "--gpu a100: NVIDIA A100 SXM4 80GB has 12 NVLinks and sits on an NVSwitch baseboard (HGX); the DGX-1 "
            "cube-mesh holds SXM2 modules of 6 NVLinks (V100); expected v100-sxm2-16gb or v100-sxm2-32gb, or topo "
            "generate nvswitch --gpu a100");
  EXPECT_EQ(generate_nvlink_mesh({.gpu = "v100-sxm2-16gb"}).gpu_count(), 8);
  // An SXM module sits on its baseboard: a PCIe box of them, bridged or not, is no machine.
  for (const bool bridge : {false, true}) {
    EXPECT_EQ(error([&] { generate_pcie({.gpu = "h100", .gpus = 2, .nvlink_bridge = bridge}); }),
              "--gpu h100: NVIDIA H100 SXM5 80GB is an SXM module on an NVLink baseboard, not a PCIe board; expected "
              "a PCIe board (gradsync list gpus: the ones without NVLink or with a bridge), or topo generate nvswitch "
              "/ nvlink-mesh (with NCCL_P2P_DISABLE=1 to leave its NVLink unused)");
  }
  EXPECT_NE(generate_pcie({.gpu = "l4", .gpus = 1}).comment().find("on the first of two CPU sockets"),
            std::string::npos);
  for (const GpuSpec& g : gpu_specs()) {
    // Every SXM module (named so) is on a baseboard; every bridged board is a PCIe or GeForce card.
    EXPECT_FALSE(g.nvlink_bridge && g.name.find("SXM") != std::string::npos) << g.key;
    if (g.key.find("pcie") != std::string::npos) {
      EXPECT_TRUE(g.nvlink_links == 0 || g.nvlink_bridge) << g.key;
    }
  }
  EXPECT_EQ(error([] { generate_nvswitch({.gpus = 0}); }), "--gpus 0: expected 1 to 72 GPUs on one NVSwitch fabric");
  EXPECT_EQ(error([] { generate_nvswitch({.nic_bw = "-1Gbps"}); }), "--nic-bw: bandwidth \"-1Gbps\" must be > 0");
  // What the topology reader would refuse is refused here, not written.
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 2, .node = "dgx-a100", .nic_bw = "1bps"}); }),
            "--nic-bw 1bps: expected 1kBps to 1PBps per link and direction (NDR InfiniBand is 400Gbps)");
  EXPECT_EQ(error([] { generate_pcie({.sockets = 3}); }), "--sockets 3: expected 1 or 2");
  // By default a switch takes 2 GPUs, or fewer where a socket holds fewer: `topo generate pcie
  // --gpus 2` builds (one GPU under each socket's switch); given explicitly, 2 is refused.
  EXPECT_EQ(generate_pcie({.gpus = 2}).gpu_count(), 2);
  EXPECT_NE(generate_pcie({.gpus = 2}).comment().find("--gpus-per-switch 1"), std::string::npos);
  EXPECT_NE(generate_pcie({}).comment().find("--gpus 4 --sockets 2 --gpus-per-switch 2"), std::string::npos);
  // A switch hangs under one socket: 2 GPUs over 2 sockets cannot share one.
  EXPECT_EQ(error([] { generate_pcie({.gpus = 2, .sockets = 2, .gpus_per_switch = 2}); }),
            "--gpus-per-switch 2: the 2 GPUs split over 2 sockets leave 1 GPU on a socket, and a PCIe switch hangs "
            "under one socket; expected --gpus-per-switch 0 (CPU root ports) to 1 (or --sockets 1)");
  EXPECT_EQ(error([] { generate_pcie({.gpu = "l4", .nvlink_bridge = true}); }),
            "--nvlink-bridge: NVIDIA L4 has no NVLink");
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 2, .node = "dgx-z"}); }),
            "--node: unknown node type \"dgx-z\"; expected one of dgx-a100, dgx-h100, dgx-h200, dgx-b200, dgx1-v100");
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 2, .node = "dgx-a100", .oversubscription = 0.5}); }),
            "--oversubscription 0.5: expected 1 (non-blocking) to 64");
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 2, .node = "dgx1-v100", .nics_per_node = 8}); }),
            "--nics-per-node 8: a dgx1-v100 has 1 to 4 compute NICs");
  // 0 is a value given, not "all of them": out of range like any other.
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 2, .node = "dgx-a100", .nics_per_node = 0}); }),
            "--nics-per-node 0: a dgx-a100 has 1 to 8 compute NICs");
  // 2,048 nodes is the largest cluster the benches check (4,096 took 20 GB to validate).
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 4096, .node = "dgx-h100"}); }),
            "--nodes 4096: expected 1 to 2048 (16,384 GPUs of 8-GPU nodes: the largest cluster gradsync is checked "
            "on)");
  // A value given is checked as given: -1 and 0 mean no default.
  EXPECT_EQ(error([] { generate_nvswitch({.nics = -1}); }), "--nics -1: expected 0 to 64");
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 2, .node = "dgx-a100", .nics_per_node = -1}); }),
            "--nics-per-node -1: a dgx-a100 has 1 to 8 compute NICs");
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 2, .node = "dgx-a100", .gpus_per_node = 9}); }),
            "--gpus-per-node 9: expected 1 to 8 (a dgx-a100 holds 8)");
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 2, .node = "dgx1-v100", .gpus_per_node = 4}); }),
            "--gpus-per-node 4: a dgx1-v100 is its 8-GPU hybrid cube-mesh; other counts are for NVSwitch nodes");
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 2, .node = "dgx-a100", .leaf_ports = 0}); }),
            "--leaf-ports 0: expected at least 2");
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 16, .node = "dgx-h100", .leaf_ports = 8, .spine_ports = 4}); }),
            "fat-tree: 16 pods of 2 leaves need core switches with at least 16 ports; --spine-ports is 4");
  // Only --leaf-ports given: the spines have as many ports, and the message says so.
  EXPECT_EQ(error([] { generate_fat_tree({.nodes = 2, .node = "dgx-a100", .leaf_ports = 3}); }),
            "fat-tree: 16 pods of 1 leaf need core switches with at least 16 ports; the spines have --leaf-ports' 3 "
            "(no --spine-ports given)");
}

}  // namespace
}  // namespace gradsync
