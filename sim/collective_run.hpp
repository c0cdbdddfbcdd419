// collective_run.hpp: NCCL's collective algorithms as SimGrid flows among the members of one
// collective call, at step or aggregate fidelity (inside sim/; SimCluster creates one per call).
//
//   CollectiveRun run(links, Collective::kAllreduce, bytes, /*root=*/-1, /*members=*/8, choice, Fidelity::kStep);
//   run.run(me);   // on member me's comm-stream actor; returns when me's part is done
//
// Algorithms (sim/README.md, "How a simulated step runs"): ring steps for allreduce,
// reduce-scatter and allgather; NCCL's pipelined chain along each channel's ring for broadcast
// and reduce; the double binary tree (a chain inside each node) for allreduce across nodes. Each
// member sleeps NCCL's base latency once and each hop's latency before its flow.
#pragma once

#include <simgrid/s4u/Comm.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "sim/nccl_model.hpp"
#include "topologies/channels.hpp"
#include "topologies/topology.hpp"

namespace gradsync::sim {

// SolvedCalls: the results of one group's solved calls (aggregate fidelity across machines),
// which the group keeps (sim/cluster.cpp) so that a call alike takes the first one's result
// rather than being planned and solved again: DDP reduces buckets of the same size every
// iteration. A solved call's times depend only on its collective, size, root, algorithm and
// protocol, on the group's channels and links (fixed), and on when each member joined relative
// to the first; its bytes on nothing else. The kCapacity results used last are kept (memory
// stays bounded when sizes or join patterns keep changing).
class SolvedCalls {
 public:
  static constexpr std::size_t kCapacity = 32;
  struct Result {
    double span = 0;                                                 // from the first member's join to the call's end
    std::vector<double> out, in;                                     // per member: payload bytes sent and received
    std::vector<std::pair<const simgrid::s4u::Link*, double>> wire;  // per link direction: wire bytes
    // link_ids: the cluster's dense id of each of wire's links (filled on first use, for a call
    // alike to count its bytes without looking every link up again).
    mutable std::vector<std::uint32_t> link_ids;
  };
  struct Key {
    Collective coll;
    double bytes;
    int root;
    Algorithm algorithm;
    Protocol protocol;
    std::vector<double> joined;  // each member's join after the first's
    bool operator<(const Key& o) const {
      return std::tie(coll, bytes, root, algorithm, protocol, joined) <
             std::tie(o.coll, o.bytes, o.root, o.algorithm, o.protocol, o.joined);
    }
  };
  // find: the result of a call alike, or null.
  const Result* find(const Key& key) {
    const auto it = results_.find(key);
    if (it == results_.end()) return nullptr;
    it->second.used = ++clock_;
    return &it->second.result;
  }
  // add keeps a result, dropping the one used longest ago when kCapacity are kept.
  void add(Key key, Result result) {
    if (results_.size() >= kCapacity) {
      auto oldest = results_.begin();
      for (auto it = results_.begin(); it != results_.end(); ++it)
        if (it->second.used < oldest->second.used) oldest = it;
      results_.erase(oldest);
    }
    results_.emplace(std::move(key), Kept{std::move(result), ++clock_});
  }
  std::size_t size() const { return results_.size(); }

