// channels.hpp: NCCL-like rings and trees over a topology (SEMANTICS.md §3, "Topology search").
//
//   Routes routes(topo);
//   const Channels ch = build_channels(topo, routes, first_ranks(8));
//   ch.rings.size() * ch.channel_bw_Bps;    // dgx-a100: 12 channels x 20 GB/s = 240 GB/s
//   ch.rings[0].order;                       // {0, 1, 2, 3, 4, 5, 6, 7}
//
// How channels are found, as NCCL's search does: one channel at a time, each a GPU order whose
// every hop subtracts the channel's speed from the links its route uses (per direction). Within
// a node the search first allows only NVLink paths, then PCIe-switch paths, then CPU paths (it
// takes the best path class at which a ring exists at all), and at that class picks the speed
// that gives the most bandwidth in total (ties: the higher speed, i.e. fewer channels). Speeds
// are NCCL's speed table plus every route bandwidth divided by 1..16, capped per channel at
// NCCL's top speed for the GPU generation (40 GB/s before Hopper, 60 on Hopper, 90 on
// Blackwell; 48 across nodes, 96 on Blackwell). At most 16 channels, then doubled at half the
// speed as NCCL's ncclTopoDupChannels does (6 x 40 GB/s on a DGX A100 become 12 x 20). Links
// count at their payload rate (topologies/link_model.hpp): NVLink 20 of 25 GB/s on A100.
//
// Across nodes each channel picks NIC c mod (NICs per node) on every node (rail-aligned), runs
// a chain through all of the node's GPUs from a GPU next to that NIC to another GPU next to it,
// and joins the nodes' chains in node order through the NICs. Trees are NCCL's double binary
// tree over nodes (channel c uses tree c mod 2) with the node's chain inside each node.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "topologies/routes.hpp"
#include "topologies/topology.hpp"
#include "topologies/transports/transport.hpp"
#include "topologies/trees.hpp"

namespace gradsync {

// kMaxChannels: the most channels the search finds; kMaxDupChannels: the most after NCCL
// doubles fast channels (ncclTopoDupChannels, up to the ring graph's maxChannels, MAXCHANNELS/2
// = 32 in NCCL 2.25+).
inline constexpr int kMaxChannels = 16;
inline constexpr std::size_t kMaxDupChannels = 32;

// RingChannel is one ring: `order` lists the ranks; hops[i] carries order[i] -> order[i+1]
// (the last hop closes the ring): its transport, route and wire factor (topologies/transports). Across nodes, chains[n]
// is node n's part of the order (first GPU next to the NIC data arrives on) and nics[n] that node's NIC; both empty on
// one node.
struct RingChannel {
  std::vector<int> order;
  std::vector<Hop> hops;
  std::vector<std::vector<int>> chains;
  std::vector<VertexId> nics;
};

// NvlsGraph: NCCL's NVLink SHARP graph (search.cc ncclTopoSearchTryNvls): on one node one channel
// per GPU (each the head of its share), across nodes one per head (a NIC's local GPU), at
// `bw_intra_Bps` inside the node (the head's NVSwitch links carry twice a channel, every other
// GPU's once: (channels + 1) x speed within a GPU's NVSwitch bandwidth) and `bw_inter_Bps`
// through the heads' NICs between nodes.
struct NvlsGraph {
  int channels = 0;  // the NVLS graph's channels, which NCCL's tuning model counts
  double bw_intra_Bps = 0;
  double bw_inter_Bps = 0;
  // default_launched: the thread blocks an NVLS kernel runs by default (NCCL 2.27 nvls.cc:
  // NVLS_NCHANNELS_SM90 16; on Blackwell NVLS_NCHANNELS_SM100_NVL 24 in one node, SM100 32 across
  // nodes); launched: as NCCL_MIN_CTAS / NCCL_MAX_CTAS leave them (limit_nvls_channels).
  int default_launched = 16;
  int launched = 16;
  // heads: across nodes, per host (in host order) the GPUs (ranks) heading a channel, each local to
  // a NIC of its node; only they send and receive between nodes. Empty on one node.
  std::vector<std::vector<int>> heads;
};

// Channels is the result of the search for one set of ranks.
struct Channels {
  std::vector<int> ranks;                   // the participating GPUs
  std::vector<int> hosts;                   // their hosts (indices into Topology::hosts()), in order
  std::vector<RingChannel> rings;           // empty for a single GPU
  double channel_bw_Bps = 0;                // each channel's speed, per direction
  PathClass intra_class = PathClass::kNVL;  // worst path class of a hop inside a node
  // Across nodes, NCCL's typeInter: the worst GPU-NIC path class of the NET hops (Hop::nic_class),
  // and whether any goes by PXN; PIX and false on one node.
  PathClass inter_class = PathClass::kPIX;
  bool inter_pxn = false;
  std::array<std::vector<TreeNode>, 2> trees;  // over hosts; empty for one host
  // Across nodes, NCCL's tree graph has the rings' channels at the rings' speed between nodes
  // (tree_bw_inter_Bps) and up to twice it inside them where the links allow (tree_bw_intra_Bps,
  // search.cc's second pass); NCCL's model of a tree over two nodes uses the latter.
  double tree_bw_intra_Bps = 0;
  double tree_bw_inter_Bps = 0;
  // nvls: where every node's GPUs (more than two, Hopper or later) sit on one NVSwitch.
  std::optional<NvlsGraph> nvls;
  int sm_version = 0;     // the slowest GPU's compute capability x 10 (NCCL's minCompCap)
  bool amd = false;       // AMD CPUs (NCCL's network overhead: 2 us instead of 1)
  bool arm = false;       // ARM CPUs (NCCL's cpuArch: not x86)
  bool p2p_read = false;  // a hop inside a node in P2P read mode (A100 pairs over NVLink)
  // same_channels: NCCL's graph->sameChannels: every channel the same ring (search.cc replays the
  // first channel where that reaches the speed; gradsync's alternate rings run the same cycle the
  // other way round) through the same NICs. Channels on other rings (the DGX-1's) or other NICs
  // (a node's rails) are not: NCCL then charges a broadcast or reduce a latency per step.
  bool same_channels = true;
  // fallback: no ring fit the links at any of NCCL's speeds, so, as NCCL does ("Could not find a
  // path for pattern 4, falling back to simple order", search.cc), one channel planned at
  // 0.1 GB/s on paths of any class; its flows still move at the links' rates.
  bool fallback = false;
  // launched: the thread blocks (NCCL's comm->nChannels) that run the rings, where NCCL_MIN_NCHANNELS
  // or NCCL_MAX_NCHANNELS changed them (limit_channels); 0: NCCL's default, every ring run by two
  // (launched_channels).
  int launched = 0;
  // searched: the rings NCCL's search found, which its tuning model counts (tuning.cc: the graph's
  // nChannels), where NCCL_MAX_NCHANNELS left fewer in `rings`; 0: rings.size().
  int searched = 0;

