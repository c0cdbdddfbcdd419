// scenario_args.cpp: the scenario flags, the scenario they make, the header lines.
#include "apps/scenario_args.hpp"

#include <fmt/format.h>

#include <iostream>

#include "apps/cli.hpp"
#include "core/error.hpp"
#include "sim/nccl_model.hpp"

namespace gradsync::apps {

using sim::Scenario;

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
  g["fidelity"] = cmd->add_option("--fidelity", a.flags.fidelity,
                                  "Collectives as flows: step (every ring step and chunk), aggregate (one flow per "
                                  "rank, channel and phase) or auto (aggregate where step would issue more than "
                                  "4000 flows; default)");
  g["calibration"] = cmd->add_option("--calibration", a.flags.calibration,
                                     "calibration.yaml from `gradsync calibrate`: measured compute, copy and "
                                     "collective times replace the roofline and network models");
}

Scenario scenario_of(const ScenarioArgs& a, bool check) {
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
  if (given("fidelity")) s.fidelity = f.fidelity;
  if (given("calibration")) s.calibration = f.calibration;
  if (!check) return s;
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

void print_report(const reports::Report& rep, const std::string& out, const std::vector<std::string>& written,
                  bool explain) {
  reports::print_summary(rep, std::cout);
  if (explain) {
    std::cout << "#\n";
    reports::print_explain(rep, std::cout);
  }
  if (!rep.validation.empty()) {
    std::cout << "#\n";
    reports::print_validation(rep.validation, std::cout);
  }
  std::cout << fmt::format(
      "# wrote {} files to {}/: summary.csv, iterations.csv, events.csv, result.json, "
      "trace-<strategy>.json (open in ui.perfetto.dev), report.html{}\n",
      written.size(), out, rep.validation.empty() ? "" : ", validation.csv");
}

std::vector<std::string> scenario_header(const Scenario& s, const std::vector<StrategyResult>& rs,
                                         const std::string& what) {
  const StrategyResult& r = rs.front();
  std::vector<std::string> h;
  const std::int64_t per_gpu = r.gpus > 0 ? r.global_batch / s.grad_accum / r.gpus : 0;
  h.push_back(fmt::format(
      "gradsync {}: {} on {}, {} x {}, batch {}/GPU (global {}{}){}, {}, {}", what, s.model, s.topology, r.gpus, r.gpu,
      per_gpu, r.global_batch, s.grad_accum > 1 ? fmt::format(" over {} micro-steps", s.grad_accum) : "",
      r.tokens_per_sample > 1 ? fmt::format(", seq_len {}", r.tokens_per_sample) : "", r.precision, s.optimizer));
  h.push_back(fmt::format("DDP: bucket_cap_mb {}, comm hook {}{}{}{}; NCCL model {}, algo {}, proto {}{}",
                          s.bucket_cap_mb ? fmt::format("{}", *s.bucket_cap_mb) : "25 (first bucket 1)", s.comm_hook,
                          s.find_unused_parameters ? ", find_unused_parameters" : "",
                          s.static_graph ? ", static_graph" : "",
                          s.gradient_as_bucket_view ? ", gradient_as_bucket_view" : "", sim::kNcclModelVersion, s.algo,
                          s.proto, r.fidelity.mode.empty() ? "" : fmt::format(", fidelity {}", s.fidelity)));
  h.push_back(
      fmt::format("simulated {} iterations; steady = mean of iterations {}..{}; DDP times on rank 0, DP times of "
                  "the whole process (all GPUs on one timeline)",
                  s.iterations, s.warmup + 1, s.iterations));
  return h;
}

}  // namespace gradsync::apps
