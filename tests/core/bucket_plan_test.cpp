// bucket_plan_test.cpp: PyTorch's bucket assignment, DDP's initial buckets and the rebuild.
#include "core/bucket_plan.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "models/model.hpp"
#include "models/step_costs.hpp"

namespace gradsync {
namespace {

std::vector<Bytes> sizes(const BucketPlan& p) {
  std::vector<Bytes> out;
  for (const Bucket& b : p.buckets) out.push_back(b.bytes);
  return out;
}

StepModel zoo(const char* name) { return to_step_model(load_model(name), Precision::kBF16, std::nullopt); }

TEST(BucketAssignment, BucketClosesWhenItReachesTheLimitIncludingTheCrossingTensor) {
  const std::vector<BucketTensor> t = {{600 * kKiB}, {600 * kKiB}, {600 * kKiB}, {100 * kKiB}};
  const auto b = compute_bucket_assignment_by_size(t, {kMiB});
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].indices, (std::vector<std::size_t>{0, 1}));  // 1200 KiB >= 1 MiB: closed with #1 inside
  EXPECT_EQ(b[1].indices, (std::vector<std::size_t>{2, 3}));  // leftover
}

TEST(BucketAssignment, ExactlyReachingTheLimitCloses) {
  const auto b = compute_bucket_assignment_by_size({{512 * kKiB}, {512 * kKiB}, {1}}, {kMiB});
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].indices, (std::vector<std::size_t>{0, 1}));
}

TEST(BucketAssignment, LimitsAdvanceThenStayOnTheLast) {
  // Limits [1, 3, 2] MiB: the first bucket closes at 1, the second at 3, all later at 2.
  std::vector<BucketTensor> t(12, BucketTensor{kMiB});
  const auto b = compute_bucket_assignment_by_size(t, {kMiB, 3 * kMiB, 2 * kMiB});
  std::vector<std::size_t> counts;
  for (const auto& x : b) counts.push_back(x.indices.size());
  EXPECT_EQ(counts, (std::vector<std::size_t>{1, 3, 2, 2, 2, 2}));
  EXPECT_EQ(b[0].size_limit, kMiB);
  EXPECT_EQ(b[1].size_limit, 3 * kMiB);
  EXPECT_EQ(b[5].size_limit, 2 * kMiB);
}

TEST(BucketAssignment, SparseGradientParametersGetBucketsOfTheirOwn) {
  const std::vector<BucketTensor> t = {{100}, {100, DType::kFloat32, true}, {100}};
  const auto b = compute_bucket_assignment_by_size(t, {kMiB});
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].indices, (std::vector<std::size_t>{0, 2}));  // sorted by smallest index
  EXPECT_EQ(b[1].indices, (std::vector<std::size_t>{1}));
  EXPECT_EQ(b[1].size_limit, kNoSizeLimit);
}

TEST(BucketAssignment, DtypesBucketSeparatelyWithTheirOwnLimitPosition) {
  const std::vector<BucketTensor> t = {{kMiB, DType::kFloat32},
                                       {kMiB, DType::kFloat16},
                                       {kMiB, DType::kFloat32},
                                       {kMiB, DType::kFloat32},
                                       {kMiB, DType::kFloat16}};
  const auto b = compute_bucket_assignment_by_size(t, {kMiB, 2 * kMiB});
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].indices, (std::vector<std::size_t>{0}));
  EXPECT_EQ(b[1].indices, (std::vector<std::size_t>{1}));
  EXPECT_EQ(b[2].indices, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(b[3].indices, (std::vector<std::size_t>{4}));
}

// With indices (a rebuilt plan, unsorted) the buckets left open at the end come in the order
// libstdc++'s unordered_map walks them: newest key first. Four Linear weights in ready order d
// (float64), c (float32), b (float64), a (float32): d and c each fill their dtype's 1 MiB first
// bucket; b and a are left over, float32's first. Real DDP (torch 1.13, gloo, two ranks, a comm
// hook recording bucket.parameters()) gave [d], [c], [a], [b] for this model.
TEST(BucketAssignment, LeftoverBucketsComeNewestDtypeFirstAsLibstdcxxWalksThem) {
  const std::vector<BucketTensor> t = {{2 * kMiB, DType::kFloat64},
                                       {2 * kMiB, DType::kFloat32},
                                       {kKiB, DType::kFloat64},
                                       {kKiB, DType::kFloat32}};
  const auto b = compute_bucket_assignment_by_size(t, {kMiB, 25 * kMiB}, {3, 2, 1, 0});
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].indices, (std::vector<std::size_t>{3}));
  EXPECT_EQ(b[1].indices, (std::vector<std::size_t>{2}));
  EXPECT_EQ(b[2].indices, (std::vector<std::size_t>{0}));  // float32's leftover: its key came second
  EXPECT_EQ(b[3].indices, (std::vector<std::size_t>{1}));
}

