// scenario_args.hpp: the scenario flags shared by simulate, compare and sweep (and, later,
// bench): the same keys as a YAML scenario file, flags winning over the file.
//
//   ScenarioArgs a;
//   add_scenario_options(cmd, a);              // [scenario.yaml] --model --topology --gpus ...
//   const sim::Scenario asked = scenario_of(a);
//   const sim::Scenario s = resolve_args(a, asked);   // every default explicit
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/output_folder.hpp"
#include "core/result.hpp"
#include "reports/report.hpp"
#include "sim/simulate.hpp"

namespace gradsync::apps {

// ScenarioArgs: the scenario flags, one per row of core/scenario_keys.hpp, as the user typed
// them; a flag given on the command line wins over the file.
struct ScenarioArgs {
  std::string file;
  std::map<std::string, std::string> text;  // by key name: a flag's text
  std::map<std::string, bool> switches;     // by key name: a switch flag
  std::map<std::string, CLI::Option*> given;
  std::vector<std::string> nccl;  // --nccl NAME=VALUE, in order
  bool nccl_from_env = false;     // --nccl-from-env
  bool quiet = false;             // no note about NCCL_* variables left unread (a second read)
};

// add_scenario_options adds the positional scenario file, one flag per scenario key that has
// one, and --nccl NAME=VALUE / --nccl-from-env for NCCL's knobs (or only the keys in `only`, and
// "nccl" for the NCCL options, for a command that takes a few of them).
void add_scenario_options(CLI::App* cmd, ScenarioArgs& a, const std::vector<std::string>& only = {});

// scenario_of: defaults, then NCCL_* variables of the environment (with --nccl-from-env; else a
// note on stderr names those left unread), then the file, then every flag given, each read by its
// key's row (a bad flag value is a UsageError naming the flag, a bad file value a ConfigError
// naming file:line); then, with `model_defaults`, the keys the model's measured step decides
// (apply_model_defaults).
sim::Scenario scenario_of(const ScenarioArgs& a, bool model_defaults = true);

// apply_model_defaults: s.optimizer and s.grad_accum from the measured step of s.model (a model
// file `models import-trace` wrote: the trace's optimizer, its micro-steps per optimizer step)
// where neither a flag, the scenario file nor one of `also_set` (sweep's --vary keys) sets them
// (models/scenario_basics.hpp apply_measured_defaults). A model that does not load is left to the
// resolution to say.
void apply_model_defaults(sim::Scenario& s, const ScenarioArgs& a, const std::vector<std::string>& also_set = {});

// nccl_release_text: "NCCL 2.28 (PyTorch 2.11's, tuning model 2.27)": the release whose rules
// apply, for header lines.
std::string nccl_release_text(const sim::Scenario& s);

// nccl_knobs_text: ", NCCL_ALGO=ring NCCL_P2P_DISABLE=true" for the knobs a scenario sets (",
// NCCL's defaults" when none), for header lines.
std::string nccl_knobs_text(const sim::Scenario& s);

// resolve_located: `resolve` (a resolution of the scenario: the simulator's, real mode's) with its
// errors placed: one about a key the scenario file set names the file's line (DataError stays a
// DataError, exit 1); without a file every value came from flags, and a ConfigError becomes a
// UsageError (exit 2), while a DataError (a model or topology file's content) stays as it is.
sim::Scenario resolve_located(const ScenarioArgs& a, const std::function<sim::Scenario()>& resolve);

// resolve_args: the scenario resolved for its model and cluster (sim::resolve_scenario), located.
// `ddp` false: a DataParallel-only run (sim::resolve_scenario).
sim::Scenario resolve_args(const ScenarioArgs& a, const sim::Scenario& requested, bool ddp = true);

// ddp_only_settings: the DistributedDataParallel settings a scenario gives (not at their
// defaults): the keys that reach DDP only (DataParallel has no buckets, comm hooks,
// unused-parameter search, static graph or buffer broadcast). Each as its flag, or, with `args`,
// as the scenario file's key where the file set it (bucket_cap_mb 5, its line in `from_file` for
// the first such, after the others: comm_hook fp16 (d1.yaml:4)); with `as_keys`, as a key (a flag
// or a file gives it alike: bucket_cap_mb 50).
std::vector<std::string> ddp_only_settings(const Scenario& s, bool as_keys = false, const ScenarioArgs* args = nullptr,
                                           std::string* from_file = nullptr);

// file_line_of: the line of the scenario file that set `key` when no flag (nor --nccl) overrode it;
// nullopt otherwise (no file, the file leaves the key, or a flag set it).
std::optional<int> file_line_of(const ScenarioArgs& a, std::string_view key);

// file_key_error: a resolve error about a key the scenario file set (and neither a flag nor one
// of `also_set`, such as sweep's --vary keys, overrode), located at the key's line in the file;
// `message` as it is without a file.
std::string file_key_error(const ScenarioArgs& a, std::string_view message,
                           const std::vector<std::string>& also_set = {});

// finish_run: writes every output of `rep` into --out, whole or not at all (the folder's staging
// copy is swapped into place), then prints the table, --explain and where the files went.
void finish_run(const reports::Report& rep, OutputFolder& out, bool explain);

// scenario_header: the `#` lines that describe a resolved scenario and how it was run, above every
// table and at the top of the HTML report.
std::vector<std::string> scenario_header(const sim::Scenario& s, const std::vector<StrategyResult>& rs,
                                         const std::string& what);

// note_uncalibrated: notes on stderr where a scenario's --calibration does not cover it: the
// collectives the strategies call that it did not measure over s.gpus ranks, and the kernels far
// beyond its largest timed size (their times extrapolated). simulate, compare and validate.
void note_uncalibrated(const sim::Scenario& s, const std::vector<Strategy>& strategies);

}  // namespace gradsync::apps
