// scenario.hpp: what one run of a training step is: model, cluster, batch, precision, DDP options,
// iterations, NCCL settings. The simulator and the real engine read the same keys, from flags
// or from a YAML scenario file.
//
//   Scenario s;                                   // GPT-2, B=16, T=1024, bf16, AdamW, dgx-a100
//   s = read_scenario_file("run.yaml");           // the same keys as the command line
//   scenario_json(s)["bucket_cap_mb"]             // null: DDP's default 25 MiB
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradsync {

// Scenario: every key of `simulate`/`compare` (flags and the YAML scenario file alike).
// Zero or empty means the default named in the comment.
struct Scenario {
  std::string model = "gpt2";
  std::string topology = "dgx-a100";
  int gpus = 0;                    // 0: every GPU of the topology
  std::int64_t batch_per_gpu = 0;  // 0: the model's default batch
  std::int64_t seq_len = 0;        // 0: the model's default
  std::string precision;           // empty: bf16 where the GPU has it, else fp16
  std::string optimizer = "adamw";
  std::optional<double> bucket_cap_mb;
  int grad_accum = 1;
  std::string comm_hook = "none";
  bool find_unused_parameters = false;
  bool static_graph = false;
  bool gradient_as_bucket_view = false;
  int iterations = 5;             // optimizer steps simulated
  int warmup = 3;                 // leading steps left out of the steady-state mean
  std::string algo = "auto";      // NCCL_ALGO: ring, tree, auto
  std::string proto = "auto";     // NCCL_PROTO: ll, ll128, simple, auto
  std::string fidelity = "auto";  // step, aggregate, auto (sim/collective_run.hpp)
  std::string calibration;        // calibration.yaml of `gradsync calibrate`; empty: the roofline model
};

// scenario_keys: the YAML keys, in the order result.json writes them.
const std::vector<std::string>& scenario_keys();

// read_scenario_file reads a YAML mapping of scenario keys (model, topology, gpus,
// batch_per_gpu, seq_len, precision, optimizer, bucket_cap_mb, grad_accum, comm_hook,
// find_unused_parameters, static_graph, gradient_as_bucket_view, iterations, warmup, algo,
// proto, fidelity, calibration) into `base`. ConfigError at file:line naming the key for anything else.
Scenario read_scenario_file(const std::string& path, Scenario base = {});

// scenario_json: the scenario's keys and values.
nlohmann::ordered_json scenario_json(const Scenario& s);

}  // namespace gradsync
