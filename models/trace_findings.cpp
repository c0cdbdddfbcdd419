// trace_findings.cpp: what a torch.profiler trace says besides its phases' times (trace_phases.hpp,
// trace_import.hpp): the phases' time outside the DataLoader's spans, the optimizer it stepped, how
// many micro-steps each optimizer step had, and whether its gradients are those of the model given
// beside it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/scenario_keys.hpp"
#include "models/compute_cost.hpp"
#include "models/trace_import.hpp"
#include "models/trace_phases.hpp"

namespace gradsync {
namespace trace {
namespace {

// kAccumulateGrad: autograd's node that adds a leaf's gradient into its .grad, one per parameter
// that received a gradient, under the engine's record_function as every node (PyTorch >= 1.8).
constexpr std::string_view kAccumulateGrad = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad";
// torch.utils.checkpoint's reentrant backward runs a second backward over detached inputs, each a
// leaf that gets an AccumulateGrad of its own.
constexpr std::string_view kCheckpointBackward = "autograd::engine::evaluate_function: CheckpointFunctionBackward";

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

StepFacts step_facts(std::span<const Event> host, const Event& step) {
  StepFacts f;
  std::vector<Span> sgd;  // the spans of Optimizer.step#SGD.step
  for (const Event& e : host) {
    if (e.start < step.start || e.end > step.end) continue;
    if (e.name == kAccumulateGrad) ++f.gradients;
    if (e.name == kCheckpointBackward) f.checkpoint = true;
    if (starts_with(e.name, "Optimizer.step#")) {
      // Optimizer.step#<Class>.step: torch.optim's profile hook names the class.
      std::string cls = e.name.substr(std::string_view("Optimizer.step#").size());
      if (cls.ends_with(".step")) cls.resize(cls.size() - std::string_view(".step").size());
      if (cls == "SGD") sgd.emplace_back(e.start, e.end);
      if (std::find(f.optimizer_classes.begin(), f.optimizer_classes.end(), cls) == f.optimizer_classes.end())
        f.optimizer_classes.push_back(std::move(cls));
    }
  }
  // torch.optim.SGD with momentum scales its buffers (buf.mul_(momentum), or _foreach_mul_; the
  // first step clones the gradients into them); without it the step only adds into the
  // parameters (param.add_(grad, alpha=-lr), or _foreach_add_).
  for (const Event& e : host) {
    if (sgd.empty()) break;
    const bool inside =
        std::any_of(sgd.begin(), sgd.end(), [&](const Span& s) { return e.start >= s.first && e.end <= s.second; });
    if (!inside) continue;
    if (e.name == "aten::mul_" || e.name == "aten::_foreach_mul_" || e.name == "aten::clone") f.momentum_ops = true;
    if (e.name == "aten::add_" || e.name == "aten::_foreach_add_") f.update_ops = true;
  }
  return f;
}

namespace {

// optimizer_of_class: gradsync's --optimizer for a torch.optim class, or "" for one it does not model.
std::string optimizer_of_class(std::string_view cls) {
  if (cls == "Adam") return "adam";
  if (cls == "AdamW") return "adamw";
  if (cls == "SGD") return "sgd";  // momentum told apart by the caller
  return "";
}

}  // namespace

void settle_optimizer(const std::vector<StepFacts>& steps, MeasuredStep& ms, std::vector<std::string>& notes) {
  std::vector<std::string> classes;
  bool momentum = false, update = false;
  for (const StepFacts& f : steps) {
    for (const std::string& c : f.optimizer_classes)
      if (std::find(classes.begin(), classes.end(), c) == classes.end()) classes.push_back(c);
    momentum = momentum || f.momentum_ops;
    update = update || f.update_ops;
  }
  if (classes.empty()) return;  // no Optimizer.step#: said by import-trace with the optimizer's time
  const std::string default_note = fmt::format(
      "runs of the model keep the scenario's default optimizer ({}) "
      "unless --optimizer names one",
      scenario_key("optimizer").default_text);
  if (classes.size() > 1) {
    notes.push_back(
        fmt::format("the trace steps {} optimizers (Optimizer.step#{}.step): no one optimizer is recorded; "
                    "{}",
                    classes.size(), fmt::join(classes, ".step, Optimizer.step#"), default_note));
    return;
  }
  const std::string& cls = classes.front();
  ms.optimizer = optimizer_of_class(cls);
  if (ms.optimizer.empty()) {
    notes.push_back(
        fmt::format("Optimizer.step#{}.step: gradsync models torch.optim's SGD, Adam and AdamW, not {}; "
                    "the optimizer is not recorded and {} (its memory is that optimizer's)",
                    cls, cls, default_note));
    return;
  }
  if (cls == "SGD") {
    if (momentum) {
      ms.optimizer = "sgd-momentum";
    } else if (!update) {
      // A fused step (one aten::_fused_sgd_), or a trace without the step's operators.
      ms.optimizer = "sgd-momentum";
      notes.push_back(
          "Optimizer.step#SGD.step: the trace does not show whether SGD ran with momentum (no aten::add_, "
          "aten::mul_ or their _foreach_ forms inside the step: fused=True, or CPU operators not recorded); "
          "recorded as sgd-momentum, whose buffer holds 4 bytes more a parameter than plain SGD: give --optimizer sgd "
          "to runs of the model if it ran with momentum=0");
    }
  }
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

std::vector<std::string> check_trace_gradients(const TraceFindings& f, const Model& model, const std::string& origin,
                                               const std::string& model_arg) {
  // A trace without AccumulateGrad events (written by hand, or by a tool that keeps only the
  // phases) says nothing of the parameters: nothing to check.
  if (std::all_of(f.gradients.begin(), f.gradients.end(), [](int g) { return g == 0; })) return {};
  int trainable = 0, receiving = 0;
  const std::vector<bool> holds = holds_gradient(model);
  for (std::size_t i = 0; i < model.parameters.size(); ++i) {
    if (model.parameters[i].requires_grad) ++trainable;
    if (holds[i]) ++receiving;
  }
  const std::string expected =
      receiving == trainable
          ? fmt::format("{} trainable parameter tensors", trainable)
          : fmt::format("{} trainable parameter tensors that receive a gradient ({} trainable, {} listed unused)",
                        receiving, trainable, trainable - receiving);
  const auto [lo, hi] = std::minmax_element(f.gradients.begin(), f.gradients.end());
  for (std::size_t i = 0; i < f.gradients.size(); ++i) {
    const int got = f.gradients[i];
    // More gradients than the model has parameters: another model, unless a reentrant checkpoint's
    // detached inputs took some (they are leaves too).
    const bool more = got > receiving && !f.checkpointed[i];
    // Fewer in every step alike: another model (or parameters frozen, or unused, that the model
    // file does not say so). Steps that differ among themselves run a forward whose parameters vary
    // (conditional computation): noted below, not refused.
    const bool fewer = got < receiving && *lo == *hi;
    if (!more && !fewer) continue;
    throw DataError(fmt::format(
        "{}: {} accumulates {} gradient{} (autograd::engine::evaluate_function: torch::autograd::AccumulateGrad "
        "events, one per parameter that received a gradient), but model {} has {}; expected the trace of the model "
        "given with --model{}",
        origin, f.steps[i], got, got == 1 ? "" : "s", model_arg, expected,
        more ? " (a leaf input that requires grad also accumulates one)"
             : ", with the same parameters frozen (requires_grad) and unused (unused_parameters)"));
  }
  if (*lo == *hi && *lo == receiving) return {};
  std::vector<std::string> notes;
  if (*lo != *hi)
    notes.push_back(
        fmt::format("the steps accumulate from {} to {} gradients (AccumulateGrad events), model {} has {}: "
                    "a forward whose parameters vary from step to step; the times are the steps' means. "
                    "DistributedDataParallel trains such a model only with find_unused_parameters=True (without "
                    "it PyTorch raises \"Expected to have finished reduction in the prior iteration\" at the "
                    "second step): give --find-unused-parameters to compare and simulate it",
                    *lo, *hi, model_arg, expected));
  else
    notes.push_back(
        fmt::format("the steps accumulate {} gradients (AccumulateGrad events), model {} has {}: a "
                    "reentrant torch.utils.checkpoint's detached inputs accumulate theirs too",
                    *lo, model_arg, expected));
  return notes;
}

}  // namespace gradsync
