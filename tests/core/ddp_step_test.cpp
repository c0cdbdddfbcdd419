// ddp_step_test.cpp: the DDP step driver and the Reducer on the recording backend.
#include "core/ddp_step.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include "core/called_group.hpp"
#include "core/error.hpp"
#include "core/metrics.hpp"
#include "models/model.hpp"
#include "models/step_costs.hpp"
#include "tests/core/ddp_run.hpp"
#include "tests/support/recording_backend.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace {

using namespace ddp_test;
using testing::FixedCostModel;
using testing::RecordedCall;
using testing::RecordingEngine;

TEST(DdpStep, IterationOneIsOneAllreduceOfAllGradientsThenBucketsInReadyOrder) {
  DdpRun r(linear_stack(4), cap_mb(1));
  r.go(3);
  const Bytes g = r.model.gradient_bytes();
  ASSERT_EQ(g, 4 * kMiB);
  const auto it1 = r.calls(1, "allreduce:");
  ASSERT_EQ(it1.size(), 1u);
  EXPECT_EQ(it1[0].name, "allreduce:bucket0");
  EXPECT_EQ(it1[0].bytes, g);
  for (int it : {2, 3}) {
    const auto ar = r.calls(it, "allreduce:");
    ASSERT_EQ(ar.size(), 4u) << it;
    EXPECT_EQ(r.bytes(it, "allreduce:"), g) << it;
    for (std::size_t b = 0; b < 4; ++b) EXPECT_EQ(ar[b].name, "allreduce:bucket" + std::to_string(b));
  }
  // The last layer's gradients are ready first: bucket 0 holds l3.
  EXPECT_EQ(r.step.reducer().plan().bucket_of[6], 0);
  EXPECT_EQ(r.step.reducer().plan().bucket_of[0], 3);
}

// clip_grad_norm_ before PyTorch 1.10 reads the GPU's coefficient in Python (`if clip_coef < 1:`):
// the host waits for the norm, then issues the scaling to an idle GPU, which starts it one launch
// later. From 1.10 the host has queued it while the GPU still worked: it runs right after the norm.
TEST(DdpStep, ClipGradNormBefore110WaitsForTheGpu) {
  for (bool syncs : {false, true}) {
    DdpStepOptions o = cap_mb(1);
    o.clip_grad_norm = true;
    o.clip_syncs = syncs;
    DdpRun r(linear_stack(4), o);
    r.costs.launch_s = 20e-6;
    r.go(2);
    const auto clip = r.calls(2, "clip_grad_norm");
    ASSERT_EQ(clip.size(), 2u);
    ASSERT_EQ(clip[0].name, "clip_grad_norm");
    ASSERT_EQ(clip[1].name, "clip_grad_norm:scale");
    EXPECT_DOUBLE_EQ(clip[1].start_s, clip[0].end_s + (syncs ? r.costs.launch_s : 0.0)) << syncs;
  }
}

TEST(DdpStep, ReducerPlanIsTheBucketScheduleOfEachIteration) {
  for (bool static_graph : {false, true}) {
    DdpStepOptions o = cap_mb(1);
    o.ddp.buckets.static_graph = static_graph;
    DdpRun r(linear_stack(4), o);
    const BucketSchedule s = bucket_schedule(r.model, o.ddp.buckets);
    r.step.construct();
    for (int it = 1; it <= 4; ++it) {
      r.step.run_iteration(it);
      EXPECT_EQ(r.calls(it, "allreduce:bucket").size(), s.at(it).buckets.size()) << it << " static " << static_graph;
    }
    EXPECT_EQ(r.step.reducer().plan().bucket_of, s.rebuilt.bucket_of);
  }
}

TEST(DdpStep, RebuildCostsTwoSmallBlockingBroadcastsInIterationTwoOnly) {
  DdpRun r(linear_stack(4), cap_mb(1));
  r.go(3);
  EXPECT_TRUE(r.calls(1, "broadcast:bucket").empty());
  const auto b = r.calls(2, "broadcast:bucket");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].name, "broadcast:bucket_indices");
  EXPECT_EQ(b[0].bytes, 4u * (8 + 1));  // int32 per parameter, plus the bucket count
  EXPECT_EQ(b[1].name, "broadcast:bucket_sizes");
  EXPECT_EQ(b[1].bytes, 4u * 4);  // int32 per bucket
  EXPECT_TRUE(r.calls(3, "broadcast:bucket").empty());
  // Blocking: the first forward kernel of iteration 2 starts after the second broadcast ends.
  EXPECT_GE(r.calls(2, "fwd:l0").front().start_s, b[1].end_s);
}

