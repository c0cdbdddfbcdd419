// collective_calls_test.cpp: the host's part of each collective call (core/called_group.hpp):
// DDP's collective_call_s per call on each rank's thread, DataParallel's m x kGroupLaunchPerGpuS
// (one NCCL group launching every replica GPU's kernel in turn), and --explain's phase for them.
// One SimGrid engine per process: each test runs in its own process.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>

#include "core/cost_model.hpp"
#include "reports/report.hpp"
#include "sim/nccl_model.hpp"
#include "sim/simulate.hpp"
#include "tests/support/small_scenario.hpp"

namespace gradsync::sim {
namespace {

using testing_support::small_scenario;


// Issuing a collective costs the host its CUDA calls (HostCosts::collective_call_s): one host
// event of that length before each of rank 0's collectives, and --explain's phase "collective
// calls" is their sum (the host makes them one at a time).
TEST(Simulate, EveryCollectiveCallIsAHostEventAndAPhase) {
  const StrategyResult r = simulate(small_scenario("resnet18", "dgx-a100", 4), Strategy::kDDP);
  const int last = r.iterations.back().iteration;
  const double call_s = HostCosts{}.collective_call_s;
  std::map<std::string, int> calls, collectives;  // by collective name
  for (const TraceEvent& e : r.trace.events) {
    if (e.rank != 0 || e.iteration != last) continue;
    if (e.stream == Stream::kHost && e.name.rfind("call:", 0) == 0) {
      ++calls[e.name.substr(std::string_view("call:").size())];
      EXPECT_NEAR(e.duration_s(), call_s, 1e-12) << e.name;
    } else if (e.stream == Stream::kComm) {
      ++collectives[e.name];
    }
  }
  int total = 0;
  for (const auto& [name, n] : calls) {
    EXPECT_EQ(n, collectives[name]) << name;  // every call, and as often as its collective ran
    total += n;
  }
  EXPECT_EQ(calls["allreduce:bucket0"], 1);
  EXPECT_GE(calls.size(), 3u);  // the buckets' allreduces and the buffers' broadcast
  bool shown = false;
  for (const reports::ExplainRow& row : reports::explain(r)) {
    if (row.phase != "collective calls") continue;
    shown = true;
    EXPECT_NEAR(row.time_s, total * call_s, 1e-9);
  }
  EXPECT_TRUE(shown);
}

// DataParallel's one thread issues each collective for all its replicas' GPUs as one NCCL group,
// whose launches run in turn (group.cc doLaunches): each call costs the host m x
// kGroupLaunchPerGpuS (here 4 x 5.5 us, not DDP's collective_call_s).
TEST(Simulate, DataParallelCallsCostOneLaunchPerReplicaGpu) {
  const StrategyResult r = simulate(small_scenario("resnet18", "dgx-a100", 4), Strategy::kDP);
  const int last = r.iterations.back().iteration;
  int calls = 0;
  for (const TraceEvent& e : r.trace.events) {
    if (e.iteration != last || e.stream != Stream::kHost || e.name.rfind("call:", 0) != 0) continue;
    ++calls;
    EXPECT_NEAR(e.duration_s(), 4 * kGroupLaunchPerGpuS, 1e-12) << e.name;
  }
  EXPECT_GE(calls, 2);  // the replicas' broadcast and the gradients' reduce
  EXPECT_NE(4 * kGroupLaunchPerGpuS, HostCosts{}.collective_call_s);
}

}  // namespace
}  // namespace gradsync::sim
