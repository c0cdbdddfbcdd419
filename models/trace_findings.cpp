// trace_findings.cpp: what a torch.profiler trace says besides its phases' times (trace_phases.hpp,
// trace_import.hpp): the phases' time outside the DataLoader's spans.
#include <algorithm>
#include <string>
#include <vector>

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

}  // namespace trace
}  // namespace gradsync
