// fluid.hpp: flows sharing links by max-min fairness, solved in closed form between events
// (inside sim/; aggregate fidelity's calls across machines, sim/collective_run.hpp).
//
//   std::vector<FluidLink> links{{25e9, false}, {50e9, false}};
//   std::vector<FluidFlow> flows{{0.0, 1e9, 1.0, {0, 1}}, {0.0, 1e9, 1.0, {0}}};
//   std::vector<double> end = fluid_ends(links, flows);   // {0.08, 0.08}: 12.5 GB/s each
//
// The sharing is SimGrid's CM02 network model as gradsync configures it (sim/engine.cpp: no
// bandwidth or latency factor, no TCP window): weighted max-min. At every instant the flows'
// rates are raised together in proportion to their weights until a link is full (a shared
// link's bandwidth is the sum of its flows' rates) or a FATPIPE link bounds a flow by its whole
// bandwidth; those flows keep their rate, the others rise on. SimGrid would weigh a flow by the
// inverse of its route's latency (NetworkCm02Model::communicate: the sharing penalty is the
// latency); gradsync tells it one nominal latency for every route (sim/platform.cpp), so every
// flow weighs 1 there, and the callers here give weight 1 alike. A flow's start is when its
// bytes begin to move (its route's latency already paid).
//
// Rates are solved again when flows start, and when flows end: after every end while at most
// kFluidExactFlows flows are active at the last solve (then the result is max-min's exactly, as
// SimGrid computes it), else after every 1/kFluidExactFlows of the active flows have ended,
// the bandwidth an ended flow frees staying unused until then. A solve solves only the active
// flows linked, over shared links, to a flow that joined or left since the last one (max-min
// rates split over such parts; the others' rates would come out the same): the same results as
// solving every flow. Cost: O(solves x part x links per flow), where SimGrid re-solves every flow
// in flight at every end. The 19 solves of a llama2-7b run on 4,096 GPUs (its construction's
// broadcasts: chains of 32,760 flows in parts of a few) 3.8 s -> 0.5 s.
#pragma once

#include <vector>

namespace gradsync::sim {

struct FluidLink {
  double bandwidth = 0;  // bytes/s
  bool fatpipe = false;  // every flow may use the whole bandwidth (a switch's backplane)
};

struct FluidFlow {
  double start = 0;        // s: when its first byte moves
  double bytes = 0;        // what it moves
  double weight = 1;       // its share of a link against the others' (1 for every flow gradsync makes)
  std::vector<int> links;  // indices into the links it crosses
};

inline constexpr int kFluidExactFlows = 32;

// fluid_ends: when each flow's last byte arrives (a flow that crosses no link, or moves nothing:
// at its start). RuntimeError for a link whose bandwidth is not positive and finite (the
// platform has checked them; this guards the solve).
std::vector<double> fluid_ends(const std::vector<FluidLink>& links, const std::vector<FluidFlow>& flows);

}  // namespace gradsync::sim
