// cli_notes_test.cpp: what the command line says about the run it was given: the header's notes
// (settings that change nothing, measured steps, calibrations, tf32 before Ampere), how sizes and
// NCCL's switches are shown, and the execution modes it refuses (flash attention where it cannot run).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
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

// PowerSGD's hook is a plain allreduce until start_powerSGD_iter (1000 by default): the header says
// so when no simulated iteration gets there, and prints the defaults it assumed.
TEST(Cli, PowerSgdBeforeItsStartIterationIsSaidToBePlain) {
  const Result r =
      run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--comm-hook", "powersgd",
                   "--iterations", "3", "--warmup", "1", "--out", ::testing::TempDir() + "/gradsync-cli-powersgd"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("comm hook powersgd:rank=1,start_iter=1000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# PowerSGD compresses from iteration 1001 (start_powerSGD_iter; PowerSGDState's default is "
                       "1000): all 3 simulated iterations run its plain allreduce"),
            std::string::npos)
      << r.out;
  // Already at the earliest start (start_iter 2): the way out is more iterations, not the flag given.
  const Result early = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2",
                                    "--comm-hook", "powersgd:start_iter=2", "--iterations", "2", "--out",
                                    ::testing::TempDir() + "/gradsync-cli-powersgd-early"});
  EXPECT_EQ(early.code, 0) << early.err;
  EXPECT_NE(early.out.find("# PowerSGD compresses from iteration 3 (start_powerSGD_iter): all 2 simulated iterations "
                           "run its plain allreduce; --iterations 4 simulates its steady state"),
            std::string::npos)
      << early.out;
}