TEST(DdpStep, NoSyncMicroStepsCopyAndCommunicateNothing) {
  DdpStepOptions o = cap_mb(1);
  o.grad_accum = 4;
  DdpRun r(linear_stack(4), o);
  r.go(3);
  for (int it = 1; it <= 3; ++it) {
    EXPECT_EQ(r.calls(it, "fwd:l3").size(), 4u) << it;    // every micro-step runs forward
    EXPECT_EQ(r.calls(it, "fwd:loss").size(), 4u) << it;  // no loss layer: the training loop's
    EXPECT_EQ(r.calls(it, "copy_in:").size(), 8u) << it;  // one kernel per parameter, last micro-step only
    EXPECT_EQ(r.bytes(it, "allreduce:"), r.model.gradient_bytes()) << it;
    // Everything the Reducer does comes after the last micro-step's forward began.
    const auto fwd = r.calls(it, "fwd:l0");
    const double last_micro = fwd.back().start_s;
    for (const auto& c : r.calls(it, "copy_in:")) EXPECT_GE(c.start_s, last_micro);
    for (const auto& c : r.calls(it, "allreduce:")) EXPECT_GE(c.start_s, last_micro);
  }
  EXPECT_EQ(r.calls(3, "optimizer").size(), 1u);
}

// A later micro-step's AccumulateGrad adds into the gradients the earlier ones left, whatever
// zero_grad did: its backward is CostModel::backward_into, the first micro-step's backward.
TEST(DdpStep, LaterMicroStepsAddIntoTheGradients) {
  DdpStepOptions o;
  o.grad_accum = 2;
  DdpRun r(linear_stack(3), o);
  r.costs.into_s = 1e-3;
  r.go(2);
  const ComputeOp plain = r.costs.backward(1, 4);
  for (int it = 1; it <= 2; ++it) {
    const auto b = r.calls(it, "bwd:l1");  // micro-step 1 (no_sync), then 2 (synced)
    ASSERT_EQ(b.size(), 2u) << it;
    EXPECT_NEAR(b[0].end_s - b[0].start_s, plain.time_s, 1e-12) << it;
    EXPECT_NEAR(b[1].end_s - b[1].start_s, plain.time_s + 1e-3, 1e-12) << it;
  }
  DdpRun one(linear_stack(3), DdpStepOptions{});
  one.costs.into_s = 1e-3;
  one.go(1);
  const auto b = one.calls(1, "bwd:l1");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NEAR(b[0].end_s - b[0].start_s, plain.time_s, 1e-12);
}

TEST(DdpStep, BufferBroadcastOnlyInForwardsThatFollowASyncedOne) {
  StepModel m = linear_stack(2);
  m.buffers.push_back({"bn.running_mean", 1024, DType::kFloat32});
  m.buffers.push_back({"bn.num_batches_tracked", 1, DType::kInt64});
  DdpStepOptions o;
  o.grad_accum = 3;
  DdpRun r(m, o);
  r.go(2);
  for (int it = 1; it <= 2; ++it) {
    // Two dtypes: two buckets, broadcast in the first micro-step only.
    const auto b = r.collectives(it, "broadcast:buffers");
    ASSERT_EQ(b.size(), 2u) << it;
    EXPECT_EQ(b[0].bytes + b[1].bytes, r.model.buffer_bytes());
    EXPECT_LT(b[1].end_s, r.calls(it, "fwd:l0")[1].start_s);
  }
  o.ddp.broadcast_buffers = false;
  DdpRun quiet(m, o);
  quiet.go(2);
  EXPECT_TRUE(quiet.collectives(1, "broadcast:buffers").empty());
}

