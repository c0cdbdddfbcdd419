// published_ddp.cpp: reading the published DDP table and simulating its cases (see
// published_ddp.hpp).
#include "sim/published_ddp.hpp"

#include <fmt/format.h>

#include <map>
#include <set>
#include <span>

#include "core/embedded_file.hpp"
#include "core/error.hpp"
#include "core/yaml_reader.hpp"
#include "sim/simulate.hpp"

namespace gradsync::detail {
std::span<const EmbeddedFile> published_files();  // generated (cmake/GradsyncEmbed.cmake)
}  // namespace gradsync::detail

namespace gradsync::sim {

std::string_view builtin_ddp_text() {
  for (const EmbeddedFile& f : detail::published_files())
    if (f.path == "validation/published/ddp_steps.yaml") return f.text;
  throw std::logic_error("published: ddp_steps.yaml is not compiled in");
}

std::vector<DdpCase> read_ddp_cases(std::string_view text, const std::string& origin) {
  const YamlReader r(origin);
  const YAML::Node root = r.load(text);
  const char* what = "published DDP";
  if (!root.IsMap()) r.fail(root, what, "expected a mapping with format and cases");
  r.only_keys(root, what, {"format", "cases"});
  const std::string format = r.string(r.required(root, what, "format"), what, "format");
  if (format != "gradsync-published-ddp/1")
    r.fail(root["format"], what, fmt::format("format \"{}\": expected gradsync-published-ddp/1", format));
  const YAML::Node cases = r.required(root, what, "cases");
  if (!cases.IsSequence()) r.fail(cases, what, "cases: expected a list");
  std::vector<DdpCase> out;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const YAML::Node n = cases[i];
    const std::string where = fmt::format("cases[{}]", i);
    if (!n.IsMap()) r.fail(n, where, "expected a mapping");
    r.only_keys(n, where, {"id", "split", "source", "source_note", "scenario", "relative_to", "metric", "where"});
    DdpCase c;
    c.line = n.Mark().line + 1;
    c.id = r.string(r.required(n, where, "id"), where, "id");
    const std::string at = fmt::format("case {}", c.id);
    if (!ids.insert(c.id).second) r.fail(n["id"], at, "id given twice");
    c.split = r.string(r.required(n, at, "split"), at, "split");
    if (c.split != "train" && c.split != "holdout")
      r.fail(n["split"], at, fmt::format("split \"{}\": expected train or holdout", c.split));
    c.source = r.string(r.required(n, at, "source"), at, "source");
    c.scenario = scenario_from_node(r, r.required(n, at, "scenario"));
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
  std::map<std::string, double> step_of;  // id -> simulated steady step
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const DdpCase& c = cases[i];
    StrategyResult r;
    try {
      r = simulate_isolated(c.scenario, Strategy::kDDP);
    } catch (const Error& e) {
      throw ConfigError(fmt::format("{}:{}: case {}: {}", origin, c.line, c.id, e.what()));
    }
    if (!r.skipped.empty() || !(r.steady_iteration_time_s > 0))
      throw ConfigError(fmt::format("{}:{}: case {}: not simulated: {}", origin, c.line, c.id, r.skipped));
    DdpPrediction& p = out[i];
    p.published = c.published;
    p.step_s = r.steady_iteration_time_s;
    step_of[c.id] = p.step_s;
    if (c.metric == "step_s") p.predicted = p.step_s;
    if (c.metric == "samples_per_s") p.predicted = r.samples_per_s;
    if (c.metric == "throughput_change_pct") {
      p.points = true;
      p.predicted = 100.0 * (step_of.at(c.relative_to) / p.step_s - 1.0);
    }
  }
  return out;
}

}  // namespace gradsync::sim
