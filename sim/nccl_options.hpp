// nccl_options.hpp: a scenario's NCCL knobs (core/scenario_keys.hpp: NCCL_ALGO, NCCL_PROTO,
// NCCL_P2P_DISABLE, ...) as the simulator takes them: which algorithms and protocols NCCL may
// choose, which transports connect GPUs, how many channels.
//
//   Scenario s;  s.nccl_p2p_disable = true;
//   const NcclSettings n = nccl_settings(s);   // n.transport.p2p_disable: SHM between a host's GPUs
#pragma once

#include "core/scenario.hpp"
#include "sim/nccl_model.hpp"
#include "topologies/channels.hpp"
#include "topologies/transports/transport.hpp"

namespace gradsync::sim {

struct NcclSettings {
  CollectiveRequest request;  // NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE
  TransportOptions
      transport;         // NCCL_P2P_DISABLE, NCCL_P2P_LEVEL, NCCL_SHM_DISABLE, NCCL_NET_GDR_LEVEL, NCCL_IB_DISABLE
  int min_channels = 0;  // NCCL_MIN_NCHANNELS (0: unset)
  int max_channels = 0;  // NCCL_MAX_NCHANNELS (0: unset)
};

// nccl_settings: the scenario's knobs (already checked by the key table).
NcclSettings nccl_settings(const Scenario& s);

// limit_channels: NCCL_MAX_NCHANNELS keeps the first `max` rings; NCCL_MIN_NCHANNELS repeats the
// rings found up to `min`, the copies sharing the bandwidth the search found (0: unset).
void limit_channels(Channels& c, int min, int max);

// path_level: an NCCL level name (LOC, NVL, ... SYS) as a path class; LOC (no path between two
// GPUs is that near) as nullopt.
std::optional<PathClass> path_level(std::string_view canonical);

}  // namespace gradsync::sim
