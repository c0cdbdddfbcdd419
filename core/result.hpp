// result.hpp: one strategy's run, simulated or measured: the record every report writes.
//
// Engines fill it (sim/simulate.cpp, real/run.cpp); reports/ turns it into the stdout table,
// CSV, JSON, the Chrome trace and the HTML report. Metric definitions: core/metrics.hpp.
//
//   StrategyResult r = sim::simulate(s, Strategy::kDDP);
//   const nlohmann::ordered_json j = result_json(r, /*full=*/true);
//   const StrategyResult back = result_from_json(j);     // the same record
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "core/metrics.hpp"
#include "core/strategy.hpp"
#include "core/trace.hpp"

namespace gradsync {

// GpuResult: one GPU's traffic per steady iteration and its memory.
struct GpuResult {
  int rank = 0;
  double bytes_in = 0;
  double bytes_out = 0;
  double peak_memory_bytes = 0;
  double capacity_bytes = 0;
  bool oom = false;
};

// LinkLoad: one direction of one link over the steady iterations: wire bytes per iteration and
// the share of its bandwidth they use (bytes / (bandwidth x steady iteration time)); and at its
// peak: the highest share over one collective call or phase of copies (its bytes on the link over
// bandwidth x the call's span, first start to last end on any GPU).
struct LinkLoad {
  std::string name;  // "<topology link>" plus the direction: "nvlink_gpu0_sw:up"
  double bandwidth_Bps = 0;
  double bytes = 0;
  double utilisation = 0;
  double peak_utilisation = 0;
  std::string peak_event;  // the call or phase at the peak: "allreduce:bucket3"
};

// Traffic: payload bytes each rank sent (out) and received (in) for one event name.
struct Traffic {
  std::vector<double> out;
  std::vector<double> in;
};

// CollectiveCall: one collective as it ran, first member's start to last member's end, with the
// algorithm and protocol the engine used (NCCL's choice, modelled or reported).
struct CollectiveCall {
  std::string name;
  Collective collective = Collective::kAllreduce;
  Bytes bytes = 0;
  int members = 0;
  std::string algorithm;  // "ring", "tree"
  std::string protocol;   // "LL", "LL128", "Simple"
  double predicted_s = 0;
  double bus_bw_Bps = 0;
  double start_s = 0;
  double end_s = 0;
  int iteration = 0;
  std::string fidelity;  // simulated: "step" or "aggregate" (sim/collective_run.hpp)
};

// Fidelity: how a simulation turned collectives into flows (empty mode for a real run).
struct FidelityInfo {
  std::string mode;         // "step", "aggregate", or "auto" as asked
  int aggregate_calls = 0;  // collective calls that ran at aggregate fidelity
  int calls = 0;            // all collective calls with more than one member
  double bound = 0;         // aggregate's stated bound on step times against step fidelity (relative)
  // simulated_ranks: the ranks whose timelines were simulated; fewer than the GPUs when a DDP run
  // of alike machines simulated one rank of each kind and gave the others its events
  // (sim/mirror.hpp).
  int simulated_ranks = 0;
};

// StrategyResult: one strategy of one scenario. `skipped` says why it could not run (DataParallel
// across hosts); the numbers are then zero.
struct StrategyResult {
  Strategy strategy = Strategy::kDDP;
  std::string skipped;
  // failed: the error that stopped this point (a sweep records it and runs the other points).
  std::string failed;
  int gpus = 0;
  int replicas = 0;               // GPUs that compute (DP with a small batch uses fewer)
  std::int64_t global_batch = 0;  // samples per optimizer step
  std::int64_t tokens_per_sample = 1;  // the sequence length; 0 for a model without one (images)
  std::string precision;  // as resolved: "bf16", ...
  std::string gpu;        // the GPU model key
  int warmup = 0;         // leading iterations left out of the steady means
  double iteration_1_time_s = 0;
  double steady_iteration_time_s = 0;
  // Steady-iteration means, as in core/metrics.hpp: DDP on rank 0 (ranks are symmetric); DP on
  // the process as a whole (every GPU's events on one timeline: GPU0 waits for all of them).
  double compute_s = 0;
  double communication_s = 0;
  double exposed_communication_s = 0;
  double overlap = 0;
  double samples_per_s = 0;
  double tokens_per_s = 0;
  std::vector<IterationMetrics> iterations;  // per iteration, same view as above
  std::vector<GpuResult> per_gpu;
  std::vector<LinkLoad> links;  // the busiest link directions first (at most kMaxLinks)
  std::vector<CollectiveCall> collectives;
  FidelityInfo fidelity;
  // transports: how NCCL's ring hops move, by transport and path class ("P2P/CUMEM/read over NVL",
  // "SHM/direct/direct over PHB", joined by ", "); empty for a real run.
  std::string transports;
  // shm_duplex_Bps: when a ring hop goes through host memory between GPUs before Ada/Hopper, what
  // a GPU that sends and receives so moves each way (kShmDuplexBps); 0 otherwise (result.json: shm_duplex_GBps).
  double shm_duplex_Bps = 0;
  std::map<std::string, Traffic> traffic;  // the last iteration's bytes by event name
  Trace trace;

  static constexpr std::size_t kMaxLinks = 16;
};

// summarize fills `iterations` from `trace` (DDP: rank 0's view; DP: every GPU on one timeline,
// the process's view) and the steady means after `warmup` iterations, samples/s and tokens/s
// (global_batch and tokens_per_sample must be set). RuntimeError when the trace has no iteration.
void summarize(StrategyResult& r, int warmup);

// result_json: a strategy's result as result.json holds it; with `full`, also the collectives,
// traffic and (unless `events` is false) the trace. result_from_json reads any of them back
// (RuntimeError on a bad document).
nlohmann::ordered_json result_json(const StrategyResult& r, bool full, bool events = true);
StrategyResult result_from_json(const nlohmann::ordered_json& j);

// result_bytes: the record as a child process hands it to its parent (sim/isolate.cpp):
// result_json without the trace, then the trace's events in binary, 48 bytes each, their names
// once each. At 1,024 GPUs the traced ranks' 165,000 events took 100 bytes each as JSON text,
// and parsing them back cost more than writing the outputs. result_from_bytes reads it back
// (RuntimeError on a record cut short or not from result_bytes); the same machine writes and
// reads it, so numbers are in its own byte order.
std::string result_bytes(const StrategyResult& r, bool full);
StrategyResult result_from_bytes(std::string_view bytes);

}  // namespace gradsync
