// trace_ranks.cpp: the traced ranks and the --explain phases.
#include "core/trace_ranks.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace gradsync {

std::string phase_of(const std::string& n) {
  if (n.rfind("fwd:", 0) == 0) return "forward";
  if (n.rfind("bwd:", 0) == 0) return "backward";
  if (n.rfind("allreduce:bucket", 0) == 0) return "allreduce buckets";
  if (n.rfind("copy_in:", 0) == 0 || n.rfind("copy_out:", 0) == 0 || n.rfind("div:bucket", 0) == 0)
    return "bucket copies";
  if (n.rfind("slowdown:", 0) == 0) return "overlap slowdown";
  if (n.rfind("call:", 0) == 0) return "collective calls";
  if (n.rfind("host:", 0) == 0) return "host work";
  if (n.rfind("dp:", 0) == 0 || n.rfind("h2d:", 0) == 0 || n == "optimizer" || n.rfind("broadcast:", 0) == 0) return n;
  if (n.rfind("loss", 0) == 0) return "loss";
  return "other";
}

std::vector<int> slowest_ranks(const StrategyResult& r) {
  std::set<int> out;
  if (r.iterations.empty()) return {};
  const int last = r.iterations.back().iteration;
  std::map<std::string, std::map<int, double>> busy;  // phase -> rank -> seconds
  for (const TraceEvent& e : r.trace.events)
    if (e.iteration == last && e.stream != Stream::kHost) busy[phase_of(e.name)][e.rank] += e.duration_s();
  for (const auto& [phase, by_rank] : busy) {
    const auto slowest = std::max_element(by_rank.begin(), by_rank.end(), [](const auto& a, const auto& b) {
      return a.second < b.second || (a.second == b.second && a.first > b.first);
    });
    out.insert(slowest->first);
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
  std::erase_if(r.trace.events,
                [&](const TraceEvent& e) { return !std::binary_search(ranks.begin(), ranks.end(), e.rank); });
}

}  // namespace gradsync
