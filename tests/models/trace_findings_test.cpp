// trace_findings_test.cpp: what import-trace reads from a torch.profiler trace besides its phases'
// times, on traces written here: gradient accumulation with prof.step() after each micro-step, the
// DataLoader's spans, the optimizer's class, the parameters' gradients against the model given
// beside the trace, and a trace of no events.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/scenario.hpp"
#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "models/scenario_basics.hpp"
#include "models/trace_import.hpp"
#include "topologies/gpu_spec.hpp"
#include "trace_test_util.hpp"

namespace gradsync {
namespace {

using json = nlohmann::json;

using test::error_of;
using test::resnet18_import;

// trace_event: a complete event as torch.profiler writes it.
json trace_event(const std::string& name, double ts, double dur) {
  return {{"name", name}, {"ph", "X"}, {"ts", ts}, {"dur", dur}};
}

// micro_steps: a CPU trace of `stepped.size()` ProfilerStep#N of 1000 us from ProfilerStep#1:
// forward's op at 10..300, backward 400..700 (each step 400 us of forward from its start, 300 of
// backward), and where stepped[i], Optimizer.step#SGD.step at 750..950 holding the SGD update
// (aten::add_) and zero_grad after it.
std::string micro_steps(const std::vector<bool>& stepped) {
  json ev = json::array();
  for (std::size_t i = 0; i < stepped.size(); ++i) {
    const double t = 1000.0 * static_cast<double>(i);
    ev.push_back(trace_event(fmt::format("ProfilerStep#{}", i + 1), t, 1000));
    ev.push_back(trace_event("aten::linear", t + 10, 290));
    ev.push_back(trace_event("autograd::engine::evaluate_function: AddmmBackward0", t + 400, 300));
    if (!stepped[i]) continue;
    ev.push_back(trace_event("Optimizer.step#SGD.step", t + 750, 200));
    ev.push_back(trace_event("aten::add_", t + 760, 20));
    ev.push_back(trace_event("Optimizer.zero_grad#SGD.zero_grad", t + 960, 20));
  }
  return ev.dump();
}

// Gradient accumulation profiled as the README says, prof.step() after every micro-step: only
// every second step holds optimizer.step(). The optimizer's time is its mean over those steps (the
// mean over all, 100 us, was half of it), forward and backward over all; the micro-steps per
// optimizer step are recorded as the model's grad_accum, the default of its runs, so that the
// model's step with them is the trace's: two micro-steps of 1000 us.
TEST(TraceImport, GradientAccumulationAveragesTheOptimizerOverItsOwnSteps) {
  TraceFindings found;
  const MeasuredStep ms = read_profiler_trace(micro_steps({false, true, false, true}), "accum.json", &found);
  EXPECT_EQ(ms.steps, 4);
  EXPECT_EQ(ms.optimizer_steps, 2);
  EXPECT_EQ(ms.grad_accum, 2);
  EXPECT_NEAR(ms.forward_s, 400e-6, 1e-15);
  EXPECT_NEAR(ms.backward_s, 300e-6, 1e-15);
  EXPECT_NEAR(ms.optimizer_s, 200e-6, 1e-15);
  EXPECT_NEAR(ms.other_s, 200e-6, 1e-15);  // (4000 - 4 x 700 - 2 x 200) / 4: each micro-step's rest
  EXPECT_NEAR(ms.step_s, 1100e-6, 1e-15);  // one micro-step and one optimizer step
  ASSERT_EQ(found.notes.size(), 1u);
  EXPECT_EQ(found.notes[0],
            "2 of the 4 ProfilerStep#N hold an Optimizer.step (gradient accumulation, prof.step() after each "
            "micro-step): the optimizer's time is the mean over those 2, forward's and backward's over all; an "
            "optimizer step every 2 micro-steps, recorded as the model's grad_accum 2 (the default of its runs; "
            "--grad-accum still wins)");
  const TraceImport opts = resnet18_import();
  const std::string text = imported_model_text(ms, opts);
  EXPECT_NE(text.find("\n  grad_accum: 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  optimizer_steps: 2\n"), std::string::npos) << text;
  const Model m = parse_model(text, "accum.yaml");
  EXPECT_EQ(m.measured->grad_accum, 2);
  EXPECT_EQ(m.measured->optimizer_steps, 2);
  Scenario s;
  apply_measured_defaults(s, m, [](std::string_view) { return true; });
  EXPECT_EQ(s.grad_accum, 2);
  ComputeContext ctx = opts.split;
  ctx.batch = 16;
  const ModelCost cost = model_cost(m, ctx);
  const KernelCost opt = optimizer_cost(m, Optimizer::kSGD, OptimizerImpl::kForEach, ctx);
  EXPECT_NEAR(single_gpu_step_s(cost, opt, s.grad_accum, &cost), 2 * 1000e-6, 1e-9);  // the file keeps ps
  // A flag (or the scenario file) that gives grad_accum wins.
  Scenario asked;
  apply_measured_defaults(asked, m, [](std::string_view key) { return key != "grad_accum"; });
  EXPECT_EQ(asked.grad_accum, 1);
  // A file whose grad_accum no run could take is refused at its line.
  std::string bad = text;
  bad.replace(bad.find("  grad_accum: 2\n"), 16, "  grad_accum: 0\n");
  const std::string message = error_of([&] { parse_model(bad, "m.yaml"); });
  EXPECT_EQ(message.rfind("m.yaml:", 0), 0u) << message;
  EXPECT_NE(message.find("grad_accum"), std::string::npos) << message;
}

// One optimizer step in the window, or steps unevenly spaced, do not say how many micro-steps
// each optimizer step had: the optimizer's mean is still over its own steps, and no grad_accum is
// recorded (a note says to give --grad-accum).
TEST(TraceImport, GradientAccumulationOfUnknownPeriodIsSaidNotGuessed) {
  TraceFindings found;
  const MeasuredStep one = read_profiler_trace(micro_steps({false, true, false}), "one.json", &found);
  EXPECT_EQ(one.grad_accum, 1);
  EXPECT_EQ(one.optimizer_steps, 1);
  EXPECT_NEAR(one.optimizer_s, 200e-6, 1e-15);
  ASSERT_EQ(found.notes.size(), 1u);
  EXPECT_NE(found.notes[0].find("is not known from one optimizer step (ProfilerStep#2); give --grad-accum N"),
            std::string::npos)
      << found.notes[0];
  EXPECT_EQ(imported_model_text(one, resnet18_import()).find("grad_accum:"), std::string::npos);
  const MeasuredStep uneven = read_profiler_trace(micro_steps({true, false, true, true}), "uneven.json", &found);
  EXPECT_EQ(uneven.grad_accum, 1);
  EXPECT_NE(found.notes[0].find("unevenly spaced optimizer steps (ProfilerStep#1, ProfilerStep#3, ProfilerStep#4)"),
            std::string::npos)
      << found.notes[0];
  // Every step stepping the optimizer: as before, nothing to say.
  const MeasuredStep every = read_profiler_trace(micro_steps({true, true}), "every.json", &found);
  EXPECT_EQ(every.grad_accum, 1);
  EXPECT_EQ(every.optimizer_steps, 2);
  EXPECT_TRUE(found.notes.empty());
}

// The tutorial loop (for X, y in loader: ...; prof.step()) opens each step with the DataLoader's
// next batch, labelled enumerate(DataLoader)#...__next__: data, "other" as the README says, not
// forward. On a GPU a kernel launched inside it is in no phase.
TEST(TraceImport, TheDataLoadersSpansAreOtherNotForward) {
  const MeasuredStep cpu = read_profiler_trace(R"([
    {"name": "ProfilerStep#5", "ph": "X", "ts": 0, "dur": 1000},
    {"name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "ph": "X", "ts": 5, "dur": 200},
    {"name": "aten::linear", "ph": "X", "ts": 210, "dur": 180},
    {"name": "autograd::engine::evaluate_function: AddmmBackward0", "ph": "X", "ts": 400, "dur": 300},
    {"name": "Optimizer.step#SGD.step", "ph": "X", "ts": 750, "dur": 200},
    {"name": "Optimizer.zero_grad#SGD.zero_grad", "ph": "X", "ts": 960, "dur": 20}
  ])",
                                               "loader.json");
  EXPECT_NEAR(cpu.forward_s, 200e-6, 1e-15);  // 400 from the step's start, less the DataLoader's 200
  EXPECT_NEAR(cpu.backward_s, 300e-6, 1e-15);
  EXPECT_NEAR(cpu.optimizer_s, 200e-6, 1e-15);
  EXPECT_NEAR(cpu.other_s, 300e-6, 1e-15);
  // Kineto: a copy kernel launched by the DataLoader (60..160) would have doubled forward's 100 us.
  const MeasuredStep gpu = read_profiler_trace(R"({"traceEvents": [
    {"name": "ProfilerStep#5", "ph": "X", "ts": 0, "dur": 1000, "cat": "user_annotation"},
    {"name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "ph": "X", "ts": 10, "dur": 190,
     "cat": "user_annotation"},
    {"name": "cudaLaunchKernel", "cat": "cuda_runtime", "ph": "X", "ts": 50, "dur": 5, "args": {"correlation": 1}},
    {"name": "cudaLaunchKernel", "cat": "cuda_runtime", "ph": "X", "ts": 250, "dur": 5, "args": {"correlation": 2}},
    {"name": "autograd::engine::evaluate_function: AddmmBackward0", "ph": "X", "ts": 400, "dur": 300},
    {"name": "cudaLaunchKernel", "cat": "cuda_runtime", "ph": "X", "ts": 410, "dur": 5, "args": {"correlation": 3}},
    {"name": "Optimizer.step#SGD.step", "ph": "X", "ts": 750, "dur": 200, "cat": "user_annotation"},
    {"name": "cudaLaunchKernel", "cat": "cuda_runtime", "ph": "X", "ts": 760, "dur": 5, "args": {"correlation": 4}},
    {"name": "k", "cat": "kernel", "ph": "X", "ts": 60, "dur": 100, "args": {"correlation": 1, "device": 0}},
    {"name": "k", "cat": "kernel", "ph": "X", "ts": 260, "dur": 100, "args": {"correlation": 2, "device": 0}},
    {"name": "k", "cat": "kernel", "ph": "X", "ts": 420, "dur": 200, "args": {"correlation": 3, "device": 0}},
    {"name": "k", "cat": "kernel", "ph": "X", "ts": 770, "dur": 40, "args": {"correlation": 4, "device": 0}}
  ]})",
                                               "loader-gpu.json");
  EXPECT_NEAR(gpu.forward_s, 100e-6, 1e-15);
  EXPECT_NEAR(gpu.backward_s, 200e-6, 1e-15);
  EXPECT_NEAR(gpu.optimizer_s, 40e-6, 1e-15);
  EXPECT_NEAR(gpu.other_s, 660e-6, 1e-15);
}

