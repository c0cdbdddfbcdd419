// generators_fat_tree.cpp: nodes (an NVSwitch node type or the DGX-1) under InfiniBand leaf
// switches, joined by spines (and cores past one spine level), plain or rail-optimized.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "topologies/generator_parts.hpp"
#include "topologies/generators.hpp"

namespace gradsync {

using namespace generator_detail;

Topology generate_fat_tree(const FatTreeOptions& o) {
  const ClusterNode& type = cluster_node(o.node);
  const GpuSpec& g = spec_of(type.gpu, "--node");
  // kMaxFatTreeNodes: 2,048 nodes (16,384 GPUs) is the largest cluster the benches check
  // (bench/e2e_bench.cpp: GPT-2 within 60 s and 8 GiB); 4,096 generated in a second but took more
  // than 5 minutes and 20 GB to validate (the ring search's routes grow with the square of it).
  constexpr int kMaxFatTreeNodes = 2048;
  need(o.nodes >= 1 && o.nodes <= kMaxFatTreeNodes,
       fmt::format("--nodes {}: expected 1 to {} (16,384 GPUs of 8-GPU nodes: the largest cluster gradsync is "
                   "checked on)",
                   o.nodes, kMaxFatTreeNodes));
  // Fewer GPUs per node (a node per GPU, as a scaling study runs): the same node type with that
  // many GPUs on its NVSwitch, and by default one NIC per GPU (the DGX pairs them).
  const bool mesh = std::string(type.key) == "dgx1-v100";
  const int per_node = o.gpus_per_node.value_or(8);
  need(per_node >= 1 && per_node <= 8,
       fmt::format("--gpus-per-node {}: expected 1 to 8 (a {} holds 8)", per_node, type.key));
  need(!mesh || per_node == 8,
       fmt::format("--gpus-per-node {}: a dgx1-v100 is its 8-GPU hybrid cube-mesh; other counts are for NVSwitch "
                   "nodes",
                   per_node));
  const int nics = o.nics_per_node.value_or(std::min(type.nics, per_node));
  need(nics >= 1 && nics <= type.nics,
       fmt::format("--nics-per-node {}: a {} has 1 to {} compute NICs", nics, type.key, type.nics));
  need(o.oversubscription >= 1 && o.oversubscription <= 64,
       fmt::format("--oversubscription {}: expected 1 (non-blocking) to 64", o.oversubscription));
  const int ports = o.leaf_ports.value_or(type.switch_ports);
  const int spine_ports = o.spine_ports.value_or(ports);
  need(ports >= 2, fmt::format("--leaf-ports {}: expected at least 2", ports));
  need(spine_ports >= 2, fmt::format("--spine-ports {}: expected at least 2", spine_ports));
  const int down = std::max(1, static_cast<int>(std::floor(ports * o.oversubscription / (o.oversubscription + 1))));
  const std::string nic_bw = o.nic_bw.empty() ? std::string(type.nic_bw) : o.nic_bw;
  const double nic_Bps = bandwidth_flag(nic_bw, "--nic-bw");

  Builder b;
  std::vector<std::vector<std::size_t>> node_nics;
  for (int k = 0; k < o.nodes; ++k) {
    const std::string host = fmt::format("node{}", k);
    const std::string prefix = host + ".";
    node_nics.push_back(mesh ? add_dgx1_node(b, prefix, host, g, type.gpu, nics).nics
                             : add_nvswitch_node(b, prefix, host, g, type.gpu, per_node, nics).nics);
  }
  // Leaf of every NIC: per rail (NIC i of every node on the rail-i leaves), or whole nodes to a leaf,
  // as many as its down ports take (a leaf of 20 down ports holds two 8-NIC nodes and leaves 4
  // ports free, rather than split a third node's NICs over two leaves: a node split so sends some
  // of its ring's hops up to spines that D-mod-K routing gives other flows too, and a ring over 8
  // DGX A100s would reach half the rate of one over leaves of whole nodes). A node with more NICs
  // than a leaf's down ports fills leaves in NIC order.
  const int per_rail = (o.nodes + down - 1) / down;
  const int per_leaf = nics <= down ? down / nics : 0;  // whole nodes per leaf (0: NICs in order)
  const auto leaf_of = [&](int k, int i) {
    return o.rail_optimized ? i * per_rail + k / down : per_leaf > 0 ? k / per_leaf : (k * nics + i) / down;
  };
  const int leaves = o.rail_optimized ? nics * per_rail
                     : per_leaf > 0   ? (o.nodes + per_leaf - 1) / per_leaf
                                      : (o.nodes * nics + down - 1) / down;
  std::vector<std::size_t> leaf;
  for (int l = 0; l < leaves; ++l) leaf.push_back(b.add(fmt::format("leaf{}", l), VertexKind::kSwitch, ""));
  for (int k = 0; k < o.nodes; ++k) {
    for (int i = 0; i < nics; ++i) {
      const int l = leaf_of(k, i);
      b.link(node_nics[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)], leaf[static_cast<std::size_t>(l)],
             LinkType::kInfiniband, nic_Bps, kNetworkLatency_s);
    }
  }
  // Every leaf is cabled alike: as many uplinks as the fullest leaf needs at the oversubscription
  // (its used down ports / oversubscription, one to each spine), a partly filled leaf too (the
  // last, or one of whole nodes with ports to spare), so that no leaf is thinner than the ratio.
  std::vector<int> used(static_cast<std::size_t>(leaves), 0);
  for (int k = 0; k < o.nodes; ++k)
    for (int i = 0; i < nics; ++i) ++used[static_cast<std::size_t>(leaf_of(k, i))];
  const int fullest = *std::max_element(used.begin(), used.end());
  const int leaf_up = static_cast<int>(std::ceil(fullest / o.oversubscription));
  int spines = 0, pods = 0, cores = 0;
  if (leaves > 1) {
    spines = leaf_up;
    if (leaves <= spine_ports) {
      // Two levels: every leaf's uplinks go to the first of the spines, each spine reaching every leaf.
      std::vector<std::size_t> spine;
      for (int s = 0; s < spines; ++s) spine.push_back(b.add(fmt::format("spine{}", s), VertexKind::kSwitch, ""));
      for (int l = 0; l < leaves; ++l) {
        for (int s = 0; s < leaf_up; ++s) {
          b.link(leaf[static_cast<std::size_t>(l)], spine[static_cast<std::size_t>(s)], LinkType::kInfiniband, nic_Bps,
                 kNetworkLatency_s);
        }
      }
    } else {
      // Three levels (a k-ary fat-tree's pods): leaves in pods of spine_ports / 2, each pod with
      // its own `spines` spines (leaf uplink s to the pod's spine s); spine s of every pod has
      // spine_ports / 2 uplinks, one to each core of core group s, and every core reaches every pod.
      // Non-blocking above the leaves.
      const int per_pod = spine_ports / 2, up = spine_ports - per_pod;
      pods = (leaves + per_pod - 1) / per_pod;
      // The spine's ports are --spine-ports, or --leaf-ports when only that was given (the
      // switches alike): the message says which.
      need(pods <= spine_ports,
           fmt::format("fat-tree: {} pod{} of {} lea{} need{} core switches with at least {} ports; {}", pods,
                       pods == 1 ? "" : "s", per_pod, per_pod == 1 ? "f" : "ves", pods == 1 ? "s" : "", pods,
                       o.spine_ports
                           ? fmt::format("--spine-ports is {}", spine_ports)
                           : fmt::format("the spines have --leaf-ports' {} (no --spine-ports given)", spine_ports)));
      cores = spines * up;
      std::vector<std::size_t> core;
      for (int c = 0; c < cores; ++c) core.push_back(b.add(fmt::format("core{}", c), VertexKind::kSwitch, ""));
      for (int p = 0; p < pods; ++p) {
        std::vector<std::size_t> spine;
        for (int s = 0; s < spines; ++s) {
          spine.push_back(b.add(fmt::format("pod{}.spine{}", p, s), VertexKind::kSwitch, ""));
          for (int c = 0; c < up; ++c) {
            b.link(spine.back(), core[static_cast<std::size_t>(s * up + c)], LinkType::kInfiniband, nic_Bps,
                   kNetworkLatency_s);
          }
        }
        for (int l = p * per_pod; l < std::min(leaves, (p + 1) * per_pod); ++l) {
          for (int s = 0; s < leaf_up; ++s) {
            b.link(leaf[static_cast<std::size_t>(l)], spine[static_cast<std::size_t>(s)], LinkType::kInfiniband,
                   nic_Bps, kNetworkLatency_s);
          }
        }
      }
    }
  }
  const std::string kind = o.rail_optimized ? "rail-optimized" : "fat-tree";
  std::string cmd = fmt::format("gradsync topo generate {} --nodes {} --node {}", kind, o.nodes, o.node);
  if (o.gpus_per_node) cmd += fmt::format(" --gpus-per-node {}", *o.gpus_per_node);
  if (o.nics_per_node) cmd += fmt::format(" --nics-per-node {}", *o.nics_per_node);
  if (!o.nic_bw.empty()) cmd += fmt::format(" --nic-bw {}", o.nic_bw);
  if (o.oversubscription != 1) cmd += fmt::format(" --oversubscription {}", o.oversubscription);
  if (o.leaf_ports) cmd += fmt::format(" --leaf-ports {}", *o.leaf_ports);
  if (o.spine_ports) cmd += fmt::format(" --spine-ports {}", *o.spine_ports);
  const std::string layout =
      std::string(type.key) == "dgx1-v100"
          ? std::string("Each node: DGX-1 hybrid cube-mesh (see gradsync topo generate nvlink-mesh).")
          : fmt::format("Each node: {}", nvswitch_comment(g, per_node, nics, nic_bw));
  return b.build(
      "generated " + kind,
      fmt::format(
          "Generated by: {}\n"
          "{} {}s ({} GPUs), {} NIC{} of {} {} per node; {} leaf switch{} of {} ports ({} down{}){}{}.\n"
          "Sources: {}; switch: NVIDIA {}.\n{}",
          cmd, o.nodes, o.node, o.nodes * per_node, nics, nics == 1 ? "" : "s", nic_bw,
          // The node's own NIC by name only at its own speed (HDR is 200 Gb/s): another --nic-bw
          // names the network alone.
          nic_Bps == bandwidth_flag(type.nic_bw, "--nic-bw") ? std::string(type.nic_name) : std::string("InfiniBand"),
          leaves, leaves == 1 ? "" : "es", ports, down,
          !o.rail_optimized && per_leaf > 0 && leaves > 1
              ? fmt::format(", {}{} whole node{} each",
                            per_leaf * nics < down ? fmt::format("{} used: ", per_leaf * nics) : "", per_leaf,
                            per_leaf == 1 ? "" : "s")
              : "",
          o.rail_optimized ? ", rail-optimized (NIC i of every node on rail i)" : "",
          pods > 0     ? fmt::format(", {} pods of {} spines ({} ports) under {} core switches, oversubscription "
                                         "{}:1 at the leaves",
                                     pods, spines, spine_ports, cores, o.oversubscription)
          : spines > 0 ? fmt::format(", {} spines, oversubscription {}:1", spines, o.oversubscription)
          // Every NIC on one leaf: no uplink for --oversubscription to thin out.
          : o.oversubscription != 1
              ? fmt::format("; --oversubscription {} changes nothing: every NIC is on the one leaf, which has "
                            "no uplinks",
                            o.oversubscription)
              : "",
          type.source, type.switch_name, layout));
}

}  // namespace gradsync
