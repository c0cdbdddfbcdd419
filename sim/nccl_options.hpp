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
      transport;  // NCCL_P2P_DISABLE, NCCL_P2P_LEVEL, NCCL_SHM_DISABLE, NCCL_NET_GDR_LEVEL, NCCL_IB_DISABLE
  // The ring and tree channels' bounds (0: unset): NCCL_MIN_NCHANNELS and NCCL_MIN_CTAS, the
  // larger; NCCL_MAX_NCHANNELS and NCCL_MAX_CTAS, the smaller (connect.cc).
  int min_channels = 0;
  int max_channels = 0;
  // NVLS's bounds: NCCL_MIN_CTAS and NCCL_MAX_CTAS only (nvls.cc); 0: unset.
  int nvls_min_channels = 0;
  int nvls_max_channels = 0;
};

// nccl_settings: the scenario's knobs (already checked by the key table).
NcclSettings nccl_settings(const Scenario& s);

// limit_channels: NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS bound the launched channels, the
// searched rings doubled, as connect.cc does after the search (NCCL 2.27 ncclTopoPostset: at most
// `max`, then copies of the first channels up to `min`, at most MAXCHANNELS 64; 0: unset). Fewer
// launched channels than rings keep the first `max` rings (one block each); more blocks than two
// per ring run the same rings, so the rings and their speed stay (Channels::launched counts the
// blocks). A minimum at or below the default changes nothing.
// `floor` (nvls_channel_floor) raises the launched channels after both, as `min` does.
void limit_channels(Channels& c, int min, int max, int floor = 0);

// nvls_channel_floor: NCCL 2.20 to 2.27 raise the rings' channels to NVLS's where NVLS runs
// (connect.cc, after NCCL_MIN/MAX_NCHANNELS: "if (comm->nChannels < comm->nvlsChannels)
// copyChannels"; gone in 2.28.3), so that NCCL_MAX_NCHANNELS=4 on 8 H100s still runs 16 ring
// channels there. `c` after limit_nvls_channels; 0 where it does not apply.
int nvls_channel_floor(const Channels& c, const CollectiveRequest& r);

// limit_nvls_channels: NCCL_MIN_CTAS and NCCL_MAX_CTAS bound NVLS's launched blocks (NCCL 2.27
// nvls.cc ncclNvlsInit: comm->nvlsChannels = max(minCTAs, min(maxCTAs, NVLS_NCHANNELS_SM90 16, or
// Blackwell's 24 and 32)); NCCL_MIN/MAX_NCHANNELS do not. 0: unset. Nothing without an NVLS graph.
void limit_nvls_channels(Channels& c, int min, int max);

// path_level: an NCCL level name (LOC, NVL, ... SYS) as a path class; LOC (no path between two
// GPUs is that near) as nullopt.
std::optional<PathClass> path_level(std::string_view canonical);

}  // namespace gradsync::sim
