// advice_test.cpp: the advice is simulation: each advised change is the simulated step of the
// changed scenario, the largest batch is the edge of the memory model, and a budget bounds it.
#include "sim/advice.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "core/advice.hpp"
#include "core/scenario_keys.hpp"
#include "sim/simulate.hpp"

namespace gradsync::sim {
namespace {

Scenario small() {
  Scenario s;
  s.model = "resnet18";
  s.gpus = 2;
  s.iterations = 2;
  s.warmup = 1;
  return s;
}

Scenario with_keys(Scenario s, const Change& c) {
  for (const auto& [name, text] : c.keys) set_key(s, scenario_key(name), parse_key_value(scenario_key(name), text));
  return s;
}

TEST(AdviceSim, AdvisedChangesAreTheSimulatedStepsOfTheChangedScenario) {
  const Scenario s = small();
  const StrategyResult run = simulate_isolated(s, Strategy::kDP);
  const Advice a = advise(s, run, {.budget_s = 600, .jobs = 2});
  EXPECT_EQ(a.strategy, Strategy::kDP);
  EXPECT_DOUBLE_EQ(a.steady_s, run.steady_iteration_time_s);
  const std::vector<const ChangeResult*> best = advised(a);
  ASSERT_FALSE(best.empty());
  for (std::size_t i = 1; i < best.size(); ++i) EXPECT_GE(best[i - 1]->gain, best[i]->gain);
  // Each is what simulating the changed scenario gives, and its gain is samples/s against the run.
  for (const ChangeResult* c : best) {
    const StrategyResult r = simulate_isolated(with_keys(s, c->change), c->change.strategy.value_or(Strategy::kDP));
    EXPECT_DOUBLE_EQ(c->steady_s, r.steady_iteration_time_s) << c->change.what;
    EXPECT_NEAR(c->gain, r.samples_per_s / run.samples_per_s - 1, 1e-12) << c->change.what;
  }
  const auto ddp = std::find_if(a.changes.begin(), a.changes.end(),
                                [](const ChangeResult& c) { return c.change.what == "DDP instead of DP"; });
  ASSERT_NE(ddp, a.changes.end());
  EXPECT_EQ(ddp->status, "ok");
  EXPECT_DOUBLE_EQ(ddp->steady_s, simulate_isolated(s, Strategy::kDDP).steady_iteration_time_s);
  // DataParallel's largest batch is the DataLoader's, split across its GPUs; on one GPU nothing splits.
  const auto largest = [](const Advice& x) {
    return std::find_if(x.changes.begin(), x.changes.end(),
                        [](const ChangeResult& c) { return c.change.largest_batch; });
  };
  ASSERT_NE(largest(a), a.changes.end());
  EXPECT_NE(largest(a)->change.pytorch.find("# DataParallel splits it across the GPUs"), std::string::npos);
  Scenario one = s;
  one.gpus = 1;
  const Advice a1 = advise(one, simulate_isolated(one, Strategy::kDP), {.budget_s = 600, .jobs = 2});
  ASSERT_NE(largest(a1), a1.changes.end());
  EXPECT_EQ(largest(a1)->change.pytorch.find("splits"), std::string::npos) << largest(a1)->change.pytorch;
}

// A run asked for by its global batch: every change runs (none fails on a batch_per_gpu that
// disagrees with it), and each is the run at the per-GPU batch the global batch gave.
TEST(AdviceSim, ARunOfAGlobalBatchIsAdvisedAtItsPerGpuBatch) {
  Scenario s = small();
  s.global_batch = 48;  // 24 per GPU on 2 GPUs
  const Advice a = advise(s, simulate_isolated(s, Strategy::kDDP), {.budget_s = 600, .jobs = 2});
  Scenario per_gpu = small();
  per_gpu.batch_per_gpu = 24;
  const Advice b = advise(per_gpu, simulate_isolated(per_gpu, Strategy::kDDP), {.budget_s = 600, .jobs = 2});
  ASSERT_FALSE(a.changes.empty());
  ASSERT_EQ(a.changes.size(), b.changes.size());
  for (std::size_t i = 0; i < a.changes.size(); ++i) {
    EXPECT_NE(a.changes[i].status, "failed") << a.changes[i].change.what << ": " << a.changes[i].error;
    EXPECT_EQ(a.changes[i].change.what, b.changes[i].change.what);
    EXPECT_DOUBLE_EQ(a.changes[i].steady_s, b.changes[i].steady_s) << a.changes[i].change.what;
  }
}

TEST(AdviceSim, LargestBatchFitsAndOneMoreDoesNot) {
  Scenario s = small();
  s.topology = "dgx1-v100";
  const std::int64_t b = largest_batch_per_gpu(s, Strategy::kDDP);
  ASSERT_GT(b, 16);
  Scenario fits = s, over = s;
  fits.batch_per_gpu = b;
  over.batch_per_gpu = b + 1;
  auto oom = [](const StrategyResult& r) {
    return std::any_of(r.per_gpu.begin(), r.per_gpu.end(), [](const GpuResult& g) { return g.oom; });
  };
  EXPECT_FALSE(oom(simulate_isolated(fits, Strategy::kDDP)));
  EXPECT_TRUE(oom(simulate_isolated(over, Strategy::kDDP)));
  // The advice's batch change is that batch, labelled as changing the maths.
  const Advice a = advise(s, simulate_isolated(s, Strategy::kDDP), {.budget_s = 600, .jobs = 2});
  const auto c =
      std::find_if(a.changes.begin(), a.changes.end(), [](const ChangeResult& r) { return r.change.largest_batch; });
  ASSERT_NE(c, a.changes.end());
  EXPECT_EQ(c->change.keys.front().second, std::to_string(b));
  EXPECT_NE(c->change.alters.find("global batch"), std::string::npos);
}

// A run that does not fit keeps its global batch in micro-batches that do: batch_per_gpu B in k
// micro-batches for the fewest k dividing B that fit, grad_accum k. With B four times the largest
// batch that fits, k = 2 and 3 leave micro-batches above it, so k is 4. A run that fits gets no such
// change.
TEST(AdviceSim, ARunThatDoesNotFitKeepsItsGlobalBatchInMicroBatches) {
  Scenario s = small();
  s.topology = "pcie-4gpu";
  const std::int64_t fits = largest_batch_per_gpu(s, Strategy::kDDP);
  ASSERT_GT(fits, 4);
  s.batch_per_gpu = 4 * fits;
  const StrategyResult run = simulate_isolated(s, Strategy::kDDP);
  const Advice a = advise(s, run, {.budget_s = 600, .jobs = 2});
  ASSERT_TRUE(a.oom);
  const auto micro = [](const Advice& x) {
    return std::find_if(x.changes.begin(), x.changes.end(),
                        [](const ChangeResult& c) { return c.change.accumulate_to_fit; });
  };
  ASSERT_NE(micro(a), a.changes.end());
  const ChangeResult& c = *micro(a);
  EXPECT_EQ(c.change.keys, (std::vector<std::pair<std::string, std::string>>{{"batch_per_gpu", std::to_string(fits)},
                                                                             {"grad_accum", "4"}}));
  EXPECT_EQ(c.status, "ok") << c.error;
  EXPECT_TRUE(c.change.alters.find("BatchNorm") != std::string::npos) << "resnet18 normalises each micro-batch";
  const auto shown = advised(a);
  EXPECT_NE(std::find(shown.begin(), shown.end(), &c), shown.end()) << "a change that makes the run fit is advice";
  s.batch_per_gpu = fits;
  const Advice fitting = advise(s, simulate_isolated(s, Strategy::kDDP), {.budget_s = 600, .jobs = 2});
  EXPECT_EQ(micro(fitting), fitting.changes.end());
}

TEST(AdviceSim, NothingRunsPastTheBudget) {
  const Scenario s = small();
  const Advice a = advise(s, simulate_isolated(s, Strategy::kDDP), {.budget_s = 0, .jobs = 1});
  ASSERT_FALSE(a.changes.empty());
  for (const ChangeResult& c : a.changes) EXPECT_EQ(c.status, "budget") << c.change.what;
  EXPECT_TRUE(advised(a).empty());
}

// TF32 is offered to a float32 run only where TF32 tensor cores exist (Ampere on): on V100s
// allow_tf32 leaves float32 as it is, so the change would be the run itself (a new user's report).
TEST(AdviceSim, Tf32IsOfferedOnlyFromAmpereOn) {
  const auto offers_tf32 = [](const std::string& topology) {
    Scenario s = small();
    s.topology = topology;
    s.precision = "fp32";
    const Advice a = advise(s, simulate_isolated(s, Strategy::kDDP), {.budget_s = 0, .jobs = 1});
    return std::any_of(a.changes.begin(), a.changes.end(),
                       [](const ChangeResult& c) { return c.change.what == "TF32 products"; });
  };
  EXPECT_FALSE(offers_tf32("dgx1-v100"));
  EXPECT_TRUE(offers_tf32("dgx-a100"));
}

// No budget (compare's and advise's default): every change is simulated, on any machine, and
// result.json says budget_s null. A wall-clock default (120 s until 2026-11-30) simulated fewer
// changes on a slower or busier machine, so the same inputs could print other advice.
TEST(AdviceSim, WithoutABudgetEveryChangeRuns) {
  const Scenario s = small();
  const Advice a =
      advise(s, simulate_isolated(s, Strategy::kDDP), {.budget_s = std::numeric_limits<double>::infinity(), .jobs = 2});
  ASSERT_FALSE(a.changes.empty());
  for (const ChangeResult& c : a.changes) EXPECT_NE(c.status, "budget") << c.change.what;
  EXPECT_TRUE(advice_json(a).at("budget_s").is_null());
}

// A bucket cap that makes the same buckets as the run or as a cap tried before it is not tried
// again: ResNet-18's 44.7 MiB of gradients are one bucket under 50 MiB and under 100 MiB alike.
TEST(AdviceSim, BucketCapsThatMakeTheSameBucketsAreTriedOnce) {
  const Scenario s = small();
  const auto has = [](const std::vector<std::string>& whats, const std::string& w) {
    return std::find(whats.begin(), whats.end(), w) != whats.end();
  };
  std::vector<std::string> candidates;
  for (const Change& c : candidate_changes(resolve_scenario(s, true), Strategy::kDDP, ModelTraits{}))
    candidates.push_back(c.what);
  ASSERT_TRUE(has(candidates, "bucket_cap_mb 50"));
  ASSERT_TRUE(has(candidates, "bucket_cap_mb 100"));
  const Advice a = advise(s, simulate_isolated(s, Strategy::kDDP), {.budget_s = 600, .jobs = 2});
  std::vector<std::string> tried;
  for (const ChangeResult& c : a.changes) tried.push_back(c.change.what);
  EXPECT_TRUE(has(tried, "bucket_cap_mb 5"));
  EXPECT_TRUE(has(tried, "bucket_cap_mb 10"));
  EXPECT_TRUE(has(tried, "bucket_cap_mb 50"));
  EXPECT_FALSE(has(tried, "bucket_cap_mb 100"));
}

// A model that saves almost nothing per sample fits the search's bound: the advice says that larger
// batches may fit too, rather than calling the bound the largest that fits.
TEST(AdviceSim, TheLargestBatchSearchedIsSaidToBeABoundNotTheLargestThatFits) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "gradsync-advice-tiny-model.yaml";
  std::ofstream(file) << "format: gradsync-model/2\nname: tiny\ndefaults: {batch: 4, seq_len: 1}\n"
                         "input: {bytes: 8*T}\noutput: {elements: 10*T, loss: outside}\nparameters:\n"
                         "  - {name: fc.weight, shape: [10, 4]}\n  - {name: fc.bias, shape: [10]}\nlayers:\n"
                         "  - {name: fc, kind: linear, params: [fc.weight, fc.bias], in: 4, out: 10, tokens: T}\n";
  Scenario s = small();
  s.model = file.string();
  s.topology = "dgx1-v100";
  s.batch_per_gpu = 4;
  EXPECT_EQ(largest_batch_per_gpu(s, Strategy::kDDP), kLargestBatchSearched);
  const Advice a = advise(s, simulate_isolated(s, Strategy::kDDP), {.budget_s = 600, .jobs = 2});
  const auto c =
      std::find_if(a.changes.begin(), a.changes.end(), [](const ChangeResult& r) { return r.change.largest_batch; });
  ASSERT_NE(c, a.changes.end());
  EXPECT_EQ(c->change.what, "batch_per_gpu 1048576 (the largest gradsync tries; larger ones may fit too)");
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace gradsync::sim
