// collective_run.cpp: ring steps, pipelined chains and trees as flows, with arrival counters.
#include "sim/collective_run.hpp"

#include <simgrid/s4u.hpp>
#include <simgrid/s4u/Link.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sim/collectives/nvls.hpp"
#include "sim/fluid.hpp"
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
    if (fidelity == Fidelity::kAggregate) {
      find_repeats();
      for (int m = 1; m < k && links_.fluid && !solved_; ++m) solved_ = !same_machine(0, m);
      if (solved_) joined_at_.assign(static_cast<std::size_t>(k), 0.0);
    }
  }

  // find_repeats: the channels aggregate fidelity runs (reps_), one of each set of channels with
  // the same ring (and, for trees, the same tree: c mod 2), each carrying mult_ channels' bytes,
  // when every set has the same size; otherwise every channel, mult_ 1.
  void find_repeats() {
    const bool trees = choice.algorithm == Algorithm::kTree;
    const auto same = [&](std::size_t a, std::size_t b) {
      return (!trees || a % 2 == b % 2) && ring(a).order == ring(b).order && ring(a).chains == ring(b).chains;
    };
    std::vector<std::size_t> reps, size;
    for (std::size_t c = 0; c < C(); ++c) {
      std::size_t i = 0;
      while (i < reps.size() && !same(reps[i], c)) ++i;
      if (i == reps.size()) {
        reps.push_back(c);
        size.push_back(0);
      }
      ++size[i];
    }
    const bool even = std::all_of(size.begin(), size.end(), [&](std::size_t n) { return n == size.front(); });
    if (even && !reps.empty()) {
      reps_ = std::move(reps);
      mult_ = static_cast<double>(size.front());
    } else {
      for (std::size_t c = 0; c < C(); ++c) reps_.push_back(c);
      mult_ = 1;
    }
  }
  std::vector<std::size_t> reps_;                        // aggregate: the channels run
  double mult_ = 1;                                      // aggregate: channels' bytes each of them carries
  std::vector<std::vector<std::pair<int, int>>> where_;  // tree: per channel, per rank: (node, place in chain)

  sg4::CommPtr send(int from, int to, double bytes, double wire) { return links_.send(from, to, bytes, wire); }

  std::size_t C() const { return links_.channels->rings.size(); }
  const RingChannel& ring(std::size_t c) const { return links_.channels->rings[c]; }
  std::vector<std::vector<int>> pos_;  // per channel, per rank: its place in the ring's order
  int pos(std::size_t c, int r) const { return pos_[c][static_cast<std::size_t>(r)]; }
  int next(std::size_t c, int r) const {
    const auto& o = ring(c).order;
    return o[static_cast<std::size_t>((pos(c, r) + 1) % k)];
  }
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

  void run(int me) {
    if (k <= 1) return;
    // The handshakes NCCL's chunking adds to its model (sim/nccl_model.hpp pipeline_sync_s).
    sleep_for(choice.sync_s);
    if (nvls()) {
      // NVLS has no steps: its latency (NCCL's model), then every member's flows at once.
      sleep_for(choice.latency_s);
      aggregate(me);
      return;
    }
    sleep_for(base_latency_s(choice.algorithm, choice.protocol));
    const auto S = bytes_;
    const auto channels = static_cast<double>(C());
    if (fidelity == Fidelity::kAggregate) {
      aggregate(me);
      return;
    }
    switch (coll) {
      case Collective::kAllreduce:
        if (choice.algorithm == Algorithm::kTree) {
          tree(me);
        } else {
          ring_steps(me, 2 * (k - 1), S / (k * channels));
        }
        break;
      case Collective::kReduceScatter:
        ring_steps(me, k - 1, S / (k * channels));
        break;
      case Collective::kAllgather:
        ring_steps(me, k - 1, S / channels);
        break;
      case Collective::kBroadcast:
      case Collective::kReduce:
        chain(me);
        break;
    }
  }

  // Ring steps: each step every member sends one chunk per channel to its ring successor and
  // goes on once its own sends are done and its predecessors' chunks of that step arrived.
  void ring_steps(int me, int steps, double chunk) {
    const double wire = chunk * wire_factor(choice.protocol);
    const double lat = ring_step_latency(steps);
    std::vector<sg4::CommPtr> comms(C());
    std::vector<int> to(C());
    for (std::size_t c = 0; c < C(); ++c) to[c] = next(c, me);
    for (int s = 0; s < steps; ++s) {
      sleep_for(lat);
      for (std::size_t c = 0; c < C(); ++c) comms[c] = send(me, to[c], chunk, wire);
      for (auto& cm : comms) cm->wait();
      for (std::size_t c = 0; c < C(); ++c) recv[static_cast<std::size_t>(to[c])].add(1);
      recv[static_cast<std::size_t>(me)].wait_at_least(static_cast<long>(C()) * (s + 1));
    }
  }

  // ---- Aggregate fidelity -------------------------------------------------------------------

  // whole_wire: a flow's wire bytes as put and record count them (whole, at least one).
  static double whole_wire(double wire) { return std::max(1.0, std::ceil(wire - 1e-9)); }
  // whole: the wire bytes a step or chunk of `payload` puts on the wire (whole bytes, at least
  // one, as send() rounds each step fidelity flow).
  double whole(double payload) const { return std::max(1.0, std::ceil(payload * wire_factor(choice.protocol) - 1e-9)); }
  // Pipeline of `chunks` chunks of the protocol's size over `per_channel_bytes`.
  long chunk_count(double per_channel_bytes) const {
    return std::max(1L, static_cast<long>(std::ceil(per_channel_bytes / chunk_bytes(choice.protocol))));
  }
  double chunk_wire(double per_channel_bytes) const {
    const double cb = chunk_bytes(choice.protocol);
    const long n = chunk_count(per_channel_bytes);
    const double last = per_channel_bytes - static_cast<double>(n - 1) * cb;
    return static_cast<double>(n - 1) * whole(cb) + whole(last);
  }
  // chunk_time: one chunk of a pipeline over the hop a -> b (the fill of a chain or tree is this
  // once per hop of its depth): the hop latency, the route's, and the chunk at the route's
  // bottleneck shared by the channels that cross it (inside a machine every channel passes every
  // GPU; across machines the channels are spread over the NICs).
  double chunk_time(int a, int b, double per_channel_bytes) const {
    const bool net = !same_machine(a, b);
    const double cb = std::min(chunk_bytes(choice.protocol), per_channel_bytes);
    const double sharing =
        net ? std::max(1.0, static_cast<double>(C()) / static_cast<double>(nics_per_node())) : static_cast<double>(C());
    const double bw = links_.bandwidth(a, b) / sharing;
    return hop_latency(net ? PathClass::kNET : links_.channels->intra_class) + links_.latency(a, b) + whole(cb) / bw;
  }
  std::size_t nics_per_node() const {
    std::vector<VertexId> nics;
    for (const RingChannel& rc : links_.channels->rings)
      if (!rc.nics.empty() && std::find(nics.begin(), nics.end(), rc.nics.front()) == nics.end())
        nics.push_back(rc.nics.front());
    return std::max<std::size_t>(1, nics.size());
  }

  struct Flow {
    int to;
    double payload;
    double wire;
    double start = 0;     // after the phase began
    bool local = false;   // a tree hop inside a machine: a candidate for closed form (plan), then
                          // timed in closed form (local_hops)
    double duration = 0;  // closed form: from start to its end
  };
  // phase: member me's flows of one phase, each started at its time (ring: all together) once
  // its receiver has joined; me receives its incoming flows and then waits for every member's.
  void phase(int me, std::vector<Flow> flows) {
    std::stable_sort(flows.begin(), flows.end(), [](const Flow& a, const Flow& b) { return a.start < b.start; });
    const double t0 = sg4::Engine::get_clock();
    std::vector<sg4::CommPtr> comms;
    const int in = incoming_[static_cast<std::size_t>(me)];
    comms.reserve(flows.size() + static_cast<std::size_t>(in));
    for (int i = 0; i < in; ++i) comms.push_back(links_.receive(me));
    double hops_end = 0;  // when the last of me's closed-form hops ends
    for (const Flow& f : flows) {
      if (f.local) {
        links_.record(me, f.to, f.payload, f.wire);
        hops_end = std::max(hops_end, f.start + f.duration);
        continue;
      }
      sleep_for(t0 + f.start - sg4::Engine::get_clock());
      comms.push_back(links_.put(me, f.to, f.payload, f.wire));
    }
    for (auto& cm : comms) cm->wait();
    sleep_for(t0 + hops_end - sg4::Engine::get_clock());
    finished.add(1);
    finished.wait_at_least(k);
  }

  // aggregate: the first member to arrive plans every member's flows (and so how many each
  // receives); each then runs its own. A call across machines is solved instead (solve_call).
  void aggregate(int me) {
    if (solved_) {
      joined_at_[static_cast<std::size_t>(me)] = sg4::Engine::get_clock();
      if (++joined_ == k) end_ = solve_call();
      all_joined_.add(1);
      all_joined_.wait_at_least(k);
      sleep_for(end_ - sg4::Engine::get_clock());
      return;
    }
    if (plans_.empty()) {
      plans_.resize(static_cast<std::size_t>(k));
      incoming_.assign(static_cast<std::size_t>(k), 0);
      for (int r = 0; r < k; ++r) plans_[static_cast<std::size_t>(r)] = plan(r);
      local_hops();
      for (const auto& flows : plans_)
        for (const Flow& f : flows)
          if (!f.local) ++incoming_[static_cast<std::size_t>(f.to)];
    }
    phase(me, std::move(plans_[static_cast<std::size_t>(me)]));
  }
  std::vector<std::vector<Flow>> plans_;  // aggregate: per member, its flows

  // solve_call (aggregate fidelity across machines, once every member has joined): when the
  // call ends, from the group's SolvedCalls when a call alike was solved before. Every member's flows are planned as
  // phase() would run them: a flow starts at its sender's join plus its offset, or when its receiver joins if later,
  // pays its route's latency and then shares links with the call's other flows by max-min (sim/fluid.hpp, SimGrid's
  // sharing without a SimGrid activity per flow); a tree's hops inside a machine that no flow
  // crosses keep their closed form. Their bytes are counted as put counts a flow's. The call ends
  // for every member when its last flow or hop does, as phase()'s barrier makes it.
  double solve_call() {
    const double first = *std::min_element(joined_at_.begin(), joined_at_.end());
    SolvedCalls::Key key{coll, bytes_, root, choice.algorithm, choice.protocol, {}};
    key.joined.reserve(static_cast<std::size_t>(k));
    for (double t : joined_at_) key.joined.push_back(t - first);
    if (links_.solved) {
      if (const SolvedCalls::Result* same = links_.solved->find(key)) {
        links_.record_totals(*same);
        return first + same->span;
      }
    }
    // The call's bytes add up in `result` (per member, per link direction) and are counted once,
    // as a later call alike counts them.
    SolvedCalls::Result result;
    result.out.assign(static_cast<std::size_t>(k), 0.0);
    result.in.assign(static_cast<std::size_t>(k), 0.0);
    std::unordered_map<const sg4::Link*, double> wire_on;
    plans_.resize(static_cast<std::size_t>(k));
    for (int r = 0; r < k; ++r) plans_[static_cast<std::size_t>(r)] = plan(r);
    local_hops();
    double end = *std::max_element(joined_at_.begin(), joined_at_.end());
    std::unordered_map<const sg4::Link*, int> index;
    std::vector<FluidLink> fluid_links;
    std::vector<FluidFlow> flows;
    for (int r = 0; r < k; ++r) {
      const double t0 = joined_at_[static_cast<std::size_t>(r)];
      for (const Flow& f : plans_[static_cast<std::size_t>(r)]) {
        const auto& route = links_.route(r, f.to);
        result.out[static_cast<std::size_t>(r)] += f.payload;
        result.in[static_cast<std::size_t>(f.to)] += f.payload;
        for (const sg4::Link* l : route) wire_on[l] += whole_wire(f.wire);
        if (f.local) {
          end = std::max(end, t0 + f.start + f.duration);
          continue;
        }
        FluidFlow x;
        const double latency = links_.latency(r, f.to);
        x.start = std::max(t0 + f.start, joined_at_[static_cast<std::size_t>(f.to)]) + latency;
        x.bytes = whole_wire(f.wire);
        x.weight = latency > 0 ? 1 / latency : 1.0;  // SimGrid's sharing penalty: the latency, else 1
        for (const sg4::Link* l : route) {
          const auto [it, fresh] = index.try_emplace(l, static_cast<int>(fluid_links.size()));
          if (fresh) {
            fluid_links.push_back({l->get_bandwidth(), l->get_sharing_policy() == sg4::Link::SharingPolicy::FATPIPE});
          }
          x.links.push_back(it->second);
        }
        flows.push_back(std::move(x));
      }
    }
    for (double e : fluid_ends(fluid_links, flows)) end = std::max(end, e);
    plans_.clear();
    result.span = end - first;
    result.wire.assign(wire_on.begin(), wire_on.end());
    links_.record_totals(result);
    if (links_.solved) links_.solved->add(std::move(key), std::move(result));
    return end;
  }
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
  void local_hops() {
    using Link = const sg4::Link*;
    std::unordered_set<Link> flowing;
    for (int r = 0; r < k; ++r)
      for (const Flow& f : plans_[static_cast<std::size_t>(r)])
        if (!f.local) {
          const auto& route = links_.route(r, f.to);
          flowing.insert(route.begin(), route.end());
        }
    for (bool changed = true; changed;) {
      changed = false;
      for (int r = 0; r < k; ++r) {
        for (Flow& f : plans_[static_cast<std::size_t>(r)]) {
          const auto& route = links_.route(r, f.to);
          if (!f.local || std::none_of(route.begin(), route.end(), [&](Link l) { return flowing.count(l) > 0; }))
            continue;
          f.local = false;
          flowing.insert(route.begin(), route.end());
          changed = true;
        }
      }
    }
    std::unordered_map<Link, double> sharing;
    for (int r = 0; r < k; ++r)
      for (const Flow& f : plans_[static_cast<std::size_t>(r)])
        if (f.local)
          for (Link l : links_.route(r, f.to)) sharing[l] += 1;
    for (int r = 0; r < k; ++r) {
      for (Flow& f : plans_[static_cast<std::size_t>(r)]) {
        if (!f.local) continue;
        double rate = std::numeric_limits<double>::infinity();
        for (Link l : links_.route(r, f.to)) {
          const bool shared = l->get_sharing_policy() != sg4::Link::SharingPolicy::FATPIPE;
          rate = std::min(rate, l->get_bandwidth() / (shared ? sharing[l] : 1.0));
        }
        f.duration = links_.latency(r, f.to) + whole_wire(f.wire) / rate;
      }
    }
  }

  std::vector<Flow> plan(int me) {
    const double S = bytes_;
    const auto channels = static_cast<double>(C());
    if (nvls()) {
      std::vector<Flow> flows;
      for (const NvlsFlow& f : nvls_flows(me, S, *links_.channels, *links_.topo, choice, links_.bandwidth))
        flows.push_back({f.to, f.payload, f.wire});
      return flows;
    }
    switch (coll) {
      case Collective::kAllreduce:
        if (choice.algorithm == Algorithm::kTree) return aggregate_tree(me);
        return aggregate_ring(me, 2 * (k - 1), S / (k * channels));
      case Collective::kReduceScatter:
        return aggregate_ring(me, k - 1, S / (k * channels));
      case Collective::kAllgather:
        return aggregate_ring(me, k - 1, S / channels);
      case Collective::kBroadcast:
      case Collective::kReduce:
        return aggregate_chain(me);
    }
    return {};
  }

  // Ring: `steps` steps of `chunk` per channel become one flow per channel of steps x chunk;
  // the hop latency of every step and the route latency of all but the last are slept first.
  std::vector<Flow> aggregate_ring(int me, int steps, double chunk) {
    const double lat = ring_step_latency(steps);
    double route = 0;
    std::vector<Flow> flows;
    for (std::size_t c = 0; c < C(); ++c) route = std::max(route, links_.latency(me, next(c, me)));
    for (std::size_t c : reps_) flows.push_back({next(c, me), mult_ * steps * chunk, mult_ * steps * whole(chunk)});
    for (Flow& f : flows) f.start = steps * lat + (steps - 1) * route;
    return flows;
  }

  // A pipeline's hop moves its J chunks in one flow; it starts when the hop's first chunk would
  // (the chunk times of the hops before it: the fill) plus the J hop and J-1 route latencies the
  // chunks would pay, so that it ends when its last chunk would. Each flow is busy only while
  // its hop of the pipeline is, as at step fidelity.
  double pipeline_pause(double J, double hop_latency_s, double route_s) const {
    return J * hop_latency_s + (J - 1) * route_s;
  }

  // Chain (broadcast, reduce): along each channel's chain from its first member.
  std::vector<Flow> aggregate_chain(int me) {
    const bool bcast = coll == Collective::kBroadcast;
    const double per_channel = bytes_ / static_cast<double>(C());
    const auto J = static_cast<double>(chunk_count(per_channel));
    chain_offsets(per_channel);
    std::vector<Flow> flows;
    for (std::size_t c : reps_) {
      const int to = next(c, me);
      if (!(bcast ? to != root : me != root)) continue;
      const double route = links_.latency(me, to);
      flows.push_back({to, mult_ * per_channel, mult_ * chunk_wire(per_channel),
                       offset_[c][static_cast<std::size_t>(me)] + pipeline_pause(J, out_latency(c, me), route)});
    }
    return flows;
  }

  // chain_offsets: per channel and rank, when its first chunk leaves (found once per call).
  void chain_offsets(double per_channel) {
    if (!offset_.empty()) return;
    const bool bcast = coll == Collective::kBroadcast;
    offset_.resize(C());
    for (std::size_t c : reps_) {
      std::vector<double> at(static_cast<std::size_t>(k), 0.0);
      int r = bcast ? root : next(c, root);
      double t = 0;
      for (int i = 0; i + 1 < k; ++i) {
        at[static_cast<std::size_t>(r)] = t;
        const int nr = next(c, r);
        t += chunk_time(r, nr, per_channel);
        r = nr;
      }
      offset_[c] = std::move(at);
    }
  }
  std::vector<std::vector<double>> offset_;  // aggregate: per channel, per rank: chain or tree-up start
  std::vector<std::vector<double>> down_;    // aggregate tree: per channel, per rank: tree-down start
  struct TreeLinks;
  std::vector<TreeLinks> trees_;  // aggregate tree: per rank, its parent and children per channel

  // Tree: per channel, the up flow to the parent starts when the first chunk of every child has
  // arrived, the down flows to the children when the first chunk came down (or, at the root,
  // was reduced).
  std::vector<Flow> aggregate_tree(int me) {
    const double per_channel = bytes_ / static_cast<double>(C());
    const auto J = static_cast<double>(chunk_count(per_channel));
    const double wire = chunk_wire(per_channel);
    tree_offsets(per_channel);
    const TreeLinks& t = trees_[static_cast<std::size_t>(me)];
    std::vector<Flow> flows;
    const auto m = static_cast<std::size_t>(me);
    for (std::size_t c : reps_) {
      if (const int p = t.parent[c]; p >= 0) {
        flows.push_back({p, mult_ * per_channel, mult_ * wire,
                         offset_[c][m] + pipeline_pause(J, link_latency(me, p), links_.latency(me, p)),
                         same_machine(me, p)});
      }
      for (int kid : t.children[c]) {
        flows.push_back({kid, mult_ * per_channel, mult_ * wire,
                         down_[c][m] + pipeline_pause(J, link_latency(me, kid), links_.latency(me, kid)),
                         same_machine(me, kid)});
      }
    }
    return flows;
  }

  // tree_offsets: per channel, every rank's up start (the longest chunk-time path up from a leaf
  // below it) and down start (the root's up start plus the chunk times down to the rank).
  void tree_offsets(double per_channel) {
    if (!offset_.empty()) return;
    trees_.reserve(static_cast<std::size_t>(k));
    for (int r = 0; r < k; ++r) trees_.push_back(tree_links(r));
    const std::vector<TreeLinks>& all = trees_;
    const auto edge = [&](int a, int b) { return chunk_time(a, b, per_channel); };
    offset_.resize(C());
    down_.resize(C());
    for (std::size_t c : reps_) {
      std::vector<int> order;  // breadth first from the root
      for (int r = 0; r < k; ++r)
        if (all[static_cast<std::size_t>(r)].parent[c] < 0) order.push_back(r);
      for (std::size_t i = 0; i < order.size(); ++i)
        for (int kid : all[static_cast<std::size_t>(order[i])].children[c]) order.push_back(kid);
      std::vector<double> up(static_cast<std::size_t>(k), 0.0), dn(static_cast<std::size_t>(k), 0.0);
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        for (int kid : all[static_cast<std::size_t>(*it)].children[c]) {
          up[static_cast<std::size_t>(*it)] =
              std::max(up[static_cast<std::size_t>(*it)], up[static_cast<std::size_t>(kid)] + edge(kid, *it));
        }
      }
      for (int r : order) {
        const int p = all[static_cast<std::size_t>(r)].parent[c];
        dn[static_cast<std::size_t>(r)] =
            p < 0 ? up[static_cast<std::size_t>(r)] : dn[static_cast<std::size_t>(p)] + edge(p, r);
      }
      offset_[c] = std::move(up);
      down_[c] = std::move(dn);
    }
  }

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

  void chain(int me) {
    const bool bcast = coll == Collective::kBroadcast;
    const double per_channel_bytes = bytes_ / static_cast<double>(C());
    const double cb = chunk_bytes(choice.protocol);
    const long chunks = std::max(1L, static_cast<long>(std::ceil(per_channel_bytes / cb)));
    const double wf = wire_factor(choice.protocol);
    per_channel([&](std::size_t c) {
      const int first = bcast ? root : next(c, root);
      const bool receives = me != first;
      const bool sends = bcast ? next(c, me) != root : me != root;
      const int to = next(c, me);
      const double lat = out_latency(c, me);
      for (long j = 0; j < chunks; ++j) {
        const double chunk = std::min(cb, per_channel_bytes - static_cast<double>(j) * cb);
        if (receives) arrivals(c, me).wait_at_least(j + 1);
        if (!sends) continue;
        sleep_for(lat);
        send(me, to, chunk, chunk * wf)->wait();
        arrivals(c, to).add(1);
      }
    });
  }

  // Tree allreduce: per channel a tree of ranks (NCCL's double binary tree over nodes, channel c
  // on tree c mod 2, a chain inside each node); chunks go up reduced and come down broadcast.
  struct TreeLinks {
    std::vector<int> parent;                 // per channel, -1 at the root
    std::vector<std::vector<int>> children;  // per channel
  };
  TreeLinks tree_links(int me) const {
    TreeLinks t;
    for (std::size_t c = 0; c < C(); ++c) {
      const auto& tr = links_.channels->trees[c % 2];
      const auto& chains = ring(c).chains;
      const auto [node, at] = where_[c][static_cast<std::size_t>(me)];
      const auto& chn = chains[static_cast<std::size_t>(node)];
      std::vector<int> kids;
      int parent = -1;
      if (at > 0) parent = chn[static_cast<std::size_t>(at - 1)];
      if (at + 1 < static_cast<int>(chn.size())) kids.push_back(chn[static_cast<std::size_t>(at + 1)]);
      if (at == 0) {
        const TreeNode& tn = tr[static_cast<std::size_t>(node)];
        if (tn.parent >= 0) parent = chains[static_cast<std::size_t>(tn.parent)].front();
        for (int child : tn.children)
          if (child >= 0) kids.push_back(chains[static_cast<std::size_t>(child)].front());
      }
      t.parent.push_back(parent);
      t.children.push_back(kids);
    }
    return t;
  }
  bool same_machine(int a, int b) const { return links_.topo->host_of(a) == links_.topo->host_of(b); }
  double link_latency(int a, int b) const {
    return hop_latency(same_machine(a, b) ? links_.channels->intra_class : PathClass::kNET);
  }

  void tree(int me) {
    const TreeLinks t = tree_links(me);
    const double per_channel_bytes = bytes_ / static_cast<double>(C());
    const double cb = chunk_bytes(choice.protocol);
    const long chunks = std::max(1L, static_cast<long>(std::ceil(per_channel_bytes / cb)));
    const double wf = wire_factor(choice.protocol);
    auto chunk_of = [&](long j) { return std::min(cb, per_channel_bytes - static_cast<double>(j) * cb); };
    per_channel([&](std::size_t c) {
      const int parent = t.parent[c];
      const std::vector<int>& kids = t.children[c];
      const auto nkids = static_cast<long>(kids.size());
      // Up: reduce chunk j from the children, pass it to the parent (the root turns it around).
      sg4::ActorPtr up = sg4::Actor::create("tree-up", sg4::this_actor::get_host(), links_.guard([&] {
        const double lat = parent >= 0 ? link_latency(me, parent) : 0.0;
        for (long j = 0; j < chunks; ++j) {
          arrivals(c, me).wait_at_least(nkids * (j + 1));
          if (parent < 0) {
            arrivals_down(c, me).add(1);
            continue;
          }
          sleep_for(lat);
          send(me, parent, chunk_of(j), chunk_of(j) * wf)->wait();
          arrivals(c, parent).add(1);
        }
      }));
      // Down: broadcast chunk j to the children once it came down (or was reduced, at the root).
      double lat = 0;
      for (int kid : kids) lat = std::max(lat, link_latency(me, kid));
      for (long j = 0; j < chunks; ++j) {
        arrivals_down(c, me).wait_at_least(j + 1);
        if (kids.empty()) continue;
        sleep_for(lat);
        std::vector<sg4::CommPtr> comms;
        for (int kid : kids) comms.push_back(send(me, kid, chunk_of(j), chunk_of(j) * wf));
        for (std::size_t i = 0; i < kids.size(); ++i) {
          comms[i]->wait();
          arrivals_down(c, kids[i]).add(1);
        }
      }
      up->join();
    });
  }
};