// A step imported from an H200 trace and simulated on H100s is used as measured, and the header
// says so (and that precision and execution mode do not change it).
TEST(Cli, AMeasuredStepOnAnotherGpuIsSaidToBeUsedAsMeasured) {
  const std::string model = ::testing::TempDir() + "/gradsync-cli-measured.yaml";
  ASSERT_EQ(run({"models", "import-trace", "validation/gpu/h200-2026-11-27/steps_gpt2-bf16-sdpa.json.gz", "--model",
                 "gpt2", "--batch", "16", "--gpu", "h200", "--precision", "bf16", "-o", model})
                .code,
            0);
  const Result r =
      run_printed({"simulate", "--strategy", "ddp", "--model", model, "--topology", "dgx-h100", "--gpus", "2",
                   "--iterations", "2", "--warmup", "1", "--out", ::testing::TempDir() + "/gradsync-cli-measured"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("'s compute times were measured on NVIDIA H200 (validation/gpu/h200-2026-11-27/"
                       "steps_gpt2-bf16-sdpa.json.gz, batch 16): used as measured, in proportion to batch on "
                       "every h100-sxm5-80gb (gradsync does not move a measured step to another GPU)"),
            std::string::npos)
      << r.out;
  // A calibration would replace those measured times: refused, not applied under that header.
  const Result c =
      run({"simulate", "--strategy", "ddp", "--model", model, "--topology", "dgx-h100", "--gpus", "2", "--precision",
           "bf16", "--calibration", "tests/fuzz/seeds/calibration/cpu-2ranks.yaml", "--iterations", "2", "--warmup",
           "1", "--out", ::testing::TempDir() + "/gradsync-cli-measured"});
  EXPECT_EQ(c.code, 2) << c.err;
  EXPECT_NE(c.err.find("calibration tests/fuzz/seeds/calibration/cpu-2ranks.yaml: model gpt2 holds a step measured "
                       "on NVIDIA H200 (validation/gpu/h200-2026-11-27/steps_gpt2-bf16-sdpa.json.gz), whose compute "
                       "times are used as measured; a calibration would replace them: expected no calibration with "
                       "an imported model"),
            std::string::npos)
      << c.err;
  // models show without --gpu shows it on the GPU it was measured on (the trace's "NVIDIA H200"),
  // not the A100 it took until 2026-12-02; --gpu still wins.
  const Result shown = run_printed({"models", "show", model});
  EXPECT_EQ(shown.code, 0) << shown.err;
  EXPECT_NE(shown.out.find("# on one h200-sxm-141gb (NVIDIA H200 SXM 141GB), bf16"), std::string::npos) << shown.out;
  EXPECT_NE(run_printed({"models", "show", model, "--gpu", "h100"}).out.find("# on one h100-sxm5-80gb"),
            std::string::npos);
  std::remove(model.c_str());
}

// The header shows sizes as `gradsync buckets` does, the value to give DDP's bucket_cap_mb for the
// same bytes to ten digits (25GB is 23841.85791, not 23841.85791015625 nor a rounded 23841.9), and
// NCCL's switches as NCCL's environment takes them (NCCL_P2P_DISABLE=1).
TEST(Cli, HeaderShowsSizesAndNcclSwitchesAsGiven) {
  const Result r = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--iterations",
                                "2", "--bucket-cap-mb", "25GB", "--nccl", "NCCL_P2P_DISABLE=1", "--out",
                                ::testing::TempDir() + "/gradsync-cli-header"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# DDP: bucket_cap_mb 23841.85791, first bucket 23841.85791 MiB,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", NCCL_P2P_DISABLE=1,"), std::string::npos) << r.out;
}

// optimizer none (a forward and backward benchmark) has no optimizer step: --explain prints no
// optimizer row for DP or DDP (it printed one of 0.000 ms until 2026-12-01).
TEST(Cli, NoOptimizerStepHasNoOptimizerRow) {
  const Result r = run_printed({"compare", "--model", "resnet18", "--gpus", "2", "--iterations", "2", "--optimizer",
                                "none", "--set-to-none=true", "--explain", "--advice-budget", "0", "--out",
                                ::testing::TempDir() + "/gradsync-cli-noopt"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("  ddp       backward"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("       optimizer "), std::string::npos) << r.out;
}

// --iterations alone below warmup's default of 3 runs, with one steady iteration; a warmup given
// that leaves none is still an error.
TEST(Cli, FewIterationsWithoutWarmupLeaveOneSteadyIteration) {
  const Result r = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--iterations",
                                "2", "--out", ::testing::TempDir() + "/gradsync-cli-iterations"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# simulated 2 iterations; steady = mean of iterations 2..2;"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("the steady mean includes iteration 1"), std::string::npos) << r.out;
  // One iteration: its mean is iteration 1, which the header says is not a steady step.
  const Result one = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--iterations",
                                  "1", "--out", ::testing::TempDir() + "/gradsync-cli-iterations"});
  EXPECT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("# simulated 1 iteration; steady = mean of iterations 1..1;"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("# the steady mean includes iteration 1, which is not a steady step"), std::string::npos)
      << one.out;
  EXPECT_NE(one.out.find("--iterations 2 or more leaves it out"), std::string::npos) << one.out;
  // Two iterations with --warmup 0: the warmup is what leaves it out.
  const Result none =
      run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--iterations", "2",
                   "--warmup", "0", "--out", ::testing::TempDir() + "/gradsync-cli-iterations"});
  EXPECT_EQ(none.code, 0) << none.err;
  EXPECT_NE(none.out.find("not a steady step: DDP's first iteration reduces one bucket after backward (nothing "
                          "overlapped; PyTorch >= 1.12) and a real run's first iteration also pays its start-up "
                          "(cuDNN's algorithm search, the caching allocator's first allocations), which gradsync does "
                          "not simulate; --warmup 1 leaves it out"),
            std::string::npos)
      << none.out;
  // DataParallel alone has no first DDP iteration to speak of.
  const Result dp = run_printed({"simulate", "--strategy", "dp", "--model", "resnet18", "--gpus", "2", "--iterations",
                                 "1", "--out", ::testing::TempDir() + "/gradsync-cli-iterations"});
  EXPECT_NE(dp.out.find("not a steady step: a real run's first iteration also pays its start-up"), std::string::npos)
      << dp.out;
  EXPECT_EQ(dp.out.find("DDP's first iteration"), std::string::npos) << dp.out;
  // fp16 autocast without GradScaler is simulated as asked, and said to lose small gradients.
  const Result fp16 =
      run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--precision", "fp16",
                   "--grad-scaler", "false", "--out", ::testing::TempDir() + "/gradsync-cli-iterations"});
  EXPECT_NE(fp16.out.find("# fp16 autocast without GradScaler: gradients below float16's range"), std::string::npos)
      << fp16.out;
  expect_error(
      {"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--iterations", "2", "--warmup", "2"}, 2,
      "--warmup 2: expected 0..1 (fewer than iterations 2, so that a steady iteration is left)\n");
}

