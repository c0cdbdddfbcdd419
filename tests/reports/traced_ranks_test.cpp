// traced_ranks_test.cpp: which ranks the trace and events.csv hold past sixteen GPUs
// (core/trace_ranks.hpp), and the out-of-memory line's decimals (reports/report.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/json_text.hpp"
#include "core/trace_ranks.hpp"
#include "reports/chrome_trace.hpp"
#include "reports/csv.hpp"
#include "reports/report.hpp"
#include "writers_test_util.hpp"

namespace gradsync::reports {
namespace {

using json = nlohmann::ordered_json;
using test::event;

// wide_result: DDP on `gpus` GPUs, one iteration; every rank's backward takes 1 ms, rank `slow`'s 3.
StrategyResult wide_result(int gpus, int slow) {
  StrategyResult r;
  r.strategy = Strategy::kDDP;
  r.gpus = r.replicas = gpus;
  IterationMetrics m;
  m.iteration = 1;
  r.iterations.push_back(m);
  for (int g = 0; g < gpus; ++g) {
    r.trace.add(event(g, Stream::kCompute, "bwd:l0", 0, g == slow ? 3e-3 : 1e-3));
    r.trace.add(event(g, Stream::kComm, "allreduce:bucket0", 1e-3, 2e-3, 4096, 0));
  }
  return r;
}

TEST(TracedRanks, EveryRankUpToSixteenGpus) {
  const std::vector<int> all = traced_ranks(wide_result(16, 3), 8, {});
  EXPECT_EQ(all.size(), 16u);
}

TEST(TracedRanks, PastSixteenNodeZeroFirstGpuOfEachNodeAndTheSlowest) {
  const StrategyResult r = wide_result(32, 13);
  EXPECT_EQ(traced_ranks(r, 8, {}), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 13, 16, 24}));
  TraceOptions extra;
  extra.extra = {30, 31, 99};  // 99 is not a GPU of the run
  EXPECT_EQ(traced_ranks(r, 8, extra), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 13, 16, 24, 30, 31}));
  TraceOptions all;
  all.all = true;
  EXPECT_EQ(traced_ranks(r, 8, all).size(), 32u);
  EXPECT_EQ(slowest_ranks(r), (std::vector<int>{0, 13})) << "backward: rank 13; the allreduce: a tie, rank 0";
}

TEST(TracedRanks, TheTraceAndEventsCsvHoldOnlyThem) {
  const StrategyResult r = wide_result(32, 13);
  std::string csv, trace;
  write_events_csv({r}, {{0, 13}}, [&](std::string_view s) { csv += s; });
  write_chrome_trace(r, "t", {0, 13}, [&](std::string_view s) { trace += s; });
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 4) << "the header and 2 events for each of 2 ranks";
  const json doc = json::parse(trace);
  std::set<int> pids;
  for (const auto& e : doc["traceEvents"]) pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{0, 13}));
  // Streamed, the trace is byte for byte the document json_text writes whole.
  std::string streamed;
  write_chrome_trace(r, "t", {}, [&](std::string_view s) { streamed += s; });
  EXPECT_EQ(streamed, json_text(json::parse(streamed)) + "\n");
}

// The out-of-memory line reads the need above what the GPU has: 2 decimals where they part them,
// more where a need is just past it, and the bytes where 6 decimals do not.
TEST(OomText, ShowsAsManyDecimalsAsPartNeedFromCapacity) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  const auto text = [](double need, double have) {
    StrategyResult r;
    r.strategy = Strategy::kDDP;
    r.per_gpu.push_back({.rank = 0, .peak_memory_bytes = need, .capacity_bytes = have, .oom = true});
    return oom_text(r);
  };
  EXPECT_EQ(text(115.59 * kGiB, 32 * kGiB), "ddp does not fit GPU0's memory: it needs 115.59 GiB of 32.00 GiB");
  EXPECT_EQ(text(80.001 * kGiB, 80 * kGiB), "ddp does not fit GPU0's memory: it needs 80.001 GiB of 80.000 GiB");
  EXPECT_EQ(text(80 * kGiB + 512, 80 * kGiB),
            "ddp does not fit GPU0's memory: it needs 80.000000 GiB of 80.000000 GiB (512 bytes over)");
}

}  // namespace
}  // namespace gradsync::reports
