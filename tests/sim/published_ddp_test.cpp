// published_ddp_test.cpp: reading validation/published/ddp_steps.yaml and its errors.
#include "sim/published_ddp.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace gradsync::sim {
namespace {

std::string error_of(const std::string& text) {
  try {
    read_ddp_cases(text, "t.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PublishedDdp, TheBuiltInTableReadsWithBothSplitsAndRelativeCases) {
  const auto cases = read_ddp_cases(builtin_ddp_text(), "ddp_steps.yaml");
  ASSERT_GE(cases.size(), 24u);
  int holdout = 0, relative = 0;
  for (const DdpCase& c : cases) {
    holdout += c.split == "holdout";
    relative += !c.relative_to.empty();
    EXPECT_FALSE(c.source.empty()) << c.id;
    EXPECT_FALSE(c.scenario.model.empty()) << c.id;
  }
  EXPECT_GE(holdout, 6);
  EXPECT_EQ(relative, 16);
  EXPECT_EQ(cases[12].id, "ddpbench-resnet101-dgx1-1gpu-bucket1mb");
  EXPECT_EQ(cases[12].relative_to, "ddpbench-resnet101-dgx1-1gpu");
  EXPECT_EQ(cases[12].scenario.bucket_cap_mb, 1.0);
  EXPECT_DOUBLE_EQ(cases[12].published, -1.2);
  // DataParallel against DDP (Hugging Face's Trainer): a DP case, and DDP's change against it.
  const auto dp = std::find_if(cases.begin(), cases.end(), [](const DdpCase& c) { return c.strategy == Strategy::kDP; });
  ASSERT_NE(dp, cases.end());
  EXPECT_EQ(dp->id, "hf-clm-gpt2-2xtitanrtx-nvlink-dp");
  EXPECT_EQ(dp->cluster.value("gpu", ""), "titan-rtx");
  // Sixteen GPUs on two DGX-1s: more than the default topology holds, so only the cluster fits.
  const auto two = std::find_if(cases.begin(), cases.end(),
                                [](const DdpCase& c) { return c.id == "ddpbench-resnet50-2xdgx1-16gpu"; });
  ASSERT_NE(two, cases.end());
  EXPECT_EQ(two->scenario.gpus, 16);
  EXPECT_EQ(two->cluster.value("generate", ""), "fat-tree");
  EXPECT_EQ(two->cluster.value("nodes", ""), "2");
}

// A case on a generated cluster is classed (what `how sure` prints) by the cluster it ran on, not by
// the default topology: two RTX 4090s over PCIe are a PCIe node, two nodes are multi-node.
TEST(PublishedDdp, ACaseOnAGeneratedClusterTakesItsClassFromIt) {
  const std::string text = R"(format: gradsync-published-ddp/1
cases:
  - id: pcie
    split: train
    source: "x"
    scenario: {model: resnet18, gpus: 2, batch_per_gpu: 2, precision: fp16, optimizer: none, iterations: 2, warmup: 1}
    cluster: {generate: pcie, gpu: rtx-4090, gpus: 2, sockets: 1, gpus_per_switch: 0}
    metric: {step_s: 0.01}
  - id: nodes
    split: train
    source: "x"
    scenario: {model: resnet18, gpus: 16, batch_per_gpu: 2, precision: fp16, optimizer: none, iterations: 2, warmup: 1}
    cluster: {generate: fat-tree, nodes: 2, node: dgx1-v100}
    metric: {step_s: 0.01}
)";
  const auto p = predict_ddp_cases(read_ddp_cases(text, "t.yaml"), "t.yaml");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].step_class, "DDP, PCIe node, conv net");
  EXPECT_EQ(p[0].topology, "generated pcie");
  EXPECT_EQ(p[1].step_class, "DDP, multi-node, conv net");
}

// A change is in samples per second: DataParallel on two GPUs at 2 per GPU against one GPU at 2 is
// the ratio of 4 / step2 to 2 / step1, not of the steps.
TEST(PublishedDdp, AChangeIsInSamplesPerSecondWhenTheGpusDiffer) {
  const std::string one = R"(
  - id: one
    split: holdout
    source: "x"
    scenario: {model: resnet18, gpus: GPUS, batch_per_gpu: 2, precision: fp32, optimizer: none, iterations: 2, warmup: 1}
    cluster: {generate: nvswitch, gpu: a100-sxm4-40gb, gpus: 8}
    strategy: dp
)";
  std::string text = "format: gradsync-published-ddp/1\ncases:\n";
  std::string a = one, b = one;
  a.replace(a.find("GPUS"), 4, "1");
  b.replace(b.find("GPUS"), 4, "2");
  b.replace(b.find("id: one"), 7, "id: two");
  text += a + "    metric: {step_s: 0.01}\n" + b + "    relative_to: one\n    metric: {throughput_change_pct: 50}\n";
  const auto cases = read_ddp_cases(text, "t.yaml");
  const auto p = predict_ddp_cases(cases, "t.yaml");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_NEAR(p[1].predicted, 100.0 * ((4.0 / p[1].step_s) / (2.0 / p[0].step_s) - 1.0), 1e-6);
  EXPECT_GT(std::abs(p[1].predicted - 100.0 * (p[0].step_s / p[1].step_s - 1.0)), 1.0);
}

