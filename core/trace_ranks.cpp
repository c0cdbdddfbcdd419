// trace_ranks.cpp: the traced ranks and the --explain phases.
#include "core/trace_ranks.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

namespace gradsync {

std::string phase_of(const std::string& n) {
  if (n.rfind("fwd:", 0) == 0) return "forward";
  if (n.rfind("bwd:", 0) == 0) return "backward";
  if (n.rfind("allreduce:bucket", 0) == 0) return "allreduce buckets";
  if (n.rfind("copy_in:", 0) == 0 || n.rfind("copy_out:", 0) == 0 || n.rfind("div:bucket", 0) == 0)
    return "bucket copies";
  if (n.rfind("slowdown:", 0) == 0) return "overlap slowdown";
  if (n.rfind("wait:", 0) == 0) return "waiting for peers";
  if (n.rfind("call:", 0) == 0) return "collective calls";
  if (n.rfind("host:", 0) == 0) return "host work";
  if (n.rfind("dp:", 0) == 0 || n.rfind("h2d:", 0) == 0 || n == "optimizer" || n.rfind("broadcast:", 0) == 0) return n;
  if (n.rfind("loss", 0) == 0) return "loss";
  if (n.rfind("grad_scaler:", 0) == 0) return "grad scaler";       // core/grad_scaler.hpp
  if (n.rfind("clip_grad_norm", 0) == 0) return "clip_grad_norm";  // the norm and the scaling
  // A comm hook's own steps on a bucket (core/comm_hook.cpp): its collectives ("allreduce_p:bucket3",
  // "allgather_qparams:bucket3") and its kernels ("compress:bucket3", "powersgd:compute_q:bucket3").
  if (const auto at = n.rfind(":bucket");
      at != std::string::npos && at + 7 < n.size() && n.find_first_not_of("0123456789", at + 7) == std::string::npos)
    return n.rfind("allreduce", 0) == 0 || n.rfind("allgather", 0) == 0 ? "comm hook collectives" : "comm hook kernels";
  return "other";
}

std::vector<int> slowest_ranks(const StrategyResult& r) {
  if (r.iterations.empty()) return {};
  const int last = r.iterations.back().iteration;
  // Each distinct event name's phase found once (a 1,024-GPU iteration has 600,000 events and
  // a few hundred names); time per phase and rank in dense arrays.
  int ranks = r.gpus;
  for (const TraceEvent& e : r.trace.events) ranks = std::max(ranks, e.rank + 1);
  std::map<std::string, std::size_t> phases;                   // phase -> its index, in name order
  std::unordered_map<std::string_view, std::size_t> phase_at;  // event name -> phase index
  std::vector<std::vector<double>> busy;                       // phase index -> rank -> seconds
  std::vector<std::vector<char>> seen;                         // phase index -> rank -> has an event
  for (const TraceEvent& e : r.trace.events) {
    if (e.iteration != last || e.stream == Stream::kHost) continue;
    auto at = phase_at.find(e.name);
    if (at == phase_at.end()) {
      const auto [p, added] = phases.try_emplace(phase_of(e.name), busy.size());
      if (added) {
        busy.emplace_back(static_cast<std::size_t>(ranks), 0.0);
        seen.emplace_back(static_cast<std::size_t>(ranks), 0);
      }
      at = phase_at.emplace(e.name, p->second).first;
    }
    busy[at->second][static_cast<std::size_t>(e.rank)] += e.duration_s();
    seen[at->second][static_cast<std::size_t>(e.rank)] = 1;
  }
  std::set<int> out;
  for (const auto& [phase, i] : phases) {
    // The rank with the most time in the phase; of equal times the lowest.
    int slowest = -1;
    for (int g = 0; g < ranks; ++g) {
      const auto u = static_cast<std::size_t>(g);
      if (seen[i][u] && (slowest < 0 || busy[i][u] > busy[i][static_cast<std::size_t>(slowest)])) slowest = g;
    }
    out.insert(slowest);
  }
  return {out.begin(), out.end()};
}

std::vector<int> traced_ranks(const StrategyResult& r, int per_node, const TraceOptions& o) {
  std::set<int> kept;
  for (int g = 0; g < r.gpus; ++g) {
    const bool by_default = r.gpus <= kTracedAll ? true
                            : per_node > 0       ? (g < per_node || g % per_node == 0)
                                                 : g < kTracedAll;
    if (o.all || by_default) kept.insert(g);
  }
  for (int g : o.extra)
    if (g >= 0 && g < r.gpus) kept.insert(g);
  if (r.gpus > kTracedAll && !o.all)
    for (int g : slowest_ranks(r)) kept.insert(g);
  return {kept.begin(), kept.end()};
}

void keep_ranks(StrategyResult& r, const std::vector<int>& ranks) {
  std::vector<char> kept;
  for (int g : ranks) {
    if (g < 0) continue;
    if (static_cast<std::size_t>(g) >= kept.size()) kept.resize(static_cast<std::size_t>(g) + 1, 0);
    kept[static_cast<std::size_t>(g)] = 1;
  }
  std::erase_if(r.trace.events, [&](const TraceEvent& e) {
    return e.rank < 0 || static_cast<std::size_t>(e.rank) >= kept.size() || !kept[static_cast<std::size_t>(e.rank)];
  });
}

}  // namespace gradsync