TEST(BucketAssignment, WithIndicesTheOrderIsKeptAndIndicesReported) {
  const auto b = compute_bucket_assignment_by_size({{kMiB}, {kMiB}, {10}}, {kMiB}, {7, 3, 5});
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].indices, (std::vector<std::size_t>{7}));
  EXPECT_EQ(b[1].indices, (std::vector<std::size_t>{3}));
  EXPECT_EQ(b[2].indices, (std::vector<std::size_t>{5}));
}

TEST(BucketPlan, IterationOneIsOneBucketOfAllGradients) {
  for (const char* name : {"resnet50", "gpt2", "vgg16", "bert-base"}) {
    const StepModel m = zoo(name);
    const BucketSchedule s = bucket_schedule(m, {});
    ASSERT_EQ(s.at(1).buckets.size(), 1u) << name;
    EXPECT_EQ(s.at(1).buckets[0].bytes, m.gradient_bytes()) << name;
    EXPECT_EQ(s.at(1).buckets[0].params, m.trainable()) << name;
  }
}

TEST(BucketPlan, IterationTwoFollowsTheGradientReadyOrder) {
  for (const char* name : {"resnet50", "gpt2", "vgg16"}) {
    const StepModel m = zoo(name);
    const BucketSchedule s = bucket_schedule(m, {});
    std::vector<std::size_t> flat;
    for (const Bucket& b : s.at(2).buckets) flat.insert(flat.end(), b.params.begin(), b.params.end());
    EXPECT_EQ(flat, ready_order(m)) << name;
    EXPECT_EQ(s.rebuild_iteration, 2);
    EXPECT_EQ(&s.at(7), &s.rebuilt);
  }
}

TEST(BucketPlan, ReadyOrderInsideALayer) {
  const StepModel m = zoo("gpt2");
  const std::vector<std::size_t> order = ready_order(m);
  auto name = [&](std::size_t i) { return m.params[order[i]].name; };
  // ln_f (LayerNorm: weight, bias), then the last block's mlp.c_proj (Linear: bias, weight).
  EXPECT_EQ(name(0), "transformer.ln_f.weight");
  EXPECT_EQ(name(1), "transformer.ln_f.bias");
  EXPECT_EQ(name(2), "transformer.h.11.mlp.c_proj.bias");
  EXPECT_EQ(name(3), "transformer.h.11.mlp.c_proj.weight");
}

TEST(BucketPlan, Gpt2TiedEmbeddingIsTheLastGradientAndClosesTheLastBucket) {
  const StepModel m = zoo("gpt2");
  const BucketSchedule s = bucket_schedule(m, {});
  const BucketPlan& p = s.at(2);
  const int wte = p.bucket_of[0];
  ASSERT_EQ(m.params[0].name, "transformer.wte.weight");
  ASSERT_EQ(m.params[1].name, "transformer.wpe.weight");
  // lm_head uses wte last, but the gradient is complete only after the embedding's backward:
  // it is behind every transformer block's gradients.
  for (std::size_t i = 0; i < m.params.size(); ++i) {
    if (m.params[i].name.rfind("transformer.h.", 0) == 0) {
      EXPECT_LE(p.bucket_of[i], wte) << m.params[i].name;
    }
  }
  // nanoGPT's model.py embeds tokens (wte) before positions (wpe): autograd runs the later
  // embedding's backward first, so wpe is ready before wte, and wte is the very last gradient.
  EXPECT_EQ(wte, static_cast<int>(p.buckets.size()) - 1);
  EXPECT_EQ(p.buckets.back().params.back(), 0u);
  EXPECT_EQ(ready_order(m).back(), 0u);
  const auto& last = p.buckets.back().params;
  EXPECT_EQ(last[last.size() - 2], 1u);
}