TEST(DdpStep, ClipGradNormRunsOnceAfterTheReductionAndBeforeTheOptimizer) {
  DdpStepOptions o;
  o.clip_grad_norm = true;
  DdpRun r(linear_stack(3), o);
  r.go(2);
  for (int it = 1; it <= 2; ++it) {
    const auto clip = r.calls(it, "clip_grad_norm");  // the norm, then the scaling
    ASSERT_EQ(clip.size(), 2u) << it;
    EXPECT_EQ(clip[1].name, "clip_grad_norm:scale");
    const auto opt = r.calls(it, "optimizer");
    ASSERT_EQ(opt.size(), 1u);
    EXPECT_DOUBLE_EQ(clip[0].end_s, clip[1].start_s);
    EXPECT_DOUBLE_EQ(clip[1].end_s, opt[0].start_s);
    EXPECT_DOUBLE_EQ(clip[0].end_s - clip[0].start_s, 0.5e-3);
    EXPECT_DOUBLE_EQ(clip[1].end_s - clip[1].start_s, 0.25e-3);
    const auto buckets = r.calls(it, "allreduce:bucket");
    ASSERT_FALSE(buckets.empty());
    for (const RecordedCall& c : buckets) EXPECT_LE(c.end_s, clip[0].start_s);
  }
  DdpRun plain(linear_stack(3), DdpStepOptions{});
  plain.go(1);
  EXPECT_TRUE(plain.calls(1, "clip_grad_norm").empty());
}

TEST(DdpStep, AllreduceAfterBackwardLaunchesEveryBucketOnceBackwardEnds) {
  DdpStepOptions o = cap_mb(0.001);  // a bucket per layer
  o.ddp.allreduce_after_backward = true;
  DdpRun r(linear_stack(4), o);
  r.go(3);
  const auto buckets = r.calls(3, "allreduce:bucket");
  ASSERT_GE(buckets.size(), 3u);
  double backward_end = 0;
  for (const RecordedCall& c : r.calls(3, "bwd:")) backward_end = std::max(backward_end, c.end_s);
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    EXPECT_GE(buckets[i].start_s, backward_end) << i;  // nothing overlaps backward
    if (i > 0) {
      EXPECT_GE(buckets[i].start_s, buckets[i - 1].start_s) << i;
    }
  }
  // Without it, the first bucket starts while backward still runs.
  DdpRun overlapped(linear_stack(4), cap_mb(0.001));
  overlapped.go(3);
  double end2 = 0;
  for (const RecordedCall& c : overlapped.calls(3, "bwd:")) end2 = std::max(end2, c.end_s);
  EXPECT_LT(overlapped.calls(3, "allreduce:bucket").front().start_s, end2);
}

TEST(DdpStep, ConstructionVerifiesShapesAndBroadcastsModuleStates) {
  StepModel m = linear_stack(2);
  m.buffers.push_back({"bn.running_mean", 1024, DType::kFloat32});
  DdpRun r(m, {});
  r.go(1);
  const auto ag = r.calls(0, "allgather:param_count");
  ASSERT_EQ(ag.size(), 1u);
  EXPECT_EQ(ag[0].bytes, 8u);
  // dims + sizes + strides per parameter, int64: (1 + 2 + 2) + (1 + 1 + 1) per layer.
  EXPECT_EQ(r.bytes(0, "broadcast:param_shapes"), 8u * 2 * (5 + 3));
  EXPECT_EQ(r.bytes(0, "broadcast:module_states"), r.model.parameter_bytes() + r.model.buffer_bytes());
}

TEST(DdpStep, BucketsLaunchStrictlyInIndexOrder) {
  // Parameters registered last-layer-first: the constructed (reversed) bucket 0 holds l0, whose
  // gradients are ready last. find_unused_parameters keeps the constructed buckets.
  DdpStepOptions o = cap_mb(1);
  o.ddp.buckets.find_unused_parameters = true;
  DdpRun r(linear_stack(4, /*reversed=*/true), o);
  r.go(2);
  for (int it = 1; it <= 2; ++it) {
    const auto ar = r.calls(it, "allreduce:bucket");
    ASSERT_EQ(ar.size(), 4u);
    // Bucket 0 is filled by l0's copies, the last of backward; no bucket launches before it.
    double bucket0_filled = 0;
    for (const auto& c : r.calls(it, "copy_in:"))
      if (c.bucket == 0) bucket0_filled = std::max(bucket0_filled, c.end_s);
    for (const auto& c : r.calls(it, "copy_in:")) EXPECT_LE(c.end_s, bucket0_filled) << c.name;
    for (std::size_t b = 0; b < ar.size(); ++b) {
      EXPECT_EQ(ar[b].name, "allreduce:bucket" + std::to_string(b));
      EXPECT_GE(ar[b].start_s, bucket0_filled) << ar[b].name;
    }
    // The used-parameter map follows the last bucket.
    const auto used = r.calls(it, "allreduce:used_map");
    ASSERT_EQ(used.size(), 1u);
    EXPECT_EQ(used[0].bytes, 4u * 8);
    EXPECT_GE(used[0].start_s, ar.back().end_s);
  }
}

