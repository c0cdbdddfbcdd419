// cli_scenario_test.cpp: the command line's errors and notes for scenario files, sweeps and
// calibrations (cli_test.cpp has the rest).
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

TEST(Cli, AMalformedFileNamedByAFlagIsABadInputFile) {
  const std::string dir = ::testing::TempDir();
  const std::string model = dir + "/gradsync-cli-empty-model.yaml", topo = dir + "/gradsync-cli-empty.dot";
  std::ofstream(model).flush();
  std::ofstream(topo).flush();
  const Result m = run({"simulate", "--strategy", "ddp", "--model", model, "--iterations", "2", "--warmup", "1",
                        "--out", dir + "/gradsync-cli-out"});
  EXPECT_EQ(m.code, 1) << m.err;
  // The file is named once, as the location its message starts with (until 2026-12-02 the key
  // and the file both: model "f": f: ...).
  EXPECT_EQ(m.err.rfind("error: " + model + ": model file: expected a mapping", 0), 0u) << m.err;
  const Result t =
      run({"compare", "--topology", topo, "--iterations", "2", "--warmup", "1", "--out", dir + "/gradsync-cli-out"});
  EXPECT_EQ(t.code, 1) << t.err;
  EXPECT_EQ(t.err.rfind("error: " + topo + ":1: syntax error", 0), 0u) << t.err;
  const Result z = run({"compare", "--model", "no-such-model", "--iterations", "2", "--warmup", "1"});
  EXPECT_EQ(z.code, 2) << z.err;
  std::remove(model.c_str());
  std::remove(topo.c_str());
}

// A scenario file's value that fails only once the model and cluster are known (too many GPUs, a
// sequence length for a conv net, a warmup as long as the run) is named at its line in the file;
// the same key given by a flag overrides the file and is named as the flag's value.
TEST(Cli, AScenarioFilesResolveErrorsNameTheFileAndLine) {
  const std::string file = ::testing::TempDir() + "/gradsync-cli-resolve.yaml";
  std::ofstream(file) << "model: resnet50\ntopology: dgx1-v100\ngpus: 9\n";
  expect_error({"compare", file}, 1, file + ":3: gpus 9: topology dgx1-v100 has 8 GPUs; expected 1..8");
  expect_error({"compare", file, "--gpus", "10"}, 1, "gpus 10: topology dgx1-v100 has 8 GPUs");
  std::ofstream(file) << "model: resnet50\nseq_len: 512\n";
  expect_error({"compare", file}, 1, file + ":2: seq_len \"512\": model resnet50 has no sequence length");
  std::ofstream(file) << "model: resnet50\ntopology: dgx1-v100\niterations: 3\nwarmup: 50\n";
  expect_error({"compare", file}, 1, file + ":4: warmup \"50\": expected 0..2");
  std::remove(file.c_str());
}

