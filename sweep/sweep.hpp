// sweep.hpp: `gradsync sweep` as a library: the grid of --vary (core/scenario_grid.hpp), every
// point checked and resolved before any runs, points whose simulation would be the same (they
// differ only in keys that cannot change the strategy, such as DDP's bucket cap for a DP point)
// simulated once and shared, each simulation in its own process with several at once, every
// finished point saved at once (in a work folder beside --out, swapped into --out when the sweep is
// done, so that --out is as it was until then) so that a killed sweep resumes where it stopped, and under
// mpirun/srun the simulations shared among the ranks. Outputs go through the reporters of
// sweep/reporters.hpp.
//
//   SweepOptions o;
//   o.base = scenario;  o.vary = {"gpus=1:8:x2", "bucket_cap_mb=1,25"};  o.jobs = 2;
//   const SweepStats st = run_sweep(o);   // out/summary.csv, result.json, report.html; the table on stdout
#pragma once

#include <functional>
#include <iostream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/scenario.hpp"
#include "core/strategy.hpp"

namespace gradsync::sweep {

struct SweepOptions {
  Scenario base;                  // the scenario every point starts from, as requested
  std::vector<std::string> vary;  // the --vary arguments
  int jobs = 1;                   // simulations at once (per rank)
  bool resume = false;            // keep the points already in out/summary.csv
  bool retry_failed = false;      // with resume: run the points that failed again
  std::string out = "gradsync-sweep";
  // warmup_from_iterations: neither a flag nor the scenario file set warmup, so each point takes
  // the default for its own iterations (3, or iterations - 1 when fewer), as compare would.
  bool warmup_from_iterations = false;
  // model_defaults: what each point's model decides where the point leaves it (the optimizer and
  // grad_accum of an imported trace, apps::apply_model_defaults); unset: nothing.
  std::function<void(Scenario&)> model_defaults;
  double timeout_s = 600;               // under mpirun/srun: how long rank 0 waits for a silent rank
  std::ostream* table = &std::cout;     // the table (rank 0)
  std::ostream* progress = &std::cerr;  // the progress line or bar
  // locate: a point's resolve error with where its key came from ("run.yaml:3: gpus 9: ..."
  // when the scenario file set it and neither a flag nor --vary did); unset: as it is.
  std::function<std::string(std::string_view)> locate;
};

// SweepStats: what a run did (this rank's share under mpirun).
struct SweepStats {
  int points = 0;             // points of the grid
  int simulations = 0;        // simulations run now
  int shared = 0;             // points that took another point's simulation (run now or resumed)
  int resumed = 0;            // points already in summary.csv (--resume)
  int failed = 0;             // points recorded as failed (rank 0: of the whole sweep)
  std::string first_failure;  // "point 3 (gpus=16): ..." of the first failed point
};

// simulation_identity: what a point's simulation depends on: its strategy and the resolved keys
// that reach it (KeyReach), less gpu_spread_pct on one GPU. Points with the same identity share one
// simulation.
std::string simulation_identity(const Scenario& resolved, Strategy strategy);

// run_sweep runs the grid and writes its outputs. UsageError for a bad --vary or a bad point
// (naming the point), ConfigError for a summary.csv that --resume cannot use, RuntimeError for a
// failing simulation (naming the point).
SweepStats run_sweep(const SweepOptions& o);

}  // namespace gradsync::sweep
