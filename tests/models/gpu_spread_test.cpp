// gpu_spread_test.cpp: the slowest of N GPUs (models/gpu_spread.hpp) against closed forms and
// tabulated order statistics of the normal distribution.
#include "models/gpu_spread.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "core/scenario_keys.hpp"

namespace gradsync {
namespace {

TEST(GpuSpread, ExpectedSlowestMatchesTheNormalsOrderStatistics) {
  EXPECT_EQ(expected_slowest(1), 0.0);
  EXPECT_EQ(expected_slowest(0), 0.0);
  // E[max of 2] = 1/sqrt(pi), E[max of 3] = 3/(2 sqrt(pi)) (closed forms).
  EXPECT_NEAR(expected_slowest(2), 1.0 / std::sqrt(M_PI), 1e-9);
  EXPECT_NEAR(expected_slowest(3), 1.5 / std::sqrt(M_PI), 1e-9);
  // Tabulated (Harter, "Expected values of normal order statistics", Biometrika 1961).
  EXPECT_NEAR(expected_slowest(4), 1.0293754, 1e-6);
  EXPECT_NEAR(expected_slowest(5), 1.1629645, 1e-6);
  EXPECT_NEAR(expected_slowest(8), 1.4236003, 1e-6);
  EXPECT_NEAR(expected_slowest(10), 1.5387527, 1e-6);
  EXPECT_NEAR(expected_slowest(100), 2.5075937, 1e-6);
  // It keeps growing, slowly (about sqrt(2 ln n)).
  EXPECT_GT(expected_slowest(4096), expected_slowest(1024));
  EXPECT_LT(expected_slowest(4096), std::sqrt(2 * std::log(4096.0)));
}

TEST(GpuSpread, OneGpuOrNoSpreadRunsAtTheMedian) {
  EXPECT_EQ(slowest_gpu_factor(1, 0.015), 1.0);
  EXPECT_EQ(slowest_gpu_factor(8, 0.0), 1.0);
  EXPECT_NEAR(slowest_gpu_factor(8, 0.015), 1.0 + 0.015 * 1.4236003, 1e-8);
  EXPECT_NEAR(slowest_gpu_factor(2, 0.02), 1.0 + 0.02 / std::sqrt(M_PI), 1e-10);
}

TEST(GpuSpread, TheScenarioKeyDefaultsToTheConstantAndTakesAPercentage) {
  EXPECT_DOUBLE_EQ(gpu_spread(Scenario{}), kGpuSpread);
  const ScenarioKey& k = scenario_key("gpu_spread_pct");
  EXPECT_EQ(parse_key_value(k, "1.50"), nlohmann::ordered_json("1.5"));
  EXPECT_EQ(parse_key_value(k, "0"), nlohmann::ordered_json("0"));
  for (const char* bad : {"", "abc", "1.5%", "-1", "25", "nan", "inf", "0x10", "1e1", ".", "1.2.3"})
    EXPECT_THROW((void)parse_key_value(k, bad), ConfigError) << bad;
  Scenario s;
  s.gpu_spread_pct = "3";
  EXPECT_DOUBLE_EQ(gpu_spread(s), 0.03);
  EXPECT_EQ(slowest_gpu_text(s, 1), "");
  EXPECT_EQ(slowest_gpu_text(s, 2), "SM-bound kernels at the slowest of 2 GPUs' pace, +1.7% (gpu_spread_pct 3)");
  s.calibration = "calibration.yaml";  // measured times: the measured GPUs' own
  EXPECT_EQ(slowest_gpu_text(s, 2), "");
}

}  // namespace
}  // namespace gradsync
