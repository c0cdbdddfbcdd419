// fidelity_test.cpp: aggregate fidelity against step fidelity. Each simulation runs in a forked
// child (one SimGrid engine per process).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "sim/simulate.hpp"
#include "tests/support/in_child.hpp"
#include "topologies/generators.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {
namespace {

using testing_support::in_child;

std::vector<double> collective_times(CollectiveSweep sw, const std::string& fidelity) {
  sw.fidelity = fidelity;
  return in_child([sw] {
    std::vector<double> t;
    for (const CollectivePoint& p : simulate_collectives(sw)) t.push_back(p.time_s);
    return t;
  });
}

// A rail-optimized fat-tree of `nodes` DGX H100s written to a temporary file: a ring's hops
// between nodes stay on their rail's leaf (no spine), so nothing contends but the two channels
// that share each NIC, equally at both fidelities.
std::string rail_cluster(int nodes) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gradsync-fidelity-rail-" + std::to_string(nodes) + "-" + std::to_string(::getpid()) + ".dot");
  std::ofstream(path) << write_topology_dot(
      generate_fat_tree({.nodes = nodes, .node = "dgx-h100", .rail_optimized = true}));
  return path.string();
}

void expect_rings_agree(const std::string& topology, int gpus, Collective op, int max_channels = 2,
                        std::int64_t min_bytes = 1 << 20) {
  CollectiveSweep sw;
  sw.topology = topology;
  sw.gpus = gpus;
  sw.op = op;
  sw.nccl.request = CollectiveRequest::only(Algorithm::kRing, Protocol::kSimple);
  sw.min_bytes = min_bytes;
  sw.max_bytes = 64 * min_bytes;
  sw.step_factor = 64;
  sw.nccl.max_channels = max_channels;  // the step side issues 2(k-1) k C flows: keep C small at 256 GPUs
  const std::vector<double> step = collective_times(sw, "step");
  const std::vector<double> agg = collective_times(sw, "aggregate");
  ASSERT_EQ(step.size(), 2u);
  ASSERT_EQ(agg.size(), step.size());
  for (std::size_t i = 0; i < step.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << topology << ", " << gpus << " GPUs, " << collective_name(op) << ", size "
                                      << i);
    EXPECT_GT(step[i], 0);
    EXPECT_NEAR(agg[i] / step[i], 1.0, 1e-6);
  }
}

TEST(Fidelity, UncontendedRingAllreduceAgrees8Gpus) { expect_rings_agree("dgx-a100", 8, Collective::kAllreduce); }
TEST(Fidelity, UncontendedRingAllgatherAndReduceScatterAgree8Gpus) {
  expect_rings_agree("dgx-h100", 8, Collective::kAllgather);
  expect_rings_agree("dgx-h100", 8, Collective::kReduceScatter);
}
TEST(Fidelity, UncontendedRingAllreduceAgrees64Gpus) {
  expect_rings_agree("16x-dgx-h100-ndr", 64, Collective::kAllreduce);
}
TEST(Fidelity, UncontendedRingAllreduceAgrees128Gpus) {
  const std::string t = rail_cluster(16);
  expect_rings_agree(t, 128, Collective::kAllreduce);
  std::filesystem::remove(t);
}
// DGX H100: 16 channels on 8 distinct rings, each twice; aggregate runs each ring once with
// both channels' bytes, step runs all 16: equal. (From 8 MiB: SimGrid keeps time to 1 ns, and
// step fidelity's ~500 events per call of a few microseconds each round apart by 1e-5.)
TEST(Fidelity, RepeatedRingsRunOnceAgreeWithEveryChannel) {
  expect_rings_agree("dgx-h100", 8, Collective::kAllreduce, 0);
  const std::string t = rail_cluster(2);
  expect_rings_agree(t, 16, Collective::kAllreduce, 0, 8 << 20);
  expect_rings_agree(t, 16, Collective::kAllgather, 0, 8 << 20);
  std::filesystem::remove(t);
}
TEST(Fidelity, UncontendedRingAllreduceAgrees256Gpus) {
  const std::string t = rail_cluster(32);
  expect_rings_agree(t, 256, Collective::kAllreduce);
  std::filesystem::remove(t);
}

