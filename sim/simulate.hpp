// simulate.hpp: a scenario (model, cluster, options) simulated for DP and DDP: the step drivers of
// core/ on the SimGrid cluster of sim/cluster.hpp, and what their trace means.
//
//   Scenario s;                                   // GPT-2, B=16, T=1024, bf16, AdamW, dgx-a100
//   s = read_scenario_file("run.yaml");           // the same keys as the command line
//   const StrategyResult ddp = simulate(s, Strategy::kDDP);   // one SimGrid engine per process
//   ddp.steady_iteration_time_s, ddp.exposed_communication_s, ddp.gpus[0].bytes_out
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics.hpp"
#include "core/result.hpp"
#include "core/scenario.hpp"
#include "core/trace.hpp"
#include "core/trace_ranks.hpp"
#include "models/memory_cost.hpp"
#include "sim/cluster.hpp"
#include "sim/nccl_options.hpp"

namespace gradsync::sim {

// Scenario, read_scenario_file and scenario_json live in core/scenario.hpp (the real engine runs
// the same scenarios); they are named here too.
using ::gradsync::read_scenario_file;
using ::gradsync::Scenario;
using ::gradsync::scenario_json;

// StrategyResult (core/result.hpp) is what a simulated strategy gives.

// Resolved: a scenario with its model, cluster and options looked up and checked.
struct ResolvedScenario;

// simulate_isolated runs simulate in a child process (fork) and returns its result, so that
// one process can simulate several strategies or scenarios, each with its own SimGrid engine.
// The child's ConfigError / UsageError / RuntimeError comes back as the same error; callers
// check the scenario first (resolve_scenario) so that bad input fails before any child starts.
// With `keep`, the child keeps only the events of the traced ranks (core/trace_ranks.hpp) before
// sending the result back: past 16 GPUs the rest would cost more to send than to simulate.
StrategyResult simulate_isolated(const Scenario& s, Strategy strategy, const TraceOptions* keep = nullptr);

// ChildProcess: `body` run in a forked child (its own SimGrid engine), the bytes it returns read
// back through a pipe (a result record: core/result.hpp's result_bytes, or JSON text). Poll fd() for reading, call
// read_some() when it is readable (true once the child is done writing), then finish(): the result, or the child's
// ConfigError / UsageError / MirrorBroken / RuntimeError as the same error. Destroying an unfinished one kills and
// reaps its child.
class ChildProcess {
 public:
  ChildProcess(const std::function<std::string()>& body, std::string what);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  int fd() const { return fd_; }
  bool read_some();
  std::string finish();

 private:
  std::string what_;  // "the ddp simulation": names the child when it dies
  int pid_ = -1;
  int fd_ = -1;
  std::string text_;
};

// IsolatedSimulation: simulate_isolated started now and collected later, so that a sweep runs
// several children at once (ChildProcess's fd / read_some / finish). Without `full` the result has
// no trace, collectives or traffic.
class IsolatedSimulation {
 public:
  IsolatedSimulation(const Scenario& s, Strategy strategy, bool full, const TraceOptions* keep = nullptr);
  int fd() const { return child_.fd(); }
  bool read_some() { return child_.read_some(); }
  // finish: the child's result; where its mirrored run found a rank unlike the one standing for
  // it (MirrorBroken), every rank simulated in a second child, waited for here.
  StrategyResult finish();

 private:
  std::function<std::string()> body(bool mirror) const;  // the child's work
  std::string what() const;                              // "the ddp simulation"

