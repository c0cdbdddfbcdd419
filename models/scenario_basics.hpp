// scenario_basics.hpp: the parts of a scenario every engine resolves alike: the model and its
// sequence length, precision on a given GPU, optimizer, batch, comm hook, and the numeric keys.
// The simulator adds the cluster; the real engine adds the machine it runs on.
//
//   const Model m = scenario_model(s);                        // ConfigError naming "model"
//   const ScenarioBasics b = resolve_basics(s, m, gpu_spec("h100"));
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "core/comm_hook.hpp"
#include "core/error.hpp"
#include "core/scenario.hpp"
#include "core/scenario_keys.hpp"
#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {

struct ScenarioBasics {
  Precision precision = Precision::kBF16;
  Optimizer optimizer = Optimizer::kAdamW;
  std::int64_t batch = 0;
  std::int64_t seq_len = 1;
  CommHook hook;
};

// scenario_field runs parse and prefixes its ConfigError with the scenario key (unless the
// message already quotes the bad value).
template <class F>
auto scenario_field(const char* key, const std::string& value, F parse) {
  try {
    return parse();
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    // Already named: quoted, or as the file:line the message starts with (nogpu.dot: no gpu ...).
    if (what.find("\"" + value + "\"") != std::string::npos || what.rfind(value + ":", 0) == 0) throw;
    const std::string prefixed = std::string(key) + " \"" + value + "\": " + what;
    // A malformed file the key names stays a bad input file (exit 1), not a bad key.
    if (dynamic_cast<const DataError*>(&e) != nullptr) throw DataError(prefixed);
    throw ConfigError(prefixed);
  }
}

// scenario_model: the scenario's model (zoo name or file).
Model scenario_model(const Scenario& s);

// resolve_basics: precision (default bf16 where `gpu` has it, else fp16), optimizer, batch,
// seq_len and hook, after check_scenario_keys (every key's rule, warmup < iterations).
ScenarioBasics resolve_basics(const Scenario& s, Model& model, const GpuSpec& gpu);

// apply_measured_defaults: the scenario keys that a model imported from a measured step (`m`)
// decides when the scenario leaves them (`left(key)` true: neither a flag, the scenario file nor
// --vary set the key): optimizer, the torch.optim class the trace stepped (its state is the
// measured run's memory), and grad_accum, the micro-steps per optimizer step found in the trace.
// Nothing for a model without a measured step, or a measured section that records neither.
void apply_measured_defaults(Scenario& s, const Model& m, const std::function<bool(std::string_view)>& left);

// apply_framework: how PyTorch runs the scenario's compute: the execution mode (compile,
// attention, channels_last), whether the release's default is foreach (PyTorch >= 2.0), and
// torch.optim's implementation (optimizer_impl; auto: the release's default). Simulation and real
// mode cost the same ops so.
void apply_framework(ComputeContext& ctx, const Scenario& s);

// optimizer_text: the optimizer as it runs, for the headers of compare, simulate and bench:
// "adamw (foreach)", "sgd (for-loop) after clip_grad_norm_", "adamw (foreach) under GradScaler" (the
// precision as resolved: fp16 autocast runs under one by default).
std::string optimizer_text(const Scenario& s, std::string_view precision);

// scenario_facts: what resolve_basics found, for resolved_scenario (core/scenario_keys.hpp).
ScenarioFacts scenario_facts(const ScenarioBasics& b, const Model& model, int gpus);

}  // namespace gradsync
