// published_training_test.cpp: reading validation/published/training_steps.yaml's
// mixed_precision field, and its error.
#include "sim/published_training.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace gradsync::sim {
namespace published_training_test {

constexpr const char* kCase = R"(format: gradsync-published-training/1
cases:
  - id: one
    split: train
    source: "s"
    model: resnet50
    gpu: titan-rtx
    batch: 448
    seq_len: null
    precision: fp16
    mode: eager
    attention: n/a
    optimizer: sgd-momentum
    mixed_precision: MP
    metric: {samples_per_s: 645.76}
)";

std::string with(const std::string& mp) {
  std::string t = kCase;
  t.replace(t.find("MP"), 2, mp);
  return t;
}

// The twelve apex amp O2 runs and the eight model.half() runs (ryujaehun's benchmark: four on an
// A100, four on an RTX 2080 Ti) carry master-weights; the rest are autocast.
TEST(PublishedTraining, ApexO2RunsAreSixteenBitModels) {
  const auto cases = read_training_cases(builtin_training_text(), "training_steps.yaml");
  EXPECT_EQ(std::count_if(cases.begin(), cases.end(), [](const TrainingCase& c) { return c.master_weights; }), 20);
  EXPECT_TRUE(read_training_cases(with("master-weights"), "t.yaml").at(0).master_weights);
  EXPECT_FALSE(read_training_cases(with("autocast"), "t.yaml").at(0).master_weights);
}

// optimizer: none is a step timed without optimizer.step(): shorter than with SGD, and before
// PyTorch 2.0 (for-loop) still paying zero_grad's fills.
TEST(PublishedTraining, NoOptimizerTimesForwardBackwardAndZeroGrad) {
  const auto step = [](const std::string& opt, const std::string& impl) {
    std::string t = with("autocast");
    t.replace(t.find("sgd-momentum"), 12, opt);
    t += "    optimizer_impl: " + impl + "\n";
    return predict_training(read_training_cases(t, "t.yaml").at(0)).step_s;
  };
  EXPECT_LT(step("none", "foreach"), step("sgd-momentum", "foreach"));
  EXPECT_GT(step("none", "for-loop"), step("none", "foreach"));
}

TEST(PublishedTraining, AnUnknownMixedPrecisionIsAnErrorNamingTheLine) {
  try {
    read_training_cases(with("o2"), "t.yaml");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("t.yaml:"), std::string::npos) << what;
    EXPECT_NE(what.find("mixed_precision \"o2\": expected autocast or master-weights"), std::string::npos) << what;
  }
}

}  // namespace published_training_test
}  // namespace gradsync::sim
