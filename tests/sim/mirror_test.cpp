// mirror_test.cpp: DDP runs of alike machines simulated one rank of each kind (sim/mirror.hpp)
// against every rank simulated: the same result, field for field and event for event.
#include "sim/mirror.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "sim/resolved.hpp"
#include "sim/simulate.hpp"
#include "topologies/generators.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {
namespace {

// A generated fat-tree of `nodes` machines, written for the scenario to name; `edit` changes the
// DOT text first.
struct Cluster {
  std::filesystem::path path;
  Cluster(int nodes, const char* node, const std::function<void(std::string&)>& edit = {}) {
    path = std::filesystem::temp_directory_path() / ("gradsync-mirror-" + std::string(node) + "-" +
                                                     std::to_string(nodes) + "-" + std::to_string(::getpid()) + ".dot");
    std::string dot = write_topology_dot(generate_fat_tree({.nodes = nodes, .node = node}));
    if (edit) edit(dot);
    std::ofstream(path) << dot;
  }
  ~Cluster() { std::filesystem::remove(path); }
};

// on: the default scenario on `c` at aggregate fidelity, `iterations` of them, the first not
// counted.
Scenario on(const Cluster& c, int iterations) {
  Scenario s;
  s.topology = c.path.string();
  s.fidelity = "aggregate";
  s.iterations = iterations;
  s.warmup = 1;
  return s;
}

// both: the scenario's DDP run mirrored (if it can be) and with every rank simulated, each in a
// child process (a run that falls back simulates every rank in the process that asked).
std::pair<StrategyResult, StrategyResult> both(const Scenario& s) {
  const auto in_child = [&s](bool mirror) {
    ChildProcess child([&s, mirror] { return result_bytes(simulate(s, Strategy::kDDP, true, nullptr, mirror), true); },
                       "the test's simulation");
    return result_from_bytes(child.finish());
  };
  StrategyResult mirrored = in_child(true);
  StrategyResult every = in_child(false);
  return {std::move(mirrored), std::move(every)};
}

// record: the result as a child hands it over, its events in one order (rank, then time): a
// mirrored run records each mirror's events right after its standing rank's.
std::string record(StrategyResult r) {
  auto& ev = r.trace.events;
  std::stable_sort(ev.begin(), ev.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return std::tie(a.rank, a.start_s, a.end_s, a.stream, a.name) <
           std::tie(b.rank, b.start_s, b.end_s, b.stream, b.name);
  });
  return result_bytes(r, true);
}

// The second machine's ranks stand for the third's; the first machine (rank 0, the broadcasts'
// root) and the last (the rings' ends) are simulated for themselves.
TEST(Mirror, PlanStandsEachRankOfTheSecondMachineForItsPlaceOnTheOthers) {
  const Cluster c(4, "dgx-h100");
  Scenario s;
  s.topology = c.path.string();
  s.fidelity = "aggregate";
  const ResolvedScenario r = resolve(s);
  const auto m = mirror_plan(r, Strategy::kDDP, true);
  ASSERT_EQ(m.size(), 32u);
  for (int local = 0; local < 8; ++local) EXPECT_EQ(m[8 + local], (std::vector<int>{16 + local}));
  for (int rank = 0; rank < 32; ++rank) {
    if (rank < 8 || rank >= 16) {
      EXPECT_TRUE(m[rank].empty()) << rank;
    }
  }
  // Three machines: nothing to mirror.
  const Cluster three(3, "dgx-h100");
  s.topology = three.path.string();
  EXPECT_TRUE(mirror_plan(resolve(s), Strategy::kDDP, true).empty());
}

TEST(Mirror, NoPlanWhereRanksNeedNotBeAlikeOrCallsAreNotSolved) {
  const Cluster c(4, "dgx-h100");
  Scenario s;
  s.topology = c.path.string();
  s.fidelity = "aggregate";
  EXPECT_TRUE(mirror_plan(resolve(s), Strategy::kDP, true).empty());    // one process
  EXPECT_TRUE(mirror_plan(resolve(s), Strategy::kDDP, false).empty());  // calls run as flows
  s.gpus = 8;
  EXPECT_TRUE(mirror_plan(resolve(s), Strategy::kDDP, true).empty());  // one machine
  s.gpus = 12;
  EXPECT_TRUE(mirror_plan(resolve(s), Strategy::kDDP, true).empty());  // 8 and 4 ranks
  s.gpus = 0;
  s.fidelity = "step";
  EXPECT_TRUE(mirror_plan(resolve(s), Strategy::kDDP, true).empty());  // every call as flows
  // auto at 32 GPUs: a broadcast's (k - 1) x channels flows stay below kAutoAggregateFlows, so
  // some call keeps step fidelity.
  s.fidelity = "auto";
  EXPECT_TRUE(mirror_plan(resolve(s), Strategy::kDDP, true).empty());
}