TEST(BucketPlan, TiedEmbeddingLeavesPositionsTrailingWhenPositionsAreEmbeddedFirst) {
  // build-nanogpt computes wpe(pos) before wte(idx): then wpe's gradient comes after wte's and
  // trails as the leftover bucket; wte closes the last bucket that reached the cap.
  StepModel m = zoo("gpt2");
  std::size_t wte_layer = m.layers.size(), wpe_layer = m.layers.size();
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    if (m.layers[i].name == "transformer.wte") wte_layer = i;
    if (m.layers[i].name == "transformer.wpe") wpe_layer = i;
  }
  ASSERT_LT(wte_layer, wpe_layer);
  ASSERT_LT(wpe_layer, m.layers.size());
  std::swap(m.layers[wte_layer], m.layers[wpe_layer]);
  const BucketSchedule s = bucket_schedule(m, {});
  const BucketPlan& p = s.at(2);
  const int wte = p.bucket_of[0];
  EXPECT_EQ(wte, static_cast<int>(p.buckets.size()) - 2);
  EXPECT_EQ(p.buckets.back().params, (std::vector<std::size_t>{1}));
  EXPECT_EQ(p.buckets[static_cast<std::size_t>(wte)].params.back(), 0u);
}

// Expected sizes below were computed by tests/core/bucket_plan_by_hand.py, an independent plain
// reading of PyTorch's algorithm over the zoo files (see its header).
struct HandCase {
  const char* model;
  std::optional<double> cap_mb;
  bool find_unused;
  std::vector<Bytes> bytes;  // steady-state plan
};

class BucketPlanByHand : public ::testing::TestWithParam<HandCase> {};

TEST_P(BucketPlanByHand, SteadyPlanMatchesTheHandComputation) {
  const HandCase& c = GetParam();
  BucketOptions o;
  o.bucket_cap_mb = c.cap_mb;
  o.find_unused_parameters = c.find_unused;
  const BucketSchedule s = bucket_schedule(zoo(c.model), o);
  EXPECT_EQ(sizes(s.at(3)), c.bytes);
  if (c.find_unused) {
    EXPECT_EQ(s.rebuild_iteration, 0);
    EXPECT_EQ(sizes(s.at(1)), c.bytes);  // find_unused_parameters: bucketed from iteration 1, never rebuilt
  }
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, BucketPlanByHand,
    ::testing::Values(
        HandCase{"resnet50",
                 5.0,
                 false,
                 {8196000, 13651968, 8409088, 9441280, 12603392, 13651968, 5519360, 5519360, 5525504, 6830080, 6574080,
                  5272576, 1033472}},
        HandCase{"resnet50", 50.0, false, {56512416, 45715712}},
        HandCase{"resnet50", std::nullopt, false, {8196000, 31502336, 26255360, 26550272, 9724160}},
        HandCase{"resnet50", std::nullopt, true, {12410784, 31502336, 29669376, 27022336, 1623296}},
        HandCase{"resnet50",
                 5.0,
                 true,
                 {4000, 12406784, 9441280, 8409088, 13651968, 12603392, 9441280, 6574080, 5519360, 6830080, 5525504,
                  6308864, 5512448}},
        HandCase{"gpt2", 50.0, false, {56702976, 56702976, 56702976, 56702976, 56702976, 56702976, 157541376}},
        HandCase{"gpt2",
                 std::nullopt,
                 false,
                 {9446400, 28351488, 28351488, 28351488, 28351488, 28351488, 28351488, 28351488, 28351488, 28351488,
                  28351488, 28351488, 176446464}},
        HandCase{"gpt2", 50.0, true, {9216, 56702976, 56702976, 56702976, 56702976, 56702976, 59845632, 154389504}},
        HandCase{"gpt2",
                 std::nullopt,
                 true,
                 {9216, 28351488, 28351488, 28351488, 28351488, 28351488, 28351488, 28351488, 28351488, 28351488,
                  28351488, 28351488, 31494144, 154389504}},
        HandCase{"vgg16",
                 5.0,
                 false,
                 {16388000, 67125248, 411058176, 9437184, 9439232, 9439232, 9439232, 9439232, 7081984, 4582656}},
        HandCase{"vgg16", 50.0, false, {83513248, 411058176, 54276096, 4582656}},
        HandCase{"vgg16", std::nullopt, false, {16388000, 67125248, 411058176, 28315648, 28320768, 2222336}},
        HandCase{"vgg16",
                 5.0,
                 true,
                 {4000, 16400384, 67125248, 411043840, 9439232, 9439232, 9439232, 9439232, 14158848, 6940928}},
        HandCase{"vgg16", std::nullopt, true, {16404384, 67125248, 411043840, 28317696, 28318720, 2220288}}));

TEST(BucketPlan, Gpt2WithCap5HasTheHandComputedBuckets) {
  BucketOptions o;
  o.bucket_cap_mb = 5.0;
  const std::vector<Bytes> got = sizes(bucket_schedule(zoo("gpt2"), o).at(2));
  // 12 blocks x 3 buckets of 9446400, 9449472, 9455616 bytes, then wpe (3145728) with wte
  // (154395648): wpe alone stays under the cap.
  ASSERT_EQ(got.size(), 37u);
  const std::vector<Bytes> block = {9446400, 9449472, 9455616};
  for (std::size_t i = 0; i < 36; ++i) EXPECT_EQ(got[i], block[i % 3]) << i;
  EXPECT_EQ(got[36], 157541376u);
}

