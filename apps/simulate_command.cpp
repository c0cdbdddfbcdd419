// simulate_command.cpp: `gradsync simulate`, `gradsync compare` (the main job) and `gradsync
// advise`: scenarios on the SimGrid engine, as tables and result.json (`gradsync collectives` is
// collectives_command.cpp).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "apps/cli.hpp"
#include "apps/scenario_args.hpp"
#include "core/atomic_file.hpp"
#include "core/calibration.hpp"
#include "core/error.hpp"
#include "core/metrics.hpp"
#include "core/scenario_keys.hpp"
#include "core/units.hpp"
#include "core/version.hpp"
#include "reports/report.hpp"
#include "sim/advice.hpp"
#include "sim/confidence.hpp"
#include "sim/simulate.hpp"

namespace gradsync::apps {
namespace {

// default_jobs: simulations at once for the advice: the machine's cores (the advice is the same
// for any number, only its wall time changes).
int default_jobs() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

using json = nlohmann::ordered_json;
using sim::Scenario;

// ScenarioCommand: a scenario command's flags: the scenario, where to write, what to print.
struct ScenarioCommand {
  ScenarioArgs scenario;
  std::string out = "gradsync-out";
  bool explain = false;
  std::string strategy;
  std::string trace_ranks;            // --trace-ranks all|LIST
  std::string trace_format = "auto";  // --trace-format auto|json|json.gz
  // advice: `compare` and `advise` simulate the changes of core/advice.hpp (budget 0: none).
  bool advice = false;
  // No time budget by default: every change is simulated, so the advice is the same on every
  // machine; --advice-budget SECONDS trades that for a bound on the wait.
  sim::AdviceOptions advice_options{.budget_s = std::numeric_limits<double>::infinity(), .jobs = default_jobs()};
};

void add_command_options(CLI::App* cmd, ScenarioCommand& c) {
  add_scenario_options(cmd, c.scenario);
  cmd->add_option("--out", c.out,
                  "Output folder for the CSV, JSON, Chrome trace and HTML report (default gradsync-out)");
  cmd->add_flag("--explain", c.explain, "Also print the run phase by phase: where, what moves, bytes, time");
  cmd->add_option("--trace-ranks", c.trace_ranks,
                  "Ranks the trace and events.csv hold besides the default ones (every rank up to 16 GPUs; beyond, "
                  "node 0, the first GPU of every other node and the slowest rank of each phase): all, or a list "
                  "such as 0,17,64-71")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return text.empty() ? "value \"\" is empty; expected all, or ranks and ranges such as 0,17,64-71" : "";
          },
          ""));
  cmd->add_option("--trace-format", c.trace_format,
                  "The trace and events.csv plain (json) or gzip-compressed (json.gz: trace-<strategy>.json.gz and "
                  "events.csv.gz, which Perfetto and pandas open as they are) (default auto: json up to 16 GPUs, "
                  "json.gz beyond)")
      ->transform(CLI::IsMember({"auto", "json", "json.gz"}, CLI::ignore_case));
}

// trace_options: --trace-ranks and --trace-format as reports::TraceOptions; ranks must be GPUs of
// the scenario (0..gpus-1). auto compresses beyond kTracedAll GPUs: at 1,024 GPUs the traced
// ranks' trace is 29 MB as JSON and events.csv 20 MB, 3 and 2 MB gzipped.
reports::TraceOptions trace_options(const ScenarioCommand& a, int gpus) {
  reports::TraceOptions o;
  o.gzip = a.trace_format == "json.gz" || (a.trace_format == "auto" && gpus > kTracedAll);
  if (a.trace_ranks.empty()) return o;
  if (a.trace_ranks == "all") {
    o.all = true;
    return o;
  }
  // The example is one this run takes (0,5,8-15 on 16 GPUs or more; fewer: what they allow).
  const std::string example = gpus >= 16  ? "0,5,8-15"
                              : gpus >= 4 ? fmt::format("0,2-{}", gpus - 1)
                              : gpus >= 2 ? fmt::format("0,{}", gpus - 1)
                                          : std::string("0");
  const auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("--trace-ranks \"{}\": {}; expected all, or ranks and ranges of 0..{} such as {}",
                                  a.trace_ranks, why, gpus - 1, example));
  };
  auto rank = [&](const std::string& text) {
    std::size_t used = 0;
    long v = -1;
    try {
      v = std::stol(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (text.empty() || used != text.size() || v < 0) throw bad(fmt::format("\"{}\" is not a rank", text));
    if (v >= gpus) throw bad(fmt::format("rank {} is not among the {} GPUs", v, gpus));
    return static_cast<int>(v);
  };
  std::size_t start = 0;
  while (start <= a.trace_ranks.size()) {
    const std::size_t comma = std::min(a.trace_ranks.find(',', start), a.trace_ranks.size());
    const std::string item = a.trace_ranks.substr(start, comma - start);
    // A leading '-' is a negative number, not a range ("-1": not a rank).
    const std::size_t dash = item.find('-', 1);
    if (dash == std::string::npos) {
      o.extra.push_back(rank(item));
    } else {
      const int lo = rank(item.substr(0, dash)), hi = rank(item.substr(dash + 1));
      if (hi < lo) throw bad(fmt::format("the range {} runs backwards", item));
      for (int g = lo; g <= hi; ++g) o.extra.push_back(g);
    }
    start = comma + 1;
  }
  return o;
}

void add_advice_options(CLI::App* cmd, ScenarioCommand& c) {
  c.advice = true;
  cmd->add_option("--advice-budget", c.advice_options.budget_s,
                  "At most this many seconds (wall clock) for simulating the changes to try, so that which are "
                  "simulated depends on this machine's speed; 0: no advice (default: none: every change is "
                  "simulated, the same on every machine)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            // A decimal number of seconds in [0, 86400], with an exponent or not (1e-3); not nan,
            // inf or hex.
            double v = -1;
            const auto [end, ec] =
                std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
            if (!text.empty() && ec == std::errc() && end == text.data() + text.size() && std::isfinite(v) && v >= 0 &&
                v <= 86400)
              return {};
            return fmt::format("\"{}\" is not a number of seconds from 0 to 86400", text);
          },
          "SECONDS"));
  cmd->add_option("--jobs", c.advice_options.jobs, "Changes simulated at once (default: this machine's cores)")
      ->check(kPositiveInteger);
}

