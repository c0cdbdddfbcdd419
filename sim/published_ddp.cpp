// published_ddp.cpp: reading the published DDP table and simulating its cases (see
// published_ddp.hpp).
#include "sim/published_ddp.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/yaml_reader.hpp"
#include "sim/confidence.hpp"
#include "sim/published.hpp"
#include "sim/published_table.hpp"
#include "sim/simulate.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {

std::string_view builtin_ddp_text() { return builtin_table_text("ddp_steps.yaml"); }

std::vector<DdpCase> read_ddp_cases(std::string_view text, const std::string& origin) {
  const YamlReader r(origin);
  const YAML::Node cases = table_cases(r, r.load(text), "published DDP", "gradsync-published-ddp/1");
  std::vector<DdpCase> out;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const YAML::Node n = cases[i];
    const CaseHeader h = case_header(
        r, n, i,
        {"id", "split", "source", "source_note", "scenario", "cluster", "strategy", "relative_to", "metric", "where"},
        ids);
    const std::string& at = h.at;
    DdpCase c;
    c.line = h.line;
    c.id = h.id;
    c.split = h.split;
    c.source = h.source;
    c.scenario = scenario_from_node(r, r.required(n, at, "scenario"));
    if (const YAML::Node cl = n["cluster"]; cl.IsDefined()) {
      if (!cl.IsMap() || !cl["generate"]) r.fail(cl, at, "cluster: expected {generate: KIND, ...}");
      if (n["scenario"]["topology"]) r.fail(cl, at, "cluster: the scenario names a topology already; give one of them");
      c.cluster = nlohmann::ordered_json::object();
      for (const auto& kv : cl) c.cluster[kv.first.as<std::string>()] = r.string(kv.second, at, "cluster");
      try {
        PublishedCase pc;
        pc.id = c.id;
        pc.simulate = c.cluster;
        (void)published_topology(pc);
      } catch (const Error& e) {
        // The generators' messages name the nccl-tests table's field; here it is `cluster`.
        std::string why = e.what();
        const std::string prefix = fmt::format("case {}: ", c.id);
        if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
        if (why.rfind("simulate.", 0) == 0) why.replace(0, 9, "cluster.");
        r.fail(cl, at, why);
      }
    }
    if (const YAML::Node st = n["strategy"]; st.IsDefined()) {
      const std::string name = r.string(st, at, "strategy");
      const auto strategy = parse_strategy(name);
      if (!strategy) r.fail(st, at, fmt::format("strategy \"{}\": expected dp or ddp", name));
      c.strategy = *strategy;
    }
    const YAML::Node metric = r.required(n, at, "metric");
    if (!metric.IsMap() || metric.size() != 1) r.fail(metric, at, "metric: expected one {name: value}");
    c.metric = metric.begin()->first.as<std::string>();
    if (c.metric != "step_s" && c.metric != "samples_per_s" && c.metric != "throughput_change_pct") {
      r.fail(metric, at,
             fmt::format("metric \"{}\": expected step_s, samples_per_s or throughput_change_pct", c.metric));
    }
    const YAML::Node value = metric.begin()->second;
    if (c.metric == "throughput_change_pct") {
      try {
        c.published = value.as<double>();
      } catch (const YAML::Exception&) {
        r.fail(value, at, fmt::format("metric \"{}\": expected a number", YamlReader::scalar_text(value)));
      }
    } else {
      c.published = r.positive_number(value, at, "metric");
    }
    const YAML::Node rel = n["relative_to"];
    const bool relative = rel.IsDefined() && !rel.IsNull();
    if ((c.metric == "throughput_change_pct") != relative) {
      r.fail(relative ? rel : metric, at, "relative_to goes with metric throughput_change_pct, and only with it");
    }
    if (relative) {
      c.relative_to = r.string(rel, at, "relative_to");
      bool earlier = false;
      for (const DdpCase& o : out) earlier = earlier || (o.id == c.relative_to && o.relative_to.empty());
      if (!earlier) {
        r.fail(rel, at,
               fmt::format("relative_to \"{}\": expected the id of an earlier case that is not itself relative",
                           c.relative_to));
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<DdpPrediction> predict_ddp_cases(const std::vector<DdpCase>& cases, const std::string& origin) {
  std::vector<DdpPrediction> out(cases.size());
  std::map<std::string, double> samples_of;  // id -> simulated samples per second (all GPUs)
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const DdpCase& c = cases[i];
    StrategyResult r;
    std::filesystem::path generated;
    try {
      Scenario s = c.scenario;
      if (!c.cluster.is_null()) {
        // The generated cluster as a topology file for the scenario, for as long as it runs.
        PublishedCase pc;
        pc.id = c.id;
        pc.simulate = c.cluster;
        generated = std::filesystem::temp_directory_path() /
                    fmt::format("gradsync-case-{}-{}-{}.dot", c.id, static_cast<long>(::getpid()), i);
        write_file_atomic(generated.string(), write_topology_dot(published_topology(pc)));
        s.topology = generated.string();
      }
      r = simulate_isolated(s, c.strategy);
      out[i].step_class = step_class(s, c.strategy);
      out[i].topology = c.cluster.is_null() ? s.topology : fmt::format("generated {}", c.cluster.value("generate", ""));
    } catch (const Error& e) {
      std::error_code ec;
      if (!generated.empty()) std::filesystem::remove(generated, ec);
      throw ConfigError(fmt::format("{}:{}: case {}: {}", origin, c.line, c.id, e.what()));
    }
    if (!generated.empty()) {
      std::error_code ec;
      std::filesystem::remove(generated, ec);
    }
    if (!r.skipped.empty() || !(r.steady_iteration_time_s > 0))
      throw ConfigError(fmt::format("{}:{}: case {}: not simulated: {}", origin, c.line, c.id, r.skipped));
    DdpPrediction& p = out[i];
    p.published = c.published;
    p.step_s = r.steady_iteration_time_s;
    samples_of[c.id] = r.samples_per_s;
    if (c.metric == "step_s") p.predicted = p.step_s;
    if (c.metric == "samples_per_s") p.predicted = r.samples_per_s;
    if (c.metric == "throughput_change_pct") {
      p.points = true;
      // Samples per second against the other case's: its step ratio when the global batch is the
      // same (DDP against DP, one bucket cap against another), not when the GPUs differ.
      p.predicted = 100.0 * (r.samples_per_s / samples_of.at(c.relative_to) - 1.0);
    }
  }
  return out;
}

}  // namespace gradsync::sim
