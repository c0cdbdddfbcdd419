// trace_findings.cpp: what a torch.profiler trace says besides its phases' times (trace_phases.hpp,
// trace_import.hpp): the phases' time outside the DataLoader's spans, and how many micro-steps each
// optimizer step had.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/scenario_keys.hpp"
#include "models/trace_phases.hpp"

namespace gradsync {
namespace trace {
namespace {

// joined_spans: `spans` sorted and their overlaps joined.
std::vector<Span> joined_spans(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (!out.empty() && s.first <= out.back().second)
      out.back().second = std::max(out.back().second, s.second);
    else
      out.push_back(s);
  }
  return out;
}

}  // namespace

double length_outside(std::vector<Span> spans, std::vector<Span> holes) {
  const std::vector<Span> in = joined_spans(std::move(spans)), out = joined_spans(std::move(holes));
  double total = 0;
  for (const Span& s : in) {
    double length = s.second - s.first;
    for (const Span& h : out) length -= std::max(0.0, std::min(s.second, h.second) - std::max(s.first, h.first));
    total += std::max(0.0, length);
  }
  return total;
}

void settle_grad_accum(const std::vector<std::string>& names, const std::vector<bool>& stepped, MeasuredStep& ms,
                       std::vector<std::string>& notes) {
  std::vector<std::size_t> at;
  std::vector<std::string> stepping;  // the names of the steps that hold an optimizer step
  for (std::size_t i = 0; i < stepped.size(); ++i) {
    if (!stepped[i]) continue;
    at.push_back(i);
    stepping.push_back(names[i]);
  }
  ms.optimizer_steps = static_cast<int>(at.size());
  if (at.empty() || at.size() == stepped.size()) return;
  // prof.step() after every micro-step: an optimizer step every g steps, the steps before the first
  // and after the last fewer than g (the window cuts groups).
  const std::size_t n = stepped.size();
  std::size_t g = 0;
  bool regular = at.size() >= 2;
  for (std::size_t i = 1; i < at.size() && regular; ++i) {
    const std::size_t gap = at[i] - at[i - 1];
    if (g == 0) g = gap;
    regular = gap == g;
  }
  regular = regular && at.front() < g && n - 1 - at.back() < g;
  const std::string what = fmt::format(
      "{} of the {} ProfilerStep#N hold an Optimizer.step (gradient accumulation, prof.step() after "
      "each micro-step): the optimizer's time is the mean over those {}, forward's and backward's over all",
      at.size(), n, at.size());
  if (regular && static_cast<std::int64_t>(g) <= scenario_key("grad_accum").max) {
    ms.grad_accum = static_cast<int>(g);
    notes.push_back(
        fmt::format("{}; an optimizer step every {} micro-steps, recorded as the model's grad_accum {} "
                    "(the default of its runs; --grad-accum still wins)",
                    what, g, g));
    return;
  }
  notes.push_back(fmt::format(
      "{}; how many micro-steps each optimizer step had is not known from {} ({}); give --grad-accum N to runs of "
      "the model, or profile two optimizer steps or more (schedule(active=...) at least 2 x N) to have it recorded",
      what, at.size() == 1 ? "one optimizer step" : "unevenly spaced optimizer steps", fmt::join(stepping, ", ")));
}

}  // namespace trace
}  // namespace gradsync
