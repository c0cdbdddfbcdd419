// metrics.cpp: per-iteration compute, communication and overlap from a trace.
#include "core/metrics.hpp"

#include "core/trace_ranks.hpp"

#include <algorithm>
#include <map>

namespace gradsync {
namespace {

using Intervals = std::vector<std::pair<double, double>>;

// merged sorts and merges intervals into disjoint ones.
Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& [s, e] : v) {
    if (e <= s) continue;
    if (!out.empty() && s <= out.back().second) {
      out.back().second = std::max(out.back().second, e);
    } else {
      out.emplace_back(s, e);
    }
  }
  return out;
}

// clipped keeps the parts of intervals inside [lo, hi).
Intervals clipped(const Intervals& v, double lo, double hi) {
  Intervals out;
  for (const auto& [s, e] : v) {
    const double a = std::max(s, lo);
    const double b = std::min(e, hi);
    if (b > a) out.emplace_back(a, b);
  }
  return out;
}

}  // namespace

double union_length(Intervals intervals) {
  double total = 0;
  for (const auto& [s, e] : merged(std::move(intervals))) total += e - s;
  return total;
}

double intersection_length(Intervals a, Intervals b) {
  const Intervals x = merged(std::move(a));
  const Intervals y = merged(std::move(b));
  double total = 0;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < x.size() && j < y.size()) {
    const double lo = std::max(x[i].first, y[j].first);
    const double hi = std::min(x[i].second, y[j].second);
    if (hi > lo) total += hi - lo;
    if (x[i].second < y[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

std::vector<IterationMetrics> iteration_metrics(const Trace& trace, int rank) {
  std::map<int, IterationMetrics> by_iteration;
  Intervals compute;
  Intervals comm;
  for (const TraceEvent& e : trace.events) {
    if (e.rank != rank) continue;
    if (e.stream == Stream::kHost && e.name == iteration_event(e.iteration)) {
      IterationMetrics& m = by_iteration[e.iteration];
      m.iteration = e.iteration;
      m.start_s = e.start_s;
      m.end_s = e.end_s;
      m.time_s = e.end_s - e.start_s;
    } else if ((e.stream == Stream::kCompute && !is_host_copy_event(e.name)) ||
               (e.stream == Stream::kComm && phase_of(e.name) == "comm hook kernels")) {
      // A comm hook's kernels (PowerSGD's products, the fp16 hook's decompress) are compute, on
      // whichever stream they run: `comm` counts copies and collectives only, as real mode does.
      compute.emplace_back(e.start_s, e.end_s);
    } else if ((e.stream == Stream::kComm || e.stream == Stream::kCopy || e.stream == Stream::kCompute) &&
               !is_wait_event(e.name) && !is_host_copy_event(e.name)) {
      // A collective's wait for its last member is no communication (the phase "waiting for peers"),
      // nor is the batch's copy from host memory (h2d:input), which loads data and which no bucket
      // or collective setting changes: it is neither compute nor communication (--explain shows it).
      comm.emplace_back(e.start_s, e.end_s);
    }
  }
  std::vector<IterationMetrics> out;
  for (auto& [it, m] : by_iteration) {
    const Intervals c = clipped(compute, m.start_s, m.end_s);
    const Intervals n = clipped(comm, m.start_s, m.end_s);
    m.compute_s = union_length(c);
    m.communication_s = union_length(n);
    m.overlap_s = intersection_length(c, n);
    m.exposed_communication_s = m.communication_s - m.overlap_s;
    m.overlap = m.communication_s > 0 ? m.overlap_s / m.communication_s : 0.0;
    out.push_back(m);
  }
  return out;
}

}  // namespace gradsync
