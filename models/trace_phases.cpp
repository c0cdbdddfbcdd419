// trace_phases.cpp: a profiler step's forward, backward and optimizer spans (trace_phases.hpp).
#include "models/trace_phases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/error.hpp"

namespace gradsync::trace {

Phases phases_of(std::span<const Event> host, const Event& step, const std::string& origin) {
  Phases p;
  double bwd_lo = step.end, bwd_hi = step.start;
  for (const Event& e : host) {
    if (e.start < step.start || e.end > step.end) continue;
    if (starts_with(e.name, "autograd::engine::evaluate_function:")) {
      bwd_lo = std::min(bwd_lo, e.start);
      bwd_hi = std::max(bwd_hi, e.end);
    } else if (starts_with(e.name, "Optimizer.step#")) {
      p.optimizer.emplace_back(e.start, e.end);
    }
  }
  if (bwd_hi < bwd_lo) {
    // A backward that starts inside the step but ends after it: the step event was cut short, not
    // a step without backward.
    for (const Event& e : host) {
      if (e.start >= step.start && e.start < step.end && e.end > step.end &&
          starts_with(e.name, "autograd::engine::evaluate_function:")) {
        throw DataError(fmt::format(
            "{}: {}'s backward runs past its end ({} starts at {} us and ends at {} us, the step at {} us); "
            "expected each step to hold its whole backward: call prof.step() after optimizer.step()",
            origin, step.name, e.name, e.start, e.end, step.end));
      }
    }
    throw DataError(fmt::format(
        "{}: {} has no backward (no autograd::engine::evaluate_function event inside it); expected a trace of "
        "training steps: forward, loss.backward(), optimizer.step(), then prof.step()",
        origin, step.name));
  }
  // optimizer.step(closure): the closure runs forward and backward inside the optimizer's span
  // (LBFGS; PyTorch Lightning's automatic optimization wraps training_step and backward so), and
  // there is no optimizer phase after the backward to tell apart.
  for (const Span& o : p.optimizer) {
    if (o.first <= bwd_lo && bwd_hi <= o.second) {
      throw DataError(fmt::format(
          "{}: {}'s backward ({} to {} us) runs inside its Optimizer.step ({} to {} us): optimizer.step(closure), "
          "whose closure runs forward and backward itself (LBFGS; PyTorch Lightning's automatic optimization), "
          "leaves no forward, backward and optimizer one after another to measure; expected loss.backward() "
          "and then optimizer.step() without a closure in each profiler step (Lightning: manual optimization, "
          "self.manual_backward(loss) then opt.step()). An LBFGS step, which evaluates its closure several "
          "times, is not one that DDP overlaps as gradsync simulates",
          origin, step.name, bwd_lo, bwd_hi, o.first, o.second));
    }
  }
  // One backward per step. loss.backward() seeds the graph with aten::ones_like (the scalar
  // loss's gradient, torch.autograd's _make_grads) before autograd's first function runs; a second
  // seed followed by autograd's functions is a second backward: gradient accumulation, whose later
  // forwards would be counted as backward. Seeds inside an autograd function (a backward formula's
  // own ones_like) are not loss.backward()'s.
  {
    std::vector<Span> runs;
    for (const Event& e : host)
      if (e.start >= step.start && e.end <= step.end && starts_with(e.name, "autograd::engine::evaluate_function:"))
        runs.emplace_back(e.start, e.end);
    std::sort(runs.begin(), runs.end());
    std::vector<Span> merged;  // the union of the functions' spans, to tell nested seeds apart
    for (const Span& r : runs) {
      if (!merged.empty() && r.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, r.second);
      else
        merged.push_back(r);
    }
    const auto nested = [&](const Event& e) {
      auto it = std::upper_bound(merged.begin(), merged.end(), Span{e.start, std::numeric_limits<double>::infinity()});
      return it != merged.begin() && std::prev(it)->first <= e.start && e.end <= std::prev(it)->second;
    };
    std::vector<double> seeds;
    for (const Event& e : host)
      if (e.start >= step.start && e.end <= step.end && e.name == "aten::ones_like" && !nested(e))
        seeds.push_back(e.end);
    std::sort(seeds.begin(), seeds.end());
    // Each seed counts when autograd's functions run after it and before the next seed.
    int passes = 0;
    double second = 0;
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      const double until = i + 1 < seeds.size() ? seeds[i + 1] : step.end;
      const auto first = std::lower_bound(runs.begin(), runs.end(), Span{seeds[i], -1.0});
      if (first != runs.end() && first->first < until && ++passes == 2) second = seeds[i];
    }
    if (passes > 1) {
      throw DataError(
          fmt::format("{}: {} holds {} backward passes (loss.backward() seeds autograd again at {} us: gradient "
                      "accumulation?); expected one forward and loss.backward() per profiler step: with gradient "
                      "accumulation, call prof.step() after every micro-step (README: Your measured step as input), "
                      "and gradsync finds the micro-steps per optimizer step",
                      origin, step.name, passes, second));
    }
  }
  // optimizer.step() follows loss.backward(): an optimizer span inside the backward would be
  // counted twice (the step's time is the phases' sum).
  for (const Span& o : p.optimizer) {
    if (o.first < bwd_lo) {
      // Before the backward: prof.step() is called between loss.backward() and optimizer.step(),
      // so each profiler step holds the previous iteration's optimizer.step() first.
      throw DataError(fmt::format(
          "{}: {}'s Optimizer.step starts at {} us, before its backward ({} to {} us): prof.step() runs between "
          "loss.backward() and optimizer.step(); expected optimizer.step() after loss.backward() in each profiler "
          "step: call prof.step() after optimizer.step()",
          origin, step.name, o.first, bwd_lo, bwd_hi));
    }
    if (o.first < bwd_hi) {
      throw DataError(
          fmt::format("{}: {}'s Optimizer.step starts at {} us, inside its backward ({} to {} us); expected "
                      "optimizer.step() after loss.backward()",
                      origin, step.name, o.first, bwd_lo, bwd_hi));
    }
  }
  double fwd_lo = step.start;
  for (const Event& e : host)
    if (e.start >= step.start && e.end <= bwd_lo && starts_with(e.name, "Optimizer.zero_grad#"))
      fwd_lo = std::max(fwd_lo, e.end);
  p.forward = {fwd_lo, bwd_lo};
  p.backward = {bwd_lo, bwd_hi};
  for (const Event& e : host)
    if (e.start >= step.start && e.end <= step.end && starts_with(e.name, kDataLoaderPrefix))
      p.data.emplace_back(e.start, e.end);
  return p;
}

}  // namespace gradsync::trace