// Pipelines across machines (a tree allreduce, a chain's broadcast and reduce): aggregate
// fidelity plans each hop from the time the first chunk reaches it, the channels' first chunks
// sharing a link only where they cross it at the same time (a chain's chunk no faster than its
// channel, as at step fidelity). Against step fidelity (every chunk a flow) on two DGX A100s and
// on eight under a fat-tree, 1 to 64 MiB: within 11% (trees -8.6% to +4.1%, chains -10.2% to
// +3.6%; -9.2% to +1.9% and within 10% until the fat-tree generator put whole nodes on a leaf,
// 2026-11-30: a chain over 8 nodes at 1 MiB lost 0.9 points). With every channel counted on every
// hop inside a machine, as until 2026-11-29, aggregate trees came out 1.7 to 2.4 times step's on
// two nodes, chains 13% to 36% long.
TEST(Fidelity, UncontendedPipelinesWithinTenPercentOfStep) {
  const auto path =
      std::filesystem::temp_directory_path() / ("gradsync-fidelity-tree-" + std::to_string(::getpid()) + ".dot");
  std::ofstream(path) << write_topology_dot(generate_fat_tree({.nodes = 8, .node = "dgx-a100"}));
  for (const std::string& topology : {std::string("2x-dgx-a100-hdr"), path.string()}) {
    for (const Collective op : {Collective::kAllreduce, Collective::kBroadcast, Collective::kReduce}) {
      CollectiveSweep sw;
      sw.topology = topology;
      sw.op = op;
      if (op == Collective::kAllreduce) sw.nccl.request = CollectiveRequest::only(Algorithm::kTree, std::nullopt);
      sw.min_bytes = 1 << 20;
      sw.max_bytes = 64 << 20;
      sw.step_factor = 8;
      const std::vector<double> step = collective_times(sw, "step");
      const std::vector<double> agg = collective_times(sw, "aggregate");
      ASSERT_EQ(step.size(), 3u);
      ASSERT_EQ(agg.size(), step.size());
      for (std::size_t i = 0; i < step.size(); ++i) {
        SCOPED_TRACE(::testing::Message() << topology << ", " << collective_name(op) << ", size " << i);
        std::printf("%s %s %zu: step %.2f us, aggregate %.2f us (%+.1f%%)\n", topology.c_str(),
                    collective_name(op).data(), i, 1e6 * step[i], 1e6 * agg[i], 100 * (agg[i] / step[i] - 1));
        std::fflush(stdout);  // before the next child copies the buffer
        EXPECT_NEAR(agg[i] / step[i], 1.0, 0.11);
      }
    }
  }
  std::filesystem::remove(path);
}

