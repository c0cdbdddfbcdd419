// small_scenario.hpp: the short scenario the simulator's tests run (4 iterations, 2 of warm-up),
// on `gpus` GPUs of `topology`, the rest at gradsync's defaults.
//
//   const StrategyResult r = simulate(testing_support::small_scenario("resnet18", "dgx-a100", 4), Strategy::kDP);
#pragma once

#include <string>

#include "core/scenario.hpp"

namespace gradsync::testing_support {

inline Scenario small_scenario(const std::string& model, const std::string& topology, int gpus) {
  Scenario s;
  s.model = model;
  s.topology = topology;
  s.gpus = gpus;
  s.iterations = 4;
  s.warmup = 2;
  return s;
}

}  // namespace gradsync::testing_support