// confidence_of: per strategy that ran, its class's errors in gradsync's validation tables, or,
// where the class has no case, its parts' (sim/confidence.hpp).
std::vector<reports::Confidence> confidence_of(const Scenario& s, const std::vector<StrategyResult>& rs) {
  std::vector<reports::Confidence> out;
  for (const StrategyResult& r : rs) {
    if (!r.skipped.empty()) continue;
    const sim::StepClasses cls = sim::step_classes(s, r.strategy);
    auto add = [&](const char* part, const std::string& name) {
      reports::Confidence c;
      c.strategy = std::string(strategy_label(r.strategy));
      c.part = part;
      c.cls = name;
      if (const auto k = sim::class_confidence(name)) {
        c.cases = k->cases;
        c.points = k->points;
        c.median_abs_error = k->median_abs_error;
        c.worst_abs_error = k->worst_abs_error;
        c.faster = k->faster;
        c.worst_case = k->worst_case;
      }
      out.push_back(c);
      return c.cases > 0;
    };
    if (add("step", cls.step)) continue;
    if (cls.compute != cls.step) add("compute", cls.compute);
    if (!cls.communication.empty()) add("communication", cls.communication);
  }
  return out;
}

void run_scenario(const ScenarioCommand& a, std::vector<Strategy> strategies, const std::string& what) {
  const Scenario asked = scenario_of(a.scenario);
  std::string from_file;  // where the scenario file set the first of them
  const std::vector<std::string> ddp_only = ddp_only_settings(asked, false, &a.scenario, &from_file);
  const bool dp_only = strategies.size() == 1 && strategies.front() == Strategy::kDP;
  if (dp_only && !ddp_only.empty()) {
    const std::string message = fmt::format(
        "{}: DistributedDataParallel settings; DataParallel (--strategy dp) has no "
        "buckets, comm hooks, unused-parameter search or static graph, and no broadcast_buffers switch (its "
        "replicate() broadcasts every buffer at every forward)",
        fmt::join(ddp_only, ", "));
    // A value of the file is the file's fault (exit 1, at its line); a flag's, the command line's.
    if (!from_file.empty()) throw ConfigError(fmt::format("{}: {}", from_file, message));
    throw UsageError(message);
  }
  const Scenario s = resolve_args(a.scenario, asked, !dp_only);
  note_uncalibrated(s, strategies);
  const reports::TraceOptions trace = trace_options(a, s.gpus);  // a bad list fails before simulating
  OutputFolder out(a.out);  // before the simulation: a folder that cannot be replaced fails now
  reports::Report rep;
  rep.command = what;
  rep.mode = "simulated";
  rep.trace = trace;
  rep.scenario = sim::scenario_json(s);
  rep.requested = requested_json(asked, s);
  for (Strategy st : strategies) rep.strategies.push_back(sim::simulate_isolated(asked, st, &trace));
  if (dp_only && !rep.strategies.front().skipped.empty()) {
    // DataParallel across hosts: the GPU count (or the topology) the file gave is at fault there.
    for (const char* key : {"gpus", "topology"}) {
      if (const int line = file_line_of(a.scenario, key).value_or(0); line > 0) {
        throw ConfigError(fmt::format("{}:{}: {} {}: --strategy dp: {}", a.scenario.file, line, key,
                                      value_text(key_value(asked, scenario_key(key))), rep.strategies.front().skipped));
      }
    }
    throw UsageError(fmt::format("--strategy dp: {}", rep.strategies.front().skipped));
  }
  rep.header = scenario_header(s, rep.strategies, what);
  rep.confidence = confidence_of(asked, rep.strategies);
  if (a.advice && a.advice_options.budget_s > 0) {
    // The changes start from the faster strategy's run (compare), or the one asked for (advise).
    const StrategyResult* base = nullptr;
    for (const StrategyResult& r : rep.strategies) {
      if (!r.skipped.empty()) continue;
      if (base == nullptr || r.steady_iteration_time_s < base->steady_iteration_time_s) base = &r;
    }
    if (base != nullptr) rep.advice = sim::advise(asked, *base, a.advice_options);
  } else if (a.advice && what == "advise") {
    // advise's answer is the advice: a budget of 0 leaves none, said rather than left out.
    rep.header.push_back("no change simulated: --advice-budget 0 (give it seconds to simulate the changes)");
  }
  if (!dp_only && !ddp_only.empty() &&
      std::find(strategies.begin(), strategies.end(), Strategy::kDP) != strategies.end()) {
    rep.header.push_back(fmt::format("{} {} to DDP only (DataParallel has no buckets or hooks)",
                                     fmt::join(ddp_only_settings(asked, true), ", "),
                                     ddp_only.size() == 1 ? "applies" : "apply"));
  }
  finish_run(rep, out, a.explain);
}

}  // namespace