TEST(DdpStep, AParameterMarkedReadyTwiceRaisesPyTorchsError) {
  const StepModel m = linear_stack(2);
  FixedCostModel costs(m, 1e-4);
  RecordingEngine e(1, 4);
  Reducer red(m, {}, e.device(0), e.ddp_group(), e.host(), costs);
  red.prepare_for_forward(true);
  red.prepare_for_backward();
  red.autograd_hook(3);
  try {
    red.autograd_hook(3);
    FAIL() << "no error";
  } catch (const RuntimeError& err) {
    const std::string what = err.what();
    EXPECT_EQ(what.rfind("Expected to mark a variable ready only once.", 0), 0u) << what;
    EXPECT_NE(what.find("Parameter at index 3 with name l1.bias has been marked as ready twice"), std::string::npos)
        << what;
  }
}

TEST(DdpStep, AnUnusedParameterWithoutFindUnusedParametersFailsTheNextIteration) {
  StepModel m = linear_stack(2);
  m.params.push_back({"head.weight", {16, 16}});
  m.params.back().unused = true;
  DdpRun r(m, {});
  r.step.construct();
  r.step.run_iteration(1);
  EXPECT_TRUE(r.calls(1, "allreduce:bucket").empty());  // the one bucket never filled
  try {
    r.step.run_iteration(2);
    FAIL() << "no error";
  } catch (const RuntimeError& err) {
    const std::string what = err.what();
    // PyTorch's words, said of which model and when (compare printed them bare).
    EXPECT_EQ(what.rfind(fmt::format("model {}: DDP raises at iteration 2: Expected to have finished reduction in the "
                                     "prior iteration",
                                     m.name),
                         0),
              0u)
        << what;
    EXPECT_NE(what.find("4 (head.weight)"), std::string::npos) << what;
  }
}

TEST(DdpStep, FindUnusedParametersTraversesTheGraphAndReducesEverything) {
  StepModel m = linear_stack(2);
  m.params.push_back({"head.weight", {16, 16}});
  m.params.back().unused = true;
  DdpStepOptions o;
  o.ddp.buckets.find_unused_parameters = true;
  DdpRun r(m, o);
  r.costs.host_.graph_node_s = 1e-6;
  r.go(3);
  for (int it = 1; it <= 3; ++it) {
    EXPECT_EQ(r.bytes(it, "allreduce:bucket"), m.gradient_bytes()) << it;
    EXPECT_EQ(r.bytes(it, "allreduce:used_map"), 4u * 5) << it;
    EXPECT_EQ(r.calls(it, "zero:head.weight").size(), 1u) << it;
    EXPECT_TRUE(r.calls(it, "copy_out:head.weight").empty()) << it;
    const auto walk = r.calls(it, "ddp:find_unused");
    ASSERT_EQ(walk.size(), 1u);
    // One node per forward kernel (2 layers) and per parameter (5).
    EXPECT_NEAR(walk[0].end_s - walk[0].start_s, 7 * 1e-6, 1e-15);
  }
  EXPECT_FALSE(r.step.reducer().rebuilt());
}

TEST(DdpStep, GradientAsBucketViewDividesInPlaceAndCopiesNothingOut) {
  DdpStepOptions o = cap_mb(1);
  o.ddp.gradient_as_bucket_view = true;
  DdpRun r(linear_stack(4), o);
  r.go(3);
  EXPECT_EQ(r.calls(1, "copy_in:").size(), 8u);  // the first backward points .grad at the bucket
  for (int it = 1; it <= 3; ++it) EXPECT_TRUE(r.calls(it, "copy_out:").empty());
  for (int it = 2; it <= 3; ++it) {
    EXPECT_TRUE(r.calls(it, "copy_in:").empty());
    EXPECT_EQ(r.calls(it, "div:").size(), 8u);
  }
  DdpRun plain(linear_stack(4), cap_mb(1));
  plain.go(2);
  EXPECT_EQ(plain.calls(2, "copy_out:").size(), 8u);
}

