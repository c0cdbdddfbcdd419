// trace_import.cpp: torch.profiler's Chrome trace to a measured step (the model file carrying it:
// trace_model_text.cpp).
#include "models/trace_import.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "models/trace_events.hpp"
#include "models/trace_phases.hpp"

namespace gradsync {
namespace {

using trace::Event;
using trace::Phases;
using trace::Span;
using trace::starts_with;

using json = nlohmann::json;

bool is_gpu_event(const Event& e) { return e.cat == "kernel" || e.cat == "gpu_memcpy" || e.cat == "gpu_memset"; }

std::string id_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  return v.dump();
}

// text_field: e[key] when it is a string, else "" (a field of another type is not ours to read).
std::string_view text_field(const json& e, const char* key) {
  const auto it = e.find(key);
  return it != e.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>()) : std::string_view();
}

// kMaxEventUs: the longest event a trace of training steps holds, in microseconds (a day): a
// longer one (1e300) is a broken trace, not a step to import.
constexpr double kMaxEventUs = 86400e6;

// event_of: traceEvents[at] as the importer keeps it, or nothing for an event it does not read.
std::optional<Event> event_of(const json& e, std::size_t at, const std::string& origin) {
  if (!e.is_object()) return std::nullopt;
  const auto name = e.find("name");
  // Every event of the Chrome trace format is named by a string; a step dropped for its name's
  // type would leave the import a step short without a word.
  if (name != e.end() && !name->is_string()) {
    throw DataError(
        fmt::format("{}: traceEvents[{}]: \"name\" is {}; expected a string, as every event of the "
                    "Chrome trace format has",
                    origin, at, name->dump()));
  }
  if (text_field(e, "ph") != "X") {
    // torch.profiler writes its steps as complete events ("ph": "X"); a step as a begin/end pair
    // (another exporter) is said, not dropped.
    if (starts_with(text_field(e, "name"), "ProfilerStep#"))
      throw DataError(
          fmt::format("{}: traceEvents[{}] \"{}\": phase \"{}\"; expected \"X\" (a complete event "
                      "with ts and dur), as torch.profiler's export_chrome_trace writes its steps",
                      origin, at, text_field(e, "name"), text_field(e, "ph")));
    return std::nullopt;
  }
  if (name == e.end()) return std::nullopt;
  const auto ts = e.find("ts");
  const auto dur = e.find("dur");
  const std::string& text = name->get_ref<const std::string&>();
  // The events whose times gradsync reads: the steps, the phases' host spans (backward's
  // autograd functions, the optimizer's step and zero_grad), the launches and the GPU's (one
  // without a time would be dropped, and a step or phase would come out shorter than it ran).
  const std::string_view cat = text_field(e, "cat");
  const bool gpu = cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
  const bool read = gpu || starts_with(text, "ProfilerStep#") ||
                    starts_with(text, "autograd::engine::evaluate_function:") || starts_with(text, "Optimizer.step#") ||
                    starts_with(text, "Optimizer.zero_grad#") || starts_with(text, trace::kDataLoaderPrefix) ||
                    (cat == "cuda_runtime" && starts_with(text, "cudaLaunchKernel")) ||
                    (cat == "cuda_driver" && starts_with(text, "cuLaunchKernel"));
  // Nor are other events kept: only those read below (and the CUDA calls whose correlation
  // ties a copy or a kernel to its launch, loss.backward()'s seed, the operators that tell SGD's
  // momentum), not every operator's.
  const bool kept = read || cat == "cuda_runtime" || cat == "cuda_driver" || text == "aten::ones_like" ||
                    text == "aten::mul_" || text == "aten::_foreach_mul_" || text == "aten::clone" ||
                    text == "aten::add_" || text == "aten::_foreach_add_";
  if (ts == e.end() || !ts->is_number() || dur == e.end() || !dur->is_number()) {
    if (!read) return std::nullopt;  // not an event gradsync reads the time of
    throw DataError(
        fmt::format("{}: traceEvents[{}] \"{}\": \"ts\" and \"dur\" must be numbers (microseconds); "
                    "got ts {} and dur {}",
                    origin, at, name->get<std::string>(), ts == e.end() ? "missing" : ts->dump(),
                    dur == e.end() ? "missing" : dur->dump()));
  }
  const double start = ts->get<double>(), length = dur->get<double>();
  if (!std::isfinite(start) || !std::isfinite(length) || length < 0 || length > kMaxEventUs || std::abs(start) > 1e18) {
    throw DataError(
        fmt::format("{}: traceEvents[{}] \"{}\": ts {} dur {}; expected a duration of 0 to {} us (a day) "
                    "at a time (ts) within 1e18 us of the trace's origin",
                    origin, at, name->get<std::string>(), ts->dump(), dur->dump(), kMaxEventUs));
  }
  if (!kept) return std::nullopt;
  Event ev;
  // A kernel's name (a template's, often hundreds of characters) is not read.
  if (!gpu) ev.name = text;
  ev.cat = cat;
  ev.start = start;
  ev.end = start + length;
  // A kernel and the launch that queued it share args.correlation; a malformed one would leave the
  // kernel out of its phase.
  const bool launch = cat == "cuda_runtime" || cat == "cuda_driver";
  if (const auto args = e.find("args");
      (gpu || launch) && args != e.end() &&
      (!args->is_object() || (args->contains("correlation") && !(*args)["correlation"].is_number_integer()))) {
    throw DataError(fmt::format(
        "{}: traceEvents[{}] \"{}\" ({}): args {}; expected an object whose \"correlation\" is an integer ({})", origin,
        at, text, cat, args->dump(), gpu ? "the launch that queued it" : "the kernel or copy it queued"));
  }
  if (const auto args = e.find("args"); args != e.end() && args->is_object()) {
    if (const auto c = args->find("correlation"); c != args->end() && c->is_number_integer())
      ev.correlation = c->get<std::int64_t>();
    if (const auto d = args->find("device"); d != args->end()) ev.device = id_text(*d);
  }
  if (ev.device.empty() && e.contains("pid")) ev.device = id_text(e["pid"]);
  return ev;
}

