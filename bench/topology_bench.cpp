// topology_bench.cpp: how long gradsync takes to understand a 1024-GPU cluster: read and
// validate the DOT file, route, and search NCCL-like rings and trees. Target: under 1 s in all.
// And the largest cluster the generator builds (2,048 nodes, 16,384 GPUs): its channels, which
// `topo validate` and every simulation search, grow linearly with the nodes.
//
//   build/default/bench/topology_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <string>

#include "topologies/channels.hpp"
#include "topologies/generators.hpp"
#include "topologies/routes.hpp"
#include "topologies/topology.hpp"

namespace gradsync {
namespace {

// kNodes x 8 H100 = 1024 GPUs on a non-blocking NDR fat-tree (32 leaves, 32 spines).
constexpr int kNodes = 128;

const std::string& cluster_dot() {
  static const std::string text = write_topology_dot(generate_fat_tree({.nodes = kNodes, .node = "dgx-h100"}));
  return text;
}

// Load: parse (Boost's reader and the line scanner), convert attributes, validate.
void BM_Load1024(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(read_topology_dot(cluster_dot(), "fat-tree-1024.dot"));
}
BENCHMARK(BM_Load1024)->Unit(benchmark::kMillisecond);

// Routes from GPU 0 to every GPU (one shortest-path tree, 1023 paths with classes).
void BM_RoutesFromOneGpu1024(benchmark::State& state) {
  const Topology t = read_topology_dot(cluster_dot(), "fat-tree-1024.dot");
  for (auto _ : state) {
    Routes routes(t);
    for (int r = 1; r < t.gpu_count(); ++r) benchmark::DoNotOptimize(routes.gpu_route(0, r));
  }
}
BENCHMARK(BM_RoutesFromOneGpu1024)->Unit(benchmark::kMillisecond);

// Rings and trees over all 1024 GPUs (with the routes they need).
void BM_Channels1024(benchmark::State& state) {
  const Topology t = read_topology_dot(cluster_dot(), "fat-tree-1024.dot");
  for (auto _ : state) {
    Routes routes(t);
    benchmark::DoNotOptimize(build_channels(t, routes, first_ranks(t.gpu_count())));
  }
}
BENCHMARK(BM_Channels1024)->Unit(benchmark::kMillisecond);

// Everything a simulation needs before it starts: the 1 s target.
void BM_LoadValidateRouteRings1024(benchmark::State& state) {
  for (auto _ : state) {
    const Topology t = read_topology_dot(cluster_dot(), "fat-tree-1024.dot");
    Routes routes(t);
    for (int r = 1; r < t.gpu_count(); ++r) benchmark::DoNotOptimize(routes.gpu_route(0, r));
    const Channels ch = build_channels(t, routes, first_ranks(t.gpu_count()));
    benchmark::DoNotOptimize(ch);
    state.counters["channels"] = static_cast<double>(ch.rings.size());
  }
}
BENCHMARK(BM_LoadValidateRouteRings1024)->Unit(benchmark::kMillisecond);

// Rings and trees over the generator's largest fat-tree: 2,048 DGX H100 nodes, three switch levels.
void BM_Channels16384(benchmark::State& state) {
  const Topology t = generate_fat_tree({.nodes = 2048, .node = "dgx-h100"});
  for (auto _ : state) {
    Routes routes(t);
    benchmark::DoNotOptimize(build_channels(t, routes, first_ranks(t.gpu_count())));
  }
}
BENCHMARK(BM_Channels16384)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gradsync

BENCHMARK_MAIN();
