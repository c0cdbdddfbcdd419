// advice.cpp: the advice table.
#include "reports/advice.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "reports/table.hpp"

namespace gradsync::reports {

void print_advice(const Advice& a, std::ostream& out) {
  std::size_t ran = 0, budget = 0, failed = 0, oom = 0;
  for (const ChangeResult& c : a.changes) {
    ran += c.status == "ok" || c.status == "oom";
    budget += c.status == "budget";
    failed += c.status == "failed";
    oom += c.status == "oom";
  }
  const std::string label = a.strategy == Strategy::kDP ? "DP" : "DDP";
  std::vector<std::string> header{fmt::format(
      "what to change in the {} run ({:.3f} ms, {:.1f} samples/s{}): {} of {} changes simulated, each on its own "
      "(budget {:g} s, --advice-budget)",
      label, 1e3 * a.steady_s, a.samples_per_s, a.oom ? ", out of memory" : "", ran, a.changes.size(), a.budget_s)};
  const std::vector<const ChangeResult*> best = advised(a);
  if (best.empty()) {
    header.push_back(fmt::format("none gains {:.0f}% or more samples/s{}", 100 * Advice::kMinGain,
                                 a.changes.empty() ? "" : ": keep the run as it is"));
    for (const auto& h : header) out << "# " << h << '\n';
  } else {
    header.back() += fmt::format(
        "; the {} best by samples/s (gain: against the run; a change shown gains {:.0f}% or more):", best.size(),
        100 * Advice::kMinGain);
    Table t({{"change", "", true},
             {"steady", "ms"},
             {"samples/s", "1/s"},
             {"gain", "%"},
             {"maths", "", true},
             {"in the script", "", true}});
    std::vector<std::string> alters;
    for (const ChangeResult* c : best) {
      t.add_row({c->change.what, fmt::format("{:.3f}", 1e3 * c->steady_s), fmt::format("{:.1f}", c->samples_per_s),
                 fmt::format("{:+.1f}", 100 * c->gain), c->change.alters.empty() ? "same" : "CHANGED",
                 c->change.pytorch});
      if (!c->change.alters.empty()) alters.push_back(fmt::format("{}: {}", c->change.what, c->change.alters));
    }
    out << "#\n";
    t.print(out, header);
    for (const std::string& s : alters) out << "# maths CHANGED by " << s << '\n';
  }
  if (oom > 0) out << fmt::format("# {} change{} would not fit the GPU's memory\n", oom, oom == 1 ? "" : "s");
  if (failed > 0)
    out << fmt::format("# {} change{} could not run (result.json: advice)\n", failed, failed == 1 ? "" : "s");
  if (budget > 0) {
    std::vector<std::string> names;
    for (const ChangeResult& c : a.changes)
      if (c.status == "budget") names.push_back(c.change.what);
    out << fmt::format("# not simulated within the budget: {} (raise --advice-budget)\n", fmt::join(names, ", "));
  }
}

}  // namespace gradsync::reports