// static_graph rebuilds DDP's buckets for iteration 3: a steady mean from iteration 2 says so.
TEST(Cli, StaticGraphsConstructedBucketsInTheSteadyMeanAreSaid) {
  const Result r =
      run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--iterations", "4",
                   "--warmup", "1", "--static-graph", "--out", ::testing::TempDir() + "/gradsync-cli-static-graph"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# the steady mean includes iteration 2, on DDP's constructed buckets: with static_graph the "
                       "Reducer rebuilds them for iteration 3; --warmup 2 leaves it out\n"),
            std::string::npos)
      << r.out;
}

// advise's answer is its advice: a budget of 0 simulates none, and says so.
TEST(Cli, AdviseWithoutABudgetSaysNoChangeWasSimulated) {
  const Result r = run_printed({"advise", "--model", "resnet18", "--gpus", "2", "--iterations", "2", "--advice-budget",
                                "0", "--out", ::testing::TempDir() + "/gradsync-cli-advise-budget"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# no change simulated: --advice-budget 0"), std::string::npos) << r.out;
}

// FlashAttention takes fp16 and bf16 only: asking for it in fp32 or tf32 is an error naming the flag
// or key and what PyTorch runs instead, from models show and from a scenario alike.
TEST(Cli, FlashAttentionInFloat32IsRefused) {
  const std::string why =
      "FlashAttention runs in fp16 and bf16 only, not tf32; F.scaled_dot_product_attention takes its "
      "memory-efficient kernel for float32 inputs: expected attention mem-efficient or math, or precision bf16 or "
      "fp16\n";
  const Result show =
      run({"models", "show", "nanogpt", "--gpu", "h200", "--precision", "tf32", "--attention", "flash"});
  EXPECT_EQ(show.code, 2);
  EXPECT_EQ(show.err.substr(0, show.err.find('\n') + 1), "error: --attention flash: " + why) << show.err;
  const Result sim = run({"simulate", "--strategy", "ddp", "--model", "nanogpt", "--gpus", "2", "--precision", "tf32",
                          "--attention", "flash", "--out", testing::TempDir() + "/flash-tf32"});
  EXPECT_EQ(sim.code, 2);
  // From a flag, the flag with its value.
  EXPECT_EQ(sim.err.substr(0, sim.err.find('\n') + 1), "error: --attention flash: " + why) << sim.err;
  EXPECT_EQ(run({"models", "show", "nanogpt", "--gpu", "h200", "--precision", "bf16", "--attention", "flash"}).code, 0);
}

// Word values take any case, flags and scenario keys alike (a strategy, precision, optimizer, comm
// hook and GPU); a model or built-in topology named but for case is refused with the right name,
// since a name without a slash or an extension is never a file.
TEST(Cli, WordValuesTakeAnyCase) {
  const Result sim = run_printed({"simulate", "--strategy", "DDP", "--model", "resnet18", "--gpus", "2", "--comm-hook",
                                  "PowerSGD:Rank=2", "--precision", "FP16", "--optimizer", "AdamW", "--iterations", "2",
                                  "--warmup", "1", "--out", testing::TempDir() + "/any-case"});
  EXPECT_EQ(sim.code, 0) << sim.err;
  EXPECT_NE(sim.out.find("fp16, adamw (foreach)"), std::string::npos) << sim.out;
  EXPECT_NE(sim.out.find("comm hook powersgd:rank=2,start_iter=1000"), std::string::npos) << sim.out;
  const Result show = run_printed({"models", "show", "gpt2", "--gpu", "A100", "--precision", "BF16"});
  EXPECT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("# on one a100-sxm4-80gb (NVIDIA A100 SXM4 80GB), bf16,"), std::string::npos) << show.out;
  const Result model = run({"compare", "--model", "GPT2"});
  EXPECT_EQ(model.code, 2);
  EXPECT_NE(model.err.find("nor a file path (zoo names are lower case: gpt2)"), std::string::npos) << model.err;
  const Result topo = run({"compare", "--topology", "DGX-A100"});
  EXPECT_EQ(topo.code, 2);
  EXPECT_NE(topo.err.find("(built-in names are lower case: dgx-a100)"), std::string::npos) << topo.err;
}

// Every word-valued flag outside the scenario keys takes any case too: collectives' operation and
// fidelity, models show's attention and optimizer, topo generate's generator, CPU, P2P and node type.
TEST(Cli, EveryWordValuedFlagTakesAnyCase) {
  const Result coll = run_printed({"collectives", "--topology", "dgx-a100", "-b", "1M", "-e", "1M", "--op", "ALLGATHER",
                                   "--fidelity", "Aggregate"});
  EXPECT_EQ(coll.code, 0) << coll.err;  // one simulation per process: the lower-case run is collectives' own test
  EXPECT_NE(coll.out.find("# gradsync collectives: simulated allgather on dgx-a100"), std::string::npos) << coll.out;
  const Result show = run_printed({"models", "show", "gpt2", "--attention", "Mem-Efficient", "--optimizer", "SGD"});
  EXPECT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("optimizer sgd (foreach); eager, mem-efficient attention"), std::string::npos) << show.out;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"topo", "generate", "PCIe", "--cpu", "AMD", "--p2p", "ON"},
        std::vector<std::string>{"topo", "generate", "NVSWITCH"},
        std::vector<std::string>{"topo", "generate", "Fat-Tree", "--nodes", "2", "--node", "DGX-A100"}}) {
    const Result r = run_printed(args);
    EXPECT_EQ(r.code, 0) << fmt::format("{}", fmt::join(args, " ")) << ": " << r.err;
  }
  EXPECT_NE(run_printed({"topo", "generate", "pcie", "--cpu", "AMD"}).out.find("--cpu amd"), std::string::npos);
}

