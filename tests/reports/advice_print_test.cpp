// advice_print_test.cpp: the advice as stdout prints it (reports/advice.hpp), and which GPUs the
// report's timeline draws (reports/html.hpp).
#include "reports/advice.hpp"
#include "reports/html.hpp"
#include "reports/report.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace gradsync {
namespace {

ChangeResult advice_row(const std::string& what, double gain, std::vector<std::pair<std::string, std::string>> keys) {
  ChangeResult c;
  c.change.what = what;
  c.change.keys = std::move(keys);
  c.change.pytorch = "DDP(model, ...)";
  c.status = "ok";
  c.gain = gain;
  c.steady_s = 0.1 / (1 + gain);
  c.samples_per_s = 1000 * (1 + gain);
  return c;
}

// A change simulated with a later warm-up than the run's (static_graph: its buckets are rebuilt for
// iteration 3) says where its steady mean starts; the others say nothing of it.
TEST(AdviceReport, AChangeWithALaterWarmupSaysWhereItsSteadyStarts) {
  Advice a;
  a.steady_s = 0.1;
  a.samples_per_s = 1000;
  a.changes = {advice_row("static_graph", 0.05, {{"static_graph", "true"}, {"warmup", "2"}}),
               advice_row("bucket_cap_mb 50", 0.03, {{"bucket_cap_mb", "50"}})};
  std::ostringstream out;
  reports::print_advice(a, out);
  EXPECT_NE(out.str().find("# static_graph: steady from iteration 3 (its state from then on), not the run's warm-up\n"),
            std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("# bucket_cap_mb 50: steady from"), std::string::npos) << out.str();
}

// how sure: +/- where the published cases erred both ways; where all erred one way, which way the
// real time goes (step lines and part lines alike; one case alone keeps +/-).
TEST(HowSure, ErrorsAllOneWayAreSaidAsTheWayTheRealTimeGoes) {
  reports::Report rep;
  StrategyResult dp, ddp;
  dp.strategy = Strategy::kDP;
  ddp.strategy = Strategy::kDDP;
  dp.steady_iteration_time_s = ddp.steady_iteration_time_s = 0.01;
  rep.strategies = {dp, ddp};
  const auto row = [](std::string strategy, std::string part, int cases, int points, int faster) {
    reports::Confidence c;
    c.strategy = std::move(strategy);
    c.part = std::move(part);
    c.cls = "x";
    c.cases = cases;
    c.points = points;
    c.faster = faster;
    c.median_abs_error = 0.1;
    c.worst_abs_error = 0.2;
    c.worst_case = "w";
    return c;
  };
  rep.confidence = {row("dp", "step", 0, 0, 0), row("dp", "compute", 3, 3, 3), row("dp", "communication", 2, 4, 0),
                    row("ddp", "step", 5, 5, 2)};
  std::ostringstream out;
  reports::print_confidence(rep, out);
  const std::string s = out.str();
  EXPECT_NE(s.find("#   compute: likely short of the real time by 10.0% (median |error|"), std::string::npos) << s;
  EXPECT_NE(s.find("#   communication: likely over the real time by 10.0% (median |error|"), std::string::npos) << s;
  EXPECT_NE(s.find("# how sure: ddp 10.000 ms +/- 10.0% (median |error|"), std::string::npos) << s;
  std::ostringstream one;
  rep.confidence = {row("ddp", "step", 1, 1, 1)};
  reports::print_confidence(rep, one);
  EXPECT_NE(one.str().find("# how sure: ddp 10.000 ms +/- 10.0% (|error| of the one published step"), std::string::npos)
      << one.str();
}

// Up to 8 GPUs the timeline draws every one, on however many nodes (two nodes of 2: all 4); past
// 8, node 0's, then the first GPU of each other node.
TEST(TimelineRanks, EveryGpuUpToEightWhateverTheNodes) {
  StrategyResult r;
  r.gpus = 4;
  EXPECT_EQ(reports::timeline_ranks(r, 2, {}), (std::vector<int>{0, 1, 2, 3}));
  r.gpus = 8;
  EXPECT_EQ(reports::timeline_ranks(r, 4, {}), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

}  // namespace
}  // namespace gradsync
