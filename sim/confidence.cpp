// confidence.cpp: validation classes and the compiled-in confidence table.
#include "sim/confidence.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "models/op_cost.hpp"
#include "models/scenario_basics.hpp"
#include "sim/nccl_options.hpp"
#include "sim/published_table.hpp"
#include "sim/simulate.hpp"
#include "topologies/channels.hpp"
#include "topologies/routes.hpp"

namespace gradsync::sim {

std::string step_class(const Scenario& s, Strategy strategy) { return step_classes(s, strategy).step; }

StepClasses step_classes(const Scenario& s, Strategy strategy) {
  const Scenario r = resolve_scenario(s, strategy == Strategy::kDDP);
  const Model m = scenario_model(s);
  const std::string kind = model_kind(m);
  StepClasses c;
  if (!s.calibration.empty()) {
    // Measured times replace the compute and network models: no class of the validation tables
    // (all of them the models' predictions) says how sure such a run is, nor do its parts'.
    c.step = c.compute = fmt::format("{}, calibrated", r.gpus <= 1                 ? "one GPU"
                                                       : strategy == Strategy::kDP ? "DP"
                                                                                   : "DDP");
    return c;
  }
  // A model imported with its measured step (models import-trace): its compute is that
  // measurement, not the roofline's the validation tables score, so no class of theirs covers
  // it; its communication stays the network model's, scored as any other.
  const bool measured = m.measured.has_value();
  c.compute = measured ? std::string("one GPU, measured step") : "one GPU, " + kind;
  if (r.gpus <= 1) {
    c.step = c.compute;
    return c;
  }
  std::string link = "multi-node";
  if (r.nnodes <= 1) {
    // As validate --published classes nccl-tests cases: the path class NCCL's rings use in a node.
    const Topology topo = load_topology(s.topology);
    const Routes routes(topo);
    const Transports transports(topo, routes, nccl_settings(s).transport, r.gpus);
    const Channels ch = build_channels(topo, routes, first_ranks(r.gpus), transports);
    link = ch.intra_class <= PathClass::kNVB ? "NVLink node" : "PCIe node";
  }
  c.step = fmt::format("{}, {}, {}", strategy == Strategy::kDP ? "DP" : "DDP", link, measured ? "measured step" : kind);
  c.communication = "NCCL collectives, " + link;
  return c;
}

bool predicted_faster(std::string_view metric, double error) {
  const bool rate = metric.ends_with("_per_s") || metric.starts_with("busbw");
  return rate ? error > 0 : error < 0;
}

std::string confidence_csv(std::vector<ClassError> errors) {
  std::map<std::string, std::vector<ClassError>> by;
  for (ClassError& e : errors) by[e.cls].push_back(std::move(e));
  std::string out = "class,cases,points,median_abs_error_frac,worst_abs_error_frac,predicted_faster,worst_case\n";
  for (auto& [cls, es] : by) {
    std::sort(es.begin(), es.end(), [](const ClassError& a, const ClassError& b) {
      return std::abs(a.error) != std::abs(b.error) ? std::abs(a.error) < std::abs(b.error) : a.id < b.id;
    });
    const std::size_t n = es.size();
    const double median =
        n % 2 ? std::abs(es[n / 2].error) : (std::abs(es[n / 2 - 1].error) + std::abs(es[n / 2].error)) / 2;
    std::set<std::string> ids;
    int faster = 0;
    for (const ClassError& e : es) {
      ids.insert(e.id);
      faster += e.faster ? 1 : 0;
    }
    out += fmt::format("\"{}\",{},{},{:.4f},{:.4f},{},{}\n", cls, ids.size(), n, median, std::abs(es.back().error),
                       faster, es.back().id);
  }
  return out;
}

std::optional<ClassConfidence> class_confidence(std::string_view cls) {
  std::istringstream in{std::string(builtin_table_text("confidence.csv"))};
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    // "class",cases,points,median,worst,faster,case: the class is quoted (it holds commas).
    const std::size_t close = line.find('"', 1);
    if (line.empty() || line[0] != '"' || close == std::string::npos) continue;
    if (std::string_view(line).substr(1, close - 1) != cls) continue;
    ClassConfidence c;
    c.cls = std::string(cls);
    std::istringstream rest(line.substr(close + 2));
    std::string cases, points, median, worst, faster;
    std::getline(rest, cases, ',');
    std::getline(rest, points, ',');
    std::getline(rest, median, ',');
    std::getline(rest, worst, ',');
    std::getline(rest, faster, ',');
    std::getline(rest, c.worst_case);
    c.cases = std::stoi(cases);
    c.points = std::stoi(points);
    c.median_abs_error = std::stod(median);
    c.worst_abs_error = std::stod(worst);
    c.faster = std::stoi(faster);
    return c;
  }
  return std::nullopt;
}

}  // namespace gradsync::sim
