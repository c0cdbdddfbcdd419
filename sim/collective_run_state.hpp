// collective_run_state.hpp: CollectiveRun's inside, shared by its three files:
// collective_run.cpp (the call: NCCL's handshakes and latency, then step or aggregate fidelity;
// ring steps), collectives/aggregate.cpp (aggregate fidelity: one flow per member, channel and
// phase, solved across machines) and collectives/step.cpp (step fidelity: pipelined chains and
// trees chunk by chunk). Private to sim/.
#pragma once

#include <simgrid/s4u.hpp>
#include <simgrid/s4u/Link.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "sim/collective_run.hpp"
#include "sim/collectives/nvls.hpp"
#include "sim/shm_duplex.hpp"
#include "sim/sync.hpp"

namespace gradsync::sim {

struct CollectiveRun::State {
  CollectiveLinks links_;
  Collective coll;
  double bytes_ = 0;
  int root = -1;
  int k = 0;
  CollectiveChoice choice;
  Fidelity fidelity = Fidelity::kStep;
  Counter finished;           // aggregate: members whose flows are done
  std::vector<Counter> recv;  // by (channel, rank): chunks arrived (ring: channel 0 counts all); tree: going up
  std::vector<Counter> down;  // by (channel, rank): tree chunks arrived going down

  State(CollectiveLinks l, Collective c, Bytes b, int r, int members, CollectiveChoice ch, Fidelity f)
      : links_(std::move(l)),
        coll(c),
        bytes_(static_cast<double>(b)),
        root(r),
        k(members),
        choice(ch),
        fidelity(f),
        recv(f == Fidelity::kStep
                 ? static_cast<std::size_t>(members) * std::max<std::size_t>(1, links_.channels->rings.size())
                 : 0),
        down(f == Fidelity::kStep
                 ? static_cast<std::size_t>(members) * std::max<std::size_t>(1, links_.channels->rings.size())
                 : 0) {
    for (const RingChannel& rc : links_.channels->rings) {
      std::vector<int> p(static_cast<std::size_t>(members), 0);
      for (std::size_t i = 0; i < rc.order.size(); ++i) p[static_cast<std::size_t>(rc.order[i])] = static_cast<int>(i);
      pos_.push_back(std::move(p));
      if (choice.algorithm != Algorithm::kTree) continue;
      std::vector<std::pair<int, int>> w(static_cast<std::size_t>(members), {-1, -1});
      for (std::size_t nd = 0; nd < rc.chains.size(); ++nd)
        for (std::size_t at = 0; at < rc.chains[nd].size(); ++at)
          w[static_cast<std::size_t>(rc.chains[nd][at])] = {static_cast<int>(nd), static_cast<int>(at)};
      where_.push_back(std::move(w));
    }
    // NVLS has no steps at either fidelity (one flow each way per member): across machines it is
    // solved like an aggregate call.
    if (fidelity == Fidelity::kAggregate || nvls()) {
      find_repeats();
      for (int m = 1; m < k && links_.fluid && !solved_; ++m) solved_ = !same_machine(0, m);
      if (solved_) joined_at_.assign(static_cast<std::size_t>(k), 0.0);
    }
    // The fastest a channel may go in NCCL's own search (search.cc: the first of the speed array
    // for the GPUs' generation, intra-node or across nodes; topologies/nccl_graphs.cpp).
    if (links_.channels && links_.channels->sm_version > 0) {
      const std::vector<double> speeds = nccl_speeds(links_.channels->nodes() > 1, links_.channels->sm_version);
      if (!speeds.empty()) channel_cap_ = speeds.front();
    }
    // A GPU that both sends and receives through host memory moves at most its SHM duplex rate
    // each way, all channels together (Hop::duplex_cap_Bps, kShmDuplexBps): NCCL's channels cross
    // every member, so each gets its share.
    if (links_.channels && C() > 0) channel_cap_ = std::min(channel_cap_, duplex_cap_Bps() / static_cast<double>(C()));
  }

  double duplex_cap_Bps() const { return shm_duplex_cap_Bps(*links_.channels, coll, choice.algorithm, root); }

