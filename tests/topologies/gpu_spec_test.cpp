// gpu_spec_test.cpp: topologies/hardware/gpus.yaml and its loader.
#include "topologies/gpu_spec.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace gradsync {
namespace {

TEST(GpuSpec, EveryGpuTheIssueNames) {
  for (const char* key : {"v100-sxm2-16gb", "v100-sxm2-32gb", "a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-40gb",
                          "a100-pcie-80gb", "h100-sxm5-80gb", "h100-pcie-80gb", "h200-sxm-141gb", "b200", "titan-rtx",
                          "rtx-2080-ti", "rtx-3090", "rtx-4090", "a10g", "l4", "l40s"}) {
    const GpuSpec& g = gpu_spec(key);
    EXPECT_GT(g.memory_bytes, 0u) << key;
    EXPECT_GT(g.memory_bandwidth_Bps, 1e11) << key;
    EXPECT_GE(g.tf32_flops, g.fp32_flops) << key;
    EXPECT_FALSE(g.source.empty()) << key;
  }
}

TEST(GpuSpec, DatasheetNumbersAndAliases) {
  const GpuSpec& a100 = gpu_spec("a100");
  EXPECT_EQ(a100.key, "a100-sxm4-80gb");
  EXPECT_DOUBLE_EQ(a100.peak_flops(Precision::kBF16), 312e12);
  EXPECT_DOUBLE_EQ(a100.peak_flops(Precision::kTF32), 156e12);
  EXPECT_DOUBLE_EQ(a100.memory_bandwidth_Bps, 2039e9);
  EXPECT_EQ(a100.memory_bytes, 80 * kGiB);
  EXPECT_EQ(a100.nvlink_links, 12);
  EXPECT_DOUBLE_EQ(a100.nvlink_bw_Bps, 25e9);
  EXPECT_EQ(gpu_spec("h100").key, "h100-sxm5-80gb");
}

TEST(GpuSpec, MissingPrecisionIsAnError) {
  try {
    gpu_spec("v100").peak_flops(Precision::kBF16);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "GPU v100-sxm2-32gb (NVIDIA Tesla V100 SXM2 32GB) has no bf16 tensor cores; use fp16 or fp32 (tf32 "
                 "would run as fp32: TF32 tensor cores came with Ampere)");
  }
}

TEST(GpuSpec, UnknownGpu) {
  try {
    gpu_spec("a101");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with(
        "GPU \"a101\" is unknown (did you mean \"a100-sxm4-80gb\"?); expected one of v100-sxm2-16gb, "))
        << e.what();
  }
}

// nvidia-smi's name, or a key written with blanks instead of dashes, is the GPU it names; a model two
// edits from a key is named as the likely one. Before 2026-12-01 "RTX 4090" was unknown, with no hint.
TEST(GpuSpec, NvidiaSmiNamesAndNearMisses) {
  EXPECT_EQ(gpu_spec("NVIDIA GeForce RTX 4090").key, "rtx-4090");
  EXPECT_EQ(gpu_spec("RTX 4090").key, "rtx-4090");
  EXPECT_EQ(gpu_spec("h100 sxm5 80gb").key, "h100-sxm5-80gb");
  // The driver's names that differ from gpus.yaml's in more than blanks (torch.cuda.get_device_name,
  // a profiler trace's deviceProperties; "NVIDIA H200" from this project's own H200 trace): until
  // 2026-12-02 a trace's "NVIDIA H100 80GB HBM3" named no GPU.
  for (const auto& [smi, key] :
       std::vector<std::pair<std::string, std::string>>{{"NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"},
                                                        {"NVIDIA H100 PCIe", "h100-pcie-80gb"},
                                                        {"NVIDIA H200", "h200-sxm-141gb"},
                                                        {"NVIDIA B200", "b200"},
                                                        {"Tesla V100-SXM2-16GB", "v100-sxm2-16gb"},
                                                        {"Tesla V100-SXM2-32GB", "v100-sxm2-32gb"},
                                                        {"NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"},
                                                        {"NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"},
                                                        {"NVIDIA A100 80GB PCIe", "a100-pcie-80gb"},
                                                        {"NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"},
                                                        {"NVIDIA A10G", "a10g"}})
    EXPECT_EQ(gpu_spec(smi).key, key) << smi;
  try {
    gpu_spec("rtx4900");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("GPU \"rtx4900\" is unknown (did you mean \"rtx-4090\"?)"))
        << e.what();
  }
  try {
    gpu_spec("mi300x");  // nothing near
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("GPU \"mi300x\" is unknown; expected one of")) << e.what();
  }
}