TEST(BucketPlan, ExplicitCapDropsTheOneMibFirstBucketUnlessAsked) {
  BucketOptions o;
  o.bucket_cap_mb = 25.0;
  const StepModel m = zoo("gpt2");
  EXPECT_EQ(o.first_bucket_bytes(), 25 * kMiB);
  const std::vector<Bytes> explicit_cap = sizes(bucket_schedule(m, o).at(2));
  EXPECT_GE(explicit_cap[0], 25 * kMiB);
  o.first_bucket_mb = 1.0;  // PyTorch < 2.3 kept the 1 MiB first bucket
  EXPECT_EQ(sizes(bucket_schedule(m, o).at(2)), sizes(bucket_schedule(m, {}).at(2)));
}

// DDP(bucket_cap_mb=0): every tensor reaches the 0-byte limit, so each gradient is a bucket of its
// own once the buckets are rebuilt (iteration 1 still runs PyTorch's one constructed bucket).
TEST(BucketPlan, CapZeroIsOneBucketPerGradient) {
  BucketOptions o;
  o.bucket_cap_mb = 0.0;
  const StepModel m = zoo("resnet50");
  const auto schedule = bucket_schedule(m, o);
  EXPECT_EQ(schedule.at(1).buckets.size(), 1u);
  const BucketPlan& steady = schedule.at(2);
  ASSERT_EQ(steady.buckets.size(), m.trainable().size());
  for (const Bucket& b : steady.buckets) EXPECT_EQ(b.params.size(), 1u);
}

// A first bucket of 0 bytes closes with its first gradient; the rest keep the cap.
TEST(BucketPlan, FirstBucketZeroHoldsOneGradient) {
  BucketOptions o;
  o.bucket_cap_mb = 25.0;
  o.first_bucket_mb = 0.0;
  const StepModel m = zoo("resnet50");
  const auto schedule = bucket_schedule(m, o);
  const BucketPlan& steady = schedule.at(2);
  ASSERT_GE(steady.buckets.size(), 2u);
  EXPECT_EQ(steady.buckets.front().params.size(), 1u);
  o.first_bucket_mb = 25.0;
  const auto schedule25 = bucket_schedule(m, o);
  const BucketPlan& same_cap = schedule25.at(2);
  // The gradients after the first are bucketed under the same 25 MiB cap either way.
  EXPECT_GT(same_cap.buckets.front().params.size(), 1u);
}

TEST(BucketPlan, LastBucketCapPutsTheSmallBucketLast) {
  BucketOptions o;
  o.last_bucket_cap = true;
  const StepModel m = zoo("resnet50");
  const BucketSchedule s = bucket_schedule(m, o);
  const BucketPlan& p = s.at(2);
  // Built from the reversed ready order, then the bucket list reversed back (not the parameters
  // inside a bucket): the 1 MiB-limited bucket is last and opens with the last gradient to be
  // ready (conv1, the first layer).
  const Bucket& last = p.buckets.back();
  EXPECT_EQ(last.size_limit, kMiB);
  EXPECT_EQ(m.params[last.params.front()].name, "conv1.weight");
  for (std::size_t b = 0; b + 1 < p.buckets.size(); ++b) EXPECT_EQ(p.buckets[b].size_limit, 25 * kMiB) << b;
  std::vector<std::size_t> flat;
  for (const Bucket& b : p.buckets) flat.insert(flat.end(), b.params.rbegin(), b.params.rend());
  EXPECT_EQ(flat, ready_order(m));
}

TEST(BucketPlan, StaticGraphRebuildsOneIterationLater) {
  BucketOptions o;
  o.static_graph = true;
  o.find_unused_parameters = true;  // static graph wins: one bucket, then a rebuild
  const BucketSchedule s = bucket_schedule(zoo("resnet50"), o);
  EXPECT_EQ(s.rebuild_iteration, 3);
  EXPECT_EQ(s.at(2).buckets.size(), 1u);
  EXPECT_EQ(sizes(s.at(3)), sizes(bucket_schedule(zoo("resnet50"), {}).at(2)));
}

