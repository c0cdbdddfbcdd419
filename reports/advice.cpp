// advice.cpp: the advice table.
#include "reports/advice.hpp"

#include <fmt/format.h>

#include <fmt/ranges.h>
#include <cmath>

#include <string>
#include <vector>

#include "reports/report.hpp"
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
  const auto plural = [](std::size_t n, const char* one, const char* many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
  };
  const std::string label = a.strategy == Strategy::kDP ? "DP" : "DDP";
  out << "#\n";
  std::vector<std::string> header{
      // A run that does not fit has no samples/s (the table shows none): its time alone, and why.
      fmt::format("what to change in the {} run ({:.3f} ms, {}): {} of {} simulated, each on its own{}", label,
                  1e3 * a.steady_s, a.oom ? "OUT OF MEMORY" : fmt::format("{:.1f} samples/s", a.samples_per_s), ran,
                  plural(a.changes.size(), "change", "changes"),
                  std::isfinite(a.budget_s) ? fmt::format(" (budget {:g} s, --advice-budget)", a.budget_s) : "")};
  // Changes that could not run are named in the count, so that "19 of 20 simulated" does not read
  // as one skipped (a new user's report: the one was the largest-batch search finding none).
  std::vector<std::string> could_not;
  for (const ChangeResult& c : a.changes)
    if (c.status == "failed") could_not.push_back(c.change.largest_batch ? "the largest batch" : c.change.what);
  if (!could_not.empty())
    header.back() += fmt::format(" ({} could not run: {})", could_not.size(), fmt::join(could_not, ", "));
  const std::vector<const ChangeResult*> best = advised(a);
  if (best.empty()) {
    std::string verdict;
    if (a.oom) {
      verdict = "no change simulated makes the run fit the GPU's memory";
      for (const ChangeResult& c : a.changes)
        if (c.change.largest_batch && c.status == "failed")
          verdict +=
              ": " + c.error + " (DDP and DP keep a whole replica, its gradients and optimizer state on every GPU)";
    } else if (ran == 0) {
      verdict = "nothing was simulated within the budget";
    } else {
      verdict = fmt::format("none of the {} simulated gains {:.0f}% or more samples/s{}", ran, 100 * Advice::kMinGain,
                            budget == 0 ? ": keep the run as it is" : "");
    }
    header.push_back(verdict);
    for (const auto& h : header) out << "# " << h << '\n';
  } else {
    header.back() +=
        a.oom ? fmt::format("; the run does not fit the GPU's memory: {} that {} it fit, by samples/s:",
                            plural(best.size(), "change", "changes"), best.size() == 1 ? "makes" : "make")
              : fmt::format("; {} by samples/s (gain: against the run; shown: {:.0f}% or more):",
                            best.size() == 1 ? std::string("the best") : fmt::format("the {} best", best.size()),
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
                 // Against a run that does not fit there is no samples/s to gain over (the table shows none).
                 a.oom ? std::string("-") : fmt::format("{:+.1f}", 100 * c->gain),
                 c->change.alters.empty() ? "same" : "CHANGED", c->change.pytorch});
      if (!c->change.alters.empty()) alters.push_back(fmt::format("{}: {}", c->change.what, c->change.alters));
    }
    t.print(out, header);
    for (const std::string& s : alters) out << "# maths CHANGED by " << s << '\n';
    // A change simulated with a later warm-up than the run's (static_graph's buckets are rebuilt for
    // iteration 3, PowerSGD compresses from it): its steady mean covers other iterations, said here.
    for (const ChangeResult* c : best)
      for (const auto& [key, value] : c->change.keys)
        if (key == "warmup")
          out << fmt::format("# {}: steady from iteration {} (its state from then on), not the run's warm-up\n",
                             c->change.what, std::stoi(value) + 1);
    // The largest batch fills the GPU to what gradsync's memory model counts: say how little is
    // left, since the caching allocator's rounding and fragmentation can take more in a real run.
    for (const ChangeResult* c : best) {
      if (!c->change.largest_batch || !(c->capacity_bytes > 0)) continue;
      const double spare = c->capacity_bytes - c->peak_memory_bytes;
      out << fmt::format(
          "# {} leaves {} of the GPU's {} ({:.1f} GiB) free by gradsync's memory model; PyTorch's caching "
          "allocator rounds and fragments beyond it: a real run may need a smaller batch\n",
          c->change.what, bytes_text(spare), bytes_text(c->capacity_bytes), c->capacity_bytes / (1024.0 * 1024 * 1024));
    }
  }
  if (oom > 0) out << fmt::format("# {} would not fit the GPU's memory\n", plural(oom, "change", "changes"));
  // The largest-batch search that found no batch fitting, when the verdict above already says
  // why, is no change that "could not run".
  std::size_t unexplained = failed;
  if (best.empty() && a.oom)
    for (const ChangeResult& c : a.changes)
      if (c.change.largest_batch && c.status == "failed" && unexplained > 0) --unexplained;
  if (unexplained > 0)
    out << fmt::format("# {} could not run (result.json: advice)\n", plural(unexplained, "change", "changes"));
  if (budget > 0) {
    std::vector<std::string> names;
    for (const ChangeResult& c : a.changes)
      if (c.status == "budget") names.push_back(c.change.what);
    out << fmt::format("# not simulated within the budget: {} (raise --advice-budget)\n", fmt::join(names, ", "));
  }
}

}  // namespace gradsync::reports
