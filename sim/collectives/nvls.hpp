// nvls.hpp: NVLink SHARP (NCCL's NVLS and NVLSTree allreduce) as flows. The NVSwitch reduces: each
// GPU sends its S bytes into the switch and receives the S reduced bytes back, at the rate NCCL's
// model gives NVLS (nChannels x the NVLS graph's speed x 5/6: the switch's reduction and the
// pipeline, tuning.cc), so that an NVLS allreduce alone takes NCCL's predicted time and shares its
// GPUs' NVLink with whatever else runs. NVLSTree adds, for every GPU, its 1/ppn share sent to the
// same GPU of the next node and back through the NICs (the tree between nodes), at the model's
// inter-node rate; the two run at once and the slower sets the time, as in NCCL's model.
//
//   const NvlsNodes nodes = nvls_nodes(channels, topo);  // once per call
//   for (const NvlsFlow& f : nvls_flows(me, bytes, nodes, *channels.nvls, choice, direct_bw)) put(me, f.to, ...)
#pragma once

#include <functional>
#include <limits>
#include <vector>

#include "sim/nccl_model.hpp"
#include "topologies/channels.hpp"

namespace gradsync::sim {

// NvlsFlow: one flow of a member: its receiver, payload bytes and bytes on the wire.
struct NvlsFlow {
  int to = 0;
  double payload = 0;
  double wire = 0;
  bool direct = false;  // into the NVSwitch and back: the GPUs' own NVLink, not NCCL's P2P transport
  double cap = std::numeric_limits<double>::infinity();  // wire bytes/s at most
};

// NvlsNodes: a group's members by node (hosts in order, each node's members in rank order) and
// each member's node and place in it. Found once per call (a map of every member), not once per
// member: at 1,024 GPUs that was a million insertions a call.
struct NvlsNodes {
  std::vector<std::vector<int>> nodes;
  std::vector<int> node_of;   // by member (ranks 0..k-1)
  std::vector<int> local_of;  // by member: its index in nodes[node_of]
};
NvlsNodes nvls_nodes(const Channels& channels, const Topology& topo);

// nvls_flows: member `me`'s flows of one NVLS or NVLSTree allreduce of `bytes` (members are
// channels.ranks, ranks 0..k-1, grouped by `nodes`). `direct_bandwidth(from, to)` is the GPUs' own
// route's payload bandwidth per direction, that of the flow through the NVSwitch (direct); the
// flows between nodes take NCCL's route for the pair, capped at the model's inter rate.
std::vector<NvlsFlow> nvls_flows(int me, double bytes, const NvlsNodes& nodes, const NvlsGraph& graph,
                                 const CollectiveChoice& choice,
                                 const std::function<double(int, int)>& direct_bandwidth);

}  // namespace gradsync::sim