// models show --json and buckets --json carry every setting that changes their numbers, so that two
// outputs can be told apart.
TEST(Cli, JsonOutputsNameTheSettingsThatChangeThem) {
  const nlohmann::json plain = nlohmann::json::parse(run_printed({"models", "show", "gpt2", "--json"}).out);
  EXPECT_EQ(plain.at("mixed_precision"), "autocast");
  EXPECT_EQ(plain.at("pad_to_multiple_of"), 1);
  EXPECT_EQ(plain.at("channels_last"), false);
  const nlohmann::json padded =
      nlohmann::json::parse(run_printed({"models", "show", "gpt2", "--json", "--pad-to-multiple-of", "64",
                                         "--mixed-precision", "master-weights"})
                                .out);
  EXPECT_EQ(padded.at("mixed_precision"), "master-weights");
  EXPECT_EQ(padded.at("pad_to_multiple_of"), 64);
  EXPECT_NE(padded.at("step_s"), plain.at("step_s"));
  EXPECT_EQ(nlohmann::json::parse(run_printed({"models", "show", "resnet50", "--json", "--channels-last"}).out)
                .at("channels_last"),
            true);
  const nlohmann::json f32 = nlohmann::json::parse(run_printed({"buckets", "--model", "gpt2", "--json"}).out);
  const nlohmann::json half =
      nlohmann::json::parse(run_printed({"buckets", "--model", "gpt2", "--json", "--mixed-precision", "master-weights",
                                         "--precision", "bf16"})
                                .out);
  EXPECT_EQ(f32.at("gradient_dtype"), "float32");
  EXPECT_EQ(half.at("gradient_dtype"), "bfloat16");
  EXPECT_EQ(2 * half.at("gradient_bytes").get<long>(), f32.at("gradient_bytes").get<long>());
}

// The buckets header writes an explicit cap as given, however large or fractional, with its size.
TEST(Cli, BucketsHeaderWritesTheCapAsGiven) {
  EXPECT_NE(run_printed({"buckets", "--model", "resnet18", "--bucket-cap-mb", "1TiB"})
                .out.find("# bucket_cap_mb 1048576 (1.00 TiB), first bucket"),
            std::string::npos);
  const Result mb = run_printed({"buckets", "--model", "resnet18", "--bucket-cap-mb", "25MB"});
  EXPECT_NE(mb.out.find("# bucket_cap_mb 23.84185791 (23.8 MiB), first bucket"), std::string::npos) << mb.out;
}