TEST(BucketPlan, FrozenParametersAreNotBucketed) {
  StepModel m = zoo("resnet18");
  m.params[0].requires_grad = false;  // conv1.weight frozen
  const BucketSchedule s = bucket_schedule(m, {});
  EXPECT_EQ(s.at(1).bucket_of[0], -1);
  EXPECT_EQ(s.at(2).bucket_of[0], -1);
  EXPECT_EQ(s.at(1).buckets[0].bytes, m.gradient_bytes());
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

TEST(BucketPlan, EveryZooModelAndOptionPlansEveryGradientOnce) {
  for (const std::string& name : zoo_model_names()) {
    const StepModel m = to_step_model(load_model(name), Precision::kBF16, std::nullopt);
    for (std::optional<double> cap : {std::optional<double>(), std::optional<double>(0.0), std::optional<double>(5.0),
                                      std::optional<double>(100.0)}) {
      for (int flags = 0; flags < 8; ++flags) {
        BucketOptions o;
        o.bucket_cap_mb = cap;
        o.find_unused_parameters = (flags & 1) != 0;
        o.static_graph = (flags & 2) != 0;
        o.last_bucket_cap = (flags & 4) != 0;
        const BucketSchedule s = bucket_schedule(m, o);
        for (int it = 1; it <= 3; ++it) {
          Bytes total = 0;
          std::size_t params = 0;
          for (const Bucket& b : s.at(it).buckets) {
            total += b.bytes;
            params += b.params.size();
            EXPECT_FALSE(b.params.empty());
          }
          EXPECT_EQ(total, m.gradient_bytes()) << name << " flags " << flags;
          EXPECT_EQ(params, m.trainable().size()) << name << " flags " << flags;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

TEST(BucketPlan, PytorchVersionRules) {
  const StepModel m = zoo("resnet50");
  BucketOptions o;
  o.bucket_cap_mb = 5.0;
  // An explicit cap caps the first rebuilt bucket from 2.3; before, it stays 1 MiB.
  o.pytorch = {2, 3};
  EXPECT_EQ(o.first_bucket_bytes(), 5 * kMiB);
  o.pytorch = {2, 2};
  EXPECT_EQ(o.first_bucket_bytes(), kMiB);
  // Iteration 1 is one bucket of everything from 1.12 (pytorch/pytorch#72843); before, the
  // constructed plan is [1 MiB, cap] as with find_unused_parameters.
  o.pytorch = {1, 12};
  EXPECT_EQ(bucket_schedule(m, o).at(1).buckets.size(), 1u);
  o.pytorch = {1, 11};
  BucketOptions unused = o;
  unused.find_unused_parameters = true;
  unused.pytorch = kNewestPytorch;
  unused.first_bucket_mb = 1.0;
  EXPECT_EQ(sizes(bucket_schedule(m, o).at(1)), sizes(bucket_schedule(m, unused).at(1)));
  EXPECT_GT(bucket_schedule(m, o).at(1).buckets.size(), 1u);
  // Buckets are rebuilt from the gradient-ready order from 1.6 (pytorch/pytorch#35137); 1.5 keeps
  // the constructed plan in every iteration.
  o.pytorch = {1, 6};
  const BucketSchedule rebuilt = bucket_schedule(m, o);
  EXPECT_EQ(rebuilt.rebuild_iteration, 2);
  EXPECT_NE(sizes(rebuilt.at(2)), sizes(rebuilt.at(1)));
  o.pytorch = {1, 5};
  const BucketSchedule kept = bucket_schedule(m, o);
  EXPECT_EQ(kept.rebuild_iteration, 0);
  EXPECT_EQ(sizes(kept.at(5)), sizes(kept.at(1)));
  EXPECT_EQ(sizes(kept.at(1)), sizes(rebuilt.at(1)));
  EXPECT_EQ(parse_pytorch_version("1.13.0a0").text(), "1.13");
  EXPECT_EQ(parse_pytorch_version("2.4.1+cu121").text(), "2.4");
  EXPECT_THROW(parse_pytorch_version("1.3"), ConfigError);
  EXPECT_THROW(parse_pytorch_version("2"), ConfigError);
  EXPECT_THROW(parse_pytorch_version("2.x"), ConfigError);
  // After the newest release modelled: refused, not read as the newest.
  EXPECT_EQ(parse_pytorch_version("2.11.0+cu130").text(), "2.11");
  try {
    (void)parse_pytorch_version("3.5");
    ADD_FAILURE() << "3.5 accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "pytorch version \"3.5\": gradsync knows the rules of PyTorch 1.4 to 2.11; give 2.11 for a later "
                 "release");
  }
  EXPECT_THROW(parse_pytorch_version("2.12"), ConfigError);
}

}  // namespace
}  // namespace gradsync
