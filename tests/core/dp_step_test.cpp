// dp_step_test.cpp: DataParallel's nine phases on the recording backend, PyTorch's two grouping
// rules, and the metrics of a trace.
#include "core/dp_step.hpp"

#include <gtest/gtest.h>

#include "core/coalesce.hpp"
#include "core/error.hpp"
#include "core/metrics.hpp"
#include "models/model.hpp"
#include "models/step_costs.hpp"
#include "tests/support/recording_backend.hpp"

namespace gradsync {
namespace {

using testing::FixedCostModel;
using testing::RecordedCall;
using testing::RecordingEngine;
using Kind = RecordedCall::Kind;

struct DpRun {
  StepModel model;
  FixedCostModel costs;
  RecordingEngine engine;
  int replicas;
  DpStep step;

  DpRun(const char* zoo, int gpus, std::int64_t batch, DpStepOptions opts = {})
      : model(to_step_model(load_model(zoo), Precision::kBF16, std::nullopt)),
        costs(model, 1e-5),
        engine(gpus, 1),
        replicas(DpStep::replicas(batch, gpus)),
        step(model, costs, opts, batch, engine.host(), engine.devices(), engine.local_group(replicas)) {}

  std::vector<RecordedCall> calls(Kind kind, std::string_view name, int device = -2) const {
    std::vector<RecordedCall> out;
    for (const RecordedCall& c : engine.calls())
      if (c.kind == kind && c.name == name && (device == -2 || c.device == device)) out.push_back(c);
    return out;
  }
  Bytes bytes(Kind kind, std::string_view name, int device = -2) const {
    Bytes total = 0;
    for (const RecordedCall& c : calls(kind, name, device)) total += c.bytes;
    return total;
  }
};

TEST(Coalesce, BroadcastGroupsCloseOnceTheyReachTheLimit) {
  const std::vector<CoalesceTensor> t = {{6 * kMiB}, {6 * kMiB}, {1 * kMiB}, {10 * kMiB}, {1}};
  EXPECT_EQ(coalesce_reaching(t, 10 * kMiB), (Groups{{0, 1}, {2, 3}, {4}}));
}

TEST(Coalesce, ReduceChunksCloseBeforeTheyWouldExceedTheLimit) {
  const std::vector<CoalesceTensor> t = {{6 * kMiB}, {6 * kMiB}, {1 * kMiB}, {12 * kMiB}, {1}};
  // 6 + 6 would exceed: closed at {0}; {1, 2} = 7 MiB, then 12 MiB alone, then the rest.
  EXPECT_EQ(coalesce_before_exceeding(t, 10 * kMiB), (Groups{{0}, {1, 2}, {3}, {4}}));
  EXPECT_EQ(coalesce_before_exceeding({{10 * kMiB}, {1}}, 10 * kMiB), (Groups{{0}, {1}}));
}

TEST(Coalesce, GroupsArePerDtypeAndLeftoversInFirstSeenOrder) {
  const std::vector<CoalesceTensor> t = {
      {kMiB, DType::kInt64}, {kMiB, DType::kFloat32}, {10 * kMiB, DType::kFloat32}, {kMiB, DType::kInt64}};
  EXPECT_EQ(coalesce_reaching(t, 10 * kMiB), (Groups{{1, 2}, {0, 3}}));
  EXPECT_EQ(coalesce_before_exceeding(t, 10 * kMiB), (Groups{{1}, {0, 3}, {2}}));
}

// DataParallel's clip_grad_norm_ on GPU0 before PyTorch 1.10: the host waits for GPU0's norm, so
// the scaling starts one launch after it; from 1.10 it follows the norm at once.
TEST(DpStep, ClipGradNormBefore110WaitsForGpu0) {
  for (bool syncs : {false, true}) {
    DpStepOptions o;
    o.clip_grad_norm = true;
    o.clip_syncs = syncs;
    DpRun r("resnet18", 2, 16, o);
    r.costs.launch_s = 20e-6;
    r.step.run_iteration(1);
    const auto norm = r.calls(Kind::kCompute, "clip_grad_norm", 0);
    const auto scale = r.calls(Kind::kCompute, "clip_grad_norm:scale", 0);
    ASSERT_EQ(norm.size(), 1u);
    ASSERT_EQ(scale.size(), 1u);
    EXPECT_DOUBLE_EQ(scale[0].start_s, norm[0].end_s + (syncs ? r.costs.launch_s : 0.0)) << syncs;
  }
}

// GradScaler under DataParallel: the loss scaled on GPU0 before backward, the module's gradients
// unscaled there once, the host waiting for found_inf before the optimizer (core/grad_scaler.hpp).
TEST(DpStep, GradScalerRunsOnGpu0AndWaitsBeforeTheOptimizer) {
  DpStepOptions o;
  o.scaler = {true, false};
  DpRun r("resnet18", 2, 16, o);
  r.costs.launch_s = 20e-6;
  r.step.run_iteration(1);
  const auto scale = r.calls(Kind::kCompute, "grad_scaler:scale");
  const auto unscale = r.calls(Kind::kCompute, "grad_scaler:unscale");
  const auto opt = r.calls(Kind::kCompute, "optimizer");
  ASSERT_EQ(scale.size(), 1u);
  ASSERT_EQ(unscale.size(), 1u);
  ASSERT_EQ(opt.size(), 1u);
  EXPECT_EQ(scale[0].device, 0);
  EXPECT_EQ(unscale[0].device, 0);
  EXPECT_EQ(unscale[0].bytes, 2 * r.model.gradient_bytes());
  EXPECT_DOUBLE_EQ(opt[0].start_s, unscale[0].end_s + r.costs.launch_s);
  ASSERT_EQ(r.calls(Kind::kCompute, "grad_scaler:update", 0).size(), 1u);
  DpRun plain("resnet18", 2, 16);
  plain.step.run_iteration(1);
  EXPECT_TRUE(plain.calls(Kind::kCompute, "grad_scaler:unscale").empty());
}

TEST(DpStep, ChunksFollowTorchChunkAndFewerReplicasWorkWithASmallBatch) {
  EXPECT_EQ(DpStep::chunk_sizes(64, 8), (std::vector<std::int64_t>(8, 8)));
  EXPECT_EQ(DpStep::chunk_sizes(10, 8), (std::vector<std::int64_t>{2, 2, 2, 2, 2}));
  EXPECT_EQ(DpStep::chunk_sizes(3, 8), (std::vector<std::int64_t>{1, 1, 1}));
  EXPECT_EQ(DpStep::chunk_sizes(17, 4), (std::vector<std::int64_t>{5, 5, 5, 2}));
  EXPECT_EQ(DpStep::replicas(10, 8), 5);

  DpRun r("resnet18", 8, 3);
  r.step.run_iteration(1);
  for (const RecordedCall& c : r.engine.calls()) EXPECT_LT(c.device, 3) << c.name;
  EXPECT_EQ(r.calls(Kind::kCompute, "fwd:conv1").size(), 3u);
}

TEST(DpStep, MovesExactlySemanticsBytesThroughGpu0PerPhase) {
  for (const char* zoo : {"resnet50", "gpt2"}) {
    const int n = 8;
    const std::int64_t batch = 64;
    DpRun r(zoo, n, batch);
    r.step.run_iteration(1);
    const StepModel& m = r.model;
    const double x = m.input_bytes_per_sample * batch;
    const double y = m.output_bytes_per_sample * batch;
    // 1. Scatter: the batch to GPU0, then (n-1)/n of it out of GPU0.
    EXPECT_EQ(r.bytes(Kind::kHostToDevice, "h2d:input", 0), static_cast<Bytes>(x)) << zoo;
    EXPECT_EQ(r.bytes(Kind::kCopy, "dp:scatter", 0), static_cast<Bytes>(x * (n - 1) / n)) << zoo;
    // 2. Replicate: every parameter and buffer broadcast from GPU0, once.
    EXPECT_EQ(r.bytes(Kind::kCollective, "dp:replicate", 0), m.parameter_bytes() + m.buffer_bytes()) << zoo;
    for (const RecordedCall& c : r.calls(Kind::kCollective, "dp:replicate")) EXPECT_EQ(c.root, 0);
    // 4. Gather: (n-1)/n of the outputs into GPU0 (plus each replica's loss when inside).
    Bytes gathered = 0;
    for (const RecordedCall& c : r.calls(Kind::kCopy, "dp:gather")) {
      EXPECT_EQ(c.peer, 0);
      gathered += c.bytes;
    }
    const Bytes loss = m.loss_inside ? 4 * (n - 1) : 0;
    EXPECT_EQ(gathered, static_cast<Bytes>(y * (n - 1) / n) + loss) << zoo;
    // 6. Scatter of the output gradient: the logits' gradient, or only the losses' when inside.
    const Bytes grad = m.loss_inside ? 4 * (n - 1) : static_cast<Bytes>(y * (n - 1) / n);
    EXPECT_EQ(r.bytes(Kind::kCopy, "dp:scatter_grad", 0), grad) << zoo;
    // 8. Reduce: every gradient to GPU0, once.
    EXPECT_EQ(r.bytes(Kind::kCollective, "dp:reduce", 0), m.gradient_bytes()) << zoo;
    for (const RecordedCall& c : r.calls(Kind::kCollective, "dp:reduce")) EXPECT_EQ(c.root, 0);
  }
}

TEST(DpStep, ReplicateAndReduceUseTheirOwnTenMibRules) {
  DpRun r("gpt2", 4, 16);
  r.step.run_iteration(1);
  std::vector<CoalesceTensor> params;
  for (const ParamInfo& p : r.model.params) params.push_back({p.bytes(), p.dtype});
  const Groups bc = coalesce_reaching(params, kDataParallelBufferBytes);
  const Groups rd = coalesce_before_exceeding(params, kDataParallelBufferBytes);
  const auto b = r.calls(Kind::kCollective, "dp:replicate", 0);
  const auto d = r.calls(Kind::kCollective, "dp:reduce", 0);
  std::vector<CoalesceTensor> buffers;
  for (const BufferInfo& x : r.model.buffers) buffers.push_back({x.bytes(), x.dtype});
  ASSERT_EQ(b.size(), bc.size() + coalesce_reaching(buffers, kDataParallelBufferBytes).size());
  ASSERT_EQ(d.size(), rd.size());
  EXPECT_NE(bc.size(), rd.size());
  // wte (154 MB) reaches 10 MiB alone in both; after it the broadcast groups run over 10 MiB and
  // the reduce chunks stay under it.
  EXPECT_EQ(b[0].bytes, r.model.params[0].bytes());
  EXPECT_EQ(d[0].bytes, r.model.params[0].bytes());
  EXPECT_GE(b[1].bytes, kDataParallelBufferBytes);
  EXPECT_LE(d[1].bytes, kDataParallelBufferBytes);
  // Each group is flattened first: on GPU0 for a broadcast, on every GPU for a reduce.
  EXPECT_EQ(r.calls(Kind::kCompute, "dp:flatten", 0).size(), b.size() + d.size());
  EXPECT_EQ(r.calls(Kind::kCompute, "dp:flatten", 3).size(), d.size());
}

TEST(DpStep, LossAndOptimizerRunOnGpu0Only) {
  DpRun r("resnet50", 8, 64);
  r.step.run_iteration(1);
  const auto loss = r.calls(Kind::kCompute, "fwd:loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_EQ(loss[0].device, 0);
  // On the gathered logits of the global batch (FixedCostModel: bytes / 1 TB/s).
  EXPECT_EQ(loss[0].bytes, static_cast<Bytes>(2 * r.model.output_bytes_per_sample * 64));
  const auto opt = r.calls(Kind::kCompute, "optimizer");
  ASSERT_EQ(opt.size(), 1u);
  EXPECT_EQ(opt[0].device, 0);
  // Every replica computes its own chunk's layers.
  for (int d = 0; d < 8; ++d) EXPECT_EQ(r.calls(Kind::kCompute, "fwd:fc", d).size(), 1u) << d;
}

TEST(DpStep, GradientsStillThereAreAddedIntoOnGpu0AfterTheReduce) {
  // zero_grad(set_to_none=False): the module's gradients are zeros, not None, when the reduced
  // ones arrive, so AccumulateGrad adds each in place on GPU0 (read twice, written once).
  DpStepOptions opts;
  opts.accumulate_grads = true;
  DpRun r("resnet18", 4, 32, opts);
  r.step.run_iteration(1);
  const auto adds = r.calls(Kind::kCompute, "dp:accumulate_grad");
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds[0].device, 0);
  EXPECT_EQ(adds[0].bytes, 3 * r.model.gradient_bytes());
  double last_reduce = 0;
  for (const RecordedCall& c : r.calls(Kind::kCollective, "dp:reduce")) last_reduce = std::max(last_reduce, c.end_s);
  EXPECT_GE(adds[0].start_s, last_reduce);
  // With None (the default from PyTorch 2.0) the reduced tensors become the gradients.
  DpRun none("resnet18", 4, 32);
  none.step.run_iteration(1);
  EXPECT_TRUE(none.calls(Kind::kCompute, "dp:accumulate_grad").empty());
  // ... in the first micro-step of an accumulation; the later ones add into them.
  DpStepOptions accum;
  accum.grad_accum = 3;
  DpRun micro("resnet18", 4, 32, accum);
  micro.step.run_iteration(1);
  EXPECT_EQ(micro.calls(Kind::kCompute, "dp:accumulate_grad", 0).size(), 2u);
}

TEST(DpStep, ReduceStartsOnlyAfterEveryReplicasBackward) {
  DpRun r("resnet18", 4, 32);
  r.step.run_iteration(1);
  double last_backward = 0;
  for (const RecordedCall& c : r.engine.calls())
    if (c.name.rfind("bwd:", 0) == 0) last_backward = std::max(last_backward, c.end_s);
  for (const RecordedCall& c : r.calls(Kind::kCollective, "dp:reduce")) EXPECT_GE(c.start_s, last_backward);
}

TEST(DpStep, HostCopiesEveryModuleForEveryReplica) {
  DpRun r("resnet50", 8, 64);
  r.step.run_iteration(1);
  const auto rep = r.calls(Kind::kHost, "dp:replicate");
  ASSERT_EQ(rep.size(), 1u);
  EXPECT_NEAR(rep[0].end_s - rep[0].start_s, r.model.modules * 8 * r.costs.host().module_copy_s, 1e-12);
  EXPECT_EQ(r.calls(Kind::kHost, "dp:thread").size(), 8u);
  EXPECT_GT(r.model.modules, 150);  // resnet50 has 151 nn.Modules with the root
}

TEST(DpStep, ReplicaThreadsTakeTurnsForThePythonShareOfTheirLaunches) {
  DpRun r("resnet50", 4, 4);
  r.costs.launch_s = 8e-6;
  r.step.run_iteration(1);
  // Every replica's forward of every layer spends half its launch time in Python, under the GIL.
  const auto py = r.calls(Kind::kHost, "dp:python");
  const double share = r.costs.host().python_share;
  ASSERT_EQ(py.size(), 4 * r.model.layers.size());
  for (const RecordedCall& c : py) EXPECT_NEAR(c.end_s - c.start_s, share * 8e-6, 1e-15);
  // One replica alone has no threads to contend with: no GIL turns.
  DpRun one("resnet50", 1, 4);
  one.costs.launch_s = 8e-6;
  one.step.run_iteration(1);
  EXPECT_TRUE(one.calls(Kind::kHost, "dp:python").empty());
}

TEST(DpStep, GradientAccumulationReducesEveryMicroStepAndStepsOnce) {
  DpStepOptions o;
  o.grad_accum = 3;
  DpRun r("resnet18", 4, 32, o);
  r.step.run_iteration(1);
  EXPECT_EQ(r.bytes(Kind::kCollective, "dp:reduce", 0), 3 * r.model.gradient_bytes());
  EXPECT_EQ(r.bytes(Kind::kCollective, "dp:replicate", 0), 3 * (r.model.parameter_bytes() + r.model.buffer_bytes()));
  EXPECT_EQ(r.calls(Kind::kCompute, "optimizer").size(), 1u);
}

TEST(DpStep, InputsOnTheCpuAreScatteredStraightFromTheHost) {
  DpStepOptions o;
  o.input = DpInput::kCpu;
  DpRun r("resnet18", 4, 32, o);
  r.step.run_iteration(1);
  EXPECT_TRUE(r.calls(Kind::kCopy, "dp:scatter").empty());
  const auto h2d = r.calls(Kind::kHostToDevice, "dp:scatter");
  ASSERT_EQ(h2d.size(), 4u);
  for (const auto& c : h2d) EXPECT_EQ(c.bytes, static_cast<Bytes>(r.model.input_bytes_per_sample * 8));
}

// The global batch goes to GPU0 first (x.to(gpu0)) unless it is already there; from pageable
// memory the process's one host thread waits for the copy before it replicates the module.
TEST(DpStep, InputLocationDecidesTheCopyToGpu0AndWhetherTheHostWaits) {
  for (InputLocation where : {InputLocation::kDevice, InputLocation::kPinned, InputLocation::kPageable}) {
    DpStepOptions o;
    o.location = where;
    DpRun r("resnet18", 4, 32, o);
    r.step.run_iteration(1);
    const auto h2d = r.calls(Kind::kHostToDevice, "h2d:input");
    EXPECT_EQ(r.calls(Kind::kCopy, "dp:scatter").size(), 3u);  // GPU0 to GPUs 1-3 in every case
    if (where == InputLocation::kDevice) {
      EXPECT_TRUE(h2d.empty());
      continue;
    }
    ASSERT_EQ(h2d.size(), 1u);
    EXPECT_EQ(h2d[0].stream, Stream::kCompute);
    const auto replicate = r.calls(Kind::kHost, "dp:replicate");
    ASSERT_EQ(replicate.size(), 1u);
    if (where == InputLocation::kPageable) {
      EXPECT_GE(replicate[0].start_s, h2d[0].end_s);
    } else {
      EXPECT_LT(replicate[0].start_s, h2d[0].end_s);
    }
  }
}

TEST(DpStep, NothingOverlapsAndGpu0IsTheHub) {
  DpRun r("resnet18", 4, 32);
  r.step.run_iteration(1);
  const auto m0 = iteration_metrics(r.engine.trace(), 0);
  ASSERT_EQ(m0.size(), 1u);
  EXPECT_GT(m0[0].communication_s, 0);
  EXPECT_DOUBLE_EQ(m0[0].overlap_s, 0);  // on GPU0 DataParallel's phases run one after another
  // GPU0 is the hub: it sends every scatter and receives every gather; a replica only its own.
  Bytes through0 = 0, through3 = 0;
  for (const TraceEvent& e : r.engine.trace().events) {
    if (e.name != "dp:scatter" && e.name != "dp:gather") continue;
    if (e.rank == 0 || e.peer == 0) through0 += e.bytes;
    if (e.rank == 3 || e.peer == 3) through3 += e.bytes;
  }
  EXPECT_EQ(through0, 3 * through3);
}

TEST(Metrics, UnionsAndIntersectionsOfIntervals) {
  EXPECT_DOUBLE_EQ(union_length({{0, 2}, {1, 3}, {5, 6}}), 4);
  EXPECT_DOUBLE_EQ(union_length({}), 0);
  EXPECT_DOUBLE_EQ(intersection_length({{0, 2}, {4, 6}}, {{1, 5}}), 2);
  EXPECT_DOUBLE_EQ(intersection_length({{0, 1}}, {{1, 2}}), 0);
}

TEST(Metrics, IterationMetricsFromATrace) {
  Trace t;
  t.add({0, Stream::kHost, "iteration:1", 0, 10, 0, -1, 1, -1});
  t.add({0, Stream::kCompute, "bwd:a", 0, 6, 0, -1, 1, -1});
  t.add({0, Stream::kComm, "allreduce:bucket0", 4, 9, 0, 0, 1, -1});
  t.add({1, Stream::kComm, "allreduce:bucket0", 0, 10, 0, 0, 1, -1});  // another rank
  const auto m = iteration_metrics(t, 0);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_DOUBLE_EQ(m[0].time_s, 10);
  EXPECT_DOUBLE_EQ(m[0].compute_s, 6);
  EXPECT_DOUBLE_EQ(m[0].communication_s, 5);
  EXPECT_DOUBLE_EQ(m[0].overlap_s, 2);
  EXPECT_DOUBLE_EQ(m[0].exposed_communication_s, 3);
  EXPECT_DOUBLE_EQ(m[0].overlap, 0.4);
  // A comm hook's kernels on the comm stream (PowerSGD's products, the fp16 hook's decompress) are
  // compute: comm counts copies and collectives only, as real mode does.
  t.add({0, Stream::kComm, "powersgd:compute_q:bucket0", 9, 10, 0, 0, 1, -1});
  t.add({0, Stream::kComm, "decompress:bucket0", 6.5, 7, 0, 0, 1, -1});
  const auto h = iteration_metrics(t, 0);
  EXPECT_DOUBLE_EQ(h[0].communication_s, 5);
  EXPECT_DOUBLE_EQ(h[0].compute_s, 6 + 1 + 0.5);
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

TEST(DpStep, AnEmptyBatchIsAnError) {
  const StepModel m = to_step_model(load_model("resnet18"), Precision::kBF16, std::nullopt);
  testing::FixedCostModel costs(m, 1e-5);
  testing::RecordingEngine e(2, 1);
  try {
    DpStep step(m, costs, {}, 0, e.host(), e.devices(), e.local_group(1));
    FAIL() << "no error";
  } catch (const ConfigError& err) {
    EXPECT_STREQ(err.what(), "DataParallel: batch 0 must be >= 1");
  }
}

TEST(DpStep, AGroupThatDoesNotSpanTheReplicasIsAnError) {
  const StepModel m = to_step_model(load_model("resnet18"), Precision::kBF16, std::nullopt);
  testing::FixedCostModel costs(m, 1e-5);
  testing::RecordingEngine e(4, 1);
  try {
    DpStep step(m, costs, {}, 3, e.host(), e.devices(), e.local_group(4));
    FAIL() << "no error";
  } catch (const RuntimeError& err) {
    EXPECT_STREQ(err.what(), "DataParallel: the local group spans 4 devices, the batch of 3 needs 3");
  }
}

}  // namespace
}  // namespace gradsync