// Misaligned GEMMs: padding is advised for a vocabulary, which --pad-to-multiple-of pads, and not
// for another shape (ViT-B/16's 197 tokens), which it does not.
TEST(Cli, MisalignedGemmsAdviseWhatPaddingCanFix) {
  const Result gpt2 = run_printed({"models", "show", "gpt2"});
  EXPECT_NE(gpt2.out.find("pad the vocabulary (50257) to a multiple of 64: --pad-to-multiple-of 64"), std::string::npos)
      << gpt2.out;
  const Result vit = run_printed({"models", "show", "vit-b-16"});
  EXPECT_NE(vit.out.find("misaligned GEMMs"), std::string::npos) << vit.out;
  EXPECT_EQ(vit.out.find("vocabulary ("), std::string::npos) << vit.out;
  EXPECT_NE(vit.out.find("a shape of the model's own"), std::string::npos) << vit.out;
}

// A release number with a leading zero is not torch.__version__'s: 2.011 is refused, not read as 2.11.
TEST(Cli, APytorchVersionWithLeadingZerosIsRefused) {
  const Result r = run({"buckets", "--model", "resnet18", "--pytorch-version", "2.011"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("\"2.011\": expected MAJOR.MINOR"), std::string::npos) << r.err;
}

// A value with blanks at its ends is a quoting slip on every flag alike (as in a scenario file), not
// read by some flags and refused by others.
TEST(Cli, AValueWithBlanksAtItsEndsIsRefusedOnEveryFlag) {
  const struct {
    std::vector<std::string> args;
    std::string said;
  } cases[] = {
      {{"compare", "--precision", "bf16 "}, "--precision: value \"bf16 \" has blanks at its ends"},
      {{"compare", "--gpus", " 2"}, "--gpus: value \" 2\" has blanks at its ends"},
      {{"compare", "--model=gpt2\t"}, "--model: value \"gpt2\t\" has blanks at its ends"},
      {{"models ", "show", "gpt2"}, "argument \"models \" has blanks at its ends"},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.said;
    EXPECT_NE(r.err.find(c.said + "; expected it without them (a quote closed in the wrong place?)"), std::string::npos)
        << r.err;
  }
}

// DataParallel over one GPU: --explain places its phases on GPU0, not on "GPUs 0-0".
TEST(Cli, DataParallelOnOneGpuIsExplainedOnGpu0) {
  const Result r = run_printed({"simulate", "--strategy", "dp", "--model", "resnet18", "--gpus", "1", "--explain",
                                "--iterations", "2", "--warmup", "1", "--out", testing::TempDir() + "/dp-one"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("  dp        forward    GPU0 only"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("GPUs 0-0"), std::string::npos) << r.out;
}

// topo show's bisection splits by hosts: three hosts split 1 against 2, and it says why.
TEST(Cli, AnUnevenBisectionSaysWhy) {
  const std::string file = testing::TempDir() + "/ft3.dot";
  ASSERT_EQ(
      run({"topo", "generate", "fat-tree", "--nodes", "3", "--node", "dgx-a100", "--gpus-per-node", "2", "-o", file})
          .code,
      0);
  const Result r = run_printed({"topo", "show", file});
  EXPECT_NE(r.out.find("# Bisection (estimate): GPUs [0 1] -> [2 3 4 5]: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(the first half of the hosts against the rest: an odd host count splits the GPUs unevenly)"),
            std::string::npos)
      << r.out;
  const Result even = run_printed({"topo", "show", "dgx-a100"});
  EXPECT_EQ(even.out.find("splits the GPUs unevenly"), std::string::npos);
}

// A bucket cap under 16 KiB is said in the bytes DDP caps it at, not as a fraction of a MiB.
TEST(Cli, ATinyFirstBucketIsSaidInBytes) {
  const Result r =
      run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--bucket-cap-mb", "0.0001",
                   "--iterations", "2", "--warmup", "1", "--out", testing::TempDir() + "/tiny-cap"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# DDP: bucket_cap_mb 0.0001 (104 B), first bucket 104 B, "), std::string::npos) << r.out;
}

// A model without attention never calls F.scaled_dot_product_attention, so flash attention's limits
// (precision, GPU) do not apply to it: the flag is said to change nothing rather than refused.
TEST(Cli, FlashAttentionOnAModelWithoutAttentionChangesNothing) {
  for (const char* precision : {"fp32", "tf32"}) {
    const Result show =
        run_printed({"models", "show", "resnet50", "--gpu", "v100", "--precision", precision, "--attention", "flash"});
    EXPECT_EQ(show.code, 0) << show.err;
    EXPECT_NE(show.out.find("# --attention flash: resnet50 has no attention layer: it changes nothing\n"),
              std::string::npos)
        << show.out;
  }
  const Result sim = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--topology", "dgx1-v100",
                                  "--gpus", "2", "--precision", "fp32", "--attention", "flash", "--iterations", "2",
                                  "--warmup", "1", "--out", testing::TempDir() + "/flash-resnet"});
  EXPECT_EQ(sim.code, 0) << sim.err;
  EXPECT_NE(sim.out.find("# --attention flash: resnet18 has no attention layer: it changes nothing"), std::string::npos)
      << sim.out;
}

// Without an optimizer step, torch.optim's implementation shows only in how zero_grad fills the
// gradients: with set_to_none (PyTorch 2.x's default) a given one is said to change nothing, the
// header names no implementation, and with set_to_none=False it is kept (it decides the fill).
TEST(Cli, AnOptimizerImplementationWithoutAnOptimizerChangesNothing) {
  const Result fused = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2",
                                    "--optimizer", "none", "--optimizer-impl", "fused", "--iterations", "2", "--warmup",
                                    "1", "--out", testing::TempDir() + "/optimizer-none-fused"});
  EXPECT_EQ(fused.code, 0) << fused.err;
  EXPECT_NE(fused.out.find(
                "# --optimizer-impl fused: --optimizer none runs no optimizer step and zero_grad sets no zeros: it "
                "changes nothing\n"),
            std::string::npos)
      << fused.out;
  const Result plain =
      run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--optimizer", "none",
                   "--iterations", "2", "--warmup", "1", "--out", testing::TempDir() + "/optimizer-none-auto"});
  EXPECT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("--optimizer-impl"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find(", bf16, none, eager,"), std::string::npos) << plain.out;
  const Result fill = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--optimizer",
                                   "none", "--optimizer-impl", "for-loop", "--set-to-none", "false", "--iterations",
                                   "2", "--warmup", "1", "--out", testing::TempDir() + "/optimizer-none-fill"});
  EXPECT_EQ(fill.code, 0) << fill.err;
  EXPECT_EQ(fill.out.find("--optimizer-impl"), std::string::npos) << fill.out;
  EXPECT_NE(fill.out.find(", none (for-loop, zero_grad fills zeros),"), std::string::npos) << fill.out;
}

