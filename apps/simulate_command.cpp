// simulate_command.cpp: `gradsync simulate`, `gradsync compare` (the main job) and
// `gradsync collectives`: scenarios and collectives on the SimGrid engine, as tables and
// result.json.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "apps/cli.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/metrics.hpp"
#include "core/units.hpp"
#include "core/version.hpp"
#include "reports/report.hpp"
#include "reports/table.hpp"
#include "sim/simulate.hpp"
#include "topologies/topology.hpp"

namespace gradsync::apps {
namespace {

using json = nlohmann::ordered_json;
using sim::Scenario;

// ScenarioArgs: the scenario flags; a flag given on the command line wins over the file.
struct ScenarioArgs {
  std::string file;
  Scenario flags;
  std::string bucket_cap_mb;
  std::map<std::string, CLI::Option*> given;
  std::string out = "gradsync-out";
  bool explain = false;
  std::string strategy;
};

void add_scenario_options(CLI::App* cmd, ScenarioArgs& a) {
  cmd->add_option("scenario", a.file, "YAML scenario file holding the same keys as the flags (flags win)");
  auto& g = a.given;
  g["model"] = cmd->add_option("--model", a.flags.model, "Zoo name or model file (default gpt2)");
  g["topology"] =
      cmd->add_option("--topology", a.flags.topology, "Built-in cluster or topology file (default dgx-a100)");
  g["gpus"] = cmd->add_option("--gpus", a.flags.gpus, "Use the first N GPUs (default all)")->check(kPositiveInteger);
  g["batch_per_gpu"] =
      cmd->add_option("--batch-per-gpu", a.flags.batch_per_gpu,
                      "Samples per GPU B; DP scatters the same global batch B x N (default: the model's)")
          ->check(kPositiveInteger);
  g["seq_len"] = cmd->add_option("--seq-len", a.flags.seq_len, "Sequence length T (default: the model's)")
                     ->check(kPositiveInteger);
  g["precision"] =
      cmd->add_option("--precision", a.flags.precision, "fp32, tf32, bf16 or fp16 (default bf16 where the GPU has it)");
  g["optimizer"] =
      cmd->add_option("--optimizer", a.flags.optimizer, "sgd, sgd-momentum, adam or adamw (default adamw)");
  g["bucket_cap_mb"] =
      cmd->add_option("--bucket-cap-mb", a.bucket_cap_mb, "DDP bucket_cap_mb (default 25, first bucket 1)")
          ->check(kMegabytes);
  g["grad_accum"] = cmd->add_option("--grad-accum", a.flags.grad_accum, "Micro-steps per optimizer step (default 1)")
                        ->check(kPositiveInteger);
  g["comm_hook"] = cmd->add_option("--comm-hook", a.flags.comm_hook,
                                   "DDP comm hook: none, fp16, bf16, quantize, powersgd[:rank=R,start_iter=S]");
  g["find_unused_parameters"] =
      cmd->add_flag("--find-unused-parameters", a.flags.find_unused_parameters, "DDP find_unused_parameters=True");
  g["static_graph"] = cmd->add_flag("--static-graph", a.flags.static_graph, "DDP static_graph=True");
  g["gradient_as_bucket_view"] =
      cmd->add_flag("--gradient-as-bucket-view", a.flags.gradient_as_bucket_view, "DDP gradient_as_bucket_view=True");
  g["iterations"] = cmd->add_option("--iterations", a.flags.iterations, "Optimizer steps simulated (default 5)")
                        ->check(kPositiveInteger);
  g["warmup"] = cmd->add_option("--warmup", a.flags.warmup, "Steps left out of the steady mean (default 3)")
                    ->check(CLI::NonNegativeNumber);
  g["algo"] = cmd->add_option("--algo", a.flags.algo, "NCCL_ALGO: ring, tree or auto (default auto)");
  g["proto"] = cmd->add_option("--proto", a.flags.proto, "NCCL_PROTO: ll, ll128, simple or auto (default auto)");
  cmd->add_option("--out", a.out,
                  "Output folder for the CSV, JSON, Chrome trace and HTML report (default gradsync-out)");
  cmd->add_flag("--explain", a.explain, "Also print DP against DDP phase by phase: where, what moves, bytes, time");
}

// scenario: defaults, then the file, then every flag given.
Scenario scenario_of(const ScenarioArgs& a) {
  Scenario s = a.file.empty() ? Scenario{} : sim::read_scenario_file(a.file);
  const Scenario& f = a.flags;
  auto given = [&](const char* k) { return a.given.at(k)->count() > 0; };
  if (given("model")) s.model = f.model;
  if (given("topology")) s.topology = f.topology;
  if (given("gpus")) s.gpus = f.gpus;
  if (given("batch_per_gpu")) s.batch_per_gpu = f.batch_per_gpu;
  if (given("seq_len")) s.seq_len = f.seq_len;
  if (given("precision")) s.precision = f.precision;
  if (given("optimizer")) s.optimizer = f.optimizer;
  if (given("bucket_cap_mb")) s.bucket_cap_mb = std::stod(a.bucket_cap_mb);
  if (given("grad_accum")) s.grad_accum = f.grad_accum;
  if (given("comm_hook")) s.comm_hook = f.comm_hook;
  if (given("find_unused_parameters")) s.find_unused_parameters = f.find_unused_parameters;
  if (given("static_graph")) s.static_graph = f.static_graph;
  if (given("gradient_as_bucket_view")) s.gradient_as_bucket_view = f.gradient_as_bucket_view;
  if (given("iterations")) s.iterations = f.iterations;
  if (given("warmup")) s.warmup = f.warmup;
  if (given("algo")) s.algo = f.algo;
  if (given("proto")) s.proto = f.proto;
  if (!a.file.empty()) {
    sim::check_scenario(s);  // errors name the file's keys (ConfigError)
  } else {
    try {
      sim::check_scenario(s);
    } catch (const ConfigError& e) {
      throw UsageError(e.what());  // every value came from a flag
    }
  }
  return s;
}

std::vector<std::string> header(const Scenario& s, const std::vector<StrategyResult>& rs, const std::string& what) {
  const StrategyResult& r = rs.front();
  std::vector<std::string> h;
  const std::int64_t per_gpu = r.gpus > 0 ? r.global_batch / s.grad_accum / r.gpus : 0;
  h.push_back(fmt::format(
      "gradsync {}: {} on {}, {} x {}, batch {}/GPU (global {}{}){}, {}, {}", what, s.model, s.topology, r.gpus, r.gpu,
      per_gpu, r.global_batch, s.grad_accum > 1 ? fmt::format(" over {} micro-steps", s.grad_accum) : "",
      r.tokens_per_sample > 1 ? fmt::format(", seq_len {}", r.tokens_per_sample) : "", r.precision, s.optimizer));
  h.push_back(fmt::format(
      "DDP: bucket_cap_mb {}, comm hook {}{}{}{}; NCCL model {}, algo {}, proto {}",
      s.bucket_cap_mb ? fmt::format("{}", *s.bucket_cap_mb) : "25 (first bucket 1)", s.comm_hook,
      s.find_unused_parameters ? ", find_unused_parameters" : "", s.static_graph ? ", static_graph" : "",
      s.gradient_as_bucket_view ? ", gradient_as_bucket_view" : "", sim::kNcclModelVersion, s.algo, s.proto));
  h.push_back(
      fmt::format("simulated {} iterations; steady = mean of iterations {}..{}; DDP times on rank 0, DP times of "
                  "the whole process (all GPUs on one timeline)",
                  s.iterations, s.warmup + 1, s.iterations));
  return h;
}

void run_scenario(const ScenarioArgs& a, std::vector<Strategy> strategies, const std::string& what) {
  const Scenario s = scenario_of(a);
  reports::Report rep;
  rep.command = what;
  rep.mode = "simulated";
  rep.scenario = sim::scenario_json(s);
  for (Strategy st : strategies) rep.strategies.push_back(sim::simulate_isolated(s, st));
  rep.header = header(s, rep.strategies, what);
  const std::vector<std::string> written = reports::write_outputs(a.out, rep);
  reports::print_summary(rep, std::cout);
  if (a.explain) {
    std::cout << "#\n";
    reports::print_explain(rep, std::cout);
  }
  std::cout << fmt::format(
      "# wrote {} files to {}/: summary.csv, iterations.csv, events.csv, result.json, "
      "trace-<strategy>.json (open in ui.perfetto.dev), report.html\n",
      written.size(), a.out);
}

struct CollectivesArgs {
  sim::CollectiveSweep sweep;
  std::string op = "allreduce";
  std::string min_bytes = "8";
  std::string max_bytes = "1GiB";
  bool json = false;
};

Collective parse_op(const std::string& op) {
  if (const auto c = parse_collective(op)) return *c;
  throw UsageError(fmt::format("--op \"{}\": expected allreduce, broadcast, reduce, allgather or reducescatter", op));
}

double parse_size_flag(const char* flag, const std::string& text) {
  try {
    const double b = static_cast<double>(parse_size(text));
    if (b > 0) return b;
  } catch (const ConfigError&) {
  }
  throw UsageError(fmt::format("{} \"{}\": expected a size > 0 (8, 64KiB, 1GiB)", flag, text));
}

void run_collectives(CollectivesArgs a) {
  a.sweep.op = parse_op(a.op);
  a.sweep.min_bytes = parse_size_flag("--min-bytes", a.min_bytes);
  a.sweep.max_bytes = parse_size_flag("--max-bytes", a.max_bytes);
  if (a.sweep.max_bytes < a.sweep.min_bytes) {
    throw UsageError(fmt::format("--max-bytes {} is below --min-bytes {}", a.max_bytes, a.min_bytes));
  }
  std::vector<sim::CollectivePoint> pts;
  try {
    pts = sim::simulate_collectives(a.sweep);
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
  const int n = a.sweep.gpus;
  if (a.json) {
    json j;
    j["schema_version"] = 1;
    j["topology"] = a.sweep.topology;
    j["gpus"] = n;
    j["op"] = a.op;
    j["nccl_model"] = std::string(sim::kNcclModelVersion);
    auto& rows = j["rows"] = json::array();
    for (const auto& p : pts) {
      rows.push_back({{"bytes", p.bytes},
                      {"time_us", p.time_s * 1e6},
                      {"algbw_GBps", p.algbw_GBps},
                      {"busbw_GBps", p.busbw_GBps},
                      {"algorithm", sim::algorithm_name(p.choice.algorithm)},
                      {"protocol", sim::protocol_name(p.choice.protocol)}});
    }
    std::cout << j.dump(2) << '\n';
    return;
  }
  reports::Table t({{"size", "(B)"},
                    {"count", "(elements)"},
                    {"type", "", true},
                    {"time", "(us)"},
                    {"algbw", "(GB/s)"},
                    {"busbw", "(GB/s)"},
                    {"algo", "", true},
                    {"proto", "", true}});
  for (const auto& p : pts) {
    t.add_row({fmt::format("{:.0f}", p.bytes), fmt::format("{:.0f}", p.bytes / 4), "float",
               fmt::format("{:.2f}", p.time_s * 1e6), fmt::format("{:.2f}", p.algbw_GBps),
               fmt::format("{:.2f}", p.busbw_GBps), std::string(sim::algorithm_name(p.choice.algorithm)),
               std::string(sim::protocol_name(p.choice.protocol))});
  }
  double sum = 0;
  for (const auto& p : pts) sum += p.busbw_GBps;
  t.print(std::cout,
          {fmt::format("gradsync collectives: simulated {} on {}, {} GPUs (nccl-tests definitions: algbw = "
                       "size / time, busbw = algbw x {:.4f})",
                       a.op, a.sweep.topology, n, sim::bus_factor(a.sweep.op, n)),
           fmt::format("NCCL model {}, algo {}, proto {}; one collective per size, ranks aligned before each",
                       sim::kNcclModelVersion, a.sweep.algo, a.sweep.proto)});
  std::cout << fmt::format("# Avg bus bandwidth    : {:.3f}\n",
                           pts.empty() ? 0.0 : sum / static_cast<double>(pts.size()));
}

}  // namespace

void register_simulate_commands(CLI::App& app) {
  auto sa = std::make_shared<ScenarioArgs>();
  CLI::App* simulate = app.add_subcommand("simulate", "Simulate one strategy (DP or DDP) of a scenario on SimGrid");
  add_scenario_options(simulate, *sa);
  simulate->add_option("--strategy", sa->strategy, "dp or ddp")->required()->check(CLI::IsMember({"dp", "ddp"}));
  simulate->callback([sa] { run_scenario(*sa, {sa->strategy == "dp" ? Strategy::kDP : Strategy::kDDP}, "simulate"); });

  auto ca = std::make_shared<ScenarioArgs>();
  CLI::App* compare = app.add_subcommand(
      "compare", "DP against DDP for a scenario (main job; no arguments: GPT-2 124M on 8x A100 NVSwitch)");
  add_scenario_options(compare, *ca);
  compare->callback([ca] { run_scenario(*ca, {Strategy::kDP, Strategy::kDDP}, "compare"); });

  auto co = std::make_shared<CollectivesArgs>();
  CLI::App* coll = app.add_subcommand("collectives", "Simulated nccl-tests: time, algbw and busbw per size");
  coll->add_option("--topology", co->sweep.topology, "Built-in cluster or topology file")->required();
  coll->add_option("--gpus", co->sweep.gpus, "Use the first N GPUs (default all)")->check(kPositiveInteger);
  coll->add_option("--op", co->op, "allreduce, broadcast, reduce, allgather or reducescatter (default allreduce)");
  coll->add_option("--min-bytes", co->min_bytes, "Smallest size (default 8)");
  coll->add_option("--max-bytes", co->max_bytes, "Largest size (default 1GiB)");
  coll->add_option("--step-factor", co->sweep.step_factor, "Size multiplier between rows (default 2)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              std::size_t used = 0;
              const double v = std::stod(text, &used);
              if (used == text.size() && v > 1 && v < 1e9) return {};
            } catch (const std::exception&) {
            }
            return fmt::format("value \"{}\" must be a number > 1", text);
          },
          "FACTOR"));
  coll->add_option("--algo", co->sweep.algo, "ring, tree or auto (default auto)");
  coll->add_option("--proto", co->sweep.proto, "ll, ll128, simple or auto (default auto)");
  coll->add_flag("--json", co->json, "Print JSON instead of a table");
  coll->callback([co] {
    CollectivesArgs a = *co;
    if (a.sweep.gpus == 0) {
      try {
        a.sweep.gpus = load_topology(a.sweep.topology).gpu_count();
      } catch (const ConfigError& e) {
        throw UsageError(e.what());
      }
    }
    run_collectives(a);
  });
}

}  // namespace gradsync::apps
