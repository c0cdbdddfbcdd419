// bisection.hpp: how much one half of the GPUs can send to the other half at once, as a
// maximum flow (Boost.Graph push-relabel) over the links' per-direction bandwidths.
//
//   const Bisection b = bisection(topo, first_ranks(8));   // dgx-a100: 4 x 300 GB/s = 1.2 TB/s
//
// An estimate: the true bisection bandwidth is the minimum over all balanced splits; gradsync
// uses the split a job sees, the first half of the hosts against the rest (on one host, the
// first half of the GPUs against the rest).
#pragma once

#include <vector>

#include "topologies/topology.hpp"

namespace gradsync {

struct Bisection {
  std::vector<int> half_a, half_b;  // GPU ranks
  double bw_Bps = 0;                // per direction, half_a -> half_b
};

// bisection splits `ranks` as described above (at least two ranks) and computes the maximum flow.
Bisection bisection(const Topology& topo, const std::vector<int>& ranks);

}  // namespace gradsync
