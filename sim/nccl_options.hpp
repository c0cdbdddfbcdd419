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

// limit_channels: NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS bound the launched channels, the
// searched rings doubled, as connect.cc does after the search (NCCL 2.27 ncclTopoPostset: at most
// `max`, then copies of the first channels up to `min`, at most MAXCHANNELS 64; 0: unset). Fewer
// launched channels than rings keep the first `max` rings (one block each); more blocks than two
// per ring run the same rings, so the rings and their speed stay (Channels::launched counts the
// blocks). A minimum at or below the default changes nothing.
void limit_channels(Channels& c, int min, int max);

// path_level: an NCCL level name (LOC, NVL, ... SYS) as a path class; LOC (no path between two
// GPUs is that near) as nullopt.
std::optional<PathClass> path_level(std::string_view canonical);

}  // namespace gradsync::sim