// The README's loop over a DataLoader that ends inside the schedule's cycle (repeat=0, cycling):
// the profiler closes a last ProfilerStep holding only the DataLoader's final __next__. It is left
// out, said; the import refused the whole trace ("ProfilerStep#3 has no backward") until
// 2026-12-02. A step without backward that is not the last is still refused.
TEST(TraceImport, ALastStepOfOnlyTheLoopsEndIsLeftOut) {
  json ev = json::parse(micro_steps({true, true}));
  ev.push_back(trace_event("ProfilerStep#3", 2000, 27));
  ev.push_back(trace_event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 2007, 10));
  TraceFindings found;
  const MeasuredStep ms = read_profiler_trace(ev.dump(), "tail.json", &found);
  EXPECT_EQ(ms.steps, 2);
  EXPECT_NEAR(ms.step_s, 1000e-6, 1e-15);
  ASSERT_EQ(found.notes.size(), 1u);
  EXPECT_EQ(found.notes[0],
            "ProfilerStep#3 (27 us), the trace's last, holds no backward: what ran after the last prof.step() (the "
            "DataLoader's final __next__ when the loop ends inside the schedule's cycle), left out; "
            "torch.profiler.schedule(..., repeat=1) records the active steps alone");
  json middle = json::parse(micro_steps({true}));
  middle.push_back(trace_event("ProfilerStep#2", 1000, 27));
  middle.push_back(trace_event("ProfilerStep#3", 2000, 1000));
  middle.push_back(trace_event("autograd::engine::evaluate_function: AddmmBackward0", 2400, 300));
  EXPECT_NE(error_of([&] { read_profiler_trace(middle.dump(), "middle.json"); }).find("ProfilerStep#2 has no backward"),
            std::string::npos);
}

