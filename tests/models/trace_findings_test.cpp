// trace_findings_test.cpp: what import-trace reads from a torch.profiler trace besides its phases'
// times, on traces written here: a trace of no events.
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
