// engine.hpp: the process's one SimGrid engine, configured so that flow times are exact.
//
// SimGrid's defaults inflate network times (LV08: bandwidth factor 0.97, latency factor 13.01,
// cross-traffic, a TCP window cap). gradsync wants the textbook answer when nothing contends, so
// an uncontended transfer of S bytes over a link of bandwidth B and latency a takes exactly
// a + S/B, and a ring allreduce matches 2(n-1)/n*S/B + 2(n-1)*a. What payload really achieves
// enters through the links' payload rates (topologies/link_model) and the collectives' own
// latencies, and a calibration replaces times directly; never through these defaults.
//
//   auto engine = gradsync::sim::create_engine();   // once per process
//   ... build the platform, create actors ...
//   engine->run();
#pragma once

#include <simgrid/s4u/Engine.hpp>

#include <memory>

namespace gradsync::sim {

// create_engine makes the process's SimGrid engine and applies gradsync's exact network
// configuration (network/model:CM02, network/crosstraffic:0, network/TCP-gamma:0) before any zone
// exists. SimGrid's own logging is limited to errors. Throws RuntimeError when the process already
// has an engine: SimGrid keeps one clock per process, so gradsync runs one simulation per process.
// `ranks`: the GPUs the simulation will have. Past kUnguardedStacksRanks its actors' stacks get no
// guard page and come from the heap: each guarded stack is two memory mappings, and 16,384 GPUs'
// ~100,000 actors passed Linux's 65,530 mappings a process (vm.max_map_count; SimGrid stopped with
// "Failed to protect stack"). 4,096 GPUs ran guarded (bench/e2e_bench); at about six actors a rank
// (the rank's thread, its streams) 8,192 would need some 100,000 mappings, hence the bound. Up to
// it the guard pages stay (a stack overflow faults at once), and unguarded stacks measured more
// memory there: 0.95 GiB instead of 0.55 for GPT-2 on 1,024 GPUs (before the heap's top padding
// was turned off, sim/engine.cpp).
inline constexpr int kUnguardedStacksRanks = 4096;
std::unique_ptr<simgrid::s4u::Engine> create_engine(int ranks = 0);

}  // namespace gradsync::sim