// Before PyTorch 1.6 the Reducer copied each gradient as it was and divided the whole bucket once
// its last gradient was in (replica.contents.div_ at v1.4.0): one kernel per bucket, over its
// bytes, before the bucket's allreduce; from 1.6 the division is in each gradient's copy.
TEST(DdpStep, BeforePytorch16EachFullBucketIsDividedOnceBeforeItsAllreduce) {
  for (const char* version : {"1.4", "1.5", "1.6"}) {
    DdpStepOptions o = cap_mb(1);
    o.ddp.buckets.pytorch = parse_pytorch_version(version);
    DdpRun r(linear_stack(4), o);
    r.go(3);
    for (int it = 1; it <= 3; ++it) {
      const auto divs = r.calls(it, "div:bucket");
      const auto reductions = r.collectives(it, "allreduce:bucket");
      EXPECT_EQ(r.calls(it, "copy_in:").size(), 8u) << version;
      if (parse_pytorch_version(version).at_least(1, 6)) {
        EXPECT_TRUE(divs.empty()) << version;
        continue;
      }
      EXPECT_FALSE(divs.empty()) << version;
      ASSERT_EQ(divs.size(), reductions.size()) << version << " iteration " << it;
      for (std::size_t b = 0; b < divs.size(); ++b) {
        EXPECT_EQ(divs[b].bucket, reductions[b].bucket);
        EXPECT_EQ(divs[b].bytes, 2 * reductions[b].bytes);  // read and written
        EXPECT_LE(divs[b].end_s, reductions[b].start_s);    // the allreduce waits for it
      }
    }
  }
}

TEST(DdpStep, IterationOneDoesNotOverlapAndAComputeBoundSteadyStepDoes) {
  // 1 ms per sample per layer forward: backward is long against 4 MiB of allreduce.
  DdpRun r(linear_stack(4), cap_mb(1), 8, 1e-3);
  r.go(3);
  const auto m = iteration_metrics(r.engine.trace(), 0);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_GT(m[0].communication_s, 0);
  EXPECT_DOUBLE_EQ(m[0].overlap_s, 0);
  EXPECT_DOUBLE_EQ(m[0].exposed_communication_s, m[0].communication_s);
  EXPECT_GT(m[2].overlap, 0.5);
  EXPECT_LT(m[2].exposed_communication_s, m[2].communication_s);
  EXPECT_LT(m[2].time_s, m[0].time_s);
}

