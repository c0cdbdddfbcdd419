// nccl_info.cpp: the channels and hop transports of a communicator, as NCCL_DEBUG=INFO prints them.
#include "sim/nccl_info.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/shm_duplex.hpp"
#include "topologies/routes.hpp"
#include "topologies/transports/transport.hpp"

namespace gradsync::sim {

NcclInfo nccl_info(const Topology& topo, int gpus, const NcclSettings& nccl, Collective op) {
  const Routes routes(topo);
  const Transports transports(topo, routes, nccl.transport, gpus);
  Channels ch = build_channels(topo, routes, first_ranks(gpus), transports);
  NcclInfo i;
  limit_nvls_channels(ch, nccl.nvls_min_channels, nccl.nvls_max_channels);
  limit_channels(ch, nccl.min_channels, nccl.max_channels, nvls_channel_floor(ch, nccl.request));
  i.coll_channels = launched_channels(ch);
  i.gpus = gpus;
  i.nodes = ch.nodes();
  i.channels = static_cast<int>(ch.rings.size());
  i.searched = ch.searched > 0 ? ch.searched : i.channels;
  i.channel_bw_Bps = ch.channel_bw_Bps;
  i.fallback = ch.fallback;
  if (i.nodes > 1) {
    i.tree_bw_intra_Bps = ch.tree_bw_intra_Bps;
    i.tree_bw_inter_Bps = ch.tree_bw_inter_Bps;
  }
  if (ch.nvls && nccl.request.nvls) {
    i.nvls_channels = ch.nvls->channels;
    i.nvls_blocks = ch.nvls->launched;
    i.nvls_bw_intra_Bps = ch.nvls->bw_intra_Bps;
    i.nvls_bw_inter_Bps = ch.nvls->bw_inter_Bps;
  }
  std::map<std::pair<std::string, std::string>, int> count;
  for (const RingChannel& rc : ch.rings) {
    i.rings.push_back(rc.order);
    for (const Hop& h : rc.hops) ++count[{h.name, std::string(to_string(h.route.path_class))}];
  }
  for (const auto& [key, n] : count) i.hops.push_back({key.first, key.second, n});
  if (const double cap = shm_duplex_cap_Bps(ch, op, Algorithm::kRing, 0); std::isfinite(cap)) i.shm_duplex_Bps = cap;
  std::stable_sort(i.hops.begin(), i.hops.end(),
                   [](const HopClass& a, const HopClass& b) { return a.count > b.count; });
  return i;
}

std::vector<std::string> nccl_info_lines(const NcclInfo& i) {
  std::vector<std::string> out;
  if (i.fallback) out.push_back("NCCL INFO Could not find a path for pattern 4, falling back to simple order");
  // Channel c runs ring c mod rings (connect.cc copies the rings up to the launched channels).
  std::string runs;
  if (i.channels > 0 && i.coll_channels > i.channels) {
    const int per = i.coll_channels / i.channels;
    runs = i.coll_channels % i.channels == 0 ? fmt::format(" (each ring run by {} channels)", per)
                                             : fmt::format(" (each ring run by {} or {} channels)", per, per + 1);
  }
  std::string graphs = fmt::format("NCCL INFO {} coll channels: ring {} x {:.1f} GB/s{}", i.coll_channels, i.channels,
                                   i.channel_bw_Bps / 1e9, runs);
  if (i.nodes > 1) {
    graphs += fmt::format(", tree {} x {:.1f}/{:.1f} GB/s (intra/inter)", i.channels, i.tree_bw_intra_Bps / 1e9,
                          i.tree_bw_inter_Bps / 1e9);
  }
  if (i.nvls_channels > 0) {
    graphs += fmt::format(", NVLS {} x {:.1f}/{:.1f} GB/s (intra/inter) in {} blocks", i.nvls_channels,
                          i.nvls_bw_intra_Bps / 1e9, i.nvls_bw_inter_Bps / 1e9, i.nvls_blocks);
  } else {
    graphs += ", no NVLS";
  }
  out.push_back(graphs);
  // NCCL prints every channel; two show the pattern (the rest repeat or rotate them).
  const std::size_t shown = std::min<std::size_t>(i.rings.size(), 2);
  for (std::size_t c = 0; c < shown; ++c) {
    const auto& o = i.rings[c];
    const std::size_t cut = std::min<std::size_t>(o.size(), 16);
    out.push_back(fmt::format("NCCL INFO Channel {:02}/{:02} : {}{}", c, i.coll_channels,
                              fmt::join(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(cut), " "),
                              cut < o.size() ? fmt::format(" ... ({} GPUs)", o.size()) : ""));
  }
  for (const HopClass& h : i.hops) {
    out.push_back(fmt::format("NCCL INFO ring hops via {} over {}: {}", h.transport, h.path_class, h.count));
  }
  // Fewer rings than the search found: NCCL's tuning still plans with the searched ones, so its
  // protocol switch points stay where they would be, and a size past a switch can take less time
  // than one below it (nccl_model.cpp tune, "The graph's channels").
  if (i.searched > i.channels && !i.fallback) {
    out.push_back(fmt::format(
        "gradsync: {} of the {} rings NCCL's search found run, but NCCL's tuning model plans with {} "
        "(tuning.cc: graphs[a]->nChannels; connect.cc clamps only comm->nChannels), so it keeps LL and LL128 up "
        "to the sizes {} channels would: past a switch a larger size can take less time, as with real NCCL",
        i.channels, i.searched, i.searched, i.searched));
  }
  if (i.shm_duplex_Bps > 0) {
    out.push_back(
        fmt::format("gradsync: a GPU that sends and receives through host memory (SHM) moves at most "
                    "{:.1f} GB/s each way, all channels together (GPUs before Ada and Hopper; README: "
                    "NCCL constants)",
                    i.shm_duplex_Bps / 1e9));
  }
  return out;
}

nlohmann::json nccl_info_json(const NcclInfo& i) {
  nlohmann::json j;
  j["channels"] = i.channels;
  j["coll_channels"] = i.coll_channels;
  j["channel_GBps"] = i.channel_bw_Bps / 1e9;
  if (i.nodes > 1) j["tree_GBps"] = {{"intra", i.tree_bw_intra_Bps / 1e9}, {"inter", i.tree_bw_inter_Bps / 1e9}};
  if (i.nvls_channels > 0) {
    j["nvls"] = {{"channels", i.nvls_channels},
                 {"blocks", i.nvls_blocks},
                 {"intra_GBps", i.nvls_bw_intra_Bps / 1e9},
                 {"inter_GBps", i.nvls_bw_inter_Bps / 1e9}};
  }
  j["rings"] = i.rings;
  if (i.shm_duplex_Bps > 0) j["shm_duplex_GBps"] = i.shm_duplex_Bps / 1e9;
  auto& hops = j["hops"] = nlohmann::json::array();
  for (const HopClass& h : i.hops)
    hops.push_back({{"transport", h.transport}, {"path_class", h.path_class}, {"count", h.count}});
  return j;
}

}  // namespace gradsync::sim
