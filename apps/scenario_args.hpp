// scenario_args.hpp: the scenario flags shared by simulate, compare and sweep (and, later,
// bench): the same keys as a YAML scenario file, flags winning over the file.
//
//   ScenarioArgs a;
//   add_scenario_options(cmd, a);              // [scenario.yaml] --model --topology --gpus ...
//   const sim::Scenario s = scenario_of(a, /*check=*/true);
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "reports/report.hpp"
#include "sim/simulate.hpp"

namespace gradsync::apps {

// ScenarioArgs: the scenario flags; a flag given on the command line wins over the file.
struct ScenarioArgs {
  std::string file;
  sim::Scenario flags;
  std::string bucket_cap_mb;
  std::map<std::string, CLI::Option*> given;
};

void add_scenario_options(CLI::App* cmd, ScenarioArgs& a);

// scenario_of: defaults, then the file, then every flag given; with `check`, validated (a bad
// flag is a UsageError, a bad file value a ConfigError naming file:line).
sim::Scenario scenario_of(const ScenarioArgs& a, bool check);

// scenario_header: the `#` lines that describe a scenario and how it was run, above every table
// and at the top of the HTML report.
// print_report: what a scenario command prints after writing `written` into `out`: the table,
// --explain's phases when asked, validate's rows when the report has them, and the files.
void print_report(const reports::Report& rep, const std::string& out, const std::vector<std::string>& written,
                  bool explain);

std::vector<std::string> scenario_header(const sim::Scenario& s, const std::vector<StrategyResult>& rs,
                                         const std::string& what);

}  // namespace gradsync::apps
