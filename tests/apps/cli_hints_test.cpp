// cli_hints_test.cpp: what an error line suggests (apps/cli.cpp nearest_option), and what a
// header says of a flag that changes nothing.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_util.hpp"

namespace gradsync::apps {
namespace {

using test::Result;
using test::run;
using test::run_printed;

// A flag the command does not have names the one the user most likely meant.
TEST(Cli, UnknownFlagNamesTheNearestOption) {
  const auto err = [](std::vector<std::string> args) { return run(std::move(args)).err; };
  EXPECT_EQ(err({"compare", "--batch", "8"}),
            "error: unknown option '--batch' for 'gradsync compare'; did you mean --batch-per-gpu?\n"
            "Run 'gradsync compare --help' for usage.\n");
  EXPECT_EQ(run({"compare", "--batch", "8"}).code, 2);
  EXPECT_NE(err({"simulate", "--strategy", "ddp", "--bucket-cap=25"})
                .find("unknown option '--bucket-cap=25' for 'gradsync simulate'; did "
                      "you mean --bucket-cap-mb?"),
            std::string::npos);
  EXPECT_NE(err({"compare", "--bukcet-cap-mb", "25"}).find("; did you mean --bucket-cap-mb?"), std::string::npos);
  EXPECT_NE(err({"compare", "--gpu", "a100"})
                .find("unknown option '--gpu' for 'gradsync compare'; the GPU model is "
                      "the topology's (--topology NAME or FILE"),
            std::string::npos);
  // An unknown flag is said before a missing required one (simulate needs --strategy).
  EXPECT_EQ(err({"simulate", "--bucket-cap=25"}),
            "error: unknown option '--bucket-cap=25' for 'gradsync simulate'; did you mean --bucket-cap-mb?\n"
            "Run 'gradsync simulate --help' for usage.\n");
  EXPECT_NE(err({"simulate"}).find("--strategy is required"), std::string::npos);
  // Nothing near: no guess.
  EXPECT_EQ(err({"compare", "--frobnicate"}),
            "error: unknown option '--frobnicate' for 'gradsync compare'\nRun 'gradsync compare --help' for usage.\n");
}

// A loop without zero_grad has no set_to_none to apply: a value other than the release's default
// is said to change nothing (a new user's report: it was dropped silently), the default is not.
TEST(Cli, SetToNoneWithoutZeroGradChangesNothing) {
  const auto header = [](const std::string& set_to_none, const std::string& name) {
    std::vector<std::string> args{
        "simulate",          "--strategy",   "ddp", "--model",  "resnet18", "--gpus", "2",
        "--zero-grad=false", "--iterations", "2",   "--warmup", "1",        "--out",  testing::TempDir() + "/" + name};
    if (!set_to_none.empty()) args.insert(args.end(), {"--set-to-none", set_to_none});
    const Result r = run_printed(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out;
  };
  EXPECT_NE(header("false", "no-zero-grad-false")
                .find("# --set-to-none false: --zero-grad=false never calls zero_grad: it changes nothing\n"),
            std::string::npos);
  EXPECT_EQ(header("true", "no-zero-grad-true").find("--set-to-none"), std::string::npos);
  EXPECT_EQ(header("", "no-zero-grad-auto").find("--set-to-none"), std::string::npos);
}

// A first bucket above the cap is what PyTorch takes too: the header says what it does (a new
// user's report: it passed silently); at or below the cap, nothing is said.
TEST(Cli, AFirstBucketAboveTheCapIsSaid) {
  const auto header = [](const std::string& first, const std::string& name) {
    const Result r = run_printed({"simulate", "--strategy", "ddp", "--model", "resnet18", "--gpus", "2",
                                  "--bucket-cap-mb", "1", "--first-bucket-mb", first, "--iterations", "2", "--warmup",
                                  "1", "--out", testing::TempDir() + "/" + name});
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out;
  };
  EXPECT_NE(header("100", "first-above-cap")
                .find("# first bucket 100 MiB above bucket_cap_mb 1: PyTorch takes it as given, and DDP's first "
                      "allreduce waits for that many bytes of the last layers' gradients\n"),
            std::string::npos);
  EXPECT_EQ(header("1", "first-at-cap").find("above bucket_cap_mb"), std::string::npos);
}

// --vary bucket_cap_mb under PyTorch >= 2.3 moves the first bucket with each cap: said once,
// and not where first_bucket_mb holds it or the release predates the rule.
TEST(Cli, VaryingTheCapSaysTheFirstBucketFollows) {
  const auto said = [](std::vector<std::string> extra, const std::string& name) {
    std::vector<std::string> args{"sweep",
                                  "--model",
                                  "resnet18",
                                  "--gpus",
                                  "2",
                                  "--vary",
                                  "strategy=ddp",
                                  "--vary",
                                  "bucket_cap_mb=1,25",
                                  "--iterations",
                                  "2",
                                  "--warmup",
                                  "1",
                                  "--out",
                                  testing::TempDir() + "/" + name};
    args.insert(args.end(), extra.begin(), extra.end());
    // Notes go to std::cerr, as the sweep's progress does: caught here.
    std::ostringstream notes;
    std::streambuf* const saved = std::cerr.rdbuf(notes.rdbuf());
    const Result r = run(args);
    std::cerr.rdbuf(saved);
    EXPECT_EQ(r.code, 0) << r.err;
    return notes.str().find(
               "note: --vary bucket_cap_mb: from PyTorch 2.3 an explicit bucket_cap_mb caps DDP's first "
               "bucket too") != std::string::npos;
  };
  EXPECT_TRUE(said({}, "vary-cap"));
  EXPECT_FALSE(said({"--first-bucket-mb", "1"}, "vary-cap-first-held"));
  EXPECT_FALSE(said({"--pytorch-version", "2.2"}, "vary-cap-2.2"));
}

}  // namespace
}  // namespace gradsync::apps