  Scenario s_;
  Strategy strategy_;
  bool full_;
  std::optional<TraceOptions> keep_;
  ChildProcess child_;
};

// simulate runs one strategy of a scenario in this process's SimGrid engine (it creates it, so
// once per process). ConfigError / UsageError for a bad scenario. fluid: SimOptions::fluid
// (false runs aggregate calls across machines as SimGrid flows; tests compare the two).
// keep: only the ranks traced_ranks picks under these options keep their events (as keep_ranks
// leaves them; core/trace_ranks.hpp); null: every rank's. A DDP run of alike machines runs one
// rank of each kind in a child process (sim/mirror.hpp), the others given its events, or, where
// a rank would differ, every rank here.
// mirror false runs every rank whatever the cluster (tests compare the two).
StrategyResult simulate(const Scenario& s, Strategy strategy, bool fluid = true, const TraceOptions* keep = nullptr,
                        bool mirror = true);
// simulate_record: simulate's result as result_bytes(result, full) writes it (what a child hands
// its parent: IsolatedSimulation). With `mirror`, a DDP run of alike machines runs mirrored in
// this process and throws MirrorBroken where a rank would differ (this process then has an engine:
// the caller simulates every rank elsewhere, mirror false).
std::string simulate_record(const Scenario& s, Strategy strategy, const TraceOptions* keep, bool full, bool mirror);

// ClosedForm: one steady DDP iteration evaluated by formula instead of simulated: the cost
// model's forward, backward and optimizer times, and each bucket's allreduce at NCCL's
// predicted time on the same channels (sim/nccl_model.hpp), overlapping backward (the last
// bucket's allreduce after it). What the simulation refines (queues, contention, DDP's order),
// and the floor of what answering a scenario costs: the same topology, routes and rings.
struct ClosedForm {
  double step_s = 0;
  double compute_s = 0;
  double communication_s = 0;
  int buckets = 0;
};
ClosedForm closed_form_ddp(const Scenario& s);

// resolve_scenario validates every key (model, topology, GPUs, precision on that GPU, options)
// without simulating, with the errors simulate would give, and returns the scenario with every
// default made explicit for this model and cluster (resolved_scenario, core/scenario_keys.hpp):
// what result.json and the CSV files write.
// With `ddp` false (a DataParallel-only run) the allreduce NCCL_ALGO must leave is not asked for.
Scenario resolve_scenario(const Scenario& s, bool ddp = true);

// bucket_rebuild_iteration: the first iteration DDP runs on its rebuilt buckets under `s`'s
// options (2; 3 with static_graph; 0 when it never rebuilds: before PyTorch 1.6, or with
// find_unused_parameters).
int bucket_rebuild_iteration(const Scenario& s);

// calibration_extrapolations: for a scenario with a calibration, each compute kind whose
// largest kernel (FLOPs, or bytes for memory) lies more than 4x beyond the calibration's largest
// measured point, as "matmul up to 4e+09 FLOP, and the model's largest is 3.2e+11 FLOP (80x)",
// and likewise each strategy's largest collective (DDP's bucket; DataParallel's coalesced broadcast
// and reduce) against the same collective timed over as many ranks, each ending with the flag
// that reaches it; empty without a calibration or when everything is within reach.
std::vector<std::string> calibration_extrapolations(const Scenario& s, const std::vector<Strategy>& strategies);

// largest_batch_per_gpu: the largest batch_per_gpu whose step fits the GPU's memory under
// `strategy` (the memory model simulate reports peak_mem with); 0 when not even 1 fits;
// kLargestBatchSearched when that fits (a model that saves almost nothing per sample): larger
// batches may fit too, and callers say so.
inline constexpr std::int64_t kLargestBatchSearched = std::int64_t{1} << 20;
std::int64_t largest_batch_per_gpu(const Scenario& s, Strategy strategy);

// CollectiveSweepPoint: one size of `gradsync collectives`.
struct CollectivePoint {
  double bytes = 0;
  double time_s = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  CollectiveChoice choice;
  // ran: false for a size of 0 bytes: NCCL returns from a call of count 0 without launching a
  // kernel (enqueue.cc), so nothing is timed and no algorithm chosen.
  bool ran = true;
  // host_bound: the thread launching the call's kernels, not the GPUs, set its time
  // (CollectiveSweep::gpus_per_thread).
  bool host_bound = false;
};

// nccl_tests_bytes: the bytes nccl-tests runs for a requested size (a -b .. -e step): a whole
// number of 4-byte floats (common.cu setupArgs: count = size / wordSize); for allgather and
// reducescatter, whose size is all ranks' shares, each rank's share rounded down to a whole
// number of 16 bytes (all_gather.cu and reduce_scatter.cu GetCollByteCount: (count / nranks) &
// ~(16 / eltSize - 1), nccl-tests 2.13.12 on, December 2024), which may be 0.
// element_bytes: nccl-tests' -d type's size (4 for float): count = size / element_bytes, and a
// rank's share a multiple of 16 / element_bytes elements.
double nccl_tests_bytes(Collective op, double requested, int ranks, int element_bytes = 4);

struct CollectiveSweep {
  std::string topology;
  int gpus = 0;
  Collective op = Collective::kAllreduce;
  double min_bytes = 8;
  double max_bytes = 1024.0 * 1024 * 1024;
  double step_factor = 2;  // a whole number; 1: linear steps of step_bytes (nccl-tests' -f, -i)
  double step_bytes = 1024.0 * 1024;
  int element_bytes = 4;          // nccl-tests' -d: float by default; a call's bytes are what move
  NcclSettings nccl;              // NCCL's knobs (sim/nccl_options.hpp)
  std::string fidelity = "step";  // step, aggregate or auto
  bool fluid = true;              // SimOptions::fluid (false: tests compare with SimGrid's flows)
  std::vector<double> sizes;      // these sizes (nccl-tests' bytes) instead of min..max by step_factor
  // gpus_per_thread: how many GPUs one host thread drives (nccl-tests' -g N in one process; 1: one
  // process per GPU, as under mpirun -np N -g 1). Its ncclGroupEnd launches each GPU's kernel in
  // turn (group.cc doLaunches), so a call takes at least gpus_per_thread x kGroupLaunchPerGpuS
  // (sim/nccl_model.hpp) of host time; nccl-tests queues its calls without waiting, so the larger
  // of that and the GPUs' time sets each call's pace. It must divide the GPUs and fit in one node.
  int gpus_per_thread = 1;
};

// requested_sizes: the sizes nccl-tests steps through (common.cu TimeTest): min, then each times
// step_factor while it is above 1, else plus step_bytes, up to max; sweep.sizes when given.
// ConfigError for a factor that is not a whole number >= 1, a step of 0, or more than 4096 rows.
std::vector<double> requested_sizes(const CollectiveSweep& sweep);

// bus_factor (core/backend.hpp): nccl-tests' busbw / algbw.
using ::gradsync::bus_factor;

// simulate_collectives runs each size once, one after the other, in one engine (created here),
// on sweep.topology or on `topo` (a generated cluster).
std::vector<CollectivePoint> simulate_collectives(const CollectiveSweep& sweep);
std::vector<CollectivePoint> simulate_collectives(const CollectiveSweep& sweep, const Topology& topo);

}  // namespace gradsync::sim