// Errors about a value the scenario file gave name the file's line even when the message starts
// with the value (an unknown topology), an NCCL knob (NCCL_ALGO=tree) or a setting DataParallel
// has not (a DDP key under --strategy dp: the file's fault, exit 1, not a flag never given).
TEST(Cli, AScenarioFilesValueErrorsNameItsLineWhateverTheMessageStartsWith) {
  const std::string file = ::testing::TempDir() + "/gradsync-cli-lines.yaml";
  std::ofstream(file) << "model: resnet18\ntopology: dgx-a101\n";
  expect_error({"simulate", "--strategy", "ddp", file}, 1, file + ":2: unknown topology \"dgx-a101\"");
  std::ofstream(file) << "model: resnet18\nNCCL_ALGO: tree\n";
  expect_error({"simulate", "--strategy", "ddp", file}, 1, file + ":2: NCCL_ALGO=tree: allreduce over 8 GPUs");
  std::ofstream(file) << "model: resnet18\ngpus: 2\nbucket_cap_mb: 5\ncomm_hook: fp16\n";
  expect_error({"simulate", "--strategy", "dp", file}, 1,
               file + ":3: bucket_cap_mb 5, comm_hook fp16 (" + file + ":4): DistributedDataParallel settings");
  // The same settings as flags are the command line's (exit 2), named as flags.
  expect_error({"simulate", "--strategy", "dp", "--model", "resnet18", "--bucket-cap-mb", "5"}, 2,
               "--bucket-cap-mb=5: DistributedDataParallel settings");
  std::ofstream(file) << "model: resnet18\ntopology: 2x-dgx-a100-hdr\ngpus: 16\n";
  expect_error({"simulate", "--strategy", "dp", file}, 1,
               file + ":3: gpus 16: --strategy dp: DataParallel runs in one process on one machine");
  // A calibration the file names that cannot be read, or that does not fit the run: the key's
  // line; an error inside the calibration keeps that file's own line.
  const auto beside = [&](const char* name) {
    return (std::filesystem::path(file).parent_path() / name).lexically_normal().string();
  };
  std::ofstream(file) << "model: resnet18\ngpus: 2\ncalibration: gradsync-cli-no-such-cal.yaml\n";
  expect_error(
      {"compare", file}, 1,
      file + ":3: " + beside("gradsync-cli-no-such-cal.yaml") + ": cannot read the calibration file: no such file");
  const std::string cal = beside("gradsync-cli-cal.yaml");
  std::ofstream(cal) << "format: x\n";
  std::ofstream(file) << "model: resnet18\ngpus: 2\ncalibration: gradsync-cli-cal.yaml\n";
  expect_error({"compare", file}, 1, cal + ":1: calibration: missing field \"schema_version\"");
  std::remove(cal.c_str());
  std::remove(file.c_str());
}

// sweep refuses a key both varied and set by a flag (the flag would be dropped without a word).
TEST(Cli, ASweepRefusesAKeyBothVariedAndGivenAsAFlag) {
  expect_error({"sweep", "--model", "resnet18", "--vary", "gpus=2", "--gpus", "4"}, 2,
               "--gpus and --vary gpus both set gpus; give one of them");
  expect_error({"sweep", "--model", "resnet18", "--vary", "NCCL_ALGO=ring,tree", "--nccl", "NCCL_ALGO=ring"}, 2,
               "--nccl NCCL_ALGO=ring and --vary NCCL_ALGO both set NCCL_ALGO");
}

