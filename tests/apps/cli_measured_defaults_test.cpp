// cli_measured_defaults_test.cpp: `models import-trace` on a trace written here, and what the
// model file it writes decides for the runs of the model: the optimizer the trace stepped and its
// micro-steps per optimizer step are their defaults (models show, simulate, a scenario file, each
// point of a sweep), a flag or the file winning; a trace of another model, or of no events, is
// refused naming the file.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.hpp"

namespace gradsync::apps {
namespace {

using test::expect_error;
using test::Result;
using test::run;
using test::run_printed;

// accumulating_trace: four micro-steps of ResNet-18 (62 AccumulateGrad nodes each), prof.step()
// after each, SGD with momentum (its buffers' _foreach_mul_) stepping every second one.
std::string accumulating_trace(int gradients = 62) {
  using json = nlohmann::json;
  const auto ev = [](const std::string& name, double ts, double dur) {
    return json{{"name", name}, {"ph", "X"}, {"ts", ts}, {"dur", dur}};
  };
  json events = json::array();
  for (int i = 0; i < 4; ++i) {
    const double t = 10000.0 * i;
    events.push_back(ev(fmt::format("ProfilerStep#{}", i + 3), t, 10000));
    events.push_back(ev("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + 10, 500));
    events.push_back(ev("aten::conv2d", t + 600, 2000));
    events.push_back(ev("autograd::engine::evaluate_function: ConvolutionBackward0", t + 3000, 4000));
    for (int g = 0; g < gradients; ++g)
      events.push_back(
          ev("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", t + 3010 + 60 * g, 5));
    if (i % 2 == 0) continue;
    events.push_back(ev("Optimizer.step#SGD.step", t + 7500, 1000));
    events.push_back(ev("aten::_foreach_mul_", t + 7600, 100));
    events.push_back(ev("aten::_foreach_add_", t + 7800, 100));
    events.push_back(ev("Optimizer.zero_grad#SGD.zero_grad", t + 8600, 100));
  }
  return events.dump();
}

// imported: the measured model written from accumulating_trace() into resnet18, and what the
// command said on stderr.
struct Imported {
  std::string model, said;
};

Imported import_accumulating(const std::string& name) {
  const std::string trace = ::testing::TempDir() + "/" + name + ".json";
  std::ofstream(trace) << accumulating_trace();
  Imported i{::testing::TempDir() + "/" + name + ".yaml", ""};
  std::ostringstream notes;
  std::streambuf* const saved = std::cerr.rdbuf(notes.rdbuf());
  const Result r = run({"models", "import-trace", trace, "--model", "resnet18", "--batch", "16", "-o", i.model});
  std::cerr.rdbuf(saved);
  EXPECT_EQ(r.code, 0) << r.err;
  i.said = notes.str();
  std::remove(trace.c_str());
  return i;
}

TEST(Cli, AnImportedTracesOptimizerAndMicroStepsAreItsRunsDefaults) {
  const Imported m = import_accumulating("gradsync-cli-accum");
  EXPECT_NE(
      m.said.find("4 steps (2 with an optimizer step) on cpu, mean step 10.5 ms (a micro-step and an optimizer "
                  "step): forward 2.50 ms, backward 4.00 ms, optimizer 1.00 ms, other 3.00 ms; optimizer sgd-momentum"),
      std::string::npos)
      << m.said;
  EXPECT_NE(m.said.find("note: 2 of the 4 ProfilerStep#N hold an Optimizer.step"), std::string::npos) << m.said;
  auto show = [&](std::vector<std::string> flags) {
    std::vector<std::string> args{"models", "show", m.model, "--json"};
    args.insert(args.end(), flags.begin(), flags.end());
    const Result r = run_printed(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json measured = show({});
  EXPECT_EQ(measured["optimizer"], "sgd-momentum");
  EXPECT_EQ(measured["grad_accum"], 2);
  EXPECT_EQ(measured["measured"]["optimizer_steps"], 2);
  // The measured step's two micro-steps and one optimizer step are the trace's two steps of 10 ms.
  EXPECT_NEAR(measured["step_s"].get<double>(), 20e-3, 1e-9);
  // SGD's momentum buffer: 4 bytes a parameter, not AdamW's 8 (the default before).
  const double params = measured["total_params"].get<double>();
  EXPECT_NEAR(measured["memory"]["optimizer_state"].get<double>(), 4 * params, 1);
  const nlohmann::json asked = show({"--optimizer", "adamw", "--grad-accum", "1"});  // flags win
  EXPECT_EQ(asked["optimizer"], "adamw");
  EXPECT_EQ(asked["grad_accum"], 1);
  EXPECT_NEAR(asked["memory"]["optimizer_state"].get<double>(), 8 * params, 1);

  // simulate says where the defaults came from; a scenario file that names an optimizer wins.
  const std::string out = ::testing::TempDir() + "/gradsync-cli-accum-sim";
  const Result sim = run_printed({"simulate", "--strategy", "ddp", "--model", m.model, "--gpus", "2", "--iterations",
                                  "2", "--warmup", "1", "--out", out});
  EXPECT_EQ(sim.code, 0) << sim.err;
  EXPECT_NE(sim.out.find("the trace's optimizer sgd-momentum and grad_accum 2 are its runs' default (a flag or the "
                         "scenario file wins)"),
            std::string::npos)
      << sim.out;
  const std::string file = ::testing::TempDir() + "/gradsync-cli-accum-scenario.yaml";
  std::ofstream(file) << "model: " << m.model << "\ngpus: 2\niterations: 2\nwarmup: 1\noptimizer: adam\n";
  const Result from_file = run_printed({"simulate", "--strategy", "ddp", file, "--out", out});
  EXPECT_EQ(from_file.code, 0) << from_file.err;
  std::ifstream result(out + "/result.json");
  const nlohmann::json r = nlohmann::json::parse(result);
  EXPECT_EQ(r["scenario"]["optimizer"], "adam");
  EXPECT_EQ(r["scenario"]["grad_accum"], 2);

  // Each point of a sweep takes its own model's: the measured one its trace's, resnet18 the defaults.
  const std::string sweep = ::testing::TempDir() + "/gradsync-cli-accum-sweep";
  std::filesystem::remove_all(sweep);
  const Result sw = run_printed({"sweep", "--gpus", "2", "--iterations", "2", "--warmup", "1", "--vary",
                                 "model=" + m.model + ",resnet18", "--vary", "strategy=ddp", "--out", sweep});
  EXPECT_EQ(sw.code, 0) << sw.err;
  std::ifstream csv(sweep + "/summary.csv");
  const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(",sgd-momentum,"), std::string::npos) << text;
  EXPECT_NE(text.find(",adamw,"), std::string::npos) << text;
  std::filesystem::remove_all(sweep);
  std::filesystem::remove_all(out);
  std::remove(file.c_str());
  std::remove(m.model.c_str());
}

// The trace's AccumulateGrad events (62 a step: ResNet-18's parameters) against the model given
// with --model: ResNet-50 has 161 trainable tensors, so the trace is not its step. A trace of no
// events says so.
TEST(Cli, ImportTraceRefusesATraceOfAnotherModelAndOneOfNoEvents) {
  const std::string trace = ::testing::TempDir() + "/gradsync-cli-other-model.json";
  std::ofstream(trace) << accumulating_trace();
  expect_error({"models", "import-trace", trace, "--model", "resnet50", "--batch", "16"}, 1,
               trace +
                   ": ProfilerStep#3 accumulates 62 gradients (autograd::engine::evaluate_function: "
                   "torch::autograd::AccumulateGrad events, one per parameter that received a gradient), but model "
                   "resnet50 has 161 trainable parameter tensors; expected the trace of the model given with --model, "
                   "with the same parameters frozen (requires_grad) and unused (unused_parameters)");
  std::ofstream(trace) << "{\"traceEvents\": []}";
  expect_error({"models", "import-trace", trace, "--model", "resnet18", "--batch", "16"}, 1,
               trace + ": the trace holds 0 events (\"traceEvents\": []); expected torch.profiler's events");
  std::remove(trace.c_str());
}

}  // namespace
}  // namespace gradsync::apps