// note_uncalibrated (scenario_args.hpp): a note on stderr for each collective a strategy calls that the calibration
// did not measure over the run's rank count (a hand-made or cut file): those calls keep the
// topology's network model, which a CPU calibration does not describe.
void note_uncalibrated(const Scenario& s, const std::vector<Strategy>& strategies) {
  if (s.calibration.empty()) return;
  const Calibration cal = read_calibration(s.calibration);
  std::vector<std::string> missing;
  for (Strategy st : strategies) {
    const std::vector<Collective> calls = st == Strategy::kDDP
                                              ? std::vector<Collective>{Collective::kAllreduce, Collective::kBroadcast}
                                              : std::vector<Collective>{Collective::kBroadcast, Collective::kReduce};
    for (Collective c : calls) {
      const std::string name(collective_name(c));
      if (s.gpus <= 1) break;  // one GPU: no collective to measure
      if (!cal.collective_time(c, s.gpus, 1.0) && std::find(missing.begin(), missing.end(), name) == missing.end())
        missing.push_back(name);
    }
  }
  if (!missing.empty()) {
    std::cerr << fmt::format(
        "note: calibration {} measured no {} over {} ranks; those calls keep the network model of topology {}\n",
        s.calibration, fmt::join(missing, " or "), s.gpus, s.topology);
  }
  // One GPU with a file measured over several ranks: its collectives have one member and move
  // nothing (0 s), whatever the file timed over its ranks.
  if (s.gpus == 1 && cal.ranks > 1) {
    std::cerr << fmt::format(
        "note: calibration {} measured its collectives over {} ranks; on one GPU they have one member and take no "
        "time\n",
        s.calibration, cal.ranks);
  }
  // Kernels far beyond what the calibration timed: their times extend its last line.
  for (const std::string& beyond : sim::calibration_extrapolations(s, strategies))
    std::cerr << fmt::format("note: calibration {} timed {}\n", s.calibration, beyond);
}

void register_simulate_commands(CLI::App& app) {
  auto sa = std::make_shared<ScenarioCommand>();
  CLI::App* simulate = app.add_subcommand("simulate", "Simulate one strategy (DP or DDP) of a scenario on SimGrid");
  add_command_options(simulate, *sa);
  simulate->add_option("--strategy", sa->strategy, "dp or ddp")
      ->required()
      ->transform(CLI::IsMember({"dp", "ddp"}, CLI::ignore_case));
  simulate->callback([sa] { run_scenario(*sa, {sa->strategy == "dp" ? Strategy::kDP : Strategy::kDDP}, "simulate"); });

  auto ca = std::make_shared<ScenarioCommand>();
  CLI::App* compare = app.add_subcommand(
      "compare", "DP against DDP for a scenario (main job; no arguments: GPT-2 124M on 8x A100 NVSwitch)");
  add_command_options(compare, *ca);
  add_advice_options(compare, *ca);
  compare->callback([ca] { run_scenario(*ca, {Strategy::kDP, Strategy::kDDP}, "compare"); });

  auto aa = std::make_shared<ScenarioCommand>();
  aa->strategy = "ddp";
  CLI::App* advise = app.add_subcommand(
      "advise",
      "What to change: the run (--strategy, default ddp) and the changes a PyTorch engineer would try (DDP, "
      "buckets, comm hooks, no_sync accumulation, the largest batch that fits, NCCL's knobs, fused optimizer, "
      "pinned input, torch.compile, attention kernel), each simulated, the best first");
  add_command_options(advise, *aa);
  add_advice_options(advise, *aa);
  advise->add_option("--strategy", aa->strategy, "The strategy the script runs now: dp or ddp (default ddp)")
      ->transform(CLI::IsMember({"dp", "ddp"}, CLI::ignore_case));
  advise->callback([aa] { run_scenario(*aa, {aa->strategy == "dp" ? Strategy::kDP : Strategy::kDDP}, "advise"); });
}

}  // namespace gradsync::apps