// A calibration without an allreduce table is said to hold none (not "measured on 0 ranks ... or
// pass --gpus 0").
TEST(Cli, ACalibrationWithoutAnAllreduceSaysSo) {
  const std::string file = ::testing::TempDir() + "/gradsync-nocoll.yaml";
  std::ofstream(file) << "schema_version: 2\nhardware: {backend: gpu, host: h, device: d, ranks: 1, precision: fp32}\n"
                         "launch_s: 1e-6\ncompute: {}\ncollectives: []\n";
  const Result r = run({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--precision", "fp32",
                        "--calibration", file, "--out", ::testing::TempDir() + "/gradsync-nocoll-out"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("calibration " + file +
                       ": holds no allreduce measurement, and the scenario uses 2 GPUs; calibrate with as many ranks "
                       "(mpirun -np 2 gradsync calibrate)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("--gpus 0"), std::string::npos) << r.err;
  std::remove(file.c_str());
}

// sweep names the file's line too when no point can run for a key the file set; a --vary of the
// same key overrides the file, and its value is named as it is.
TEST(Cli, ASweepsFileKeyThatFailsEveryPointNamesItsLine) {
  const std::string file = ::testing::TempDir() + "/gradsync-cli-sweep.yaml";
  std::ofstream(file) << "model: resnet50\ntopology: dgx1-v100\ngpus: 9\n";
  const std::string out = ::testing::TempDir() + "/gradsync-cli-sweep-out";
  const Result a = run({"sweep", file, "--vary", "batch_per_gpu=4,8", "--out", out});
  EXPECT_EQ(a.code, 1) << a.err;  // the file's value: exit 1, as compare has it (2 until 2026-12-01)
  EXPECT_NE(a.err.find("point 0 (batch_per_gpu=4 dp): " + file + ":3: gpus 9: topology dgx1-v100 has 8 GPUs"),
            std::string::npos)
      << a.err;
  // A key the file sets and --vary varies: refused at the file's line, as with a flag (--vary would
  // drop the file's value without a word).
  const Result b = run({"sweep", file, "--vary", "gpus=9,10", "--out", out});
  EXPECT_EQ(b.code, 2) << b.err;
  EXPECT_NE(b.err.find(file + ":3: gpus is set here and by --vary gpus; give one of them"), std::string::npos) << b.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  std::remove(file.c_str());
}

// A varied value that resolves per point (nccl_version auto: the release PyTorch bundles) shows the
// request and what it resolved to; summary.csv keeps the resolved value.
TEST(Cli, ASweepsTableShowsAnAutoValueAndWhatItResolvedTo) {
  const std::string out = ::testing::TempDir() + "/gradsync-cli-sweep-auto";
  std::filesystem::remove_all(out);
  const Result r = run_printed({"sweep", "--model", "resnet18", "--gpus", "2", "--iterations", "2", "--warmup", "1",
                                "--pytorch-version", "2.5", "--vary", "nccl_version=auto,2.18", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("auto (2.21)"), std::string::npos) << r.out;  // PyTorch 2.5 bundles NCCL 2.21
  EXPECT_EQ(r.out.find("2.18 ("), std::string::npos) << r.out;       // asked as it resolved: shown once
  std::ifstream csv(out + "/summary.csv");
  const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(",2.5,2.21,"), std::string::npos) << text;  // pytorch_version, nccl_version
  EXPECT_EQ(text.find(",2.5,auto,"), std::string::npos) << text;
  std::filesystem::remove_all(out);
}

// buckets runs no NCCL: the shell's NCCL_* variables get no note there; PyTorch's own variable for
// the bucket order does, naming the flag that sets it.
TEST(Cli, BucketsNotesDdpsVariableNotNccls) {
  ::setenv("NCCL_ALGO", "tree", 1);
  ::setenv("DDP_SET_LAST_BUCKET_CAP", "1", 1);
  std::ostringstream notes;
  std::streambuf* const saved = std::cerr.rdbuf(notes.rdbuf());
  const Result r = run_printed({"buckets", "--model", "resnet18"});
  std::cerr.rdbuf(saved);
  ::unsetenv("NCCL_ALGO");
  ::unsetenv("DDP_SET_LAST_BUCKET_CAP");
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string said = notes.str() + r.err;
  EXPECT_EQ(said.find("NCCL_ALGO"), std::string::npos) << said;
  EXPECT_NE(said.find("note: DDP_SET_LAST_BUCKET_CAP=1 is set in this shell and not read: --last-bucket-cap"),
            std::string::npos)
      << said;
}

// A calibration's times are the measured GPUs' own: the spread resolves to 0 there, and what the
// run records says so (an explicit spread with it is refused: golden simulate-calibration-spread).
TEST(Cli, ACalibratedRunRecordsNoGpuSpread) {
  const std::string out = ::testing::TempDir() + "/gradsync-cli-calibrated-spread";
  std::filesystem::remove_all(out);
  const Result r = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2", "--precision",
                                "fp32", "--calibration", "tests/fuzz/seeds/calibration/cpu-2ranks.yaml", "--iterations",
                                "2", "--warmup", "1", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("slowest of"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(out + "/result.json"));
  EXPECT_EQ(j.at("scenario").at("gpu_spread_pct"), 0.0);
  std::filesystem::remove_all(out);
}

// A topology file named in a scenario file is found beside it, wherever the command runs.
TEST(Cli, AScenarioFilesTopologyIsFoundBesideIt) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "gradsync-cli-beside";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file("topologies/pcie-4gpu.dot", dir / "mine.dot",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "run.yaml") << "model: resnet18\ntopology: mine.dot\ngpus: 2\niterations: 2\nwarmup: 1\n";
  const Result r = run_printed({"compare", (dir / "run.yaml").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("resnet18 on " + (dir / "mine.dot").string() + ", 2 x rtx-4090"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

// --out naming the folder the command runs in (".", $PWD, a parent): the run swaps a new folder
// into place, which failed on "." after the whole run; refused before anything runs.
// DataParallel over several GPUs runs eager under --compile (its replicas run in threads Dynamo
// does not trace, pytorch/pytorch#94636), and the header says so; DDP compiles.
TEST(Cli, CompileLeavesDataParallelOnSeveralGpusEager) {
  // simulate, one strategy a run (compare would also simulate its advice: 40 times the work).
  const auto dir = std::filesystem::temp_directory_path() / "gradsync-cli-compile-dp";
  const auto run_strategy = [&](const char* strategy, bool compile) {
    std::vector<std::string> args = {"simulate",     "--strategy", strategy,   "--model", "resnet18", "--gpus",    "2",
                                     "--iterations", "2",          "--warmup", "1",       "--out",    dir.string()};
    if (compile) args.push_back("--compile");
    const Result r = run_printed(args);
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string start = fmt::format("\n  {} ", strategy);
    const auto at = r.out.find(start);
    return std::pair{at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at + 1) - at), r.out};
  };
  const auto [dp_eager, eager_out] = run_strategy("dp", false);
  const auto [dp_compiled, compiled_out] = run_strategy("dp", true);
  ASSERT_FALSE(dp_eager.empty()) << eager_out;
  EXPECT_EQ(dp_compiled, dp_eager);
  EXPECT_NE(compiled_out.find("# DP runs eager: torch.compile does not compile through DataParallel's replica threads"),
            std::string::npos)
      << compiled_out;
  EXPECT_EQ(eager_out.find("DP runs eager"), std::string::npos);
  EXPECT_NE(run_strategy("ddp", true).first, run_strategy("ddp", false).first);  // DDP compiles
  std::filesystem::remove_all(dir);
}

// A switch given an empty value (--static-graph=) is refused, not read as true; an integer flag
// reads decimal digits (CLI11 alone reads 010 as octal 8), and a number flag that cannot be read
// says what it takes, not "true or false"; an error said before the parse names its command's help.
TEST(Cli, EmptySwitchValuesLeadingZerosAndTheirHelpHint) {
  const Result empty = run({"simulate", "--strategy", "ddp", "--static-graph="});
  EXPECT_EQ(empty.code, 2);
  EXPECT_EQ(empty.err,
            "error: --static-graph=: an empty value; a switch takes true or false after '=' (or the flag alone, for "
            "true)\nRun 'gradsync simulate --help' for usage.\n");
  const Result octal = run({"topo", "generate", "nvswitch", "--gpus", "010"});
  EXPECT_EQ(octal.code, 2);
  EXPECT_NE(octal.err.find("--gpus: value \"010\" must be a whole number in decimal digits without a leading zero"),
            std::string::npos)
      << octal.err;
  const Result word = run({"topo", "generate", "nvswitch", "--gpus", "abc"});
  EXPECT_NE(word.err.find("--gpus: value \"abc\" must be a whole number in decimal digits\n"), std::string::npos)
      << word.err;
  const Result ratio =
      run({"topo", "generate", "fat-tree", "--nodes", "2", "--node", "dgx-a100", "--oversubscription", "abc"});
  EXPECT_NE(ratio.err.find("--oversubscription: value \"abc\" must be a number\n"), std::string::npos) << ratio.err;
  const Result ranks = run({"bench", "--backend", "cpu", "--world-size", "100000"});
  EXPECT_EQ(ranks.code, 2);
  EXPECT_NE(ranks.err.find("--world-size: value \"100000\" is above 1024 ranks in one process"), std::string::npos)
      << ranks.err;
  const Result blank = run({"compare", "--model", "gpt2 "});
  EXPECT_NE(blank.err.find("\nRun 'gradsync compare --help' for usage.\n"), std::string::npos) << blank.err;
}

}  // namespace
}  // namespace gradsync::apps
