// models_show_test.cpp: `gradsync models show` takes the scenario keys of one GPU's step under
// simulate's flags, and with them reproduces every row of the published single-GPU table.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli_test_util.hpp"
#include "models/model.hpp"
#include "sim/published_training.hpp"

namespace gradsync::apps::test {
namespace {

// show_flags: the models show command for a published case, the release it names by its
// optimizer's implementation (a for-loop filling zeros in zero_grad is a PyTorch
// before 2.0; 1.13 also keeps float32 matmuls in float32 on Ampere, as the table does).
std::vector<std::string> show_flags(const sim::TrainingCase& c) {
  std::vector<std::string> a = {
      "models",      "show",      c.model,       "--gpu",     c.gpu,   "--batch-per-gpu", std::to_string(c.batch),
      "--precision", c.precision, "--optimizer", c.optimizer, "--json"};
  // A row's seq_len on a model without one (ViT's 197 tokens) is its own fixed size, not a flag.
  if (c.seq_len > 0 && load_model(c.model).default_seq_len) a.insert(a.end(), {"--seq-len", std::to_string(c.seq_len)});
  if (c.master_weights) a.insert(a.end(), {"--mixed-precision", "master-weights"});
  if (c.compile) a.emplace_back("--compile");
  if (c.channels_last) a.emplace_back("--channels-last");
  if (c.attention != "n/a" && !c.attention.empty()) a.insert(a.end(), {"--attention", c.attention});
  if (c.grad_accum > 1) a.insert(a.end(), {"--grad-accum", std::to_string(c.grad_accum)});
  if (c.clip_grad_norm) a.emplace_back("--clip-grad-norm");
  a.insert(a.end(), {"--input", c.input == InputLocation::kPageable ? "pageable"
                                : c.input == InputLocation::kPinned ? "pinned"
                                                                    : "device"});
  switch (c.optimizer_impl) {
    case OptimizerImpl::kSingleTensor:
      a.insert(a.end(), {"--pytorch-version", "1.13"});
      break;
    case OptimizerImpl::kFused:
      a.insert(a.end(), {"--optimizer-impl", "fused"});
      break;
    case OptimizerImpl::kForEach:
      a.insert(a.end(), {"--optimizer-impl", "foreach"});
      break;
  }
  return a;
}

TEST(ModelsShow, ReproducesEveryPublishedSingleGpuRow) {
  int checked = 0, oom = 0;
  for (const sim::TrainingCase& c : sim::read_training_cases(sim::builtin_training_text(), "training_steps.yaml")) {
    if (!c.unsupported.empty()) continue;
    const std::vector<std::string> flags = show_flags(c);
    const Result r = run_printed(flags);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    // A row gradsync calls out of memory still prints its step (and exits 1); the rows that really
    // trained but are called so are the memory model's misses, counted below.
    ASSERT_EQ(r.code, j.at("memory").at("oom").get<bool>() ? 1 : 0) << c.id << ": " << r.err;
    oom += r.code == 1;
    const double expected = sim::predict_training(c).step_s;
    EXPECT_NEAR(j.at("step_s").get<double>() / expected, 1.0, 1e-9) << c.id;
    EXPECT_EQ(j.at("grad_accum").get<long>(), c.grad_accum) << c.id;
    // Byte counts are whole numbers, as in every file (README; until 2026-12-03 models show wrote
    // 46796608.0).
    for (const auto& [key, value] : j.at("memory").items()) {
      if (key != "oom") {
        EXPECT_TRUE(value.is_number_integer()) << c.id << ": memory." << key << " " << value;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 70);
  // One: Lambda's BERT-large in apex O2 fp16 at batch 16 on a 16 GB V100 (16.4 GiB, of which 639
  // MiB are the DDP bucket that models show counts and a one-GPU run does not hold).
  EXPECT_LE(oom, 1);
}

// A release's rules reach models show as they reach simulate: float32 matmuls as TF32 on an A100
// from 1.7 to 1.11 (and said), the Python optimizer loop and zero_grad's fills before 2.0.
TEST(ModelsShow, TakesTheReleaseRules) {
  const Result old = run_printed({"models", "show", "resnet50", "--gpu", "a100", "--precision", "fp32",
                                  "--pytorch-version", "1.7", "--batch-per-gpu", "32"});
  ASSERT_EQ(old.code, 0) << old.err;
  EXPECT_NE(old.out.find("# fp32: PyTorch 1.7 runs float32 matmuls as TF32 on the a100-sxm4-80gb by default"),
            std::string::npos)
      << old.out;
  EXPECT_NE(old.out.find("optimizer adamw (for-loop, zero_grad fills zeros)"), std::string::npos) << old.out;
  EXPECT_NE(old.out.find("; PyTorch 1.7\n"), std::string::npos) << old.out;
  const nlohmann::json j =
      nlohmann::json::parse(run_printed({"models", "show", "resnet50", "--gpu", "a100", "--precision", "fp32",
                                         "--pytorch-version", "1.7", "--batch", "32", "--json"})
                                .out);
  EXPECT_EQ(j.at("precision"), "tf32");
  EXPECT_EQ(j.at("optimizer_impl"), "for-loop");
  EXPECT_EQ(j.at("zero_grad_fills"), true);
  EXPECT_EQ(j.at("pytorch_version"), "1.7");
  // --set-to-none true drops the fills: the optimizer step costs less.
  const nlohmann::json none = nlohmann::json::parse(
      run_printed({"models", "show", "resnet50", "--gpu", "a100", "--precision", "fp32", "--pytorch-version", "1.7",
                   "--batch", "32", "--set-to-none", "true", "--json"})
          .out);
  EXPECT_EQ(none.at("zero_grad_fills"), false);
  EXPECT_LT(none.at("optimizer_s").get<double>(), j.at("optimizer_s").get<double>());
}

// --grad-accum N: N forwards and backwards, one optimizer step; samples/s counts every micro-step.
TEST(ModelsShow, GradAccumIsMicroStepsBeforeOneUpdate) {
  const auto show = [](const std::string& accum) {
    return nlohmann::json::parse(run_printed({"models", "show", "gpt2", "--gpu", "h100", "--batch-per-gpu", "4",
                                              "--seq-len", "256", "--grad-accum", accum, "--json"})
                                     .out);
  };
  const nlohmann::json one = show("1"), four = show("4");
  const double step1 = one.at("step_s").get<double>(), step4 = four.at("step_s").get<double>();
  EXPECT_GT(step4, 3.0 * step1);
  EXPECT_LT(step4, 4.0 * step1);  // one optimizer step, not four
  EXPECT_NEAR(four.at("samples_per_s").get<double>(), 16.0 / step4, 1e-9 * 16.0 / step4);
}

// Bad values name the flag as simulate's do; --batch and --batch-per-gpu together are one error.
TEST(ModelsShow, BadValuesNameTheirFlags) {
  expect_error({"models", "show", "gpt2", "--pytorch-version", "banana"}, 2, "--pytorch-version");
  expect_error({"models", "show", "gpt2", "--optimizer-impl", "turbo"}, 2, "--optimizer-impl");
  expect_error({"models", "show", "gpt2", "--grad-accum", "0"}, 2, "--grad-accum");
  expect_error({"models", "show", "gpt2", "--batch", "4", "--batch-per-gpu", "8"}, 2,
               "--batch 4 and --batch-per-gpu 8");
  // A release gate: fused AdamW came with 2.0.
  expect_error({"models", "show", "gpt2", "--optimizer-impl", "fused", "--pytorch-version", "1.12"}, 2,
               "--optimizer-impl fused");
}

// --input: a batch from host memory is one copy over the GPU's PCIe link at NCCL's payload rate
// (Gen3 x16: 12 GB/s) before forward; from pageable memory the host waits for it, so the step
// gains all of it; pinned memory lets the host issue forward meanwhile; device copies nothing.
TEST(ModelsShow, TheInputCopyIsOnePcieCopyBeforeForward) {
  const auto show = [](const std::string& input) {
    return nlohmann::json::parse(run_printed({"models", "show", "resnet50", "--gpu", "v100", "--precision", "fp32",
                                              "--batch-per-gpu", "32", "--input", input, "--json"})
                                     .out);
  };
  const nlohmann::json device = show("device"), pinned = show("pinned"), pageable = show("pageable");
  const double copy = 3.0 * 224 * 224 * 4 * 32 / 12e9;  // float32 images, 12 GB/s
  EXPECT_EQ(device.at("input_s").get<double>(), 0.0);
  EXPECT_NEAR(pageable.at("input_s").get<double>(), copy, 1e-12);
  EXPECT_NEAR(pinned.at("input_s").get<double>(), copy, 1e-12);
  const double d = device.at("step_s").get<double>(), pi = pinned.at("step_s").get<double>(),
               pa = pageable.at("step_s").get<double>();
  // Pageable: the whole step later by the copy and its call (a launch, 4 us): the host waits.
  EXPECT_NEAR(pa - d, copy + 4e-6, 1e-9);
  // Pinned: the host issues forward while the copy runs, so its host time hides behind the copy.
  EXPECT_LT(pi, pa);
  EXPECT_GT(pi, d);
  EXPECT_EQ(pageable.at("input"), "pageable");
}

// fp16 autocast runs under GradScaler unless told otherwise: its kernels' time is in the step, and
// with a fused optimizer (no unscale pass, no wait) it is two one-element kernels.
TEST(ModelsShow, Fp16RunsUnderGradScaler) {
  const auto show = [](std::vector<std::string> extra) {
    std::vector<std::string> a = {"models", "show", "gpt2", "--gpu", "a100", "--precision", "fp16", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return nlohmann::json::parse(run_printed(a).out);
  };
  const nlohmann::json on = show({}), off = show({"--grad-scaler", "false"}),
                       fused = show({"--optimizer-impl", "fused"});
  EXPECT_TRUE(on.at("grad_scaler").get<bool>());
  EXPECT_FALSE(off.at("grad_scaler").get<bool>());
  EXPECT_EQ(off.at("grad_scaler_s").get<double>(), 0.0);
  // The unscale pass reads and writes GPT-2's float32 gradients (about 1 GB) at A100 speed.
  const double pass = on.at("grad_scaler_s").get<double>();
  EXPECT_GT(pass, 0.3e-3);
  EXPECT_LT(pass, 1.0e-3);
  // GPU-bound: the step grows by the kernels' time (the wait exposes only the optimizer's few
  // foreach launches, which the GPU's own optimizer time covers).
  EXPECT_GE(on.at("step_s").get<double>() - off.at("step_s").get<double>() + 1e-12, pass);
  EXPECT_LT(fused.at("grad_scaler_s").get<double>(), 0.05e-3);
  const nlohmann::json bf16 = nlohmann::json::parse(
      run_printed({"models", "show", "gpt2", "--gpu", "a100", "--precision", "bf16", "--json"}).out);
  EXPECT_FALSE(bf16.at("grad_scaler").get<bool>());
  expect_error({"models", "show", "gpt2", "--precision", "fp16", "--optimizer", "none", "--grad-scaler", "true"}, 2,
               "--grad-scaler true");
}

// --clip-grad-norm: the norm reads GPT-2's float32 gradients (about 0.5 GB) once and the scaling
// reads and writes them (1.5 GB in all at A100 speed); a fused optimizer under GradScaler unscales
// first for it (one more read and write); before PyTorch 1.10 the host reads the norm, and the
// text table says so.
TEST(ModelsShow, ClipGradNormIsANormAndAScalingBeforeTheOptimizer) {
  const auto show = [](std::vector<std::string> extra) {
    std::vector<std::string> a = {"models", "show", "gpt2", "--gpu", "a100", "--precision", "fp16", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return nlohmann::json::parse(run_printed(a).out);
  };
  const nlohmann::json off = show({}), on = show({"--clip-grad-norm"}),
                       fused = show({"--clip-grad-norm", "--optimizer-impl", "fused"});
  EXPECT_FALSE(off.at("clip_grad_norm").get<bool>());
  EXPECT_EQ(off.at("clip_grad_norm_s").get<double>(), 0.0);
  const double clip = on.at("clip_grad_norm_s").get<double>();
  EXPECT_GT(clip, 0.5e-3);
  EXPECT_LT(clip, 1.5e-3);
  EXPECT_GE(on.at("step_s").get<double>() - off.at("step_s").get<double>() + 1e-12, clip);
  EXPECT_GT(fused.at("clip_grad_norm_s").get<double>(), 1.4 * clip);  // with scaler.unscale_'s pass
  const Result text =
      run_printed({"models", "show", "gpt2", "--gpu", "a100", "--clip-grad-norm", "--pytorch-version", "1.9"});
  EXPECT_NE(text.out.find("clip_grad_norm_"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the host reads the norm"), std::string::npos) << text.out;
}

// A step that does not fit is an impossible request (exit 1, as simulate and compare), after the
// table saying so.
TEST(ModelsShow, OutOfMemoryExitsOneAfterTheTable) {
  const Result r = run_printed({"models", "show", "gpt2", "--gpu", "a100", "--batch", "200"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("OUT OF MEMORY"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("out of memory: the step needs"), std::string::npos) << r.err;
  EXPECT_EQ(run_printed({"models", "show", "gpt2", "--gpu", "a100", "--batch", "8"}).code, 0);
}

// models show says where forward and backward's GPU time goes, by kernel class, as the table and in
// JSON (BERT has dropout; nanoGPT's GPT-2 none).
TEST(ModelsShow, SaysTheGpuTimeByKernelClass) {
  const Result bert = run_printed({"models", "show", "bert-base", "--gpu", "h100", "--precision", "fp16"});
  ASSERT_EQ(bert.code, 0) << bert.err;
  const auto row = bert.out.find("  GPU time by class    GEMM ");
  ASSERT_NE(row, std::string::npos) << bert.out;
  const std::string line = bert.out.substr(row, bert.out.find('\n', row) - row);
  for (const char* cls : {"casts and copies", "elementwise", "softmax", "dropout", "norm"})
    EXPECT_NE(line.find(cls), std::string::npos) << cls << ": " << line;
  const nlohmann::json j = nlohmann::json::parse(run_printed({"models", "show", "gpt2", "--gpu", "a100", "--json"}).out)
                               .at("gpu_s_by_class");
  EXPECT_GT(j.at("GEMM").get<double>(), 0.0);
  EXPECT_FALSE(j.contains("dropout"));
}

// models show --json gives the step it prints (the launch queue's: the host issues ahead of the
// GPU, so not the sum of the phases, each of which takes the larger of GPU and host per layer) and
// the throughput from it.
TEST(ModelsShow, JsonHasTheStep) {
  const Result text = run_printed({"models", "show", "resnet50", "--gpu", "v100", "--batch", "32"});
  const Result json = run_printed({"models", "show", "resnet50", "--gpu", "v100", "--batch", "32", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  const double step = j.at("step_s").get<double>();
  EXPECT_GT(step, 0.0);
  EXPECT_LE(step,
            j.at("forward_s").get<double>() + j.at("backward_s").get<double>() + j.at("optimizer_s").get<double>());
  EXPECT_DOUBLE_EQ(j.at("samples_per_s").get<double>(), 32.0 / step);
  EXPECT_FALSE(j.contains("tokens_per_s"));  // an image model
  EXPECT_NE(text.out.find(fmt::format("{:.4g} samples/s", 32.0 / step)), std::string::npos) << text.out;
  const nlohmann::json g =
      nlohmann::json::parse(run_printed({"models", "show", "gpt2", "--gpu", "a100", "--json"}).out);
  EXPECT_DOUBLE_EQ(g.at("tokens_per_s").get<double>(),
                   g.at("batch").get<double>() * g.at("seq_len").get<double>() / g.at("step_s").get<double>());
}

// models show names every dtype its parameters hold, with their bytes.
TEST(ModelsShow, NamesEveryParameterDtype) {
  const std::string file = ::testing::TempDir() + "/gradsync-cli-fp64.yaml";
  std::ofstream(file) << "format: gradsync-model/2\nname: mixed\ndefaults: {batch: 4}\ninput: {bytes: 64}\n"
                         "output: {elements: 16}\nparameters:\n"
                         "  - {name: a.weight, shape: [16, 16]}\n"
                         "  - {name: b.weight, shape: [16, 16], dtype: float64}\n"
                         "layers:\n"
                         "  - {name: a, kind: linear, params: [a.weight], in: 16, out: 16, tokens: 1}\n"
                         "  - {name: b, kind: linear, params: [b.weight], in: 16, out: 16, tokens: 1}\n";
  const Result r = run_printed({"models", "show", file});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("512 (2 tensors, 3.00 KiB fp32 and fp64)"), std::string::npos) << r.out;
  std::remove(file.c_str());
}

// One GPU runs the plain module: models show's memory is what compare's one-GPU DataParallel row
// (the module called directly) holds, with DDP's buckets said beside it, not in the total. GPT-2 XL
// at batch 5 fits an 80 GB A100 that way, and is out of memory under DDP by its 5.8 GiB of buckets.
TEST(ModelsShow, OneGpuMemoryIsThePlainModulesWithDdpsBucketsBeside) {
  const Result r = run_printed({"models", "show", "gpt2-xl", "--gpu", "a100", "--batch", "5", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json mem = nlohmann::json::parse(r.out).at("memory");
  const double grads = mem.at("gradients").get<double>();
  EXPECT_DOUBLE_EQ(mem.at("ddp_buckets").get<double>(), grads);
  EXPECT_FALSE(mem.contains("buckets"));
  const double parts = mem.at("parameters").get<double>() + grads + mem.at("optimizer_state").get<double>() +
                       mem.at("activations").get<double>() + mem.at("loss").get<double>() +
                       mem.at("context").get<double>();
  EXPECT_LE(mem.at("total").get<double>(), parts + 1.0);  // nothing of DDP's in it
  EXPECT_FALSE(mem.at("oom").get<bool>());
  EXPECT_GT(mem.at("total").get<double>() + grads, mem.at("capacity").get<double>());  // DDP's would not fit
  const Result text = run_printed({"models", "show", "gpt2-xl", "--gpu", "a100", "--batch", "5"});
  EXPECT_NE(text.out.find("memory: under DDP    +5.80 GiB of gradient buckets, not in this one-GPU total"),
            std::string::npos)
      << text.out;
}

}  // namespace
}  // namespace gradsync::apps::test