std::optional<Fidelity> parse_fidelity(std::string_view s) {
  if (s == "step") return Fidelity::kStep;
  if (s == "aggregate") return Fidelity::kAggregate;
  if (s == "auto") return Fidelity::kAuto;
  return std::nullopt;
}

std::string_view fidelity_name(Fidelity f) {
  switch (f) {
    case Fidelity::kStep:
      return "step";
    case Fidelity::kAggregate:
      return "aggregate";
    case Fidelity::kAuto:
      return "auto";
  }
  return "auto";
}

double step_flows(Collective c, double bytes, int members, std::size_t channels, const CollectiveChoice& choice) {
  const double k = members, C = static_cast<double>(std::max<std::size_t>(1, channels));
  const double chunks = std::max(1.0, std::ceil(bytes / C / chunk_bytes(choice.protocol)));
  if (choice.algorithm == Algorithm::kNvls || choice.algorithm == Algorithm::kNvlsTree) return 2 * k;
  switch (c) {
    case Collective::kAllreduce:
      return choice.algorithm == Algorithm::kTree ? 2 * chunks * k * C : 2 * (k - 1) * k * C;
    case Collective::kReduceScatter:
    case Collective::kAllgather:
      return (k - 1) * k * C;
    case Collective::kBroadcast:
    case Collective::kReduce:
      return chunks * (k - 1) * C;
  }
  return 0;
}

CollectiveRun::CollectiveRun(CollectiveLinks links, Collective c, Bytes bytes, int root, int members,
                             CollectiveChoice choice, Fidelity fidelity)
    : s_(std::make_unique<State>(std::move(links), c, bytes, root, members, choice, fidelity)) {}

CollectiveRun::~CollectiveRun() = default;

void CollectiveRun::run(int me) { s_->run(me); }

}  // namespace gradsync::sim
