// nccl_info.hpp: what NCCL_DEBUG=INFO tells about a communicator: its channels (rings, trees,
// NVLS) and the transport of every hop, grouped by transport and path class, for `collectives`
// to print above its table.
//
//   const NcclInfo i = nccl_info(load_topology("dgx-a100"), 8, {});
//   i.hops[0].transport == "P2P/CUMEM/read";  i.hops[0].path_class == "NVL";  i.hops[0].count == 96;
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend.hpp"
#include "sim/nccl_options.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {

// HopClass: the ring hops that one transport carries over one path class.
struct HopClass {
  std::string transport;   // NCCL's name: "P2P/CUMEM", "SHM/direct/direct", "NET/IB/GDRDMA", ...
  std::string path_class;  // NVL, NVB, PIX, PXB, PHB, SYS, NET
  int count = 0;           // ring hops of all channels
};

struct NcclInfo {
  int gpus = 0;
  int nodes = 0;
  int channels = 0;  // ring channels (after NCCL_MIN/MAX_NCHANNELS)
  // coll_channels: NCCL's comm->nChannels, what NCCL_DEBUG=INFO counts: the rings the search
  // found, doubled (connect.cc: "Duplicate channels"), at most 64, then NCCL_MAX_NCHANNELS and
  // NCCL_MIN_NCHANNELS.
  int coll_channels = 0;
  // searched: the rings NCCL's search found, which its tuning model plans with even where
  // NCCL_MAX_NCHANNELS leaves fewer running (Channels::searched); equal to `channels` otherwise.
  int searched = 0;
  double channel_bw_Bps = 0;                            // each ring channel's speed
  bool fallback = false;                                // no ring fit: NCCL's one channel at 0.1 GB/s
  double tree_bw_intra_Bps = 0, tree_bw_inter_Bps = 0;  // across nodes only
  int nvls_channels = 0;                                // 0: no NVLS graph
  int nvls_blocks = 0;  // an NVLS kernel's thread blocks (nvls.cc NVLS_NCHANNELS, NCCL_MIN/MAX_CTAS)
  double nvls_bw_intra_Bps = 0, nvls_bw_inter_Bps = 0;
  std::vector<std::vector<int>> rings;  // each channel's GPU order
  std::vector<HopClass> hops;           // most hops first
  // shm_duplex_Bps: where a GPU before Ada/Hopper both sends and receives through host memory in
  // the ring of the op asked about, what it moves each way (kShmDuplexBps); 0 otherwise.
  double shm_duplex_Bps = 0;
};

// nccl_info: the channels NCCL would build over the first `gpus` GPUs of `topo` with `nccl`.
// ConfigError when no ring exists.
// shm_duplex_Bps is set where SHM's duplex limit binds `op` as a ring (sim/shm_duplex.hpp).
NcclInfo nccl_info(const Topology& topo, int gpus, const NcclSettings& nccl, Collective op = Collective::kAllreduce);

// nccl_info_lines: the info as comment lines (without "# "), NCCL_DEBUG=INFO's words.
std::vector<std::string> nccl_info_lines(const NcclInfo& info);

nlohmann::json nccl_info_json(const NcclInfo& info);

}  // namespace gradsync::sim