TEST(DdpStep, TraceHasTheDesignsEventNames) {
  DdpRun r(linear_stack(2), cap_mb(1));
  r.go(2);
  std::map<std::string, int> names;
  for (const TraceEvent& e : r.engine.trace().events)
    if (e.iteration == 2) ++names[e.name];
  for (const char* n : {"fwd:l0", "fwd:l1", "bwd:l1", "bwd:l0", "copy_in:l1.bias", "allreduce:bucket0",
                        "allreduce:bucket1", "copy_out:l0.weight", "optimizer", "iteration:2"})
    EXPECT_EQ(names[n], 1) << n;
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

using namespace ddp_test;

// Every collective first costs the host its calls (core/called_group.hpp): one host record of
// exactly call_s per collective, named after it, ending before the collective is issued; and with
// layers and collectives far shorter than the calls, the step grows by the calls' time.
TEST(DdpStep, EveryCollectivePaysItsHostCallsFirst) {
  const StepModel m = linear_stack(4);
  double steady[2] = {0, 0};
  for (int with_calls = 0; with_calls < 2; ++with_calls) {
    FixedCostModel costs(m, 1e-9);
    testing::RecordingConfig instant;  // collectives take no time: the host's calls are the path
    instant.collective_latency_s = 0;
    instant.collective_bw_Bps = 1e30;
    RecordingEngine e(1, 8, instant);
    CalledGroup g(e.ddp_group(), e.host(), with_calls ? 20e-6 : 0.0);
    DdpStep step(m, costs, cap_mb(1), 4, e.host(), e.device(0), g);
    step.construct();
    for (int it = 1; it <= 3; ++it) step.run_iteration(it);
    std::map<std::string, std::vector<RecordedCall>> calls;
    int collectives = 0;
    for (const RecordedCall& c : e.calls()) {
      if (c.kind == RecordedCall::Kind::kHost && c.name.rfind("call:", 0) == 0) calls[c.name].push_back(c);
    }
    for (const RecordedCall& c : e.calls()) {
      if (c.kind != RecordedCall::Kind::kCollective) continue;
      ++collectives;
      if (!with_calls) continue;
      auto& mine = calls[call_event(c.name)];
      ASSERT_FALSE(mine.empty()) << c.name;
      const RecordedCall call = mine.front();
      mine.erase(mine.begin());
      EXPECT_NEAR(call.end_s - call.start_s, 20e-6, 1e-15) << c.name;
      EXPECT_GE(c.start_s, call.end_s - 1e-15) << c.name;
    }
    EXPECT_GT(collectives, 10);
    if (!with_calls) {
      EXPECT_TRUE(calls.empty());
    }
    const auto mt = iteration_metrics(e.trace(), 0);
    steady[with_calls] = mt.back().time_s;
  }
  // Iteration 3 issues 4 bucket allreduces (1 MiB each), one after another on the host's path:
  // the step grows by their 80 us, less what of the first overlaps device work already queued
  // (71.5 us here).
  EXPECT_GT(steady[1] - steady[0], 3 * 20e-6);
  EXPECT_LE(steady[1] - steady[0], 4 * 20e-6 + 1e-12);
}

// x.to(device) on the current stream: no copy for a batch already on the GPU; from pinned memory
// the host queues it and launches on (the first layer starts the moment the copy ends); from
// pageable memory the host waits for it, then launches the first layer.
TEST(DdpStep, InputLocationDecidesTheCopyAndWhetherTheHostWaitsForIt) {
  std::map<InputLocation, double> first_layer_after_copy;
  for (InputLocation where : {InputLocation::kDevice, InputLocation::kPinned, InputLocation::kPageable}) {
    DdpStepOptions o;
    o.input = where;
    StepModel m = linear_stack(4);
    m.input_bytes_per_sample = 4 << 20;  // a 16 MiB batch: 671 us at 25 GB/s, far longer than a launch
    DdpRun r(m, o);
    r.costs.launch_s = 20e-6;
    r.go(2);
    const auto h2d = r.calls(2, "h2d:input");
    if (where == InputLocation::kDevice) {
      EXPECT_TRUE(h2d.empty());
      continue;
    }
    ASSERT_EQ(h2d.size(), 1u);
    EXPECT_EQ(h2d[0].kind, RecordedCall::Kind::kHostToDevice);
    EXPECT_EQ(h2d[0].stream, Stream::kCompute);
    EXPECT_EQ(h2d[0].bytes, Bytes{16} << 20);
    const auto fwd = r.calls(2, "fwd:l0");
    ASSERT_EQ(fwd.size(), 1u);
    first_layer_after_copy[where] = fwd[0].start_s - h2d[0].end_s;
  }
  EXPECT_DOUBLE_EQ(first_layer_after_copy[InputLocation::kPinned], 0.0);
  EXPECT_NEAR(first_layer_after_copy[InputLocation::kPageable], 20e-6, 1e-12);
}

TEST(DdpStep, Gpt2WithRooflineCostsOverlapsOnceBucketsAreRebuilt) {
  const Model model = load_model("gpt2");
  const StepModel m = to_step_model(model, Precision::kBF16, 1024);
  ComputeContext ctx;
  ctx.gpu = &gpu_spec("a100");
  ctx.precision = Precision::kBF16;
  ctx.seq_len = 1024;
  const RooflineCostModel costs(model, ctx, Optimizer::kAdamW);
  testing::RecordingEngine e(1, 8);
  DdpStep step(m, costs, {}, 16, e.host(), e.device(0), e.ddp_group());
  step.construct();
  for (int it = 1; it <= 3; ++it) step.run_iteration(it);
  const auto mt = iteration_metrics(e.trace(), 0);
  ASSERT_EQ(mt.size(), 3u);
  // Iteration 1's one bucket is reduced after backward: only the input's copy to the GPU may
  // overlap compute (the flattening of nanoGPT's causal-mask buffer before its broadcast).
  double h2d = 0;
  for (const TraceEvent& ev : e.trace().events)
    if (ev.rank == 0 && ev.iteration == 1 && ev.name == "h2d:input") h2d += ev.end_s - ev.start_s;
  EXPECT_LE(mt[0].overlap_s, h2d + 1e-12);
  EXPECT_GT(mt[2].overlap, 0.5);
  EXPECT_LT(mt[2].time_s, mt[0].time_s);
  EXPECT_EQ(step.reducer().plan().buckets.size(), 13u);  // tests/core/bucket_plan_by_hand.py
}

}  // namespace
}  // namespace gradsync
