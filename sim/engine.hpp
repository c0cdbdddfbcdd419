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
std::unique_ptr<simgrid::s4u::Engine> create_engine();

}  // namespace gradsync::sim
