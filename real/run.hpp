// run.hpp: real execution: a process's place in the world (how it was launched, which backend),
// one scenario run for real with the very DdpStep / DpStep / Reducer that the simulator runs, and
// the calibration microbenchmarks.
//
//   real::Runtime rt(opts);                                  // MPI_Init under mpirun/srun
//   const StrategyResult r = real::bench(scenario, Strategy::kDDP, rt);   // filled on rank 0
//   if (rt.root()) write the reports
#pragma once

#include <string>
#include <vector>

#include "core/calibration.hpp"
#include "core/result.hpp"
#include "core/scenario.hpp"
#include "real/rig.hpp"

namespace gradsync::real {

// RealOptions: bench/calibrate/validate's launch flags.
struct RealOptions {
  std::string launch = "auto";   // auto: mpirun/srun when they started us, else local; local; mpi
  int world_size = 0;            // --world-size with --launch local (0: every GPU, or 1 CPU rank)
  std::string init_method;       // file:///PATH with RANK, WORLD_SIZE (LOCAL_RANK) in the environment
  double timeout_s = 600;        // a collective older than this aborts the run
  std::string backend = "auto";  // auto: gpu when built and a GPU is visible, else cpu
};

// Runtime: this process's launch, rank and backend; MPI is started here and finalized by the
// destructor. UsageError for contradictory flags, RuntimeError when MPI cannot start.
class Runtime {
 public:
  explicit Runtime(const RealOptions& o);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Launch launch() const { return launch_; }
  const std::string& launcher() const { return launcher_; }  // "mpirun", "srun", "file", "local"
  const std::string& backend() const { return backend_; }    // "cpu", "gpu"
  int world() const { return world_; }                       // ranks (devices) in all
  int rank() const { return rank_; }                         // this process's first rank
  int local() const { return local_; }                       // devices this process drives
  int processes() const { return processes_; }
  int hosts() const { return hosts_; }  // hosts the ranks span; 0 when the launch does not tell (file://)
  bool root() const { return rank_ == 0; }
  const std::string& host() const { return host_; }
  const RealOptions& options() const { return o_; }
  // rig_options: a rig for this process's devices, buffers sized for the model.
  RigOptions rig_options(Bytes parameter_bytes, Bytes gradient_bytes) const;
  // gather: every process's text on the root process (empty elsewhere).
  std::vector<std::string> gather(const std::string& mine) const;
  std::string broadcast(const std::string& from_root) const;
  void barrier() const;

 private:
  RealOptions o_;
  Launch launch_ = Launch::kLocal;
  std::string launcher_ = "local";
  std::string backend_ = "cpu";
  int world_ = 1, rank_ = 0, local_ = 1, processes_ = 1, gpu_offset_ = 0, hosts_ = 0;
  std::string host_;
  std::string init_file_;
  bool mpi_ = false;
};

// bench: the scenario's `strategy` for real on the runtime's devices: construction, then
// `iterations` steps, every event timed. The result (mode real) is complete on the root process;
// other processes get an empty one. DP needs one process (--launch local).
// `command` names the gradsync command in messages ("bench", "validate").
StrategyResult bench(const Scenario& s, Strategy strategy, Runtime& rt, const std::string& command = "bench");

// resolve_scenario: the scenario as bench runs it on this machine, every default explicit
// (resolved_scenario, core/scenario_keys.hpp); the errors bench would give.
Scenario resolve_scenario(const Scenario& s, const Runtime& rt);

// CalibrateOptions: what `gradsync calibrate` sweeps.
struct CalibrateOptions {
  double min_bytes = 8;
  double max_bytes = 1024.0 * 1024 * 1024;
  double step_factor = 4;
  double max_flops = 0;  // 0: 1e12 on a GPU, 2e10 on a CPU
  int repeats = 5;       // timed runs per size after one warm-up; the median is kept
  // precision: the data type of the timed GEMMs (fp32, tf32, bf16, fp16). Empty: a scenario's
  // default on a GPU (bf16 from compute capability 8.0, else fp16); fp32 on the CPU backend.
  std::string precision;
};

// CalibrationPointRow: one measured size, nccl-tests' columns.
struct CalibrationRow {
  std::string what;  // "allreduce", "peer_copy", "matmul", ...
  double size = 0;   // bytes or FLOPs
  double time_s = 0;
  double algbw_GBps = 0;  // bytes/time (collectives, copies) or achieved TFLOP/s x 1e3 for GEMMs
  double busbw_GBps = 0;
};

struct CalibrationRun {
  Calibration calibration;
  std::vector<CalibrationRow> rows;
};

// calibrate: collectives over the world (every rank), peer copies (two local devices),
// host-to-device copies, each compute kind, and the launch overhead. Complete on the root.
CalibrationRun calibrate(const CalibrateOptions& o, Runtime& rt);

}  // namespace gradsync::real