  // find_repeats: the channels aggregate fidelity runs (reps_), one of each set of channels with
  // the same ring (and, for trees, the same tree: c mod 2), each carrying mult_ channels' bytes,
  // when every set has the same size; otherwise every channel, mult_ 1.
  void find_repeats();
  std::vector<std::size_t> reps_;                        // aggregate: the channels run
  double mult_ = 1;                                      // aggregate: channels' bytes each of them carries
  std::vector<std::vector<std::pair<int, int>>> where_;  // tree: per channel, per rank: (node, place in chain)

  sg4::CommPtr send(int from, int to, double bytes, double wire) { return links_.send(from, to, bytes, wire); }
  static constexpr double kUncapped = std::numeric_limits<double>::infinity();
  // channel_rate: the wire rate one ring channel's flow may reach, however fast its links: one
  // block moves a channel's data, and NCCL's search never plans a channel faster than its speed
  // array's first entry (40 GB/s before Hopper, 60 on Hopper, 90 on Blackwell inside a node; 48,
  // 48, 96 across nodes), in wire bytes (a protocol's flags ride at that speed too). The channel
  // speed NCCL's graph settles on (Channels::channel_bw_Bps) is a plan, not a ceiling: two GeForce
  // GPUs broadcast through host memory at 11 GB/s where NCCL plans one channel of 5, and 8 H100s
  // ring-allreduce at 368 GB/s over 12 channels planned at 30. A flow that carries `channels`
  // channels may reach as many times that. SimGrid 3.32
  // drops a host-to-host comm's rate and a mailbox comm's whose receive came first, so the
  // engine keeps the cap itself, alike at every fidelity: a flow ends no sooner than its first
  // byte's arrival (the route latency) and then its wire bytes at this rate (capped_end).
  double channel_rate(double channels = 1) const { return channel_cap_ * channels; }
  double channel_cap_ = kUncapped;
  // capped_end: when a flow of `wire` bytes started at `start` may end at `rate` at most.
  static double capped_end(double start, double wire, double rate) {
    return std::isfinite(rate) && rate > 0 ? start + wire / rate : start;
  }

  std::size_t C() const { return links_.channels->rings.size(); }
  const RingChannel& ring(std::size_t c) const { return links_.channels->rings[c]; }
  std::vector<std::vector<int>> pos_;  // per channel, per rank: its place in the ring's order
  int pos(std::size_t c, int r) const { return pos_[c][static_cast<std::size_t>(r)]; }
  int next(std::size_t c, int r) const;
  double hop_latency(PathClass pc) const { return hop_latency_s(hop_kind(pc), choice.algorithm, choice.protocol); }
  double out_latency(std::size_t c, int r) const {
    return hop_latency(ring(c).hops[static_cast<std::size_t>(pos(c, r))].route.path_class);
  }

  // ring_step_latency: a ring step's share of NCCL's latency beyond its base: per step the hop's
  // hwLat inside a node; across nodes NCCL's weighting of network steps (and its 1.4x plateau),
  // so that an uncontended ring takes the model's latency plus its routes'.
  double ring_step_latency(int steps) const {
    return (choice.latency_s - base_latency_s(choice.algorithm, choice.protocol)) / steps;
  }

  bool nvls() const { return choice.algorithm == Algorithm::kNvls || choice.algorithm == Algorithm::kNvlsTree; }
  // mirrored: the members `me` stands for (CollectiveLinks::mirrors).
  const std::vector<int>& mirrored(int me) const {
    static const std::vector<int> kNone;
    return links_.mirrors && !links_.mirrors->empty() ? (*links_.mirrors)[static_cast<std::size_t>(me)] : kNone;
  }
  NvlsNodes nvls_nodes_;  // aggregate NVLS: the members by node, found by the first plan of the call

  void run(int me);

  // Ring steps: each step every member sends one chunk per channel to its ring successor and
  // goes on once its own sends are done and its predecessors' chunks of that step arrived.
  void ring_steps(int me, int steps, double chunk);

  // ---- Aggregate fidelity -------------------------------------------------------------------

