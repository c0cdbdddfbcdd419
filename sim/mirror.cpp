// mirror.cpp: which DDP ranks stand for which (see mirror.hpp).
#include "sim/mirror.hpp"

#include <algorithm>
#include <map>

#include "sim/nccl_options.hpp"
#include "topologies/channels.hpp"
#include "topologies/routes.hpp"

namespace gradsync::sim {

std::vector<std::vector<int>> mirror_plan(const ResolvedScenario& r, Strategy strategy, bool fluid,
                                          std::shared_ptr<const Channels>* channels) {
  if (strategy != Strategy::kDDP || !fluid || r.calibration || r.fidelity == Fidelity::kStep) return {};
  if (r.hosts.size() < 2) return {};
  std::map<int, std::vector<int>> by_host;  // each machine's ranks, in rank order
  const GpuSpec* spec = r.topo.vertex(r.topo.gpu(0)).gpu;
  for (int rank = 0; rank < r.gpus; ++rank) {
    if (r.topo.vertex(r.topo.gpu(rank)).gpu != spec) return {};
    by_host[r.topo.host_of(rank)].push_back(rank);
  }
  // The standing ranks are the second machine's. The first and the last are simulated for
  // themselves: in DDP's broadcasts the first holds the root (it only sends) and the last the
  // rings' ends (the channels run through the machines in order; their last members only
  // receive), whose traffic is not their peers'. Three machines leave nothing to mirror.
  if (by_host.size() < 4) return {};
  const std::vector<int>& first = std::next(by_host.begin())->second;
  for (const auto& [host, ranks] : by_host)
    if (ranks.size() != first.size()) return {};
  if (r.fidelity == Fidelity::kAuto) {
    const Routes routes(r.topo);
    auto found = std::make_shared<const Channels>(
        build_channels(r.topo, routes, first_ranks(r.gpus), Transports(r.topo, routes, r.nccl.transport, r.gpus)));
    if (channels) *channels = found;
    Channels ch = *found;
    limit_nvls_channels(ch, r.nccl.nvls_min_channels, r.nccl.nvls_max_channels);
    limit_channels(ch, r.nccl.min_channels, r.nccl.max_channels, nvls_channel_floor(ch, r.nccl.request));
    const double fewest = static_cast<double>(r.gpus - 1) * static_cast<double>(ch.rings.size());
    if (!(fewest > kAutoAggregateFlows)) return {};
  }
  std::vector<std::vector<int>> mirrors(static_cast<std::size_t>(r.gpus));
  for (auto it = std::next(by_host.begin(), 2); it != std::prev(by_host.end()); ++it)
    for (std::size_t local = 0; local < first.size(); ++local)
      mirrors[static_cast<std::size_t>(first[local])].push_back(it->second[local]);
  return mirrors;
}

void mirror_events(Trace& trace, const std::vector<std::vector<int>>& mirrors, const std::vector<int>& ranks) {
  if (mirrors.empty()) return;
  // Per standing rank, the ranks it stands for that are wanted.
  std::vector<std::vector<int>> wanted(mirrors.size());
  std::size_t per_round = 0;
  for (std::size_t rank = 0; rank < mirrors.size(); ++rank)
    for (int m : mirrors[rank])
      if (std::binary_search(ranks.begin(), ranks.end(), m)) {
        wanted[rank].push_back(m);
        ++per_round;
      }
  if (per_round == 0) return;
  std::size_t extra = 0;
  for (const TraceEvent& e : trace.events) extra += wanted[static_cast<std::size_t>(e.rank)].size();
  std::vector<TraceEvent> all;
  all.reserve(trace.events.size() + extra);
  for (TraceEvent& e : trace.events) {
    const auto& others = wanted[static_cast<std::size_t>(e.rank)];
    all.push_back(std::move(e));
    for (int m : others) {
      all.push_back(all.back());
      all.back().rank = m;
    }
  }
  trace.events = std::move(all);
}

}  // namespace gradsync::sim