// One steady DDP step of GPT-2 on 4 nodes under a 4:1 oversubscribed fat-tree (rings and
// trees cross the spines and share them): aggregate keeps to the bound it prints.
void expect_within_bound(const std::string& algo, const std::string& dot = "") {
  const auto path =
      std::filesystem::temp_directory_path() / ("gradsync-fidelity-contended-" + std::to_string(::getpid()) + ".dot");
  std::ofstream(path) << (dot.empty() ? write_topology_dot(generate_fat_tree(
                                            {.nodes = 4, .node = "dgx-h100", .oversubscription = 4, .leaf_ports = 16}))
                                      : dot);
  Scenario s;
  s.topology = path.string();
  s.iterations = 2;
  s.warmup = 1;
  s.nccl_algo = algo;
  s.fidelity = "step";
  const StrategyResult step = simulate_isolated(s, Strategy::kDDP);
  s.fidelity = "aggregate";
  const StrategyResult agg = simulate_isolated(s, Strategy::kDDP);
  std::filesystem::remove(path);
  EXPECT_EQ(step.fidelity.aggregate_calls, 0);
  EXPECT_EQ(agg.fidelity.aggregate_calls, agg.fidelity.calls);
  EXPECT_GT(agg.fidelity.calls, 10);
  EXPECT_DOUBLE_EQ(agg.fidelity.bound, kAggregateBound);
  const double err = std::abs(agg.steady_iteration_time_s / step.steady_iteration_time_s - 1);
  std::printf("%s: steady step %.6f ms (step) against %.6f ms (aggregate): %.3f%%\n", algo.c_str(),
              1e3 * step.steady_iteration_time_s, 1e3 * agg.steady_iteration_time_s, 100 * err);
  EXPECT_LE(err, kAggregateBound);
  // The same collectives in the same order (only their flows differ).
  ASSERT_EQ(step.collectives.size(), agg.collectives.size());
  for (std::size_t i = 0; i < step.collectives.size(); ++i) {
    EXPECT_EQ(step.collectives[i].name, agg.collectives[i].name);
    EXPECT_EQ(step.collectives[i].algorithm, agg.collectives[i].algorithm);
  }
  // The same bytes move: every rank's payload per event, and the wire bytes on the busiest link
  // directions (a tree's hops inside a machine, timed in closed form, count as flows do).
  ASSERT_EQ(step.traffic.size(), agg.traffic.size());
  for (const auto& [name, t] : step.traffic) {
    const auto it = agg.traffic.find(name);
    ASSERT_NE(it, agg.traffic.end()) << name;
    ASSERT_EQ(t.out.size(), it->second.out.size()) << name;
    for (std::size_t r = 0; r < t.out.size(); ++r) {
      EXPECT_NEAR(it->second.out[r], t.out[r], 1e-9 * t.out[r]) << name << " out of rank " << r;
      EXPECT_NEAR(it->second.in[r], t.in[r], 1e-9 * t.in[r]) << name << " into rank " << r;
    }
  }
  ASSERT_EQ(step.links.size(), agg.links.size());
  for (const LinkLoad& l : step.links) {
    const auto it =
        std::find_if(agg.links.begin(), agg.links.end(), [&](const LinkLoad& a) { return a.name == l.name; });
    ASSERT_NE(it, agg.links.end()) << l.name;
    EXPECT_NEAR(it->bytes, l.bytes, 1e-9 * l.bytes) << l.name;
  }
}

TEST(Fidelity, ContendedFatTreeRingWithinBound) { expect_within_bound("ring"); }
TEST(Fidelity, ContendedFatTreeTreeWithinBound) { expect_within_bound("tree"); }

// Four machines of two PCIe GPUs whose NIC hangs off the GPUs' PCIe switch: a tree's hop inside a
// machine shares the switch's links with the flows to and from the NIC, so it stays a flow
// (closed form only where no flow crosses a hop's links); the bytes and the bound still hold.
// The PCIe links (33 GB/s, 25.1 of payload; an RTX 4090 port takes at most 33) sit just above the 25 GB/s NIC, the
// bottleneck (at 36 GB/s, before the port check: 5.8% off without the shared-link rule, 2.3% with it). (Where the
// shared PCIe link itself is the bottleneck, 31.5 GB/s, aggregate is 6.2% off: a stated limit.)
std::string pcie_machines_dot() {
  std::string dot = "graph topology {\n  \"leaf0\" [kind=\"switch\"];\n";
  for (int n = 0; n < 4; ++n) {
    const std::string h = "node" + std::to_string(n);
    const auto v = [&](const std::string& x) { return "\"" + h + "." + x + "\""; };
    dot += "  " + v("cpu0") + " [kind=\"cpu\", host=\"" + h + "\"];\n";
    dot += "  " + v("pcie0") + " [kind=\"pcie_switch\", host=\"" + h + "\"];\n";
    dot += "  " + v("nic0") + " [kind=\"nic\", host=\"" + h + "\"];\n";
    for (int g = 0; g < 2; ++g) {
      const std::string gpu = v("gpu" + std::to_string(g));
      // p2p="true": peer-to-peer over PCIe as a data-center GPU has it (GeForce boards have none).
      dot += "  " + gpu + " [kind=\"gpu\", model=\"rtx-4090\", p2p=\"true\", host=\"" + h + "\"];\n";
      dot += "  " + v("pcie0") + " -- " + gpu + " [type=\"pcie\", bw=\"33GBps\", latency=\"150ns\"];\n";
    }
    dot += "  " + v("cpu0") + " -- " + v("pcie0") + " [type=\"pcie\", bw=\"33GBps\", latency=\"150ns\"];\n";
    dot += "  " + v("pcie0") + " -- " + v("nic0") + " [type=\"pcie\", bw=\"33GBps\", latency=\"150ns\"];\n";
    dot += "  " + v("nic0") + " -- \"leaf0\" [type=\"infiniband\", bw=\"25GBps\", latency=\"500ns\"];\n";
  }
  return dot + "}\n";
}
TEST(Fidelity, TreeHopsSharingTheNicsLinksStayFlowsWithinBound) { expect_within_bound("tree", pcie_machines_dot()); }

