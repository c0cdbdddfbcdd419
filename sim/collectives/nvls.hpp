// nvls.hpp: NVLink SHARP (NCCL's NVLS and NVLSTree allreduce) as flows. The NVSwitch reduces: each
// GPU sends its S bytes into the switch and receives the S reduced bytes back, at the rate NCCL's
// model gives NVLS (nChannels x the NVLS graph's speed x 5/6: the switch's reduction and the
// pipeline, tuning.cc), so that an NVLS allreduce alone takes NCCL's predicted time and shares its
// GPUs' NVLink with whatever else runs. NVLSTree adds, for every GPU, its 1/ppn share sent to the
// same GPU of the next node and back through the NICs (the tree between nodes), at the model's
// inter-node rate; the two run at once and the slower sets the time, as in NCCL's model.
//
//   for (const NvlsFlow& f : nvls_flows(me, bytes, channels, topo, choice, bandwidth)) put(me, f.to, ...)
#pragma once

#include <functional>
#include <vector>

#include "sim/nccl_model.hpp"
#include "topologies/channels.hpp"

namespace gradsync::sim {

// NvlsFlow: one flow of a member: its receiver, payload bytes and bytes on the wire.
struct NvlsFlow {
  int to = 0;
  double payload = 0;
  double wire = 0;
};

// nvls_flows: member `me`'s flows of one NVLS or NVLSTree allreduce of `bytes` (members are
// channels.ranks, ranks 0..k-1). `bandwidth(from, to)` is the route's payload bandwidth per
// direction (its bottleneck over the transport's wire factor).
std::vector<NvlsFlow> nvls_flows(int me, double bytes, const Channels& channels, const Topology& topo,
                                 const CollectiveChoice& choice, const std::function<double(int, int)>& bandwidth);

}  // namespace gradsync::sim
