// advice_print_test.cpp: the advice as stdout prints it (reports/advice.hpp), and which GPUs the
// report's timeline draws (reports/html.hpp).
#include "reports/advice.hpp"
#include "reports/html.hpp"

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
