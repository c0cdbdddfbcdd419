// published_ddp.hpp: gradsync against published multi-GPU measurements
// (validation/published/ddp_steps.yaml, compiled in): each case's scenario simulated with its
// strategy (DDP, or DataParallel where the case says `strategy: dp`), its step time, throughput,
// or its throughput against another case (a bucket size against another, DDP against DP).
//
//   const auto cases = read_ddp_cases(builtin_ddp_text(), "ddp_steps.yaml");
//   const auto predicted = predict_ddp_cases(cases, "ddp_steps.yaml");   // a child process per case
//   predicted[i].error()                                  // ratio - 1, or points for a change in %
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "core/scenario.hpp"
#include "core/strategy.hpp"

namespace gradsync::sim {

struct DdpCase {
  std::string id, split, source;
  Scenario scenario;
  Strategy strategy = Strategy::kDDP;  // `strategy: dp` for DataParallel
  // cluster: a generated cluster ({generate: pcie, gpu: titan-rtx, ...}, the keys of the nccl-tests
  // table's `simulate`) in place of the scenario's topology; null: the scenario's.
  nlohmann::ordered_json cluster;
  std::string metric;       // step_s, samples_per_s, throughput_change_pct
  double published = 0;     // in the metric (percent for throughput_change_pct)
  std::string relative_to;  // throughput_change_pct: the case this one's throughput is against
  int line = 0;
};

// read_ddp_cases: the cases of a table; ConfigError naming origin:line and the field (an unknown
// scenario key, a relative_to that names no earlier case, a metric without it or it without one).
std::vector<DdpCase> read_ddp_cases(std::string_view text, const std::string& origin);

// builtin_ddp_text: validation/published/ddp_steps.yaml as compiled in.
std::string_view builtin_ddp_text();

struct DdpPrediction {
  double published = 0;
  double predicted = 0;
  double step_s = 0;       // the simulated steady iteration
  bool points = false;     // the metric is a change in percent: error in points, not a ratio
  std::string step_class;  // its validation class (confidence.hpp), on the cluster it ran on
  std::string topology;    // the scenario's topology, or the generator that built its cluster
  // error: predicted / published - 1, or (points) predicted - published in percentage points.
  double error() const { return points ? predicted - published : predicted / published - 1; }
};

// predict_ddp_cases: every case simulated with its strategy (each in its own process), in order; a
// throughput change from its case's and its relative_to's steady steps. ConfigError naming the
// case for a scenario gradsync cannot simulate.
std::vector<DdpPrediction> predict_ddp_cases(const std::vector<DdpCase>& cases, const std::string& origin);

}  // namespace gradsync::sim
