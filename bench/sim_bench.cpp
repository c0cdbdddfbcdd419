// sim_bench.cpp: how long and how much memory the SimGrid engine needs to simulate one steady DDP
// iteration of GPT-2 and Llama-2-7B on fat-trees of 8-GPU H100 nodes (1 to 512 nodes, 8 to 4096
// GPUs, `gradsync topo generate fat-tree --node dgx-h100`; 512 nodes with 128-port spines), each
// beside the closed-form evaluation of the same iteration (sim/simulate.hpp: closed_form_ddp,
// the same topology, routes and rings, no simulation), and a 100-point sweep of 64-GPU scenarios
// with --jobs 2. Targets (issue 9): 1024 GPUs under 2 s and 2 GiB, 4096 GPUs under 15 s, the
// sweep under a minute.
//
// SimGrid allows one engine per process, so every measurement forks a child; the parent times
// it and reads the child's peak resident memory (wait4). A steady iteration is the difference
// between simulating 2 + N and 2 iterations, divided by N (N = 4, 1 at 4096 GPUs; construction,
// iteration 1 and the bucket rebuild are the same in both runs); its memory is the longer run's
// peak; run_of_2_iterations_s is the whole 2-iteration simulation (setup and construction too);
// steady_cpu_s is the steady iteration in the children's CPU time. --fidelity is auto (the
// default), which runs every allreduce across nodes at aggregate fidelity.
//
//   build/default/bench/sim_bench                                  # everything (about 8 minutes)
//   build/default/bench/sim_bench --benchmark_filter='/(8|64)$'     # the small clusters
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "sim/simulate.hpp"
#include "topologies/generators.hpp"

namespace gradsync::sim {
namespace {

struct Run {
  double wall_s = 0;
  double cpu_s = 0;  // the child's user + system time: steadier than wall time on a shared machine
  double peak_rss_bytes = 0;
};

// in_child runs fn in a forked child; wall time and the child's peak memory.
Run in_child(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      fn();
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
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return {wall, seconds(usage.ru_utime) + seconds(usage.ru_stime), static_cast<double>(usage.ru_maxrss) * 1024.0};
}

// cluster: the fat-tree of gpus/8 DGX H100 nodes, written once to a temporary DOT file.
std::string cluster(int gpus) {
  static std::map<int, std::string> files;
  auto& path = files[gpus];
  if (path.empty()) {
    const int nodes = gpus / 8;
    FatTreeOptions o;
    o.nodes = nodes;
    o.node = "dgx-h100";
    if (nodes > 256) o.spine_ports = 128;  // 128 leaves of 64 ports need 128-port spines (2 levels)
    path = (std::filesystem::temp_directory_path() /
            ("gradsync-bench-fat-tree-" + std::to_string(gpus) + "-" + std::to_string(::getpid()) + ".dot"))
               .string();
    std::ofstream(path) << write_topology_dot(generate_fat_tree(o));
  }
  return path;
}

Scenario scenario(const std::string& model, int gpus, int iterations) {
  Scenario s;
  s.model = model;
  s.topology = cluster(gpus);
  s.gpus = gpus;
  s.iterations = iterations;
  s.warmup = iterations - 1;
  return s;
}

void steady_ddp(benchmark::State& state, const std::string& model) {
  const int gpus = static_cast<int>(state.range(0));
  // Steady iterations added to the 2-iteration run: enough that their time stands out of the
  // noise of the common part (setup, construction, iteration 1) on small clusters.
  const int extra = gpus >= 4096 ? 1 : 4;
  double peak = 0, total = 0, cpu = 0;
  for (auto _ : state) {
    const Scenario two = scenario(model, gpus, 2);
    const Scenario more = scenario(model, gpus, 2 + extra);
    const Run a = in_child([&] { (void)simulate(two, Strategy::kDDP); });
    const Run b = in_child([&] { (void)simulate(more, Strategy::kDDP); });
    state.SetIterationTime(std::max(0.0, b.wall_s - a.wall_s) / extra);
    peak = std::max(peak, b.peak_rss_bytes);
    total = a.wall_s;
    cpu = std::max(0.0, b.cpu_s - a.cpu_s) / extra;
  }
  state.counters["peak_rss_MiB"] = peak / (1024.0 * 1024.0);
  state.counters["run_of_2_iterations_s"] = total;
  state.counters["steady_cpu_s"] = cpu;
}

void closed_form(benchmark::State& state, const std::string& model) {
  const int gpus = static_cast<int>(state.range(0));
  double peak = 0;
  for (auto _ : state) {
    const Scenario s = scenario(model, gpus, 3);
    const Run r = in_child([&] { (void)closed_form_ddp(s); });
    state.SetIterationTime(r.wall_s);
    peak = std::max(peak, r.peak_rss_bytes);
  }
  state.counters["peak_rss_MiB"] = peak / (1024.0 * 1024.0);
}

void BM_SimulateSteadyDDP_GPT2(benchmark::State& s) { steady_ddp(s, "gpt2"); }
void BM_SimulateSteadyDDP_Llama2_7B(benchmark::State& s) { steady_ddp(s, "llama2-7b"); }
void BM_ClosedForm_GPT2(benchmark::State& s) { closed_form(s, "gpt2"); }
void BM_ClosedForm_Llama2_7B(benchmark::State& s) { closed_form(s, "llama2-7b"); }
#define GRADSYNC_SIZES ->Arg(8)->Arg(64)->Arg(512)->Arg(1024)->Arg(4096)
BENCHMARK(BM_SimulateSteadyDDP_GPT2)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1) GRADSYNC_SIZES;
BENCHMARK(BM_ClosedForm_GPT2)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1) GRADSYNC_SIZES;
BENCHMARK(BM_SimulateSteadyDDP_Llama2_7B)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1) GRADSYNC_SIZES;
BENCHMARK(BM_ClosedForm_Llama2_7B)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1) GRADSYNC_SIZES;

// A 100-point sweep (10 batch sizes x 10 bucket caps) of DDP on 64 GPUs of 16x-dgx-h100-ndr,
// through the gradsync binary as a user runs it.
void BM_Sweep100Points64Gpus_Jobs2(benchmark::State& state) {
  const std::string out =
      (std::filesystem::temp_directory_path() / ("gradsync-bench-sweep-" + std::to_string(::getpid()))).string();
  for (auto _ : state) {
    std::filesystem::remove_all(out);
    const Run r = in_child([&] {
      ::execl(GRADSYNC_BIN, "gradsync", "sweep", "--topology", "16x-dgx-h100-ndr", "--gpus", "64", "--iterations", "2",
              "--warmup", "1", "--vary", "strategy=ddp", "--vary", "batch_per_gpu=1,2,3,4,5,6,7,8,9,10", "--vary",
              "bucket_cap_mb=5,10,15,20,25,30,35,40,45,50", "--jobs", "2", "--out", out.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(1);
    });
    state.SetIterationTime(r.wall_s);
  }
  std::filesystem::remove_all(out);
}
BENCHMARK(BM_Sweep100Points64Gpus_Jobs2)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace gradsync::sim

BENCHMARK_MAIN();