// Aggregate calls across machines are solved by gradsync's weighted max-min (sim/fluid.hpp), not
// run as SimGrid flows; both give the same times where flows contend: an oversubscribed
// fat-tree (rings and trees across the spines) and PCIe machines whose NIC shares the GPUs'
// switch (flows of different route latencies, so of different weights, on one link).
// `relative`: the tolerance where the solve is not exact by design: with more than
// kFluidExactFlows flows in flight it solves again only after every 1/kFluidExactFlows of them
// end (sim/fluid.hpp), the bandwidth an ended flow frees idle until then.
void expect_solved_equals_flows(const std::string& dot, const std::string& algo, Collective op = Collective::kAllreduce,
                                double relative = 1e-9) {
  const auto path =
      std::filesystem::temp_directory_path() / ("gradsync-fidelity-fluid-" + std::to_string(::getpid()) + ".dot");
  std::ofstream(path) << dot;
  CollectiveSweep sw;
  sw.topology = path.string();
  sw.nccl.request.algorithms = algo == "auto" ? "" : algo;
  sw.op = op;
  sw.min_bytes = 64 << 10;
  sw.max_bytes = 256 << 20;
  sw.step_factor = 8;
  const std::vector<double> solved = collective_times(sw, "aggregate");
  sw.fluid = false;
  const std::vector<double> flows = collective_times(sw, "aggregate");
  std::filesystem::remove(path);
  ASSERT_EQ(solved.size(), 5u);  // 64 KiB to 256 MiB, x8
  ASSERT_EQ(flows.size(), solved.size());
  for (std::size_t i = 0; i < solved.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << collective_name(op) << ", " << algo << ", size " << i);
    EXPECT_GT(flows[i], 0);
    // To 1e-9 of the time, or 2 ns: a flow's channel cap ends it by a sleep (capped_end), which
    // SimGrid times to its precision (1e-9 s) where the solve computes the end exactly.
    EXPECT_NEAR(solved[i], flows[i], std::max(relative * flows[i], 2e-9));
  }
}

TEST(Fidelity, SolvedCallsAcrossMachinesEqualSimGridFlows) {
  const std::string fat =
      write_topology_dot(generate_fat_tree({.nodes = 8, .node = "dgx-h100", .oversubscription = 4, .leaf_ports = 16}));
  expect_solved_equals_flows(fat, "ring");
  // 64 ranks' tree hops, up and down at once across the spines: at 32 MiB more flows are in flight
  // than the solve times exactly; it comes out 0.30% long (2026-11-29, when the trees' hops began
  // to be planned from their overlaps; exact before, with every channel counted on every hop).
  expect_solved_equals_flows(fat, "tree", Collective::kAllreduce, 5e-3);
  expect_solved_equals_flows(pcie_machines_dot(), "tree");
  expect_solved_equals_flows(pcie_machines_dot(), "ring");
  // The other collectives: ring steps (allgather, reduce-scatter) and pipelined chains.
  for (Collective op :
       {Collective::kAllgather, Collective::kReduceScatter, Collective::kBroadcast, Collective::kReduce}) {
    expect_solved_equals_flows(fat, "auto", op);
  }
}

