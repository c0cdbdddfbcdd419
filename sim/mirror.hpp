// mirror.hpp (internal to sim/): DDP runs whose ranks are alike, simulated one rank of each kind.
//
// On a cluster of identical machines every DDP rank computes the same, copies its batch over the
// same kind of path and, in the world group's calls across machines (solved: every member ends
// when the call does, sim/collective_run.hpp), joins and ends with the others. Rank r of every
// machine from the third to the last but one then lives the same timeline as rank r of the
// second, which is simulated with the first and the last (in DDP's broadcasts the first holds
// rank 0, the root, which only sends, and the last the rings' ends, which only receive; until
// 2026-12-02 the first machine stood for every other, and a broadcast long enough to overlap
// compute made every run of many machines fall back to every rank); the
// world group's calls are still planned and solved over every member and link, and the mirrors'
// copies still run beside their rank's (SimOptions::mirrors). Where a mirror's part would differ
// the cluster throws MirrorBroken, and simulate() runs every rank (simulate.cpp).
#pragma once

#include <memory>
#include <vector>

#include "core/trace.hpp"
#include "sim/resolved.hpp"

namespace gradsync::sim {

// mirror_plan: per rank, the ranks it stands for (SimOptions::mirrors), or empty when the run is
// not one to mirror: DDP on four or more machines of the same GPU, holding the same number of
// ranks, without a calibration, with solved calls (fluid) of aggregate fidelity, or auto where
// every call but NVLS's (solved at either fidelity) would be aggregate: (k - 1) x channels flows,
// the fewest any call makes at step fidelity, above kAutoAggregateFlows.
// `channels`, when given, receives NCCL's channels over every rank if the plan searched them (the
// cluster takes them: SimOptions::world_channels).
std::vector<std::vector<int>> mirror_plan(const ResolvedScenario& r, Strategy strategy, bool fluid,
                                          std::shared_ptr<const Channels>* channels = nullptr);

// mirror_events: each event of a rank standing for others, repeated for each of them in `ranks`
// (sorted; rank changed) right after it: the trace those ranks would have written.
void mirror_events(Trace& trace, const std::vector<std::vector<int>>& mirrors, const std::vector<int>& ranks);

}  // namespace gradsync::sim
