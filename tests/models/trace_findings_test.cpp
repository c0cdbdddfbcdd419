// trace_findings_test.cpp: what import-trace reads from a torch.profiler trace besides its phases'
// times, on traces written here: the DataLoader's spans, and a trace of no events.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "models/trace_import.hpp"

namespace gradsync {
namespace {

// refusal_of: the message of the ConfigError (DataError included) that `f` throws, or "accepted".
template <typename F>
std::string refusal_of(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
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

// A trace that holds no events says so, not that it lacks a ProfilerStep#N.
TEST(TraceImport, ATraceOfNoEventsSaysSo) {
  auto message = [](const std::string& text) { return refusal_of([&] { read_profiler_trace(text, "t.json"); }); };
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
