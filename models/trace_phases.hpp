// trace_phases.hpp: one profiler step of a torch.profiler trace split into the host spans of its
// forward, backward and optimizer (trace_import.cpp reads the trace; trace_phases.cpp holds the
// rules and the errors for steps that cannot be split so).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/model.hpp"

namespace gradsync::trace {

// Event: one complete ("ph": "X") event, times in microseconds as the trace writes them.
struct Event {
  std::string name;
  std::string cat;
  double start = 0;
  double end = 0;
  std::optional<std::int64_t> correlation;  // args.correlation: a kernel and its launch share it
  std::string device;                       // GPU events: the device (args.device, else pid)
};

inline bool starts_with(std::string_view s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

using Span = std::pair<double, double>;

// kDataLoaderPrefix: torch.utils.data's label on each batch a DataLoader hands out
// ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", or the multiprocessing iterator's).
inline constexpr std::string_view kDataLoaderPrefix = "enumerate(DataLoader)";

// Phases: the host spans of one step's forward, backward and optimizer, and its DataLoader's.
struct Phases {
  Span forward;
  Span backward;
  std::vector<Span> optimizer;
  // The DataLoader's spans in the step: "other" (data), wherever they fall; the phases are their
  // spans less these (a kernel launched inside one is in no phase).
  std::vector<Span> data;
};

// phases_of: `host` holds the step's host events (those starting within it, by start time).
Phases phases_of(std::span<const Event> host, const Event& step, const std::string& origin);

// StepFacts: what a step says besides its phases' times.
struct StepFacts {
  int gradients = 0;                           // AccumulateGrad nodes autograd ran: one per parameter given a gradient
  bool checkpoint = false;                     // a reentrant checkpoint's backward ran (CheckpointFunctionBackward)
  std::vector<std::string> optimizer_classes;  // <Class> of each Optimizer.step#<Class>.step
  bool momentum_ops = false;                   // inside an Optimizer.step#SGD.step: a momentum buffer's ops
  bool update_ops = false;                     // inside an Optimizer.step#SGD.step: the parameters' in-place update
};

// step_facts: the facts of the step whose host events are `host` (as phases_of's).
StepFacts step_facts(std::span<const Event> host, const Event& step);

// settle_optimizer: ms.optimizer from the steps' Optimizer.step#<Class>.step (SGD's momentum from
// the operators inside it); a note in `notes` where it is left unset or guessed.
void settle_optimizer(const std::vector<StepFacts>& steps, MeasuredStep& ms, std::vector<std::string>& notes);

// settle_grad_accum: ms.optimizer_steps and, when only some steps (`stepped`, in time order; their
// `names`) hold an Optimizer.step, evenly spaced, ms.grad_accum: the micro-steps per optimizer
// step; a note in `notes` saying what was found.
void settle_grad_accum(const std::vector<std::string>& names, const std::vector<bool>& stepped, MeasuredStep& ms,
                       std::vector<std::string>& notes);

// length_outside: the time the union of `spans` covers outside the union of `holes`.
double length_outside(std::vector<Span> spans, std::vector<Span> holes);

}  // namespace gradsync::trace
