// validation.cpp: measured against simulated per phase and iteration.
#include "reports/validation.hpp"

#include <fmt/format.h>

#include <map>

#include "core/strategy.hpp"
#include "reports/csv.hpp"
#include "reports/table.hpp"

namespace gradsync::reports {

std::string validation_phase(const std::string& name) {
  if (name.rfind("dp:", 0) == 0) {
    const auto second = name.find(':', 3);
    return second == std::string::npos ? name : name.substr(0, second);
  }
  const auto colon = name.find(':');
  return colon == std::string::npos ? name : name.substr(0, colon);
}

namespace {

// Phase seconds per steady iteration on rank 0, in the order phases first appear.
std::vector<std::pair<std::string, double>> phases(const StrategyResult& r) {
  std::vector<std::pair<std::string, double>> out;
  std::map<std::string, std::size_t> at;
  const int steady = static_cast<int>(r.iterations.size()) - r.warmup;
  for (const TraceEvent& e : r.trace.events) {
    if (e.rank != 0 || e.stream == Stream::kHost || e.iteration <= r.warmup) continue;
    const std::string p = validation_phase(e.name);
    auto [it, fresh] = at.emplace(p, out.size());
    if (fresh) out.emplace_back(p, 0.0);
    out[it->second].second += e.duration_s() / std::max(1, steady);
  }
  return out;
}

ValidationRow row(const StrategyResult& m, const std::string& scope, const std::string& phase, double measured,
                  double simulated) {
  ValidationRow v;
  v.strategy = std::string(strategy_label(m.strategy));
  v.scope = scope;
  v.phase = phase;
  v.measured_s = measured;
  v.simulated_s = simulated;
  v.error = measured > 0 ? (simulated - measured) / measured : 0.0;
  return v;
}

}  // namespace

std::vector<ValidationRow> validation_rows(const StrategyResult& m, const StrategyResult& s) {
  std::vector<ValidationRow> rows;
  rows.push_back(row(m, "steady", "step", m.steady_iteration_time_s, s.steady_iteration_time_s));
  rows.push_back(row(m, "steady", "compute", m.compute_s, s.compute_s));
  rows.push_back(row(m, "steady", "communication", m.communication_s, s.communication_s));
  rows.push_back(row(m, "steady", "exposed", m.exposed_communication_s, s.exposed_communication_s));
  const auto sim_phases = phases(s);
  for (const auto& [phase, t] : phases(m)) {
    double st = 0;
    for (const auto& [p, x] : sim_phases)
      if (p == phase) st = x;
    rows.push_back(row(m, "steady", phase, t, st));
  }
  for (std::size_t i = 0; i < m.iterations.size(); ++i) {
    const double st = i < s.iterations.size() ? s.iterations[i].time_s : 0.0;
    rows.push_back(row(m, fmt::format("iteration {}", m.iterations[i].iteration), "step", m.iterations[i].time_s, st));
  }
  return rows;
}

std::string validation_csv(const std::vector<ValidationRow>& rows) {
  std::string out = csv_line({"strategy", "scope", "phase", "measured_s", "simulated_s", "error"});
  for (const auto& r : rows)
    out += csv_line({r.strategy, r.scope, r.phase, number(r.measured_s), number(r.simulated_s), number(r.error)});
  return out;
}

void print_validation(const std::vector<ValidationRow>& rows, std::ostream& out) {
  Table t({{"strategy", "", true},
           {"scope", "", true},
           {"phase", "", true},
           {"measured", "(ms)"},
           {"simulated", "(ms)"},
           {"error", "(%)"}});
  for (const auto& r : rows) {
    t.add_row({r.strategy, r.scope, r.phase, fmt::format("{:.3f}", r.measured_s * 1e3),
               fmt::format("{:.3f}", r.simulated_s * 1e3),
               r.measured_s > 0 ? fmt::format("{:+.1f}", r.error * 100) : "-"});
  }
  t.print(out, {"measured against simulated (with the calibration): per steady iteration on rank 0, then each "
                "iteration's step time; error = (simulated - measured) / measured"});
}

}  // namespace gradsync::reports