double union_length(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0, lo = 0, hi = 0;
  bool open = false;
  for (const auto& [a, b] : spans) {
    if (open && a <= hi) {
      hi = std::max(hi, b);
      continue;
    }
    if (open) total += hi - lo;
    lo = a;
    hi = b;
    open = true;
  }
  if (open) total += hi - lo;
  return total;
}

}  // namespace

MeasuredStep read_profiler_trace(std::string_view text, const std::string& origin, TraceFindings* findings) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw DataError(fmt::format(
        "{}: the file is empty: expected the Chrome trace of torch.profiler's export_chrome_trace", origin));
  }
  // Each event as it is read: the GPU's, the host's and the steps (trace_events.hpp keeps no
  // document, only these).
  std::vector<Event> host, gpu, steps;
  std::set<std::string> gpus;
  bool launches = false;
  const auto sort_event = [&](Event&& e) {
    if (is_gpu_event(e)) {
      gpus.insert(e.device);
      gpu.push_back(std::move(e));
    } else if (e.cat == "gpu_user_annotation") {
      return;
    } else {
      if ((e.cat == "cuda_runtime" && starts_with(e.name, "cudaLaunchKernel")) ||
          (e.cat == "cuda_driver" && starts_with(e.name, "cuLaunchKernel")))
        launches = true;
      if (starts_with(e.name, "ProfilerStep#")) {
        // prof.step() numbers its steps: ProfilerStep#<N>.
        const std::string n = e.name.substr(std::string_view("ProfilerStep#").size());
        if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) {
          throw DataError(
              fmt::format("{}: event \"{}\": expected ProfilerStep#N, N the step's number, as "
                          "prof.step() names them",
                          origin, e.name));
        }
        // A step of no duration holds nothing and would halve every mean.
        if (!(e.end > e.start))
          throw DataError(
              fmt::format("{}: event \"{}\" lasts 0 us; expected a step that holds its forward, "
                          "backward and optimizer",
                          origin, e.name));
        steps.push_back(e);
      }
      host.push_back(std::move(e));
    }
  };
  // Read event by event: a trace of hundreds of megabytes is never held whole (trace_events.hpp).
  // A step of a process group's rank (DistributedDataParallel, or collectives called by hand:
  // c10d's ops, ProcessGroupNCCL's and Gloo's record_function spans, NCCL's kernels) has its
  // communication in its times, which the simulation adds again at scale.
  std::optional<std::string> collective;
  TraceShape shape;
  try {
    shape = read_trace_events(text, [&](const json& e, std::size_t at) {
      if (!collective) {
        const std::string_view n = text_field(e, "name");
        if (starts_with(n, "c10d::") || starts_with(n, "nccl:") || starts_with(n, "gloo:") ||
            starts_with(n, "DistributedDataParallel.") || starts_with(n, "ncclKernel") ||
            starts_with(n, "ncclDevKernel"))
          collective = fmt::format("traceEvents[{}] \"{}\"", at, n);
      }
      if (std::optional<Event> ev = event_of(e, at, origin)) sort_event(std::move(*ev));
    });
  } catch (const TraceDuplicateKey& e) {
    const std::string key = printable_message(e.key);
    throw DataError(e.event ? fmt::format("{}: traceEvents[{}]: key \"{}\" given twice; expected each key once in "
                                          "an event (JSON leaves which one counts open)",
                                          origin, *e.event, key)
                            : fmt::format("{}: key \"{}\" given twice in {}; expected each key once (JSON leaves "
                                          "which one counts open)",
                                          origin, key, e.where));
  } catch (const json::parse_error& e) {
    // nlohmann's byte is 1-based, one past the end at end of input: the line and column of it,
    // and what the parser read there ("syntax error while parsing value - invalid literal; last
    // read: 'NaN'").
    const std::size_t at = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const std::string_view before = text.substr(0, at);
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t newline = before.rfind('\n');
    const std::size_t column = at - (newline == std::string_view::npos ? 0 : newline + 1) + 1;
    std::string_view what = e.what();
    if (const auto tag = what.find("] "); what.rfind("[json.exception.", 0) == 0 && tag != std::string_view::npos)
      what.remove_prefix(tag + 2);
    if (const auto parse = what.find(": "); what.rfind("parse error at", 0) == 0 && parse != std::string_view::npos)
      what.remove_prefix(parse + 2);
    throw DataError(
        fmt::format("{}:{}:{}: not JSON{}: {}; expected the Chrome trace of torch.profiler's "
                    "export_chrome_trace",
                    origin, line, column, e.byte >= text.size() ? " (the file ends early: truncated?)" : "", what));
  } catch (const json::exception& e) {  // a number out of range ("number overflow parsing '1e400'")
    std::string_view what = e.what();
    if (const auto tag = what.find("] "); what.rfind("[json.exception.", 0) == 0 && tag != std::string_view::npos)
      what.remove_prefix(tag + 2);
    throw DataError(fmt::format(
        "{}: {}: a number beyond a double's range (about 1.8e308); expected the Chrome trace of torch.profiler's "
        "export_chrome_trace",
        origin, what));
  }
  if (shape.root_object) {
    if (!shape.event_list)
      throw DataError(fmt::format("{}: no \"traceEvents\" list: expected the Chrome trace of torch.profiler", origin));
  } else if (!shape.root_array) {
    throw DataError(fmt::format("{}: expected a JSON object with \"traceEvents\" or a list of events", origin));
  }
  // A profiler that recorded nothing (its schedule's active steps never ran, or the trace was
  // exported before them) writes an empty list: said as such, not as a missing step.
  if (shape.events == 0) {
    throw DataError(fmt::format(
        "{}: the trace holds 0 events ({}); expected torch.profiler's events of the profiled steps: export the trace "
        "after the schedule's active steps ran (wait + warmup + active calls of prof.step())",
        origin, shape.root_object ? "\"traceEvents\": []" : "an empty list"));
  }

  if (steps.empty()) {
    throw DataError(
        fmt::format("{}: no ProfilerStep#N event: profile with torch.profiler.profile(schedule=...) and "
                    "call prof.step() after every training step",
                    origin));
  }
  if (collective) {
    throw DataError(fmt::format(
        "{}: {}: a step of one rank of a process group (DistributedDataParallel, or collectives called by hand), "
        "whose times hold its communication; gradsync simulates that communication at scale and would count it "
        "twice: expected one process's step without DDP (the same model and batch on one GPU, not wrapped)",
        origin, *collective));
  }
  {
    std::set<std::string> seen;
    for (const Event& s : steps)
      if (!seen.insert(s.name).second)
        throw DataError(
            fmt::format("{}: {} appears twice; expected each step once (prof.step() numbers them): two "
                        "traces joined, or one written twice",
                        origin, s.name));
  }
  {
    // Steps follow one another (prof.step() closes one and opens the next): a step inside another
    // would count the same kernels twice.
    std::vector<const Event*> order;
    for (const Event& s : steps) order.push_back(&s);
    std::sort(order.begin(), order.end(), [](const Event* a, const Event* b) { return a->start < b->start; });
    for (std::size_t i = 1; i < order.size(); ++i) {
      if (order[i]->start < order[i - 1]->end) {
        throw DataError(fmt::format(
            "{}: {} starts at {} us, inside {} ({} to {} us); expected steps one after "
            "another, as prof.step() makes them",
            origin, order[i]->name, order[i]->start, order[i - 1]->name, order[i - 1]->start, order[i - 1]->end));
      }
    }
  }
  if (gpus.size() > 1) {
    throw DataError(
        fmt::format("{}: kernels on {} devices ({}): expected one GPU's step; profile a single-GPU run "
                    "or one rank",
                    origin, gpus.size(), fmt::join(gpus, ", ")));
  }
  if (launches && gpu.empty()) {
    throw DataError(
        fmt::format("{}: CUDA launches but no kernels: profile with activities=[ProfilerActivity.CPU, "
                    "ProfilerActivity.CUDA]",
                    origin));
  }

  // The launch time of each kernel, by correlation id: CUDA runtime calls (cudaLaunchKernel,
  // cudaMemsetAsync, ...) and driver calls, which Kineto files as "cuda_driver" (cuBLASLt's kernels
  // on Hopper go through cuLaunchKernelEx: 390 of a GPT-2 step's 1,604 kernels on an H200).
  std::unordered_map<std::int64_t, double> launch_at;
  for (const Event& e : host)
    if ((e.cat == "cuda_runtime" || e.cat == "cuda_driver") && e.correlation) launch_at[*e.correlation] = e.start;

  MeasuredStep ms;
  ms.trace = origin;
  ms.device = "cpu";
  if (shape.root_object) {
    if (const std::optional<json>& props = shape.device_properties;
        props && props->is_array() && !props->empty() && (*props)[0].is_object())
      ms.device = text_field((*props)[0], "name").empty() ? "gpu" : std::string(text_field((*props)[0], "name"));
    else if (!gpu.empty())
      ms.device = "gpu";
  }
  std::sort(steps.begin(), steps.end(), [](const Event& a, const Event& b) { return a.start < b.start; });
  // Each step reads only the events that start inside it: the host events by start time, and the
  // kernels by the step their launch falls in (steps do not overlap), so a trace of many steps is
  // read in one pass rather than once per step.
  std::stable_sort(host.begin(), host.end(), [](const Event& a, const Event& b) { return a.start < b.start; });
  std::vector<std::vector<const Event*>> kernels_of(steps.size());
  for (const Event& k : gpu) {
    if (!k.correlation) continue;
    const auto launch = launch_at.find(*k.correlation);
    if (launch == launch_at.end()) continue;
    const double at = launch->second;
    const auto after =
        std::upper_bound(steps.begin(), steps.end(), at, [](double t, const Event& step) { return t < step.start; });
    if (after == steps.begin() || !(at < std::prev(after)->end)) continue;
    kernels_of[static_cast<std::size_t>(std::prev(after) - steps.begin())].push_back(&k);
  }
  // A loop that ends mid-cycle of the profiler's schedule (schedule(repeat=0), the default, cycles
  // on) leaves a last ProfilerStep that the profiler closes as it exits: what ran after the last
  // prof.step(), the DataLoader's final __next__ (its StopIteration) or nothing. With no backward it
  // is not a training step: left out, and said.
  std::vector<std::string> notes;
  if (steps.size() > 1) {
    const Event& tail = steps.back();
    const bool backward = std::any_of(host.begin(), host.end(), [&](const Event& e) {
      return e.start >= tail.start && e.end <= tail.end && starts_with(e.name, "autograd::engine::evaluate_function:");
    });
    if (!backward) {
      notes.push_back(fmt::format(
          "{} ({:.0f} us), the trace's last, holds no backward: what ran after the last prof.step() (the DataLoader's "
          "final __next__ when the loop ends inside the schedule's cycle), left out; "
          "torch.profiler.schedule(..., repeat=1) records the active steps alone",
          tail.name, tail.end - tail.start));
      steps.pop_back();
    }
  }
  double forward_us = 0, backward_us = 0, optimizer_us = 0, step_us = 0;
  std::vector<trace::StepFacts> facts;
  std::vector<bool> stepped;  // per step: it holds an Optimizer.step
  for (std::size_t si = 0; si < steps.size(); ++si) {
    const Event& step = steps[si];
    const auto first =
        std::lower_bound(host.begin(), host.end(), step.start, [](const Event& e, double t) { return e.start < t; });
    const auto last =
        std::upper_bound(first, host.end(), step.end, [](double t, const Event& e) { return t < e.start; });
    const std::span<const Event> in_step(&*first, static_cast<std::size_t>(last - first));
    const Phases p = phases_of(in_step, step, origin);
    facts.push_back(trace::step_facts(in_step, step));
    stepped.push_back(!p.optimizer.empty());
    double fwd = 0, bwd = 0, opt = 0;
    if (gpu.empty()) {
      // The DataLoader's spans are data ("other"), wherever they fall.
      fwd = trace::length_outside({p.forward}, p.data);
      bwd = trace::length_outside({p.backward}, p.data);
      opt = trace::length_outside(p.optimizer, p.data);
    } else {
      std::vector<Span> f, b, o;
      for (const Event* kp : kernels_of[si]) {
        const Event& k = *kp;
        const double at = launch_at.at(*k.correlation);
        auto inside = [at](const Span& s) { return at >= s.first && at < s.second; };
        if (std::any_of(p.data.begin(), p.data.end(), inside)) continue;  // the DataLoader's: other
        if (inside(p.forward)) {
          f.emplace_back(k.start, k.end);
        } else if (inside(p.backward)) {
          b.emplace_back(k.start, k.end);
        } else if (std::any_of(p.optimizer.begin(), p.optimizer.end(), inside)) {
          o.emplace_back(k.start, k.end);
        }
      }
      if (f.empty() && b.empty() && o.empty()) {
        throw DataError(
            fmt::format("{}: {} launched no kernel that the trace records (no kernel's correlation id "
                        "matches a launch inside the step)",
                        origin, step.name));
      }
      // A training step's forward and backward launch kernels (every gradient is one); none on the
      // GPU means the profiled loop is not one (inference, or a pass on the CPU), or that its
      // kernels' correlation ids match no launch in the pass.
      for (const auto& [phase, spans] : {std::pair{"forward", &f}, std::pair{"backward", &b}}) {
        if (!spans->empty()) continue;
        throw DataError(
            fmt::format("{}: {}'s {} launched no kernel on the GPU that the trace records (the rest of the step "
                        "did; a kernel is the launch's whose args.correlation it shares); expected a trace of "
                        "training steps on one GPU",
                        origin, step.name, phase));
      }
      fwd = union_length(f);
      bwd = union_length(b);
      opt = union_length(o);
    }
    forward_us += fwd;
    backward_us += bwd;
    optimizer_us += opt;
    step_us += step.end - step.start;
  }
  const auto n = static_cast<double>(steps.size());
  ms.steps = static_cast<int>(steps.size());
  {
    std::vector<std::string> names;
    for (const Event& step : steps) names.push_back(step.name);
    trace::settle_grad_accum(names, stepped, ms, notes);
  }
  trace::settle_optimizer(facts, ms, notes);
  // Forward and backward run in every step, the optimizer in those that hold it (with gradient
  // accumulation, prof.step() after each micro-step, only every grad_accum-th): its mean over all
  // steps would be a fraction of one optimizer step.
  ms.forward_s = forward_us / n * 1e-6;
  ms.backward_s = backward_us / n * 1e-6;
  ms.optimizer_s = ms.optimizer_steps > 0 ? optimizer_us / ms.optimizer_steps * 1e-6 : 0.0;
  // Other: each step's time outside its phases (kernels of a step may finish after the host has
  // left it: then none), as a micro-step's; the step written is one micro-step and one optimizer step.
  ms.other_s = std::max(0.0, (step_us - forward_us - backward_us - optimizer_us) / n * 1e-6);
  ms.step_s = ms.forward_s + ms.backward_s + ms.optimizer_s + ms.other_s;
  if (ms.step_s <= 0) throw DataError(fmt::format("{}: the ProfilerStep#N events last 0 us", origin));
  if (findings != nullptr) {
    findings->notes = std::move(notes);
    findings->steps.clear();
    findings->gradients.clear();
    findings->checkpointed.clear();
    for (std::size_t si = 0; si < steps.size(); ++si) {
      findings->steps.push_back(steps[si].name);
      findings->gradients.push_back(facts[si].gradients);
      findings->checkpointed.push_back(facts[si].checkpoint);
    }
  }
  return ms;
}

}  // namespace gradsync