  double total_bw_Bps() const { return channel_bw_Bps * static_cast<double>(rings.size()); }
  int nodes() const { return std::max<int>(1, static_cast<int>(hosts.size())); }
};

// build_channels searches rings and trees for `ranks` (distinct GPU ranks; GPUs on several
// hosts need NICs with that host), with hops carried as `transports` choose (NCCL's defaults when
// not given). ConfigError when the ranks are invalid or no ring exists.
Channels build_channels(const Topology& topo, const Routes& routes, const std::vector<int>& ranks);
Channels build_channels(const Topology& topo, const Routes& routes, const std::vector<int>& ranks,
                        const Transports& transports);

// nccl_speeds: NCCL's per-channel speed array (search.cc speedArrayIntra/Inter, sm90 and sm100
// variants), fastest first, bytes/s.
std::vector<double> nccl_speeds(bool inter, int sm);

// graph_nvls_and_tree fills the tree speeds and the NVLS graph of searched channels
// (topologies/nccl_graphs.cpp).
void graph_nvls_and_tree(const Topology& topo, const Routes& routes, const Transports& transports, Channels& ch);

// finish_graphs completes the searched rings as NCCL does after its search: fast channels doubled
// at half the speed (ncclTopoDupChannels), the GPUs' generation and CPU vendor, the tree and NVLS
// graphs (graph_nvls_and_tree), and the worst path class of a hop inside a node.
void finish_graphs(const Topology& topo, const Routes& routes, const Transports& transports, Channels& ch);

// launched_channels: the blocks NCCL launches for the rings: Channels::launched where the knobs set
// it, else the searched rings doubled (connect.cc: nChannels*2, at most MAXCHANNELS 64), and on
// Hopper and later across nodes, rings faster than 45 GB/s and fewer than 16 channels so far,
// doubled again (connect.cc 2.27: "Use 4 compute channels per search channel to reach peak BW on
// <8 PPN"; 6 rails of 48 GB/s: 24 channels, not 12).
inline int launched_channels(const Channels& ch) {
  if (ch.launched > 0) return ch.launched;
  int n = std::min(64, 2 * static_cast<int>(ch.rings.size()));
  if (ch.sm_version >= 90 && ch.nodes() > 1 && ch.channel_bw_Bps > 45e9 && n < 16) n = std::min(64, 2 * n);
  return n;
}

// first_ranks returns {0, 1, ..., n-1}.
std::vector<int> first_ranks(int n);

}  // namespace gradsync
