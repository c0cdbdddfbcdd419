// e2e_bench.cpp: issue "Scale II"'s targets end to end, as a user runs them: the gradsync binary's
// `simulate --strategy ddp` on a generated fat-tree of DGX H100 nodes, every default output
// written (summary, iterations, events, result.json, trace, report). Each run is timed in wall
// and CPU time with its peak resident memory (the largest of gradsync and its simulating child,
// from wait4) and the bytes it wrote. The steady iteration is the difference between a run of 3
// and one of 2 iterations; the rest of the 2-iteration run is setup (topology, routes, rings),
// construction, iteration 1 with the bucket rebuild, and writing the outputs.
//
//   build/default/bench/e2e_bench                                   # everything (about 15 minutes)
//   build/default/bench/e2e_bench --benchmark_filter=GPT2/1024      # one target
//
// Targets (this machine, one process): GPT-2 on 1,024 GPUs, 2 iterations, under 3 s and 1 GiB;
// Llama-2-7B on 1,024 GPUs under 5 s and on 4,096 under 15 s; GPT-2 on 16,384 GPUs under 60 s and
// 8 GiB (2,048 nodes: the generator's third switch level).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "topologies/generators.hpp"
#include "topologies/topology.hpp"

namespace gradsync {
namespace {

struct Run {
  double wall_s = 0;
  double cpu_s = 0;
  double peak_rss_bytes = 0;
  double output_bytes = 0;
};

// simulate runs `gradsync simulate --strategy ddp` of `model` on `topology` for `iterations`
// into a fresh folder (stdout and stderr to /dev/null) and measures it.
Run simulate(const std::string& model, const std::string& topology, int iterations) {
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / ("gradsync-e2e-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(out);
  const std::string its = std::to_string(iterations), warmup = std::to_string(iterations - 1);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ::execl(GRADSYNC_BIN, "gradsync", "simulate", "--strategy", "ddp", "--model", model.c_str(), "--topology",
            topology.c_str(), "--iterations", its.c_str(), "--warmup", warmup.c_str(), "--out", out.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  Run r;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // llama2-7b does not fit an 80 GB GPU under DDP (a whole replica with AdamW's states): simulate
  // still simulates and writes every output, then exits 1 for the memory. That run is timed; any
  // other failure, or an exit 1 without its outputs, stops the bench.
  const bool outputs = std::filesystem::exists(out / "result.json");
  if (!WIFEXITED(status) || !(WEXITSTATUS(status) == 0 || (WEXITSTATUS(status) == 1 && outputs))) std::abort();
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  r.cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  r.peak_rss_bytes = static_cast<double>(usage.ru_maxrss) * 1024.0;
  for (const auto& f : std::filesystem::directory_iterator(out))
    if (f.is_regular_file()) r.output_bytes += static_cast<double>(f.file_size());
  std::filesystem::remove_all(out);
  return r;
}

// cluster: `gpus`/8 DGX H100 nodes under a fat-tree, written once to a temporary DOT file.
std::string cluster(int gpus) {
  static std::map<int, std::string> files;
  auto& path = files[gpus];
  if (path.empty()) {
    FatTreeOptions o;
    o.nodes = gpus / 8;
    o.node = "dgx-h100";
    // 512 nodes: 128 leaves under 128-port spines (2 levels, as sim_bench); 2,048 nodes: 64-port
    // switches in 3 levels (16 pods of 32 leaves under 1,024 cores).
    if (o.nodes > 256 && o.nodes <= 512) o.spine_ports = 128;
    path = (std::filesystem::temp_directory_path() /
            ("gradsync-e2e-fat-tree-" + std::to_string(gpus) + "-" + std::to_string(::getpid()) + ".dot"))
               .string();
    std::ofstream(path) << write_topology_dot(generate_fat_tree(o));
  }
  return path;
}

// end_to_end: the 2-iteration run's wall time (what the benchmark reports), its CPU time, peak
// memory and output size; the steady iteration from a 3-iteration run beside it.
void end_to_end(benchmark::State& state, const std::string& model) {
  const int gpus = static_cast<int>(state.range(0));
  const std::string topology = cluster(gpus);
  Run two, three;
  for (auto _ : state) {
    two = simulate(model, topology, 2);
    three = simulate(model, topology, 3);
    state.SetIterationTime(two.wall_s);
  }
  state.counters["cpu_s"] = two.cpu_s;
  state.counters["peak_rss_MiB"] = two.peak_rss_bytes / (1024.0 * 1024.0);
  state.counters["outputs_MB"] = two.output_bytes / 1e6;
  state.counters["steady_s"] = std::max(0.0, three.wall_s - two.wall_s);
  state.counters["steady_cpu_s"] = std::max(0.0, three.cpu_s - two.cpu_s);
}

void BM_EndToEnd_GPT2(benchmark::State& s) { end_to_end(s, "gpt2"); }
void BM_EndToEnd_Llama2_7B(benchmark::State& s) { end_to_end(s, "llama2-7b"); }
BENCHMARK(BM_EndToEnd_GPT2)
    ->UseManualTime()
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->Arg(16)
    ->Arg(1024)
    ->Arg(4096)
    ->Arg(16384);
BENCHMARK(BM_EndToEnd_Llama2_7B)->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1)->Arg(1024)->Arg(4096);

}  // namespace
}  // namespace gradsync

BENCHMARK_MAIN();