// optimizer_step: a one-step CPU trace whose optimizer is Optimizer.step#<cls>.step holding `ops`.
std::string optimizer_step(const std::vector<std::string>& classes, const std::vector<std::string>& ops) {
  json ev = json::array({trace_event("ProfilerStep#1", 0, 1000), trace_event("aten::linear", 10, 290),
                         trace_event("autograd::engine::evaluate_function: AddmmBackward0", 400, 300)});
  double t = 720;
  for (const std::string& c : classes) {
    ev.push_back(trace_event(fmt::format("Optimizer.step#{}.step", c), t, 100));
    for (const std::string& op : ops) ev.push_back(trace_event(op, t + 10, 5));
    t += 120;
  }
  return ev.dump();
}

// The optimizer the trace stepped (torch.optim's Optimizer.step#<Class>.step) is recorded in the
// model's measured section and is the default of its runs (runs took adamw, and AdamW's 8 bytes of
// state a parameter, whatever ran); SGD's momentum is told by its buffers' ops, and where the trace
// does not show them it is taken as sgd-momentum, said so. A class gradsync does not model, or two
// optimizers, are not recorded, said so.
TEST(TraceImport, TheTracesOptimizerIsTheModelsDefault) {
  struct Case {
    std::vector<std::string> classes, ops;
    std::string optimizer, note;
  };
  const std::vector<Case> cases{
      {{"SGD"}, {"aten::_foreach_add_", "aten::_foreach_mul_"}, "sgd-momentum", ""},
      {{"SGD"}, {"aten::mul_", "aten::add_"}, "sgd-momentum", ""},
      {{"SGD"}, {"aten::clone", "aten::add_"}, "sgd-momentum", ""},  // the first step makes the buffers
      {{"SGD"}, {"aten::_foreach_add_"}, "sgd", ""},
      {{"SGD"}, {"aten::add_"}, "sgd", ""},
      {{"SGD"},
       {"aten::_fused_sgd_"},
       "sgd-momentum",
       "Optimizer.step#SGD.step: the trace does not show whether SGD ran with momentum"},
      {{"Adam"}, {"aten::_foreach_mul_"}, "adam", ""},
      {{"AdamW"}, {}, "adamw", ""},
      {{"Adagrad"},
       {},
       "",
       "Optimizer.step#Adagrad.step: gradsync models torch.optim's SGD, Adam and AdamW, not Adagrad; the optimizer "
       "is not recorded and runs of the model keep the scenario's default optimizer (adamw) unless --optimizer "
       "names one"},
      {{"SGD", "Adam"},
       {},
       "",
       "the trace steps 2 optimizers (Optimizer.step#SGD.step, Optimizer.step#Adam.step): no one optimizer is "
       "recorded"},
  };
  for (const Case& c : cases) {
    TraceFindings found;
    const MeasuredStep ms = read_profiler_trace(optimizer_step(c.classes, c.ops), "opt.json", &found);
    const std::string what = fmt::format("{} with {}", fmt::join(c.classes, "+"), fmt::join(c.ops, ", "));
    EXPECT_EQ(ms.optimizer, c.optimizer) << what;
    if (c.note.empty()) {
      EXPECT_TRUE(found.notes.empty()) << what << ": " << fmt::format("{}", fmt::join(found.notes, " | "));
    } else {
      ASSERT_EQ(found.notes.size(), 1u) << what;
      EXPECT_EQ(found.notes[0].rfind(c.note, 0), 0u) << found.notes[0];
    }
  }
  // Written, loaded, and the runs' default unless the scenario names one.
  const std::string text =
      imported_model_text(read_profiler_trace(optimizer_step({"SGD"}, {"aten::add_"}), "o.json"), resnet18_import());
  ASSERT_NE(text.find("\n  optimizer: sgd\n"), std::string::npos) << text;
  Model m = parse_model(text, "m.yaml");
  EXPECT_EQ(m.measured->optimizer, "sgd");
  Scenario s;
  apply_measured_defaults(s, m, [](std::string_view) { return true; });
  EXPECT_EQ(s.optimizer, "sgd");
  EXPECT_EQ(resolve_basics(s, m, gpu_spec("a100-sxm4-80gb")).optimizer, Optimizer::kSGD);
  Scenario asked;
  asked.optimizer = "adam";  // --optimizer adam
  apply_measured_defaults(asked, m, [](std::string_view key) { return key != "optimizer"; });
  EXPECT_EQ(asked.optimizer, "adam");
  // A file written before it was recorded defaults as any model does; an optimizer gradsync does
  // not model is refused at its line.
  std::string old = text;
  old.erase(old.find("  optimizer: sgd\n"), 17);
  Scenario before;
  apply_measured_defaults(before, parse_model(old, "m.yaml"), [](std::string_view) { return true; });
  EXPECT_EQ(before.optimizer, "adamw");
  std::string bad = text;
  bad.replace(bad.find("  optimizer: sgd\n"), 17, "  optimizer: lion\n");
  const std::string message = error_of([&] { parse_model(bad, "m.yaml"); });
  EXPECT_EQ(message.rfind("m.yaml:", 0), 0u) << message;
  EXPECT_NE(message.find("optimizer \"lion\": expected sgd, sgd-momentum, adam or adamw"), std::string::npos)
      << message;
}

