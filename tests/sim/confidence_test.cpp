// confidence_test.cpp: a scenario's validation class, and the compiled-in table of its errors.
#include "sim/confidence.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "models/trace_import.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync::sim {
namespace {

Scenario on(const std::string& model, const std::string& topology, int gpus) {
  Scenario s;
  s.model = model;
  s.topology = topology;
  s.gpus = gpus;
  return s;
}

TEST(Confidence, StepClassNamesStrategyInterconnectAndKind) {
  EXPECT_EQ(step_class(on("gpt2", "dgx-a100", 8), Strategy::kDDP), "DDP, NVLink node, transformer");
  EXPECT_EQ(step_class(on("resnet50", "dgx1-v100", 8), Strategy::kDP), "DP, NVLink node, conv net");
  EXPECT_EQ(step_class(on("resnet50", "pcie-4gpu", 4), Strategy::kDDP), "DDP, PCIe node, conv net");
  EXPECT_EQ(step_class(on("gpt2", "2x-dgx-a100-hdr", 16), Strategy::kDDP), "DDP, multi-node, transformer");
  // One GPU: no communication, so one class whichever the strategy.
  EXPECT_EQ(step_class(on("gpt2", "dgx-a100", 1), Strategy::kDP), "one GPU, transformer");
  // A ViT has a convolution (its patch embedding) and attention: a transformer.
  EXPECT_EQ(step_class(on("vit-b-16", "dgx1-v100", 8), Strategy::kDDP), "DDP, NVLink node, transformer");
  // NCCL_P2P_DISABLE sends a node's rings through host memory: no longer an NVLink class.
  Scenario p2p_off = on("gpt2", "dgx-a100", 8);
  p2p_off.nccl_p2p_disable = true;
  EXPECT_EQ(step_class(p2p_off, Strategy::kDDP), "DDP, PCIe node, transformer");
  const StepClasses parts = step_classes(on("gpt2", "2x-dgx-a100-hdr", 16), Strategy::kDDP);
  EXPECT_EQ(parts.compute, "one GPU, transformer");
  EXPECT_EQ(parts.communication, "NCCL collectives, multi-node");
  EXPECT_TRUE(step_classes(on("gpt2", "dgx-a100", 1), Strategy::kDDP).communication.empty());
  // A calibration's measured times replace both models: none of the tables' classes, nor the parts'.
  Scenario calibrated = on("resnet18", "pcie-4gpu", 2);
  calibrated.calibration = "tests/fuzz/seeds/calibration/cpu-2ranks.yaml";
  calibrated.precision = "fp32";  // as its GEMMs were timed
  const StepClasses c = step_classes(calibrated, Strategy::kDDP);
  EXPECT_EQ(c.step, "DDP, calibrated");
  EXPECT_EQ(c.compute, c.step);
  EXPECT_TRUE(c.communication.empty());
  EXPECT_FALSE(class_confidence(c.step).has_value());
  EXPECT_EQ(step_class(calibrated, Strategy::kDP), "DP, calibrated");
  calibrated.gpus = 1;
  EXPECT_EQ(step_class(calibrated, Strategy::kDDP), "one GPU, calibrated");
}

// A model imported with its measured step: its compute is the measurement, of no class the
// tables score, while its communication is the network model's, scored as any other.
TEST(Confidence, AnImportedStepIsNoPredictionButItsCommunicationIs) {
  const char* trace = R"([
    {"name": "ProfilerStep#2", "ph": "X", "ts": 0, "dur": 1000, "tid": 1, "pid": "CPU functions"},
    {"name": "aten::linear", "ph": "X", "ts": 30, "dur": 300, "tid": 1},
    {"name": "autograd::engine::evaluate_function: AddmmBackward0", "ph": "X", "ts": 400, "dur": 200, "tid": 1},
    {"name": "Optimizer.step#SGD.step", "ph": "X", "ts": 750, "dur": 200, "tid": 1}
  ])";
  TraceImport opts;
  opts.model = "resnet18";
  opts.batch = 16;
  opts.split.gpu = &gpu_spec("v100");
  opts.split.precision = Precision::kFP32;
  const std::filesystem::path file = std::filesystem::path(::testing::TempDir()) / "confidence_imported.yaml";
  std::ofstream(file) << imported_model_text(read_profiler_trace(trace, "cpu.json"), opts);
  const StepClasses c = step_classes(on(file.string(), "dgx-a100", 8), Strategy::kDDP);
  EXPECT_EQ(c.step, "DDP, NVLink node, measured step");
  EXPECT_EQ(c.compute, "one GPU, measured step");
  EXPECT_EQ(c.communication, "NCCL collectives, NVLink node");
  EXPECT_FALSE(class_confidence(c.step).has_value());
  EXPECT_FALSE(class_confidence(c.compute).has_value());
  EXPECT_TRUE(class_confidence(c.communication).has_value());
  EXPECT_EQ(step_class(on(file.string(), "dgx-a100", 1), Strategy::kDDP), "one GPU, measured step");
  std::filesystem::remove(file);
}

