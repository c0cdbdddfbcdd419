// scenario_values_test.cpp: keys whose value the run derives from others: the global batch as
// each rank's batch, and where the input batch lives.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/scenario.hpp"
#include "core/scenario_keys.hpp"

namespace gradsync {
namespace {

// global_batch: samples per optimizer step over every rank; each rank's batch is G / (gpus x
// grad_accum), which must divide; a batch_per_gpu that agrees is taken, one that disagrees is not.
TEST(ScenarioKeys, AGlobalBatchIsEachRanksBatchTimesRanksTimesMicroSteps) {
  Scenario s;
  s.global_batch = 256;
  s.grad_accum = 2;
  apply_global_batch(s, 8);
  EXPECT_EQ(s.batch_per_gpu, 16);
  apply_global_batch(s, 8);  // the resolved scenario, both given and alike: as it was
  EXPECT_EQ(s.batch_per_gpu, 16);
  const auto error = [](Scenario t, int gpus) {
    try {
      apply_global_batch(t, gpus);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Scenario odd;
  odd.global_batch = 100;
  EXPECT_EQ(error(odd, 8),
            "global_batch 100: 8 GPUs x grad_accum 1 = 8 micro-batches per optimizer step do not divide it; expected "
            "a multiple of 8 (each rank's DataLoader batch is global_batch / (gpus x grad_accum))");
  Scenario both;
  both.global_batch = 256;
  both.batch_per_gpu = 16;
  EXPECT_EQ(error(both, 4),
            "global_batch 256 disagrees with batch_per_gpu 16 x 4 GPUs x grad_accum 1 = 64; give one "
            "or the other");
  Scenario unset;
  unset.batch_per_gpu = 7;
  apply_global_batch(unset, 8);  // no global batch: nothing changes
  EXPECT_EQ(unset.batch_per_gpu, 7);
  EXPECT_EQ(error(unset, 8), "no error");
}

TEST(ScenarioKeys, InputLocationIsOneOfThreeOrAnError) {
  Scenario s;
  EXPECT_EQ(input_location(s), InputLocation::kPageable);  // the default: a DataLoader's
  s.input = "pinned";
  EXPECT_EQ(input_location(s), InputLocation::kPinned);
  s.input = "device";
  EXPECT_EQ(input_location(s), InputLocation::kDevice);
  s.input = "gpu";
  try {
    input_location(s);
    ADD_FAILURE() << "accepted input \"gpu\"";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "input \"gpu\": expected pageable, pinned or device");
  }
}

}  // namespace
}  // namespace gradsync
