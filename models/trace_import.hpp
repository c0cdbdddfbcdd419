// trace_import.hpp: a training step the user measured, from a torch.profiler trace, as a model file
// whose times are the measurement (`gradsync models import-trace`).
//
//   with torch.profiler.profile(schedule=schedule(wait=1, warmup=1, active=3)) as p:
//       for x, y in loader: step(x, y); p.step()
//   p.export_chrome_trace("trace.json")
//
//   const MeasuredStep ms = read_profiler_trace(read_input_file("trace.json", "trace"), "trace.json");
//   ms.forward_s, ms.backward_s, ms.optimizer_s, ms.other_s   // means over the ProfilerStep#N
//
// What a step is made of, from the events PyTorch records in every release since 1.8:
// - the step: each `ProfilerStep#N` (torch.profiler.profile.step());
// - backward: from the first `autograd::engine::evaluate_function: ...` in the step to the end of the
//   last (the autograd engine's record_function around every node);
// - the optimizer: `Optimizer.step#<Class>.step` (torch.optim's record_function around step());
// - forward: from the end of `Optimizer.zero_grad#...` (or the step's start) to backward's start;
// - other: the rest of the step, the DataLoader's spans (`enumerate(DataLoader)#...`) wherever
//   they fall.
// Forward and backward are means over every step, the optimizer over the steps that hold one
// (gradient accumulation with prof.step() after each micro-step).
// On a CPU trace these are host spans. On a GPU trace (Kineto's "kernel" events) each phase is the
// union of the kernels launched inside its span (the launch found by the kernel's correlation id),
// the step is the mean ProfilerStep#N, and other is the step's remaining time: the GPU idle.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/compute_cost.hpp"
#include "models/model.hpp"

namespace gradsync {

// TraceFindings: what a trace says besides the times, for import-trace's check against the model
// and its notes.
struct TraceFindings {
  std::vector<std::string> steps;  // the ProfilerStep#N, in time order
  std::vector<int> gradients;      // per step: AccumulateGrad nodes run, one per parameter given a gradient
  std::vector<bool> checkpointed;  // per step: a reentrant checkpoint's backward ran (CheckpointFunctionBackward)
  // What import-trace says on stderr: an optimizer class gradsync does not model, SGD's momentum
  // not shown, gradient accumulation's micro-steps per optimizer step.
  std::vector<std::string> notes;
};

// read_profiler_trace: the mean step of a Chrome trace that torch.profiler exported (JSON object
// with traceEvents, or the bare event list of the legacy exporter). DataError naming `origin` and
// what is wrong: no events, not JSON, no ProfilerStep#N, a step without backward, CUDA launches
// without kernels, kernels on more than one GPU. batch and seq_len are left for the caller;
// `findings`, when given, receives the rest.
MeasuredStep read_profiler_trace(std::string_view text, const std::string& origin, TraceFindings* findings = nullptr);

// check_trace_gradients: DataError when the trace's steps accumulate gradients into more
// parameters than `model` (named `model_arg`) trains, or into fewer in every step alike: the trace
// is of another model. Notes for counts that differ legitimately (a forward whose parameters vary
// by step; a reentrant checkpoint's detached inputs). A trace without AccumulateGrad events is not
// checked.
std::vector<std::string> check_trace_gradients(const TraceFindings& f, const Model& model, const std::string& origin,
                                               const std::string& model_arg);

// TraceImport: what `models import-trace` needs besides the trace.
struct TraceImport {
  std::string model;         // zoo name or model file: the layers and parameters
  std::int64_t batch = 0;    // samples per step in the trace
  std::int64_t seq_len = 0;  // T in the trace (sequence models; 0: the model's default)
  // The split of the measured forward and backward over the layers: each layer's share of the
  // roofline's time for this GPU and precision (the trace does not say which layer ran what).
  ComputeContext split;
};

// imported_model_text: the model file's text with a `measured:` section holding `ms` (batch and
// seq_len from `opts`) and each layer's share. ConfigError when the model already has one.
std::string imported_model_text(MeasuredStep ms, const TraceImport& opts);

}  // namespace gradsync
