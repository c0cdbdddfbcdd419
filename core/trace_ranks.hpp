// trace_ranks.hpp: which ranks' events a run's trace files keep (issue "Scale II": outputs sized
// to what a person opens), and the --explain phase of an event, which decides the slowest ranks.
//
//   const std::vector<int> keep = traced_ranks(result, /*per_node=*/8, {});   // 0-7, 8, 16, ..., slowest
//   keep_ranks(result, keep);                                                  // drop the others' events
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace gradsync {

// TraceOptions: what the trace, events.csv and the report's timelines hold, and the trace's format.
struct TraceOptions {
  bool all = false;        // --trace-ranks all: every rank
  std::vector<int> extra;  // --trace-ranks LIST: these ranks besides the default ones
  bool gzip = false;       // --trace-format json.gz
};

// kTracedAll: up to this many GPUs, every rank is traced by default.
inline constexpr int kTracedAll = 16;

// phase_of: the --explain phase an event belongs to ("forward", "allreduce buckets", "dp:gather").
std::string phase_of(const std::string& event_name);

// slowest_ranks: in the last iteration, the rank with the most time in each --explain phase (of
// equal times the lowest; sorted, each once).
std::vector<int> slowest_ranks(const StrategyResult& r);

// traced_ranks: the ranks (sorted) whose events the trace and events.csv hold: every rank up to
// kTracedAll GPUs; beyond, node 0's ranks, the first rank of every other node (`per_node` ranks a
// node, torchrun's order; 0 when nodes differ: the first kTracedAll), and the slowest rank of each
// phase; plus options.extra, or every rank with options.all.
std::vector<int> traced_ranks(const StrategyResult& r, int per_node, const TraceOptions& options);

// keep_ranks drops the trace events of every rank not in `ranks` (sorted).
void keep_ranks(StrategyResult& r, const std::vector<int>& ranks);

}  // namespace gradsync
