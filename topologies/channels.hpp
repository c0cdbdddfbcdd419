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

#include <array>
#include <vector>

#include "topologies/routes.hpp"
#include "topologies/topology.hpp"
#include "topologies/trees.hpp"

namespace gradsync {

// kMaxChannels: the most channels the search finds; kMaxDupChannels: the most after NCCL
// doubles fast channels (ncclTopoDupChannels, up to the ring graph's maxChannels, MAXCHANNELS/2
// = 32 in NCCL 2.25+).
inline constexpr int kMaxChannels = 16;
inline constexpr std::size_t kMaxDupChannels = 32;

// RingChannel is one ring: `order` lists the ranks; hops[i] carries order[i] -> order[i+1]
// (the last hop closes the ring). Across nodes, chains[n] is node n's part of the order (first
// GPU next to the NIC data arrives on) and nics[n] that node's NIC; both empty on one node.
struct RingChannel {
  std::vector<int> order;
  std::vector<Route> hops;
  std::vector<std::vector<int>> chains;
  std::vector<VertexId> nics;
};

// Channels is the result of the search for one set of ranks.
struct Channels {
  std::vector<int> ranks;                      // the participating GPUs
  std::vector<int> hosts;                      // their hosts (indices into Topology::hosts()), in order
  std::vector<RingChannel> rings;              // empty for a single GPU
  double channel_bw_Bps = 0;                   // each channel's speed, per direction
  PathClass intra_class = PathClass::kNVL;     // worst path class of a hop inside a node
  std::array<std::vector<TreeNode>, 2> trees;  // over hosts; empty for one host

  double total_bw_Bps() const { return channel_bw_Bps * static_cast<double>(rings.size()); }
};

// build_channels searches rings and trees for `ranks` (distinct GPU ranks; GPUs on several
// hosts need NICs with that host). ConfigError when the ranks are invalid or no ring exists.
Channels build_channels(const Topology& topo, const Routes& routes, const std::vector<int>& ranks);

// first_ranks returns {0, 1, ..., n-1}.
std::vector<int> first_ranks(int n);

}  // namespace gradsync