  // whole_wire: a flow's wire bytes as put and record count them (whole, at least one).
  static double whole_wire(double wire) { return std::max(1.0, std::ceil(wire - 1e-9)); }
  // whole: the wire bytes a step or chunk of `payload` puts on the wire (whole bytes, at least
  // one, as send() rounds each step fidelity flow).
  double whole(double payload) const { return std::max(1.0, std::ceil(payload * choice.wire_bytes_per_byte() - 1e-9)); }
  // Pipeline of `chunks` chunks of the protocol's size over `per_channel_bytes`.
  long chunk_count(double per_channel_bytes) const {
    return std::max(1L, static_cast<long>(std::ceil(per_channel_bytes / chunk_bytes(choice.protocol))));
  }
  double chunk_wire(double per_channel_bytes) const;
  // LinkShares: per link, how many flows (or channels' first chunks) share it at once.
  using LinkShares = std::unordered_map<const simgrid::s4u::Link*, double>;
  // shared_rate: the rate of a flow along `route` when each of its links is shared `share` ways
  // (1 where not listed; a FATPIPE link never shared): the least link bandwidth over its share.
  static double shared_rate(const std::vector<simgrid::s4u::Link*>& route, const LinkShares& share);
  // Busy: a hop's links busy over [start, end), counting `weight` channels (a represented
  // channel stands for mult_ alike).
  struct Busy {
    const std::vector<simgrid::s4u::Link*>* route;
    double start, end, weight;
  };
  // overlaps: for each hop, on each shared link it crosses, the weight of the hops busy on that
  // link at the same time as it (itself included: at least its own weight).
  static std::vector<LinkShares> overlaps(const std::vector<Busy>& busy);
  // kFillPasses: the passes that find a pipeline's times and sharing together (times from shares,
  // shares from the times' overlaps), from every link unshared.
  static constexpr int kFillPasses = 3;
  // chunk_time: one chunk of a pipeline over the hop a -> b (the fill of a chain or tree is this
  // once per hop of its depth): the hop latency, the route's, and the chunk at the route's links
  // shared `share` ways (chain_offsets, tree_offsets: by the channels' first chunks on those links
  // at the same time; every channel orders its chain or tree its own way, so they are seldom all
  // on one link at once). A chain's chunk also takes at least its wire at the channel's rate, as
  // step fidelity's does (a tree's is not capped there). Until 2026-11-29 every channel was
  // counted on every hop inside a machine (across machines, the channels over the NICs) and the
  // chain's channel rate was left out: on two DGX A100s aggregate trees came out 1.7 to 2.4
  // times step's, chains 13% to 41% long from 2 to 128 DGX A100s.
  double chunk_time(int a, int b, double per_channel_bytes, const LinkShares& share) const;

  struct Flow {
    int to;
    double payload;
    double wire;
    double start = 0;        // after the phase began
    bool local = false;      // a tree hop inside a machine: a candidate for closed form (plan), then
                             // timed in closed form (local_hops)
    double duration = 0;     // closed form: from start to its end
    bool direct = false;     // along the GPUs' own route (CollectiveLinks::direct_*): NVLS's multicast
    double cap = kUncapped;  // wire bytes/s at most (channel_rate of the channels it carries)
  };
  // route_of, latency_of: the links and latency of member r's flow f.
  const std::vector<simgrid::s4u::Link*>& route_of(int r, const Flow& f) const {
    return f.direct ? links_.direct_route(r, f.to) : links_.route(r, f.to);
  }
  double latency_of(int r, const Flow& f) const {
    return f.direct ? links_.direct_latency(r, f.to) : links_.latency(r, f.to);
  }
  // phase: member me's flows of one phase, each started at its time (ring: all together) once
  // its receiver has joined; me receives its incoming flows and then waits for every member's.
  void phase(int me, std::vector<Flow> flows);

  // aggregate: the first member to arrive plans every member's flows (and so how many each
  // receives); each then runs its own. A call across machines is solved instead (solve_call).
  void aggregate(int me);
  std::vector<std::vector<Flow>> plans_;  // aggregate: per member, its flows

  // solve_call (aggregate fidelity across machines, once every member has joined): when the
  // call ends, from the group's SolvedCalls when a call alike was solved before. Every member's flows are planned as
  // phase() would run them: a flow starts at its sender's join plus its offset, or when its receiver joins if later,
  // pays its route's latency and then shares links with the call's other flows by max-min (sim/fluid.hpp, SimGrid's
  // sharing without a SimGrid activity per flow); a tree's hops inside a machine that no flow
  // crosses keep their closed form. Their bytes are counted as put counts a flow's. The call ends
  // for every member when its last flow or hop does, as phase()'s barrier makes it.
  double solve_call();
  bool solved_ = false;            // aggregate across machines: solve_call
  std::vector<double> joined_at_;  // solved: per member, when it joined
  int joined_ = 0;                 // solved: members joined
  Counter all_joined_;             // solved: the same, waited on
  double end_ = 0;                 // solved: when the call ends
  std::vector<int> incoming_;      // aggregate: per member, the flows it receives

