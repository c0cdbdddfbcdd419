// sim_bench.cpp: how long and how much memory the SimGrid engine needs to simulate one steady DDP
// step of GPT-2 (B=16, T=1024, bf16, AdamW). Targets (issue 6): 8 GPUs under 0.1 s, 64 GPUs over
// 8 nodes under 2 s.
//
// SimGrid allows one engine per process, so every measurement forks a child that simulates the
// scenario; the parent times it and reads the child's peak resident memory (wait4). A steady step
// is the difference between simulating warmup+1 and warmup+2 iterations (construction, iteration
// 1 and the bucket rebuild are the same in both runs).
//
//   build/default/bench/sim_bench
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "sim/simulate.hpp"

namespace gradsync::sim {
namespace {

struct Run {
  double wall_s = 0;
  double peak_rss_bytes = 0;
};

// run forks a child that simulates `iterations` DDP iterations of the scenario.
Run run(const std::string& topology, int gpus, int iterations) {
  Scenario s;
  s.topology = topology;
  s.gpus = gpus;
  s.iterations = iterations;
  s.warmup = iterations - 1;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      (void)simulate(s, Strategy::kDDP);
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::abort();
  return {wall, static_cast<double>(usage.ru_maxrss) * 1024.0};
}

void steady_step(benchmark::State& state, const std::string& topology, int gpus) {
  double peak = 0, total = 0;
  for (auto _ : state) {
    const Run two = run(topology, gpus, 2);
    const Run three = run(topology, gpus, 3);
    state.SetIterationTime(std::max(0.0, three.wall_s - two.wall_s));
    peak = std::max(peak, three.peak_rss_bytes);
    total = three.wall_s;
  }
  state.counters["peak_rss_MiB"] = peak / (1024.0 * 1024.0);
  state.counters["run_of_3_iterations_s"] = total;
}

void BM_GPT2_DDP_SteadyStep_8GPUs(benchmark::State& state) { steady_step(state, "dgx-a100", 8); }
BENCHMARK(BM_GPT2_DDP_SteadyStep_8GPUs)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_GPT2_DDP_SteadyStep_64GPUs_8Nodes(benchmark::State& state) { steady_step(state, "16x-dgx-h100-ndr", 64); }
BENCHMARK(BM_GPT2_DDP_SteadyStep_64GPUs_8Nodes)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace gradsync::sim

BENCHMARK_MAIN();