// A DDP run solves its allreduces once per bucket size and takes the same size's result in later
// iterations (SolvedCalls): every call's start and end and the steady iteration still equal
// those of SimGrid's flows.
TEST(Fidelity, SolvedDdpIterationsEqualSimGridFlows) {
  const auto path =
      std::filesystem::temp_directory_path() / ("gradsync-fidelity-ddp-" + std::to_string(::getpid()) + ".dot");
  std::ofstream(path) << write_topology_dot(
      generate_fat_tree({.nodes = 4, .node = "dgx-h100", .oversubscription = 4, .leaf_ports = 16}));
  Scenario s;
  s.topology = path.string();
  s.iterations = 3;
  s.warmup = 1;
  s.fidelity = "aggregate";
  const auto run = [&](bool fluid) {
    return in_child([s, fluid] {
      const StrategyResult r = simulate(s, Strategy::kDDP, fluid);
      std::vector<double> out{r.steady_iteration_time_s};
      for (const CollectiveCall& c : r.collectives) {
        out.push_back(c.start_s);
        out.push_back(c.end_s);
      }
      return out;
    });
  };
  const std::vector<double> solved = run(true);
  const std::vector<double> flows = run(false);
  std::filesystem::remove(path);
  ASSERT_GT(solved.size(), 30u);  // 3 iterations of a dozen allreduces
  ASSERT_EQ(solved.size(), flows.size());
  // SimGrid keeps time to 1 ns (surf/precision): a call's end differs by up to that.
  // A call that starts after a rounded end inherits its nanosecond: a few ns after a few calls.
  for (std::size_t i = 0; i < solved.size(); ++i) EXPECT_NEAR(solved[i], flows[i], 5e-9) << i;
}

TEST(Fidelity, AutoPicksAggregateAtScaleAndStepOnOneNode) {
  Scenario s;
  s.iterations = 2;
  s.warmup = 1;
  const StrategyResult small = simulate_isolated(s, Strategy::kDDP);  // 8 GPUs: ~900 flows per call
  EXPECT_EQ(small.fidelity.mode, "auto");
  EXPECT_EQ(small.fidelity.aggregate_calls, 0);
  EXPECT_DOUBLE_EQ(small.fidelity.bound, 0);
  s.topology = "16x-dgx-h100-ndr";
  s.nccl_algo = "ring";
  const StrategyResult big = simulate_isolated(s, Strategy::kDDP);  // 128 GPUs: 2x127x128x16 flows a call
  EXPECT_GT(big.fidelity.aggregate_calls, 0);
  EXPECT_DOUBLE_EQ(big.fidelity.bound, kAggregateBound);
  for (const CollectiveCall& c : big.collectives) {
    // Every allreduce (ring: 2(k-1) k C flows) runs aggregated; the construction's small
    // broadcasts (a few chunks along a chain) stay below the threshold and keep step fidelity.
    if (c.collective == Collective::kAllreduce) {
      EXPECT_EQ(c.fidelity, "aggregate") << c.name;
    }
  }
}

// Many mid-sized calls: Tree across two DGX H100 nodes issues about 2,300 flows a call at step
// fidelity, each under kAutoAggregateFlows, 86,000 an iteration for gpt2-medium. auto keeps each
// iteration's step flows within kAutoIterationFlows by aggregating the calls past it, and the
// steady iteration stays within kAggregateBound of step fidelity.
TEST(Fidelity, AutoBoundsAnIterationsStepFlows) {
  Scenario s;
  s.topology = rail_cluster(2);
  s.nccl_algo = "tree";
  s.iterations = 2;
  s.warmup = 1;
  const StrategyResult mixed = simulate_isolated(s, Strategy::kDDP);
  s.fidelity = "step";
  const StrategyResult step = simulate_isolated(s, Strategy::kDDP);
  std::filesystem::remove(s.topology);
  EXPECT_GT(mixed.fidelity.aggregate_calls, 0);
  EXPECT_LT(mixed.fidelity.aggregate_calls, mixed.fidelity.calls);
  int steady_step = 0, steady_aggregate = 0;
  for (const CollectiveCall& c : mixed.collectives) {
    if (c.iteration != 2 || c.collective != Collective::kAllreduce) continue;
    EXPECT_EQ(c.algorithm, "tree") << c.name;
    (c.fidelity == "step" ? steady_step : steady_aggregate)++;
  }
  EXPECT_GT(steady_step, 0);       // the iteration's first calls, within the budget
  EXPECT_GT(steady_aggregate, 0);  // the rest
  EXPECT_NEAR(mixed.steady_iteration_time_s / step.steady_iteration_time_s, 1.0, kAggregateBound);
}

TEST(Fidelity, UnknownFidelityIsAConfigError) {
  Scenario s;
  s.fidelity = "exact";
  try {
    (void)resolve_scenario(s);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("fidelity \"exact\": expected step, aggregate or auto"), std::string::npos);
  }
}

}  // namespace
}  // namespace gradsync::sim