// Ten boards added on 2026-12-04 with Lambda's benchmark runs on them (validation/published/
// training_steps.yaml, cases 85-145): the datasheets' dense figures, and the names their drivers
// report, old and new ("RTX A6000" under driver 460, "NVIDIA RTX A6000" from 510 on).
TEST(GpuSpec, WorkstationAndInferenceBoardsFromTheirDatasheets) {
  const GpuSpec& a6000 = gpu_spec("rtx-a6000");
  EXPECT_DOUBLE_EQ(a6000.peak_flops(Precision::kBF16), 154.8e12);  // 309.7 with sparsity, halved
  EXPECT_DOUBLE_EQ(a6000.peak_flops(Precision::kTF32), 77.4e12);
  EXPECT_FALSE(a6000.half_rate_fp32_accumulate());  // a workstation board: full-rate FP32 accumulate
  EXPECT_EQ(a6000.nvlink_links, 4);
  EXPECT_EQ(a6000.sm_version, 86);
  const GpuSpec& ada = gpu_spec("rtx-6000-ada");
  EXPECT_DOUBLE_EQ(ada.peak_flops(Precision::kFP16), 364.2e12);  // 1457.0 FP8 with sparsity / 4
  EXPECT_EQ(ada.sm_version, 89);
  EXPECT_EQ(ada.nvlink_links, 0);
  EXPECT_EQ(gpu_spec("a10").sms, 72);                                // the A10G has 80
  EXPECT_TRUE(gpu_spec("rtx-3080").half_rate_fp32_accumulate());     // GeForce: 119 against 59.5
  EXPECT_TRUE(gpu_spec("rtx-3090-ti").half_rate_fp32_accumulate());  // 160 against 80
  EXPECT_FALSE(gpu_spec("quadro-rtx-8000").half_rate_fp32_accumulate());
  EXPECT_EQ(gpu_spec("quadro-rtx-8000").sm_version, 75);
  try {
    gpu_spec("t4").peak_flops(Precision::kBF16);  // Turing has no bf16
    FAIL();
  } catch (const ConfigError&) {
  }
  for (const auto& [smi, key] :
       std::vector<std::pair<std::string, std::string>>{{"NVIDIA RTX A6000", "rtx-a6000"},
                                                        {"RTX A6000", "rtx-a6000"},
                                                        {"RTX A5000", "rtx-a5000"},
                                                        {"RTX A4000", "rtx-a4000"},
                                                        {"NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"},
                                                        {"NVIDIA A10", "a10"},
                                                        {"Quadro RTX 8000", "quadro-rtx-8000"},
                                                        {"Quadro RTX 6000", "quadro-rtx-6000"},
                                                        {"GeForce RTX 3080", "rtx-3080"},
                                                        {"NVIDIA GeForce RTX 3080", "rtx-3080"},
                                                        {"NVIDIA GeForce RTX 3090 Ti", "rtx-3090-ti"},
                                                        {"Tesla T4", "t4"}})
    EXPECT_EQ(gpu_spec(smi).key, key) << smi;
  // "NVIDIA A10G" stays the A10G, one letter from the A10.
  EXPECT_EQ(gpu_spec("NVIDIA A10G").key, "a10g");
}

TEST(GpuSpec, BadFileNamesFieldAndValue) {
  const std::string text = R"(format: gradsync-gpus/1
gpus:
  x:
    name: X
    source: test
    flops: {fp32: 1e12, tf32: 1e12}
    memory: 16GiB
    memory_bandwidth: -5GBps
    pcie: {gen: 4, lanes: 16}
    sms: 10
)";
  try {
    parse_gpu_specs(text, "gpus.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "gpus.yaml:8: gpus.x: field \"memory_bandwidth\": bandwidth \"-5GBps\" must be > 0");
  }
}

// fp16_accumulate: the FP16-accumulate tensor rate, only where it is above fp16's.
TEST(GpuSpec, Fp16AccumulateMustBeAboveTheFp32AccumulateRate) {
  const std::string text = R"(format: gradsync-gpus/1
gpus:
  x:
    name: X
    source: test
    flops: {fp32: 1e12, tf32: 1e12, fp16: 8e12, fp16_accumulate: 8e12}
    memory: 16GiB
    memory_bandwidth: 500GBps
    pcie: {gen: 4, lanes: 16}
    sms: 10
    compute_capability: "8.6"
)";
  try {
    parse_gpu_specs(text, "gpus.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "gpus.yaml:6: gpus.x.flops: fp16_accumulate 8e+12 needs fp16 (FP32 accumulate) below it; list it only "
                 "where the datasheet's FP16-accumulate rate is the higher");
  }
  std::string good = text;
  good.replace(good.find("fp16_accumulate: 8e12"), 21, "fp16_accumulate: 16e12");
  const std::vector<GpuSpec> specs = parse_gpu_specs(good, "gpus.yaml");
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_DOUBLE_EQ(*specs[0].fp16_accumulate_flops, 16e12);
  EXPECT_TRUE(specs[0].half_rate_fp32_accumulate());
}

}  // namespace
}  // namespace gradsync