 private:
  struct Kept {
    Result result;
    std::uint64_t used = 0;  // clock_ when last found or added
  };
  std::map<Key, Kept> results_;
  std::uint64_t clock_ = 0;
};

// CollectiveLinks: what the algorithms need from the cluster.
struct CollectiveLinks {
  const Topology* topo = nullptr;
  const Channels* channels = nullptr;  // rings and trees over members 0..k-1 (= ranks)
  // send starts a flow of `wire` bytes carrying `bytes` of payload from one member to another
  // (step fidelity: a host-to-host communication, flowing at once).
  std::function<simgrid::s4u::CommPtr(int from, int to, double bytes, double wire)> send;
  // put and receive (aggregate fidelity): the same flow as a mailbox communication from the
  // calling actor (member `from`'s) to member `to`'s inbox, flowing once `to` has posted a
  // receive from its own actor. SimGrid 3.32 keeps every host-to-host communication in one
  // engine-wide list that it scans when each ends (O(flows) per flow: minutes at 1024 GPUs);
  // mailbox communications are listed only by their two actors.
  std::function<simgrid::s4u::CommPtr(int from, int to, double bytes, double wire)> put;
  std::function<simgrid::s4u::CommPtr(int me)> receive;
  // guard wraps the body of a helper actor (per-channel and tree actors) so that its errors
  // reach the cluster.
  std::function<std::function<void()>(std::function<void()>)> guard;
  // latency: the route latency between two members (what a flow between them pays once);
  // bandwidth: the route's bottleneck, bytes/s per direction.
  std::function<double(int from, int to)> latency;
  std::function<double(int from, int to)> bandwidth;
  // route: the link directions a flow between two members crosses (closed-form tree hops and
  // solved calls); record counts a closed-form hop's payload and wire bytes as put does a flow's.
  std::function<const std::vector<simgrid::s4u::Link*>&(int from, int to)> route;
  std::function<void(int from, int to, double bytes, double wire)> record;
  // direct_*: the same between the two GPUs themselves, along the topology's route (NVLink through
  // the NVSwitch), whatever transport NCCL's P2P, SHM and NET rules pick for the pair: the path
  // of NVLS's multicast memory, which NCCL_P2P_DISABLE does not divert through the CPU (paths.cc
  // reroutes GPU-to-GPU paths only; the NVLS graph follows the GPUs' paths to the NVSwitch).
  // direct_send starts such a flow (a host-to-host communication, counted as `record` counts).
  std::function<simgrid::s4u::CommPtr(int from, int to, double bytes, double wire)> direct_send;
  std::function<double(int from, int to)> direct_latency;
  std::function<double(int from, int to)> direct_bandwidth;
  std::function<const std::vector<simgrid::s4u::Link*>&(int from, int to)> direct_route;
  // record_totals counts a solved call's bytes (per member and per link direction, as record
  // would flow by flow), when it is solved and again when a later call alike takes its result.
  std::function<void(const SolvedCalls::Result&)> record_totals;
  // fluid: solve an aggregate call across machines (sim/fluid.hpp) rather than run its flows;
  // solved: where the group keeps its solved calls' results (none: every call is solved).
  bool fluid = true;
  SolvedCalls* solved = nullptr;
  // mirrors: per member, the members it stands for (SimOptions::mirrors; null or empty: none).
  // They join when it does and end when the call does; only a solved call can have them.
  const std::vector<std::vector<int>>* mirrors = nullptr;
};

// MirrorBroken: a run with mirrors (SimOptions::mirrors, CollectiveLinks::mirrors) found a rank
// whose part would differ from the part of the rank standing for it; the run is to be repeated
// without mirrors.
class MirrorBroken : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

// Fidelity: how finely a collective becomes flows.
//   kStep       every ring step and pipeline chunk is its own flow per channel;
//   kAggregate  each phase is one flow per member and channel carrying the phase's total bytes
//               (whole bytes of every step or chunk), all of a member's flows of a phase started
//               together after the hop latencies the steps would have slept (and the route
//               latencies of all but the last, which the flow pays), the pipeline's fill added
//               explicitly for chains and trees; the collective ends for every member when every
//               member's flows are done, as the ring's lock step does. Flows still share links
//               through SimGrid. Exact on an uncontended ring. A member's flows start once
//               their receivers have joined the phase (NCCL cannot send into a peer that has not
//               posted its buffers). Channels that repeat another's ring (NCCL duplicates rings)
//               run as that channel's flows with their bytes added when every ring repeats
//               equally often: under max-min sharing m equal flows on one route end when one
//               flow of m times the bytes does, as long as every flow sharing their links is
//               multiplied alike. A tree's hops inside a machine (NVLink chains) are timed in
//               closed form rather than as flows when no flow of the call that leaves the
//               machine crosses their links: each ends its route latency plus its wire bytes at
//               the rate max-min gives when every such hop of the call shares those links at once
//               (the pipeline's steady state), after it would have started. Their bytes are
//               counted as a flow's; the call ends when the last flow or hop does. This leaves
//               the flows that cross the network (an eighth at 8 GPUs per machine). A call whose
//               members span machines (CollectiveLinks::fluid) does not run those as SimGrid
//               flows: once every member has joined, their ends are solved (sim/fluid.hpp:
//               SimGrid's CM02 sharing, equal to its flows to 1e-9 in the tests) and every member
//               sleeps until the last. Traffic outside the call does not share links with it.
//   kAuto       (a request, SimOptions) aggregate for a call whose step fidelity would issue more
//               than kAutoAggregateFlows flows, or whose flows would take the iteration's calls at
//               step fidelity past kAutoIterationFlows; step otherwise. The iteration's budget
//               keeps many mid-sized calls from costing what one large call may not (Tree across
//               two DGX H100 nodes: 38 calls of about 2,300 flows each, 86,000 flows an iteration,
//               4.4x the default's simulation time); calls are counted in the order they start,
//               which the scenario alone decides.
enum class Fidelity { kStep, kAggregate, kAuto };
inline constexpr double kAutoAggregateFlows = 4000;
inline constexpr double kAutoIterationFlows = 20000;
// kAggregateBound: what aggregate fidelity is stated to keep to, relative to step fidelity: the
// steady iteration time, on contended fabrics too (oversubscribed spines, NICs shared by
// channels); tests/sim/fidelity_test.cpp checks it. A ring collective agrees to 1e-6 when
// uncontended. Under contention single collectives can differ by more (a ring's lock step and
// a pipeline's chunk-by-chunk sharing are not simulated; a tree's or chain's fill is estimated
// from the routes' bottlenecks), while the iteration, where they overlap compute, keeps within.
inline constexpr double kAggregateBound = 0.05;

// parse_fidelity: "step", "aggregate" or "auto"; nullopt otherwise.
std::optional<Fidelity> parse_fidelity(std::string_view s);
std::string_view fidelity_name(Fidelity f);

// step_flows: how many flows a call issues at step fidelity (what --fidelity auto weighs).
double step_flows(Collective c, double bytes, int members, std::size_t channels, const CollectiveChoice& choice);

class CollectiveRun {
 public:
  CollectiveRun(CollectiveLinks links, Collective c, Bytes bytes, int root, int members, CollectiveChoice choice,
                Fidelity fidelity);
  ~CollectiveRun();
  CollectiveRun(const CollectiveRun&) = delete;
  CollectiveRun& operator=(const CollectiveRun&) = delete;

  // run does member `me`'s part of the collective, blocking the calling actor until it is done
  // (every chunk it sends sent, every chunk it expects arrived).
  void run(int me);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace gradsync::sim