TEST(Confidence, TheShippedTableHasTheDdpCasesOfPyTorchsBenchmark) {
  const auto c = class_confidence("DDP, NVLink node, conv net");
  ASSERT_TRUE(c.has_value());
  EXPECT_GE(c->cases, 8);
  EXPECT_EQ(c->cases, c->points) << "a step case is one measurement";
  EXPECT_GT(c->median_abs_error, 0);
  EXPECT_LE(c->median_abs_error, c->worst_abs_error);
  EXPECT_FALSE(c->worst_case.empty());
  const auto n = class_confidence("NCCL collectives, NVLink node");
  ASSERT_TRUE(n.has_value());
  EXPECT_GT(n->points, n->cases) << "an nccl-tests case scores several sizes";
  // ryujaehun's DataParallel steps on a DGX A100 (cases 32-40 of ddp_steps.yaml): the two four-GPU
  // steps are DP steps, the one-GPU ones are one GPU's.
  const auto dp = class_confidence("DP, NVLink node, conv net");
  ASSERT_TRUE(dp.has_value());
  EXPECT_EQ(dp->cases, 3);
  EXPECT_FALSE(class_confidence("DP, PCIe node, conv net").has_value()) << "no published DP step";
}

TEST(Confidence, TableIsMedianAndWorstOfAbsoluteErrorsByClass) {
  const std::string csv = confidence_csv(
      {{"b", "x", 0.10, true}, {"a", "p", -0.30, false}, {"b", "y", -0.20, true}, {"b", "x", 0.04, false}});
  EXPECT_EQ(csv,
            "class,cases,points,median_abs_error_frac,worst_abs_error_frac,predicted_faster,worst_case\n"
            "\"a\",1,1,0.3000,0.3000,0,p\n"
            "\"b\",2,3,0.1000,0.2000,2,y\n");
}

// Which way an error goes: a rate predicted above the measurement, or a time below it, is a
// prediction faster than the run.
TEST(Confidence, PredictedFasterIsARateAboveOrATimeBelow) {
  EXPECT_TRUE(predicted_faster("samples_per_s", 0.05));
  EXPECT_FALSE(predicted_faster("samples_per_s", -0.05));
  EXPECT_TRUE(predicted_faster("tokens_per_s", 0.01));
  EXPECT_TRUE(predicted_faster("busbw", 0.2));
  EXPECT_TRUE(predicted_faster("step_s", -0.1));
  EXPECT_FALSE(predicted_faster("step_s", 0.1));
  EXPECT_TRUE(predicted_faster("ms_per_3_iterations", -0.06));
  // The shipped table: gradsync's DDP transformer steps come out faster than the runs in 4 of 5.
  const auto c = class_confidence("DDP, NVLink node, transformer");
  ASSERT_TRUE(c.has_value());
  EXPECT_GE(c->faster, 0);
  EXPECT_LE(c->faster, c->points);
}

}  // namespace
}  // namespace gradsync::sim