TEST(PublishedDdp, ACaseSaysItsStrategy) {
  const auto cases = read_ddp_cases(
      "format: gradsync-published-ddp/1\ncases:\n"
      "  - id: a\n    split: train\n    source: s\n    scenario: {model: gpt2, gpus: 2}\n    strategy: dp\n"
      "    metric: {step_s: 0.5}\n"
      "  - id: b\n    split: train\n    source: s\n    scenario: {model: gpt2, gpus: 2}\n"
      "    metric: {throughput_change_pct: 9}\n    relative_to: a\n",
      "t.yaml");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].strategy, Strategy::kDP);
  EXPECT_EQ(cases[1].strategy, Strategy::kDDP);  // the default
}

TEST(PublishedDdp, BadTablesNameTheLineAndTheField) {
  const std::string head = "format: gradsync-published-ddp/1\ncases:\n";
  const std::string base =
      "  - id: a\n    split: train\n    source: s\n    scenario: {model: resnet50, gpus: 2}\n    metric: {step_s: "
      "0.1}\n";
  EXPECT_EQ(error_of(head + base), "");
  EXPECT_EQ(error_of(head + base +
                     "  - id: b\n    split: train\n    source: s\n    scenario: {model: resnet50}\n"
                     "    metric: {throughput_change_pct: -1}\n    relative_to: c\n"),
            "t.yaml:13: case b: relative_to \"c\": expected the id of an earlier case that is not itself relative");
  EXPECT_EQ(error_of(head + base +
                     "  - id: b\n    split: train\n    source: s\n    scenario: {model: resnet50}\n"
                     "    metric: {throughput_change_pct: -1}\n"),
            "t.yaml:12: case b: relative_to goes with metric throughput_change_pct, and only with it");
  EXPECT_EQ(error_of(head + "  - id: a\n    split: train\n    source: s\n    scenario: {modle: resnet50}\n"
                            "    metric: {step_s: 0.1}\n")
                .rfind("t.yaml:6: scenario: unknown key \"modle\"", 0),
            0u);
  EXPECT_EQ(error_of(head + "  - id: a\n    split: test\n    source: s\n    scenario: {}\n    metric: {step_s: 1}\n"),
            "t.yaml:4: case a: split \"test\": expected train or holdout");
  EXPECT_EQ(error_of(head + "  - id: a\n    split: train\n    source: s\n    scenario: {}\n    strategy: fsdp\n"
                            "    metric: {step_s: 1}\n"),
            "t.yaml:7: case a: strategy \"fsdp\": expected dp or ddp");
  EXPECT_EQ(error_of(head + "  - id: a\n    split: train\n    source: s\n    scenario: {}\n    cluster: pcie\n"
                            "    metric: {step_s: 1}\n"),
            "t.yaml:7: case a: cluster: expected {generate: KIND, ...}");
  EXPECT_EQ(error_of(head + "  - id: a\n    split: train\n    source: s\n    scenario: {topology: dgx-a100}\n"
                            "    cluster: {generate: pcie}\n    metric: {step_s: 1}\n"),
            "t.yaml:7: case a: cluster: the scenario names a topology already; give one of them");
  EXPECT_EQ(error_of(head + "  - id: a\n    split: train\n    source: s\n    scenario: {}\n"
                            "    cluster: {generate: pcie, gpu: titan-rtx, gpus: two}\n    metric: {step_s: 1}\n"),
            "t.yaml:7: case a: cluster.gpus \"two\": expected an integer");
  EXPECT_EQ(error_of(head + "  - id: a\n    split: train\n    source: s\n    scenario: {}\n"
                            "    cluster: {generate: torus}\n    metric: {step_s: 1}\n"),
            "t.yaml:7: case a: cluster.generate \"torus\": expected nvswitch, nvlink-mesh, pcie, "
            "fat-tree or rail-optimized");
  EXPECT_EQ(error_of(head + "  - id: a\n    split: train\n    source: s\n    scenario: {}\n"
                            "    cluster: {generate: pcie, gpu: titan-rtx, nvlink: yes}\n    metric: {step_s: 1}\n")
                .rfind("t.yaml:7: case a: cluster.nvlink: unknown key; expected one of ", 0),
            0u);
  EXPECT_EQ(error_of(head + "  - id: a\n    split: train\n    source: s\n    scenario: {}\n    metric: {fps: 1}\n"),
            "t.yaml:7: case a: metric \"fps\": expected step_s, samples_per_s or throughput_change_pct");
}

}  // namespace
}  // namespace gradsync::sim