  // local_hops times in closed form the candidate hops (inside a machine) whose links no flow
  // crosses (a candidate that shares a link with a flow, or with a candidate that became one,
  // stays a flow): each gets, on every link it crosses, the link's bandwidth divided among the
  // call's closed-form hops crossing it, and the least of those.
  void local_hops();

  std::vector<Flow> plan(int me);

  // Ring: `steps` steps of `chunk` per channel become one flow per channel of steps x chunk;
  // the hop latency of every step and the route latency of all but the last are slept first.
  std::vector<Flow> aggregate_ring(int me, int steps, double chunk);

  // A pipeline's hop moves its J chunks in one flow; it starts when the hop's first chunk would
  // (the chunk times of the hops before it: the fill) plus the J hop and J-1 route latencies the
  // chunks would pay, so that it ends when its last chunk would. Each flow is busy only while
  // its hop of the pipeline is, as at step fidelity.
  double pipeline_pause(double J, double hop_latency_s, double route_s) const {
    return J * hop_latency_s + (J - 1) * route_s;
  }

  // Chain (broadcast, reduce): along each channel's chain from its first member.
  std::vector<Flow> aggregate_chain(int me);

  // chain_offsets: per channel and rank, when its first chunk leaves (found once per call).
  void chain_offsets(double per_channel);
  std::vector<std::vector<double>> offset_;  // aggregate: per channel, per rank: chain or tree-up start
  std::vector<std::vector<double>> down_;    // aggregate tree: per channel, per rank: tree-down start
  struct TreeLinks;
  std::vector<TreeLinks> trees_;  // aggregate tree: per rank, its parent and children per channel

  // Tree: per channel, the up flow to the parent starts when the first chunk of every child has
  // arrived, the down flows to the children when the first chunk came down (or, at the root,
  // was reduced).
  std::vector<Flow> aggregate_tree(int me);

  // tree_offsets: per channel, every rank's up start (the longest chunk-time path up from a leaf
  // below it) and down start (the root's up start plus the chunk times down to the rank).
  void tree_offsets(double per_channel);

  // ---- Step fidelity ------------------------------------------------------------------------

  // Pipelined chain along each channel's ring: broadcast from the root, reduce towards it. Each
  // channel progresses on its own (an actor per channel): tying channels together deadlocks,
  // since a rank sits at different places of different chains.
  Counter& arrivals(std::size_t c, int r) {
    return recv[c * static_cast<std::size_t>(k) + static_cast<std::size_t>(r)];
  }
  Counter& arrivals_down(std::size_t c, int r) {
    return down[c * static_cast<std::size_t>(k) + static_cast<std::size_t>(r)];
  }

  // per_channel runs body(c) for every channel concurrently and waits for all of them.
  template <class F>
  void per_channel(F body) {
    std::vector<sg4::ActorPtr> actors;
    for (std::size_t c = 1; c < C(); ++c) {
      actors.push_back(sg4::Actor::create(fmt::format("ch{}", c), sg4::this_actor::get_host(),
                                          links_.guard([&body, c] { body(c); })));
    }
    body(0);
    for (auto& a : actors) a->join();
  }

  void chain(int me);

  // Tree allreduce: per channel a tree of ranks (NCCL's double binary tree over nodes, channel c
  // on tree c mod 2, a chain inside each node); chunks go up reduced and come down broadcast.
  struct TreeLinks {
    std::vector<int> parent;                 // per channel, -1 at the root
    std::vector<std::vector<int>> children;  // per channel
  };
  TreeLinks tree_links(int me) const;
  bool same_machine(int a, int b) const { return links_.topo->host_of(a) == links_.topo->host_of(b); }
  double link_latency(int a, int b) const {
    return hop_latency(same_machine(a, b) ? links_.channels->intra_class : PathClass::kNET);
  }

  void tree(int me);
};

}  // namespace gradsync::sim