// GPT-2 on four DGX H100 machines: NVLSTree allreduces, the buffers' broadcasts, copies of each
// batch from host memory; three iterations (the first's single bucket, the rebuild). Three machines
// are simulated: the first holds rank 0, the broadcasts' root, and the last the rings' ends, whose
// DRAM traffic is not their peers' (with NCCL's LL128 across nodes, from 2026-12-02, a broadcast is
// long enough to overlap compute).
TEST(Mirror, MirroredRunEqualsEveryRankSimulated) {
  const Cluster c(4, "dgx-h100");
  const Scenario s = on(c, 3);
  ASSERT_FALSE(mirror_plan(resolve(s), Strategy::kDDP, true).empty());
  const auto [mirrored, every] = both(s);
  EXPECT_EQ(mirrored.fidelity.simulated_ranks, 24);
  EXPECT_EQ(every.fidelity.simulated_ranks, 32);
  ASSERT_EQ(mirrored.trace.events.size(), every.trace.events.size());
  EXPECT_GT(every.trace.events.size(), 32u * 1000);
  EXPECT_EQ(mirrored.per_gpu.size(), 32u);
  StrategyResult same = mirrored;
  same.fidelity.simulated_ranks = every.fidelity.simulated_ranks;
  EXPECT_EQ(record(same), record(every));
}

// Tree allreduces over four DGX A100 machines (NCCL_ALGO=tree): members move different bytes by
// their places in the trees; where that would slow a rank's compute otherwise than its standing
// rank's, the run falls back to every rank. Either way the result is every rank's.
TEST(Mirror, TreesGiveEveryRanksResult) {
  const Cluster c(4, "dgx-a100");
  Scenario s = on(c, 3);
  s.nccl_algo = "tree";
  auto [mirrored, every] = both(s);
  mirrored.fidelity.simulated_ranks = every.fidelity.simulated_ranks;
  EXPECT_EQ(record(mirrored), record(every));
}

// A machine whose first GPU hangs off a slower PCIe link copies its batch later than the other
// machines': the mirrored run notices (MirrorBroken) and every rank is simulated instead. The link
// is 1 GB/s, below what a pageable copy reaches, so that the copy itself differs (at 8 GB/s the
// copies tied, and only NCCL 2.27's choice of rings through that link showed the machine apart).
TEST(Mirror, AMachineUnlikeTheFirstFallsBackToEveryRank) {
  const Cluster c(4, "dgx-h100", [](std::string& dot) {
    const std::string link = "\"node1.pcie0\" -- \"node1.gpu0\" [type=\"pcie\", bw=\"63GBps\"";
    const auto at = dot.find(link);
    ASSERT_NE(at, std::string::npos);
    dot.replace(at, link.size(), "\"node1.pcie0\" -- \"node1.gpu0\" [type=\"pcie\", bw=\"1GBps\"");
  });
  const Scenario s = on(c, 2);
  ASSERT_FALSE(mirror_plan(resolve(s), Strategy::kDDP, true).empty());  // the same GPUs: planned
  const auto [mirrored, every] = both(s);
  EXPECT_EQ(mirrored.fidelity.simulated_ranks, 32);  // fell back
  EXPECT_EQ(record(mirrored), record(every));
  // simulate_isolated (what `simulate` and `compare` run) mirrors in its child and, told that
  // the mirrors broke, simulates every rank in a second child: the same result.
  const StrategyResult isolated = simulate_isolated(s, Strategy::kDDP);
  EXPECT_EQ(isolated.fidelity.simulated_ranks, 32);
  EXPECT_EQ(record(isolated), record(every));
}

// simulate_isolated on alike machines: the mirrored run in its child, the same as every rank.
TEST(Mirror, IsolatedSimulationMirrorsInItsChild) {
  const Cluster c(4, "dgx-h100");
  const Scenario s = on(c, 2);
  StrategyResult isolated = simulate_isolated(s, Strategy::kDDP);
  const auto [mirrored, every] = both(s);
  EXPECT_EQ(isolated.fidelity.simulated_ranks, 24);
  EXPECT_EQ(record(isolated), record(mirrored));
  isolated.fidelity.simulated_ranks = every.fidelity.simulated_ranks;
  EXPECT_EQ(record(isolated), record(every));
}

}  // namespace
}  // namespace gradsync::sim