// gradient_steps: a CPU trace of one ProfilerStep#N per entry of `gradients`, each running that
// many AccumulateGrad nodes in its backward (and, with `checkpoint`, a reentrant checkpoint's
// backward).
std::string gradient_steps(const std::vector<int>& gradients, bool checkpoint = false) {
  json ev = json::array();
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    const double t = 10000.0 * static_cast<double>(i);
    ev.push_back(trace_event(fmt::format("ProfilerStep#{}", i + 1), t, 10000));
    ev.push_back(trace_event("autograd::engine::evaluate_function: AddmmBackward0", t + 400, 8000));
    if (checkpoint)
      ev.push_back(trace_event("autograd::engine::evaluate_function: CheckpointFunctionBackward", t + 500, 10));
    for (int g = 0; g < gradients[i]; ++g) {
      ev.push_back(
          trace_event("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", t + 1000 + 10 * g, 5));
      ev.push_back(
          trace_event("torch::autograd::AccumulateGrad", t + 1001 + 10 * g, 3));  // the node itself: not counted
    }
    ev.push_back(trace_event("Optimizer.step#AdamW.step", t + 9000, 500));
  }
  return ev.dump();
}

// Every parameter that receives a gradient runs one AccumulateGrad node per backward: a trace
// whose steps accumulate more gradients than the model given with --model has trainable tensors,
// or fewer in every step, is of another model, and is refused naming both counts. Steps that
// differ among themselves (a forward whose parameters vary) and a reentrant checkpoint (its
// detached inputs are leaves too) are said, not refused; a trace without the events is not checked.
TEST(TraceImport, ATraceOfAnotherModelIsRefused) {
  const Model resnet18 = load_model("resnet18");  // 62 trainable parameter tensors
  auto check = [&](const std::string& text) {
    TraceFindings found;
    read_profiler_trace(text, "t.json", &found);
    return check_trace_gradients(found, resnet18, "t.json", "resnet18");
  };
  EXPECT_TRUE(check(gradient_steps({62, 62})).empty());
  EXPECT_TRUE(check(gradient_steps({0, 0})).empty());
  EXPECT_EQ(error_of([&] {
              check(gradient_steps({61, 61}));
            }),
            "t.json: ProfilerStep#1 accumulates 61 gradients (autograd::engine::evaluate_function: "
            "torch::autograd::AccumulateGrad events, one per parameter that received a gradient), but model resnet18 "
            "has 62 trainable parameter tensors; expected the trace of the model given with --model, with the same "
            "parameters frozen (requires_grad) and unused (unused_parameters)");
  EXPECT_EQ(error_of([&] {
              check(gradient_steps({62, 70}));
            }),
            "t.json: ProfilerStep#2 accumulates 70 gradients (autograd::engine::evaluate_function: "
            "torch::autograd::AccumulateGrad events, one per parameter that received a gradient), but model resnet18 "
            "has 62 trainable parameter tensors; expected the trace of the model given with --model (a leaf input "
            "that requires grad also accumulates one)");
  const std::vector<std::string> varying = check(gradient_steps({62, 58}));
  ASSERT_EQ(varying.size(), 1u);
  EXPECT_EQ(varying[0].rfind("the steps accumulate from 58 to 62 gradients (AccumulateGrad events), model resnet18 "
                             "has 62 trainable parameter tensors: a forward whose parameters vary",
                             0),
            0u)
      << varying[0];
  // It says what DDP needs for such a model (a new user's report, 2026-12-02).
  EXPECT_NE(varying[0].find("DistributedDataParallel trains such a model only with find_unused_parameters=True"),
            std::string::npos)
      << varying[0];
  const std::vector<std::string> checkpointed = check(gradient_steps({65, 65}, true));
  ASSERT_EQ(checkpointed.size(), 1u);
  EXPECT_NE(checkpointed[0].find("a reentrant torch.utils.checkpoint's detached inputs"), std::string::npos)
      << checkpointed[0];
}

// A trace that holds no events says so, not that it lacks a ProfilerStep#N.
TEST(TraceImport, ATraceOfNoEventsSaysSo) {
  auto message = [](const std::string& text) { return error_of([&] { read_profiler_trace(text, "t.json"); }); };
  EXPECT_EQ(message("[]"),
            "t.json: the trace holds 0 events (an empty list); expected torch.profiler's events of the profiled "
            "steps: export the trace after the schedule's active steps ran (wait + warmup + active calls of "
            "prof.step())");
  for (const char* empty : {"{\"traceEvents\": []}", "{\"schemaVersion\": 1, \"traceEvents\": [\n]}"})
    EXPECT_EQ(message(empty),
              "t.json: the trace holds 0 events (\"traceEvents\": []); expected torch.profiler's events of the "
              "profiled steps: export the trace after the schedule's active steps ran (wait + warmup + active calls "
              "of prof.step())");
  // One event, of no step: as before.
  EXPECT_NE(message("[{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 1, \"dur\": 1}]").find("no ProfilerStep#N"),
            std::string::npos);
}

}  // namespace
}  // namespace gradsync