// PyTorch's FlashAttention-2 kernels need compute capability 8.0 (7.5 for 2.0 and 2.1's
// FlashAttention): flash on a V100 is refused as in fp32, naming the GPU and the release.
TEST(Cli, FlashAttentionOnAGpuItsKernelsDoNotRunOn) {
  expect_error(
      {"models", "show", "gpt2", "--gpu", "v100", "--attention", "flash"}, 2,
      "--attention flash: FlashAttention needs compute capability 8.0 or later in PyTorch 2.11; the NVIDIA Tesla V100 "
      "SXM2 32GB is 7.0, where F.scaled_dot_product_attention takes its memory-efficient kernel");
  expect_error({"compare", "--model", "gpt2", "--topology", "dgx1-v100", "--gpus", "2", "--attention", "flash",
                "--pytorch-version", "2.1"},
               2, "--attention flash: FlashAttention needs compute capability 7.5 or later in PyTorch 2.1");
  EXPECT_EQ(
      run({"models", "show", "gpt2", "--gpu", "rtx-2080-ti", "--attention", "mem-efficient", "--batch", "4"}).code, 0);
}

// A calibration that measured no broadcast over the run's ranks (a file cut short or made by
// hand): DDP's broadcasts keep the topology's network model, and a note says so.
TEST(Cli, ACalibrationWithoutACollectiveTheRunCallsIsNoted) {
  std::ifstream in("tests/fuzz/seeds/calibration/cpu-2ranks.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t from = text.find("  - op: broadcast"), to = text.find("  - op: reduce\n");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  const std::string file = ::testing::TempDir() + "/gradsync-cli-nobroadcast.yaml";
  std::ofstream(file) << text.substr(0, from) + text.substr(to);
  std::ostringstream noted;
  std::streambuf* const saved = std::cerr.rdbuf(noted.rdbuf());
  const Result r = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--precision",
                                "fp32", "--batch-per-gpu", "1", "--iterations", "2", "--warmup", "1", "--calibration",
                                file, "--out", ::testing::TempDir() + "/gradsync-cli-nobroadcast"});
  std::cerr.rdbuf(saved);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(noted.str().find("note: calibration " + file +
                             " measured no broadcast over 2 ranks; those calls keep the network model of topology "
                             "dgx-a100\n"),
            std::string::npos)
      << noted.str();
  std::remove(file.c_str());
}

