// cli_test.cpp: exit codes and error lines of the command line.
#include "apps/cli.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli_test_util.hpp"
#include "core/version.hpp"
#include "tests/support/in_child.hpp"

namespace gradsync::apps {
namespace {

using test::expect_error;
using test::Result;
using test::run;
using test::run_printed;

TEST(Cli, VersionPrintsTheVersion) {
  const Result r = run({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, std::string("gradsync ") + kVersion + "\n");
  EXPECT_EQ(r.err, "");
}

// A parse error under mpirun or srun: the command line decides it, so every rank finds the same
// one; rank 0 prints it and exits 2, the other ranks exit 0 without a word (once, not once per rank).
TEST(Cli, ParseErrorUnderALauncherIsPrintedByRankZeroOnly) {
  const char* const keys[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_STEP_ID", "SLURM_PROCID"};
  for (const char* k : keys) unsetenv(k);
  const std::vector<std::string> bad = {"bench", "--no-such-flag"};
  // The other ranks exit 0, so that the launcher does not kill rank 0 before it has said it.
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  Result r = run(bad);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "");
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  r = run(bad);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  unsetenv("OMPI_COMM_WORLD_RANK");
  // srun: SLURM_PROCID counts only inside a job step (SLURM_STEP_ID), as srun sets it.
  ::setenv("SLURM_PROCID", "3", 1);
  r = run(bad);
  EXPECT_NE(r.err, "") << "SLURM_PROCID without a step is not srun";
  ::setenv("SLURM_STEP_ID", "0", 1);
  r = run(bad);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "");
  for (const char* k : keys) unsetenv(k);
  // Errors that are not the command line's own (a file, a device) are still said by every rank.
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  r = run({"topo", "validate", "/nonexistent/cluster.dot"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  unsetenv("OMPI_COMM_WORLD_RANK");
}

TEST(Cli, HelpExitsZero) {
  const Result r = run({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Usage: gradsync"), std::string::npos) << r.out;
}

// bench's --help lists no flag bench refuses; each still parses, to say why it is refused.
TEST(Cli, BenchHelpListsNoFlagItRefuses) {
  const Result help = run({"bench", "--help"});
  ASSERT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--bucket-cap-mb"), std::string::npos) << help.out;
  for (const char* refused : {"--topology", "--calibration", "--fidelity", "--gpu-spread-pct"})
    EXPECT_EQ(help.out.find(refused), std::string::npos) << refused;
  const Result spread = run({"bench", "--gpu-spread-pct", "2"});
  EXPECT_EQ(spread.code, 2);
  EXPECT_NE(spread.err.find("bench measures the GPUs as they are"), std::string::npos) << spread.err;
  const Result validate = run({"validate", "--help"});
  EXPECT_NE(validate.out.find("--calibration"), std::string::npos);
  EXPECT_EQ(validate.out.find("--gpu-spread-pct"), std::string::npos);
}

TEST(Cli, UnknownFlagIsAUsageError) {
  const Result r = run({"--frobnicate"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: unknown option '--frobnicate' for 'gradsync'\nRun 'gradsync --help' for usage.\n");
}

TEST(Cli, UnknownCommandIsAUsageError) {
  const Result r = run({"frobnicate"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: unknown command 'frobnicate'\nRun 'gradsync --help' for usage.\n");
}

TEST(Cli, NoCommandIsAUsageError) {
  const Result r = run({});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: no command given\nRun 'gradsync --help' for usage.\n");
}

// CLI11's own wording never reaches the user: an unknown nested command is named, a repeated flag
// is said to be repeated, seconds are checked as seconds.
TEST(Cli, ParseErrorsNameTheWordAndWhatWasExpected) {
  Result r = run({"list", "foo"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "error: unknown command 'foo' for 'gradsync list'; expected one of gpus, clusters, models\n"
            "Run 'gradsync list --help' for usage.\n");
  r = run({"list"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: 'gradsync list' needs a command: gpus, clusters, models\n", 0), 0u) << r.err;
  r = run({"compare", "--iterations", "2", "--iterations", "3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: --iterations given 2 times; give it once\n", 0), 0u) << r.err;
  r = run({"compare", "--compile=maybe"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: --compile: value \"maybe\" must be true or false (or the flag alone, for true)\n", 0),
            0u)
      << r.err;
  // CLI11 alone reads any integer as a switch's value (2 as true, -3 as false): refused, on every
  // command's switches.
  r = run({"compare", "--find-unused-parameters=2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: --find-unused-parameters: value \"2\" must be true or false", 0), 0u) << r.err;
  r = run({"collectives", "--nccl-from-env=-3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: --nccl-from-env: value \"-3\" must be true or false", 0), 0u) << r.err;
  // validate --published prints tables: the options of a scenario run are refused beside it, and
  // its own options without it.
  r = run({"validate", "--published", "--out", "val1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: --out: --published prints its tables", 0), 0u) << r.err;
  r = run({"validate", "--case", "x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: --case: only with --published\n", 0), 0u) << r.err;
  for (const char* bad : {"-1", "abc", "0", "inf"}) {
    r = run({"sweep", "--timeout", bad});
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(
        r.err.rfind(std::string("error: --timeout: value \"") + bad + "\" must be a number of seconds > 0 (600, 0.5)\n",
                    0),
        0u)
        << r.err;
  }
}

// A topology file whose NIC is slower than NCCL's 0.1 GB/s fallback is the file's fault: exit 1 in
// collectives as in compare and topo validate (collectives said 2, a usage error, until 2026-12-01).
TEST(Cli, ALinkTooSlowForAnyRingIsTheFilesFault) {
  const std::string dot = ::testing::TempDir() + "/gradsync-cli-slow-nic.dot";
  ASSERT_EQ(
      run({"topo", "generate", "fat-tree", "--nodes", "2", "--node", "dgx-a100", "--nic-bw", "400Mbps", "-o", dot})
          .code,
      0);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"collectives", "--topology", dot, "-b", "1M", "-e", "1M"},
        std::vector<std::string>{"topo", "validate", dot}}) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 1) << args.front() << ": " << r.err;
    EXPECT_NE(r.err.find("no ring through GPUs 0-15 fits the links"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("--help"), std::string::npos) << r.err;  // not a usage error
  }
}

// Past 64 GPUs the default step fidelity can take minutes per large size: said on stderr before
// the first row, unless --fidelity was given.
TEST(Cli, CollectivesSayStepFidelityIsSlowOnManyGpus) {
  // noted: 1 when the run (in a child: one simulation engine per process) exits 0 and its stderr
  // holds the note, 0 when it does not, -1 when it fails.
  const auto noted = [](std::vector<std::string> extra) {
    std::vector<std::string> args{"collectives", "-b", "64K", "-e", "64K"};
    args.insert(args.end(), extra.begin(), extra.end());
    const std::vector<double> got = testing_support::in_child([&] {
      std::ostringstream caught;
      std::streambuf* const saved = std::cerr.rdbuf(caught.rdbuf());
      const Result r = run_printed(args);
      std::cerr.rdbuf(saved);
      if (r.code != 0) return std::vector<double>{-1};
      return std::vector<double>{caught.str().find("at --fidelity step (the default") != std::string::npos ? 1.0 : 0.0};
    });
    return got.empty() ? -2.0 : got.front();
  };
  EXPECT_EQ(noted({"--topology", "16x-dgx-h100-ndr"}), 1);                        // 128 GPUs
  EXPECT_EQ(noted({"--topology", "16x-dgx-h100-ndr", "--fidelity", "step"}), 0);  // asked for
  EXPECT_EQ(noted({"--topology", "dgx-a100"}), 0);                                // 8 GPUs
}

// A largest size above nccl-tests' memory limit is reduced to it, as nccl-tests does (golden
// collectives-reduce-max-bytes). One rank communicates nothing: refused rather than printed as a
// time of 0.
TEST(Cli, CollectivesRefuseOneRank) {
  expect_error({"collectives", "--topology", "dgx-a100", "-g", "1"}, 2,
               "--gpus 1: a collective of one rank communicates nothing (NCCL returns in place, or copies the buffer "
               "on the GPU out of place); give -g 2 to 8 (dgx-a100 has 8 GPUs)\n");
}

// A zoo model's name where the scenario file goes is a model meant for --model; a range without a
// step reads as one value, and the error says what a range looks like.
TEST(Cli, MistakesNameWhatWasMeant) {
  Result r = run({"compare", "resnet50"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: resnet50: no such scenario file; the zoo model is --model resnet50\n", 0), 0u) << r.err;
  r = run({"sweep", "--vary", "gpus=1:8"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: --vary \"gpus=1:8\": \"1:8\": expected an integer from 1 to 1048576 (a range takes a "
                        "step: 1:8:x2 doubles, 1:8:+1 counts)\n",
                        0),
            0u)
      << r.err;
  // A key that takes no range (a comm hook's options hold a colon) gets no hint of one.
  r = run({"sweep", "--vary", "comm_hook=powersgd:start_iter=1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("start_iter \"1\" must be an integer from 2"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("a range takes a step"), std::string::npos) << r.err;
}

// A topology whose GPUs used are of two models: one run is priced for one GPU model, so it is
// refused (naming both), not costed as if every GPU were GPU 0's; its first GPU alone runs.
TEST(Cli, AMixedGpuTopologyIsRefusedNotCostedAsGpuZero) {
  const std::string dir = ::testing::TempDir();
  const std::string topo = dir + "/gradsync-cli-mixed.dot";
  std::ofstream(topo)
      << "graph t { cpu0 [kind=\"cpu\", host=\"n0\"]; sw [kind=\"pcie_switch\", host=\"n0\"];\n"
         "  g0 [kind=\"gpu\", model=\"a100\", host=\"n0\"]; g1 [kind=\"gpu\", model=\"v100\", host=\"n0\"];\n"
         "  sw -- cpu0 [type=\"pcie\", bw=\"31.5GBps\", latency=\"150ns\"];\n"
         "  g0 -- sw [type=\"pcie\", bw=\"31.5GBps\", latency=\"150ns\"];\n"
         "  g1 -- sw [type=\"pcie\", bw=\"15.75GBps\", latency=\"150ns\"]; }\n";
  const std::vector<std::string> base{"compare",
                                      "--topology",
                                      topo,
                                      "--model",
                                      "resnet18",
                                      "--iterations",
                                      "2",
                                      "--warmup",
                                      "1",
                                      "--advice-budget",
                                      "0",
                                      "--out",
                                      dir + "/gradsync-cli-mixed-out"};
  expect_error(base, 2,
               "--topology " + topo +
                   ": GPU g0 is a NVIDIA A100 SXM4 80GB and GPU g1 a NVIDIA Tesla V100 SXM2 32GB; "
                   "gradsync simulates a run on one GPU model");
  std::vector<std::string> one = base;
  one.insert(one.end(), {"--gpus", "1"});
  EXPECT_EQ(run_printed(one).code, 0);
  // The same file without its CPU: that fault is said first, as topo validate says it, not the
  // mixed models, whose advice (--gpus 1) would only meet it next.
  const std::string no_cpu = dir + "/gradsync-cli-mixed-nocpu.dot";
  std::ofstream(no_cpu)
      << "graph t { sw [kind=\"pcie_switch\", host=\"n0\"];\n"
         "  g0 [kind=\"gpu\", model=\"a100\", host=\"n0\"]; g1 [kind=\"gpu\", model=\"v100\", host=\"n0\"];\n"
         "  g0 -- sw [type=\"pcie\", bw=\"31.5GBps\", latency=\"150ns\"];\n"
         "  g1 -- sw [type=\"pcie\", bw=\"15.75GBps\", latency=\"150ns\"]; }\n";
  std::vector<std::string> mixed_no_cpu = base;
  mixed_no_cpu[2] = no_cpu;
  const Result r = run_printed(mixed_no_cpu);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("GPU g0 on host n0 reaches no CPU socket"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("one GPU model"), std::string::npos) << r.err;
}

// NCCL_ALGO=tree on one host leaves DDP's allreduce nothing gradsync models (refused), while
// DataParallel's broadcast and reduce, ring-only in NCCL, fall back to the ring: a DP-only run
// goes ahead. A protocol list that excludes every protocol is a bad value, whatever the strategy.
TEST(Cli, AnAlgorithmListIsCheckedAgainstTheCollectivesTheRunCalls) {
  const std::string out = (std::filesystem::path(::testing::TempDir()) / "cli_dp_tree").string();
  Result r = run_printed({"simulate", "--strategy", "dp", "--model", "resnet18", "--gpus", "2", "--algo", "tree",
                          "--iterations", "2", "--out", out});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("NCCL_ALGO=tree"), std::string::npos) << r.out;
  r = run({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--algo", "tree", "--out", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: NCCL_ALGO=tree: allreduce over 2 GPUs on 1 node has no algorithm and protocol left", 0),
            0u)
      << r.err;
  for (const char* strategy : {"dp", "ddp"}) {
    r = run({"simulate", "--strategy", strategy, "--model", "resnet18", "--gpus", "2", "--proto", "^ll,ll128,simple",
             "--out", out});
    EXPECT_EQ(r.code, 2) << strategy;
    EXPECT_NE(r.err.find("excludes every one of ll, ll128, simple"), std::string::npos) << r.err;
  }
}

// rings: the launched channels `collectives` reports on a DGX A100 ("NCCL INFO N coll channels:
// ..."), from a child process (one simulation engine per process); -1 when the run failed or
// printed none.
double rings(const std::vector<std::string>& extra) {
  std::vector<std::string> args{"collectives", "--topology", "dgx-a100", "-b", "1M", "-e", "1M"};
  args.insert(args.end(), extra.begin(), extra.end());
  const std::vector<double> got = testing_support::in_child([&] {
    const Result r = run_printed(args);
    const std::string tag = "NCCL INFO ";
    const auto at = r.out.find(tag);
    if (r.code != 0 || at == std::string::npos || r.out.find(" coll channels", at) == std::string::npos)
      return std::vector<double>{-1};
    return std::vector<double>{std::stod(r.out.substr(at + tag.size()))};
  });
  return got.empty() ? -2.0 : got.front();
}

// NCCL 2.17's NCCL_MAX_CTAS / NCCL_MIN_CTAS bound the ring channels as NCCL_MAX_NCHANNELS /
// NCCL_MIN_NCHANNELS do (connect.cc takes the smaller maximum and the larger minimum of both),
// from flags and from the environment alike.
TEST(Cli, CtaBoundsAlsoBoundTheRingChannels) {
  EXPECT_EQ(rings({"--nccl", "NCCL_MAX_CTAS=4"}), 4);
  EXPECT_EQ(rings({"--nccl", "NCCL_MAX_NCHANNELS=4"}), 4);
  ::setenv("NCCL_MAX_CTAS", "4", 1);
  ::setenv("NCCL_MAX_NCHANNELS", "8", 1);
  EXPECT_EQ(rings({"--nccl-from-env"}), 4);  // the smaller maximum
  ::unsetenv("NCCL_MAX_CTAS");
  ::unsetenv("NCCL_MAX_NCHANNELS");
  ::setenv("NCCL_MIN_CTAS", "32", 1);
  ::setenv("NCCL_MIN_NCHANNELS", "16", 1);
  EXPECT_EQ(rings({"--nccl-from-env"}), 32);  // the larger minimum
  ::unsetenv("NCCL_MIN_CTAS");
  ::unsetenv("NCCL_MIN_NCHANNELS");
  // NCCL_PARAM's strtoll(str, NULL, 0): a leading 0 is octal, 0x hex.
  EXPECT_EQ(rings({"--nccl", "NCCL_MAX_NCHANNELS=010"}), 8);
  ::setenv("NCCL_MAX_NCHANNELS", "0x6", 1);
  EXPECT_EQ(rings({"--nccl-from-env"}), 6);
  ::unsetenv("NCCL_MAX_NCHANNELS");
  // Text NCCL reads only a prefix of is refused, saying what NCCL would read.
  const Result prefix = run({"collectives", "--topology", "dgx-a100", "--nccl", "NCCL_MAX_NCHANNELS=08"});
  EXPECT_EQ(prefix.code, 2);
  EXPECT_NE(prefix.err.find("NCCL reads \"08\" as 0 (strtoll with base 0 stops at \"8\""), std::string::npos)
      << prefix.err;
  // A level is compared as written: with a blank before it NCCL keeps its default, so it is refused.
  const Result blank = run({"collectives", "--topology", "dgx-a100", "--nccl", "NCCL_P2P_LEVEL= SYS"});
  EXPECT_EQ(blank.code, 2);
  EXPECT_NE(blank.err.find("blanks around \"SYS\": NCCL compares the level as written"), std::string::npos)
      << blank.err;
  EXPECT_EQ(rings({"--nccl", "NCCL_MAX_NCHANNELS= 4"}), 4);  // strtoll skips leading blanks
}

// Out-of-range channel bounds are clamped as NCCL clamps them (connect.cc ncclMinNchannels and
// ncclMaxNchannels, init.cc "cap channels if needed"), at the release's MAXCHANNELS: 32 before
// 2.25, 64 from it; NCCL 2.4 read NCCL_MIN_NRINGS/NCCL_MAX_NRINGS, not these names.
TEST(Cli, ChannelBoundsAreClampedAsNcclClampsThem) {
  const double found = rings({});
  ASSERT_EQ(found, 24);  // twelve NVSwitch rings, each run by two channels
  EXPECT_EQ(rings({"--nccl", "NCCL_MIN_NCHANNELS=1000"}), 64);
  EXPECT_EQ(rings({"--nccl", "NCCL_MIN_NCHANNELS=1000", "--nccl-version", "2.21"}), 32);
  EXPECT_EQ(rings({"--nccl", "NCCL_MIN_CTAS=100", "--nccl-version", "2.24"}), 32);
  EXPECT_EQ(rings({"--nccl", "NCCL_MIN_NCHANNELS=0"}), found);   // NCCL's own minimum
  EXPECT_EQ(rings({"--nccl", "NCCL_MIN_NCHANNELS=-3"}), found);  // below 0 is 0
  EXPECT_EQ(rings({"--nccl", "NCCL_MAX_NCHANNELS=0"}), 1);       // "setting it to 1"
  EXPECT_EQ(rings({"--nccl", "NCCL_MAX_NCHANNELS=-7"}), 1);
  EXPECT_EQ(rings({"--nccl", "NCCL_MAX_NCHANNELS=-2"}), found);  // NCCL_PARAM's "unset"
  EXPECT_EQ(rings({"--nccl", "NCCL_MAX_NCHANNELS=1000"}), found);
  // The header says the cap.
  const Result capped = run_printed({"collectives", "--topology", "dgx-a100", "-b", "1M", "-e", "1M", "--nccl-version",
                                     "2.21", "--nccl", "NCCL_MAX_NCHANNELS=100"});
  EXPECT_EQ(capped.code, 0) << capped.err;
  EXPECT_NE(capped.out.find("NCCL_MAX_NCHANNELS=100 (NCCL 2.21 caps it at MAXCHANNELS 32)"), std::string::npos)
      << capped.out;
  const Result old =
      run({"collectives", "--topology", "dgx-a100", "--nccl-version", "2.4", "--nccl", "NCCL_MAX_NCHANNELS=4"});
  EXPECT_EQ(old.code, 2);
  EXPECT_NE(old.err.find("NCCL 2.4 does not read NCCL_MAX_NCHANNELS (it came with NCCL 2.5)"), std::string::npos)
      << old.err;
  const Result word = run({"collectives", "--topology", "dgx-a100", "--nccl", "NCCL_MIN_NCHANNELS=many"});
  EXPECT_EQ(word.code, 2);
  EXPECT_NE(word.err.find("expected an integer (a C int, as NCCL reads it)"), std::string::npos) << word.err;
}

// A malformed model or topology file named by a flag is a bad input file (exit 1), as README's exit
// table says, not a bad flag (2); a zoo name that does not exist is a bad flag.
TEST(Cli, OutCannotBeTheCurrentFolder) {
  const std::string here = std::filesystem::current_path().string();
  expect_error({"compare", "--model", "resnet18", "--gpus", "2", "--out", "."}, 2,
               "--out .: is the current folder or holds it, and a run replaces its whole output folder; give a folder "
               "of its own, such as --out gradsync-out");
  expect_error({"compare", "--model", "resnet18", "--gpus", "2", "--out", here}, 2,
               "--out " + here + ": is the current folder or holds it");
  expect_error({"compare", "--model", "resnet18", "--gpus", "2", "--out", ".."}, 2,
               "--out ..: is the current folder or holds it");
}

// import-trace: --seq-len as every command checks it, and --out never the trace being read.
TEST(Cli, ImportTraceChecksSeqLenAndWillNotOverwriteItsTrace) {
  const std::string trace = "tests/fuzz/seeds/trace/kineto-gpu.json";
  expect_error({"models", "import-trace", trace, "--model", "resnet18", "--batch", "8", "--seq-len", "128"}, 2,
               "--seq-len 128: model resnet18 has no sequence length");
  expect_error({"models", "import-trace", trace, "--model", "gpt2", "--batch", "8", "--seq-len", "4096"}, 2,
               "--seq-len 4096: model gpt2 has 1024 positions");
  expect_error({"models", "import-trace", trace, "--model", "resnet18", "--batch", "8", "-o", trace}, 2,
               "--out " + trace + ": is the trace being read");
  // Nor the model file it starts from, and topo export neither its input nor a name whose
  // extension says the other format.
  const std::string model = "tests/golden/data/unused-parameter-model.yaml";
  expect_error({"models", "import-trace", trace, "--model", model, "--batch", "8", "-o", model}, 2,
               "--out " + model + ": is the model file being read (--model)");
  const std::string dot = "tests/golden/data/ring-fallback.dot";
  ASSERT_TRUE(std::filesystem::exists(dot));
  expect_error({"topo", "export", dot, "--format", "graphml", "-o", dot}, 2,
               "--out " + dot + ": is the topology being read");
  expect_error({"topo", "export", "dgx-a100", "--format", "dot", "-o", "x.graphml"}, 2,
               "--out x.graphml: a .graphml name for DOT; expected a .dot or .gv name");
  expect_error({"topo", "export", "dgx-a100", "--format", "graphml", "-o", "x.DOT"}, 2,
               "--out x.DOT: a .dot name for GraphML; expected a .graphml or .xml name");
  // Nor a name the reader takes no format from (a scenario file was replaced by DOT that
  // `topo validate` then refused): refused before anything is written, by generate too.
  const std::string victim = ::testing::TempDir() + "/gradsync-topo-victim.yaml";
  { std::ofstream(victim) << "model: resnet18\n"; }
  expect_error({"topo", "generate", "pcie", "-o", victim}, 2,
               "--out " + victim +
                   ": a .yaml name for DOT; expected a .dot or .gv name (gradsync reads a topology "
                   "file by its extension)");
  expect_error({"topo", "export", "dgx-a100", "--format", "dot", "-o", victim}, 2,
               "--out " + victim + ": a .yaml name");
  expect_error({"topo", "generate", "nvswitch", "-o", "cluster"}, 2,
               "--out cluster: a name without an extension for DOT; expected a .dot or .gv name");
  std::ifstream kept(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "model: resnet18\n");
  std::remove(victim.c_str());
}

// --advice-budget reads a number as a number (1e-3 as 0.001); nan, inf and hex are refused.
TEST(Cli, AdviceBudgetTakesExponents) {
  for (const char* bad : {"nan", "inf", "0x10", "1e5", "-1"})
    expect_error({"compare", "--advice-budget", bad}, 2,
                 fmt::format("--advice-budget: \"{}\" is not a number of seconds from 0 to 86400", bad));
  const Result r = run_printed({"compare", "--model", "resnet18", "--gpus", "2", "--iterations", "2", "--advice-budget",
                                "1e-9", "--out", ::testing::TempDir() + "/gradsync-cli-budget"});
  EXPECT_EQ(r.code, 0) << r.err;
}

// A step factor a hair above 1 would make millions of sizes (it ran for ever): refused with the
// count; the factor's upper bound is said too.
TEST(Cli, CollectivesRefuseATableOfMillionsOfSizes) {
  expect_error({"collectives", "--topology", "dgx-a100", "-b", "8", "-e", "1G", "-f", "1", "-i", "8"}, 2,
               "step-bytes 8: 134217728 sizes from 8 to 1073741824 bytes in steps of it (step-factor 1); expected at "
               "most 4096");
  expect_error({"collectives", "--topology", "dgx-a100", "-f", "1e9"}, 2,
               "--step-factor: value \"1e9\" must be a whole number from 1 to 999999999, as nccl-tests reads it (1: "
               "steps of --step-bytes)");
  expect_error({"collectives", "--topology", "dgx-a100", "-f", "1.0000001"}, 2,
               "--step-factor: value \"1.0000001\" must be a whole number");
}

// topo show on one host of more than 32 GPUs (an NVL72 rack, a big PCIe box) lists each ring's
// first GPUs and its size; it read a host chain that a single host's ring does not have.
TEST(Cli, TopoShowOfOneHostOfManyGpus) {
  const std::string file = ::testing::TempDir() + "/gradsync-cli-nvl72.dot";
  ASSERT_EQ(run({"topo", "generate", "nvswitch", "--gpus", "72", "--nics", "8", "--gpu", "b200", "-o", file}).code, 0);
  const Result r = run_printed({"topo", "show", file});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("#   ring  0: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 ... (72 GPUs)"), std::string::npos) << r.out;
  std::remove(file.c_str());
}

// One GPU per node: topo show names no "worst hop inside a node" (there is none); one GPU in all:
// topo validate says there is no ring rather than "0 ring channels of 0 GB/s".
TEST(Cli, TopoShowAndValidateWithoutHopsInsideANode) {
  const std::string file = ::testing::TempDir() + "/gradsync-cli-one-per-node.dot";
  std::ofstream(file) << "graph g {\n"
                         "  g0 [kind=\"gpu\", model=\"a100\", host=\"h0\"]; c0 [kind=\"cpu\", host=\"h0\"];\n"
                         "  n0 [kind=\"nic\", host=\"h0\"]; g1 [kind=\"gpu\", model=\"a100\", host=\"h1\"];\n"
                         "  c1 [kind=\"cpu\", host=\"h1\"]; n1 [kind=\"nic\", host=\"h1\"]; sw [kind=\"switch\"];\n"
                         "  g0 -- c0 [type=\"pcie\", bw=\"31.5GBps\", latency=\"1us\"];\n"
                         "  n0 -- c0 [type=\"pcie\", bw=\"31.5GBps\", latency=\"1us\"];\n"
                         "  g1 -- c1 [type=\"pcie\", bw=\"31.5GBps\", latency=\"1us\"];\n"
                         "  n1 -- c1 [type=\"pcie\", bw=\"31.5GBps\", latency=\"1us\"];\n"
                         "  n0 -- sw [type=\"infiniband\", bw=\"25GBps\", latency=\"1us\"];\n"
                         "  n1 -- sw [type=\"infiniband\", bw=\"25GBps\", latency=\"1us\"];\n}\n";
  const Result show = run_printed({"topo", "show", file});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("worst hop inside a node: none (one GPU per node)"), std::string::npos) << show.out;
  const std::string one = ::testing::TempDir() + "/gradsync-cli-one-gpu.dot";
  ASSERT_EQ(run({"topo", "generate", "nvswitch", "--gpus", "1", "-o", one}).code, 0);
  const Result v = run_printed({"topo", "validate", one});
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("; no ring (one GPU)"), std::string::npos) << v.out;
  // A control character in the file's name is shown as errors show it, not sent to the terminal.
  const std::string escaped = ::testing::TempDir() + "/gradsync-cli-\x1b[31mred.dot";
  std::filesystem::copy_file(one, escaped, std::filesystem::copy_options::overwrite_existing);
  const Result e = run_printed({"topo", "validate", escaped});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("gradsync-cli-\\x1b[31mred.dot: OK: "), std::string::npos) << e.out;
  EXPECT_EQ(e.out.find('\x1b'), std::string::npos) << e.out;
  std::remove(escaped.c_str());
  std::remove(file.c_str());
  std::remove(one.c_str());
}

}  // namespace
}  // namespace gradsync::apps
