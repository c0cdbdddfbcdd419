// shm_duplex.cpp: where SHM's duplex limit binds a collective (shm_duplex.hpp).
#include "sim/shm_duplex.hpp"

#include <algorithm>
#include <limits>

namespace gradsync::sim {
namespace {

std::size_t pos_of(const RingChannel& rc, int rank) {
  for (std::size_t i = 0; i < rc.order.size(); ++i)
    if (rc.order[i] == rank) return i;
  return 0;
}

}  // namespace

double shm_duplex_cap_Bps(const Channels& ch, Collective coll, Algorithm alg, int root) {
  double cap = std::numeric_limits<double>::infinity();
  if (alg == Algorithm::kNvls || alg == Algorithm::kNvlsTree) return cap;
  const bool chain = coll == Collective::kBroadcast || coll == Collective::kReduce;
  for (const RingChannel& rc : ch.rings) {
    const std::size_t n = rc.hops.size();
    if (n == 0) continue;
    if (alg == Algorithm::kTree) {
      for (const Hop& h : rc.hops) cap = std::min(cap, h.duplex_cap_Bps);
      continue;
    }
    // The chain starts at the root (broadcast) or after it (reduce) and ends one short of it.
    const std::size_t first =
        chain ? (coll == Collective::kBroadcast ? pos_of(rc, root) : (pos_of(rc, root) + 1) % n) : 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (chain) {
        const std::size_t from_first = (i + n - first) % n;
        if (from_first == 0 || from_first + 1 >= n) continue;  // the chain's ends move one way
      }
      // Member i receives over hop i-1 and sends over hop i (hops[i]: order[i] -> order[i+1]).
      cap = std::min(cap, std::max(rc.hops[(i + n - 1) % n].duplex_cap_Bps, rc.hops[i].duplex_cap_Bps));
    }
  }
  return cap;
}

}  // namespace gradsync::sim
