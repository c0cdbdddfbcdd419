// scenario_args.cpp: the scenario flags, the scenario they make, the header lines.
#include "apps/scenario_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "apps/cli.hpp"
#include "core/error.hpp"
#include "core/scenario_keys.hpp"
#include "sim/nccl_model.hpp"

namespace gradsync::apps {

using sim::Scenario;

void add_scenario_options(CLI::App* cmd, ScenarioArgs& a, const std::vector<std::string>& only) {
  if (only.empty())
    cmd->add_option("scenario", a.file, "YAML scenario file holding the same keys as the flags (flags win)");
  for (const ScenarioKey& k : scenario_table()) {
    const std::string name(k.name);
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    if (k.kind == KeyKind::kSwitch) {
      a.given[name] = cmd->add_flag(std::string(k.flag), a.switches[name], key_help(k));
    } else {
      a.given[name] =
          cmd->add_option(std::string(k.flag), a.text[name], key_help(k))->type_name(std::string(k.value_name));
    }
  }
}

Scenario scenario_of(const ScenarioArgs& a) {
  Scenario s = a.file.empty() ? Scenario{} : sim::read_scenario_file(a.file);
  for (const ScenarioKey& k : scenario_table()) {
    const std::string name(k.name);
    const auto o = a.given.find(name);
    if (o == a.given.end() || o->second->count() == 0) continue;
    if (k.kind == KeyKind::kSwitch) {
      set_key(s, k, a.switches.at(name));
      continue;
    }
    const std::string& text = a.text.at(name);
    try {
      set_key(s, k, parse_key_value(k, text));
    } catch (const ConfigError& e) {
      throw UsageError(fmt::format("{} \"{}\": {}", k.flag, text, e.what()));
    }
  }
  return s;
}

Scenario resolve_args(const ScenarioArgs& a, const Scenario& requested) {
  if (!a.file.empty()) return sim::resolve_scenario(requested);  // errors name the file's keys (ConfigError)
  try {
    return sim::resolve_scenario(requested);
  } catch (const ConfigError& e) {
    throw UsageError(e.what());  // every value came from a flag
  }
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
  h.push_back(
      fmt::format("DDP: bucket_cap_mb {}, first bucket {} MiB, comm hook {}{}{}{}; NCCL model {}, algo {}, proto {}{}",
                  value_text(key_value(s, scenario_key("bucket_cap_mb"))),
                  value_text(key_value(s, scenario_key("first_bucket_mb"))), s.comm_hook,
                  s.find_unused_parameters ? ", find_unused_parameters" : "", s.static_graph ? ", static_graph" : "",
                  s.gradient_as_bucket_view ? ", gradient_as_bucket_view" : "", sim::kNcclModelVersion, s.algo, s.proto,
                  r.fidelity.mode.empty() ? "" : fmt::format(", fidelity {}", s.fidelity)));
  h.push_back(
      fmt::format("simulated {} iterations; steady = mean of iterations {}..{}; DDP times on rank 0, DP times of "
                  "the whole process (all GPUs on one timeline)",
                  s.iterations, s.warmup + 1, s.iterations));
  return h;
}

}  // namespace gradsync::apps
