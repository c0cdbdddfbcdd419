// ddp_run.hpp: the DDP step tests' model and driver on the recording backend (ddp_step_test.cpp,
// ddp_hook_test.cpp).
#pragma once

#include <fmt/format.h>

#include <string_view>
#include <utility>
#include <vector>

#include "core/ddp_step.hpp"
#include "tests/support/recording_backend.hpp"

namespace gradsync::ddp_test {

using testing::FixedCostModel;
using testing::RecordedCall;
using testing::RecordingEngine;

// A stack of `layers` linear layers l0..lN-1, each with a [256, 1020] weight and a [1024] bias:
// exactly 1 MiB of fp32 gradients per layer. Registered in forward order unless `reversed`.
inline StepModel linear_stack(int layers, bool reversed = false) {
  StepModel m;
  m.name = "stack";
  m.input_bytes_per_sample = 4096;
  m.output_bytes_per_sample = 1024;
  for (int i = 0; i < layers; ++i) {
    const int l = reversed ? layers - 1 - i : i;
    m.params.push_back({fmt::format("l{}.weight", l), {256, 1020}});
    m.params.push_back({fmt::format("l{}.bias", l), {1024}});
  }
  for (int l = 0; l < layers; ++l) {
    const std::size_t w = reversed ? 2 * static_cast<std::size_t>(layers - 1 - l) : 2 * static_cast<std::size_t>(l);
    m.layers.push_back({fmt::format("l{}", l), {w + 1, w}});  // Linear: bias, then weight
  }
  return m;
}

// DdpRun: a model, costs and options driven for `iterations` on a recording engine of `world` ranks.
struct DdpRun {
  StepModel model;
  FixedCostModel costs;
  DdpStepOptions opts;
  RecordingEngine engine;
  DdpStep step;

  DdpRun(StepModel m, DdpStepOptions o, int world = 8, double layer_s = 1e-4)
      : model(std::move(m)),
        costs(model, layer_s),
        opts(std::move(o)),
        engine(1, world),
        step(model, costs, opts, 4, engine.host(), engine.device(0), engine.ddp_group()) {}

  void go(int iterations) {
    step.construct();
    for (int it = 1; it <= iterations; ++it) step.run_iteration(it);
  }
  std::vector<RecordedCall> calls(int iteration, std::string_view prefix) const {
    std::vector<RecordedCall> out;
    for (const RecordedCall& c : engine.calls())
      if (c.iteration == iteration && c.name.rfind(prefix, 0) == 0) out.push_back(c);
    return out;
  }
  // collectives: the process-group calls among calls(...) (not the kernels named after them).
  std::vector<RecordedCall> collectives(int iteration, std::string_view prefix) const {
    std::vector<RecordedCall> out;
    for (const RecordedCall& c : calls(iteration, prefix))
      if (c.kind == RecordedCall::Kind::kCollective) out.push_back(c);
    return out;
  }
  Bytes bytes(int iteration, std::string_view prefix) const {
    Bytes total = 0;
    for (const RecordedCall& c : collectives(iteration, prefix)) total += c.bytes;
    return total;
  }
};

inline DdpStepOptions cap_mb(double mb) {
  DdpStepOptions o;
  o.ddp.buckets.bucket_cap_mb = mb;
  return o;
}

}  // namespace gradsync::ddp_test
