// import_trace_bench.cpp: how fast `gradsync models import-trace` reads a torch.profiler trace
// (read_profiler_trace), on a generated trace shaped as Kineto writes one: per step 3,000 forward
// and 6,000 backward operators, each with its cudaLaunchKernel and the kernel it queued (27,000
// events a step, about 3.8 MB of JSON). The argument is the number of steps: 20 make a 77 MB trace.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

#include "models/trace_import.hpp"

namespace {

std::string generated_trace(int steps) {
  std::string out = "{\"traceEvents\": [\n";
  double t = 0;
  long corr = 0;
  for (int s = 0; s < steps; ++s) {
    const double start = t;
    std::string body;
    for (int i = 0; i < 9000; ++i) {
      ++corr;
      const char* op = i < 3000 ? "aten::linear" : "autograd::engine::evaluate_function: AddmmBackward0";
      body += fmt::format(
          "{{\"name\": \"{}\", \"ph\": \"X\", \"ts\": {}, \"dur\": 5, \"tid\": 1, \"pid\": 1}},\n"
          "{{\"name\": \"cudaLaunchKernel\", \"cat\": \"cuda_runtime\", \"ph\": \"X\", \"ts\": {}, \"dur\": 3, "
          "\"tid\": 1, \"pid\": 1, \"args\": {{\"correlation\": {}}}}},\n"
          "{{\"name\": \"void gemm_kernel<float>(int, int)\", \"cat\": \"kernel\", \"ph\": \"X\", \"ts\": {}, "
          "\"dur\": 8, \"tid\": 7, \"pid\": 0, \"args\": {{\"device\": 0, \"stream\": 7, \"correlation\": {}}}}},\n",
          op, t, t + 1, corr, t + 2, corr);
      t += 10;
    }
    body += fmt::format(
        "{{\"name\": \"Optimizer.step#AdamW.step\", \"ph\": \"X\", \"ts\": {}, \"dur\": 500, \"tid\": 1, \"pid\": "
        "1}},\n",
        t);
    t += 600;
    out += fmt::format(
        "{{\"name\": \"ProfilerStep#{}\", \"ph\": \"X\", \"ts\": {}, \"dur\": {}, \"tid\": 1, \"pid\": 1}},\n", s,
        start, t - start);
    out += body;
  }
  out.resize(out.size() - 2);  // the last ",\n"
  out += "\n]}\n";
  return out;
}

void BM_ReadProfilerTrace(benchmark::State& state) {
  const std::string trace = generated_trace(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(gradsync::read_profiler_trace(trace, "generated.json"));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(trace.size()));
  state.counters["trace_MB"] = static_cast<double>(trace.size()) / 1e6;
}
BENCHMARK(BM_ReadProfilerTrace)->Unit(benchmark::kMillisecond)->Arg(2)->Arg(20)->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
