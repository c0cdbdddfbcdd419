// fluid_test.cpp: flows sharing links by weighted max-min (sim/fluid.hpp) against closed-form
// answers.
#include "sim/fluid.hpp"

#include <gtest/gtest.h>

#include "sim/collective_run.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"

namespace gradsync::sim {
namespace {

constexpr double kGB = 1e9;

TEST(Fluid, TwoFlowsOnOneLinkShareItEqually) {
  const std::vector<FluidLink> links{{10 * kGB, false}};
  const std::vector<FluidFlow> flows{{0.0, 1 * kGB, 1.0, {0}}, {0.0, 1 * kGB, 1.0, {0}}};
  const auto end = fluid_ends(links, flows);
  ASSERT_EQ(end.size(), 2u);
  EXPECT_NEAR(end[0], 0.2, 1e-12);  // 5 GB/s each
  EXPECT_NEAR(end[1], 0.2, 1e-12);
}

TEST(Fluid, AFlowThatEndsFreesItsShare) {
  // 1 GB and 3 GB on a 10 GB/s link: both at 5 GB/s until 0.2 s, then the second alone moves
  // its last 2 GB at 10 GB/s.
  const std::vector<FluidLink> links{{10 * kGB, false}};
  const std::vector<FluidFlow> flows{{0.0, 1 * kGB, 1.0, {0}}, {0.0, 3 * kGB, 1.0, {0}}};
  const auto end = fluid_ends(links, flows);
  EXPECT_NEAR(end[0], 0.2, 1e-12);
  EXPECT_NEAR(end[1], 0.4, 1e-12);
}

TEST(Fluid, WeightsSplitALinkInProportion) {
  // Weights 1 and 3 (SimGrid: route latencies 3x apart): 2.5 and 7.5 GB/s. The heavier moves
  // 3 GB by 0.4 s; the lighter has 1 GB of its 2 left, alone at 10 GB/s: 0.5 s.
  const std::vector<FluidLink> links{{10 * kGB, false}};
  const std::vector<FluidFlow> flows{{0.0, 2 * kGB, 1.0, {0}}, {0.0, 3 * kGB, 3.0, {0}}};
  const auto end = fluid_ends(links, flows);
  EXPECT_NEAR(end[1], 0.4, 1e-12);
  EXPECT_NEAR(end[0], 0.5, 1e-12);
}

TEST(Fluid, MaxMinGivesABottleneckedFlowsShareToTheOthers) {
  // Link A (10 GB/s): flows 0 and 1; link B (4 GB/s): flows 1 and 2. B bottlenecks 1 and 2 at
  // 2 GB/s; flow 0 takes the 8 GB/s A has left.
  const std::vector<FluidLink> links{{10 * kGB, false}, {4 * kGB, false}};
  const std::vector<FluidFlow> flows{{0.0, 8 * kGB, 1.0, {0}}, {0.0, 2 * kGB, 1.0, {0, 1}}, {0.0, 2 * kGB, 1.0, {1}}};
  const auto end = fluid_ends(links, flows);
  EXPECT_NEAR(end[0], 1.0, 1e-12);
  EXPECT_NEAR(end[1], 1.0, 1e-12);
  EXPECT_NEAR(end[2], 1.0, 1e-12);
}

TEST(Fluid, AFatpipeLinkBoundsEachFlowAlone) {
  const std::vector<FluidLink> links{{10 * kGB, true}, {100 * kGB, false}};
  const std::vector<FluidFlow> flows{{0.0, 1 * kGB, 1.0, {0, 1}}, {0.0, 1 * kGB, 1.0, {0, 1}}};
  const auto end = fluid_ends(links, flows);
  EXPECT_NEAR(end[0], 0.1, 1e-12);  // 10 GB/s each: the shared link has room for both
  EXPECT_NEAR(end[1], 0.1, 1e-12);
}

TEST(Fluid, ALaterFlowTakesItsShareWhenItStarts) {
  // Flow 0 (3 GB) alone at 10 GB/s until 0.1 s, then both at 5 GB/s: flow 1's 1 GB ends at
  // 0.3 s; flow 0 then has 1 GB left, alone again: 0.4 s.
  const std::vector<FluidLink> links{{10 * kGB, false}};
  const std::vector<FluidFlow> flows{{0.0, 3 * kGB, 1.0, {0}}, {0.1, 1 * kGB, 1.0, {0}}};
  const auto end = fluid_ends(links, flows);
  EXPECT_NEAR(end[1], 0.3, 1e-12);
  EXPECT_NEAR(end[0], 0.4, 1e-12);
}

TEST(Fluid, AFlowWithoutLinksEndsAtItsStart) {
  const std::vector<FluidLink> links{{10 * kGB, false}};
  const std::vector<FluidFlow> flows{{0.5, 1 * kGB, 1.0, {}}, {0.0, 1 * kGB, 1.0, {0}}};
  const auto end = fluid_ends(links, flows);
  EXPECT_DOUBLE_EQ(end[0], 0.5);
  EXPECT_NEAR(end[1], 0.1, 1e-12);
}

// n flows of sizes 1..n GB on one link: processor sharing, whose ends are closed form
// (end_k = end_{k-1} + (s_k - s_{k-1}) (n - k + 1) / c).
std::vector<double> processor_sharing(int n, double c) {
  std::vector<double> end(static_cast<std::size_t>(n));
  double t = 0;
  for (int k = 1; k <= n; ++k) {
    t += 1 * kGB * (n - k + 1) / c;
    end[static_cast<std::size_t>(k - 1)] = t;
  }
  return end;
}

TEST(Fluid, UpToTheExactCountEveryEndIsSolvedExactly) {
  const int n = kFluidExactFlows;
  std::vector<FluidFlow> flows;
  for (int k = 1; k <= n; ++k) flows.push_back({0.0, k * kGB, 1.0, {0}});
  const auto end = fluid_ends({{10 * kGB, false}}, flows);
  const auto want = processor_sharing(n, 10 * kGB);
  for (int k = 0; k < n; ++k)
    EXPECT_NEAR(end[static_cast<std::size_t>(k)] / want[static_cast<std::size_t>(k)], 1, 1e-12) << k;
}

TEST(Fluid, BeyondItEndsAreBatchedAndNeverEarly) {
  // 4 x kFluidExactFlows flows: the solve waits for 4 ends at a time, the freed share idle
  // meanwhile; no flow ends before processor sharing's time, the last within 2% of it.
  const int n = 4 * kFluidExactFlows;
  std::vector<FluidFlow> flows;
  for (int k = 1; k <= n; ++k) flows.push_back({0.0, k * kGB, 1.0, {0}});
  const auto end = fluid_ends({{10 * kGB, false}}, flows);
  const auto want = processor_sharing(n, 10 * kGB);
  for (int k = 0; k < n; ++k)
    EXPECT_GE(end[static_cast<std::size_t>(k)], want[static_cast<std::size_t>(k)] * (1 - 1e-12)) << k;
  const double last = *std::max_element(end.begin(), end.end());
  EXPECT_GT(last, want.back() * (1 + 1e-6));  // batched: not exact
  EXPECT_LT(last, want.back() * 1.02);
}

TEST(Fluid, AStartElsewhereSolvesTheFlowsBesideOneThatLeft) {
  // A solve re-solves only the flows linked (over shared links) to one that joined or left; the
  // others keep their rates. 40 flows alone on links of their own keep more than
  // kFluidExactFlows active, so the first end (at 1 s: 1 GB at 1 GB/s on the 2 GB/s link both
  // share) is not solved and the 3 GB flow stays at 1 GB/s. The flow starting at 1.5 s on a link
  // of its own solves it again with the link it shared: 1.5 GB left at 2 GB/s, ending at 2.25 s
  // (3 s had the freed share stayed idle). The start's own flow: 1 GB at 1 GB/s, 2.5 s.
  std::vector<FluidLink> links{{2 * kGB, false}, {1 * kGB, false}};
  std::vector<FluidFlow> flows{{0.0, 1 * kGB, 1.0, {0}}, {0.0, 3 * kGB, 1.0, {0}}, {1.5, 1 * kGB, 1.0, {1}}};
  for (int i = 0; i < 40; ++i) {
    links.push_back({1 * kGB, false});
    flows.push_back({0.0, 100 * kGB, 1.0, {static_cast<int>(links.size()) - 1}});
  }
  static_assert(42 > kFluidExactFlows);
  const auto end = fluid_ends(links, flows);
  EXPECT_NEAR(end[0], 1.0, 1e-12);
  EXPECT_NEAR(end[1], 2.25, 1e-12);
  EXPECT_NEAR(end[2], 2.5, 1e-12);
  for (std::size_t i = 3; i < end.size(); ++i) EXPECT_NEAR(end[i], 100.0, 1e-9) << i;
}

TEST(Fluid, AJoinResolvesItsWholePart) {
  // A chain: flow i crosses links i and i + 1 (1 GB/s each, 1 GB per flow), so every flow gets
  // 0.5 GB/s. At 1 s flow X joins on link 3 alone with flows 2 and 3, in one part with every
  // flow of the chain: 2, 3 and X get 1/3 GB/s (link 3 full), 0, 1, 4 and 5 keep 0.5 GB/s (links
  // 1 and 5 full) and end at 2 s; 2 and 3 move their last 1/6 GB by 2.5 s; X has 0.5 GB left
  // then, alone at 1 GB/s: 3 s.
  const int n = 6;
  const std::vector<FluidLink> links(n + 1, FluidLink{1 * kGB, false});
  std::vector<FluidFlow> flows;
  for (int i = 0; i < n; ++i) flows.push_back({0.0, 1 * kGB, 1.0, {i, i + 1}});
  flows.push_back({1.0, 1 * kGB, 1.0, {3}});
  const auto end = fluid_ends(links, flows);
  const std::vector<double> want{2.0, 2.0, 2.5, 2.5, 2.0, 2.0, 3.0};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(end[i], want[i], 1e-12) << i;
}

TEST(Fluid, ANonPositiveBandwidthOrWeightIsAnError) {
  EXPECT_THROW(fluid_ends({{0.0, false}}, {{0.0, 1.0, 1.0, {0}}}), RuntimeError);
  EXPECT_THROW(fluid_ends({{-1.0, false}}, {}), RuntimeError);
  EXPECT_THROW(fluid_ends({{1.0, false}}, {{0.0, 1.0, 0.0, {0}}}), RuntimeError);
}

SolvedCalls::Key call(double bytes, std::vector<double> joined = {0, 0}) {
  return {Collective::kAllreduce, bytes, -1, Algorithm::kTree, Protocol::kSimple, std::move(joined)};
}

TEST(SolvedCallsTest, ACallAlikeFindsTheResultAndOnlyThat) {
  SolvedCalls calls;
  calls.add(call(1e6), {0.5, {1, 2}, {3, 4}, {}, {}});
  const SolvedCalls::Result* same = calls.find(call(1e6));
  ASSERT_NE(same, nullptr);
  EXPECT_DOUBLE_EQ(same->span, 0.5);
  EXPECT_EQ(same->out, (std::vector<double>{1, 2}));
  EXPECT_EQ(calls.find(call(2e6)), nullptr);             // another size
  EXPECT_EQ(calls.find(call(1e6, {0, 1e-6})), nullptr);  // a member joined later
  SolvedCalls::Key other_root = call(1e6);
  other_root.root = 0;
  EXPECT_EQ(calls.find(other_root), nullptr);
}

TEST(SolvedCallsTest, KeepsTheResultsUsedLast) {
  SolvedCalls calls;
  for (std::size_t i = 0; i < SolvedCalls::kCapacity; ++i) calls.add(call(static_cast<double>(i + 1)), {});
  ASSERT_NE(calls.find(call(1)), nullptr);  // used again: size 2 is now the oldest
  calls.add(call(1000), {});
  EXPECT_EQ(calls.size(), SolvedCalls::kCapacity);
  EXPECT_NE(calls.find(call(1)), nullptr);
  EXPECT_EQ(calls.find(call(2)), nullptr);
  EXPECT_NE(calls.find(call(1000)), nullptr);
}

}  // namespace
}  // namespace gradsync::sim