// A model whose parameters have two dtypes says both (it said the first one's for the whole).
// tf32 on a GPU before Ampere runs as fp32 (allow_tf32 has no tensor cores to use there): the
// header says so rather than printing fp32's numbers under "tf32".
TEST(Cli, Tf32BeforeAmpereIsSaidToRunAsFp32) {
  const Result r = run_printed({"models", "show", "resnet18", "--gpu", "v100", "--precision", "tf32"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# tf32: the v100-sxm2-32gb has no TF32 tensor cores (they came with Ampere): allow_tf32 "
                       "leaves its float32 as it is, so this runs as --precision fp32\n"),
            std::string::npos)
      << r.out;
  const Result a100 = run_printed({"models", "show", "resnet18", "--gpu", "a100", "--precision", "tf32"});
  EXPECT_NE(a100.out.find("# on one a100-sxm4-80gb"), std::string::npos) << a100.out;
  EXPECT_EQ(a100.out.find("no TF32 tensor cores"), std::string::npos) << a100.out;
  // The run's precision (header, summary.csv run_precision) is fp32; the key keeps what was asked.
  const std::string out = ::testing::TempDir() + "/gradsync-cli-tf32-v100";
  const Result run = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--topology", "dgx1-v100",
                                  "--gpus", "2", "--precision", "tf32", "--iterations", "2", "--out", out});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find(", fp32, "), std::string::npos) << run.out;
  std::ifstream csv(out + "/summary.csv");
  std::string header, row;
  std::getline(csv, header);
  std::getline(csv, row);
  const auto field = [](const std::string& line, std::size_t i) {
    std::stringstream in(line);
    std::string f;
    for (std::size_t k = 0; k <= i && std::getline(in, f, ','); ++k) {
    }
    return f;
  };
  std::size_t run_col = 0, key_col = 0;
  {
    std::stringstream in(header);
    std::string f;
    for (std::size_t k = 0; std::getline(in, f, ','); ++k) {
      if (f == "run_precision") run_col = k;
      if (f == "precision") key_col = k;
    }
  }
  EXPECT_EQ(field(row, key_col), "tf32");
  EXPECT_EQ(field(row, run_col), "fp32");
}

// From PyTorch 1.7 to 1.11 allow_tf32 defaulted to True for matmuls: an fp32 script on an A100
// ran them as TF32, and the header says so (the run's precision is tf32); from 1.12 fp32 is fp32.
TEST(Cli, Fp32BeforePytorch112RunsMatmulsAsTf32) {
  const Result r = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--iterations",
                                "2", "--precision", "fp32", "--pytorch-version", "1.11", "--out",
                                ::testing::TempDir() + "/gradsync-cli-fp32-111"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# fp32: PyTorch 1.11 runs float32 matmuls as TF32 on the a100-sxm4-80gb by default"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(", tf32, "), std::string::npos) << r.out;
}

// PowerSGD compresses from start_iter + 1: a steady mean that begins before it mixes the two.
TEST(Cli, PowerSgdsPlainIterationsInTheSteadyMeanAreSaid) {
  const Result r = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--iterations",
                                "4", "--warmup", "1", "--comm-hook", "powersgd:rank=4,start_iter=2", "--out",
                                ::testing::TempDir() + "/gradsync-cli-powersgd"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# the steady mean mixes PowerSGD's plain allreduce (iterations 2..2) with its compressed "
                       "iterations (from 3); --warmup 2 leaves the plain ones out\n"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace gradsync::apps
