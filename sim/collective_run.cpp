// collective_run.cpp: ring steps, pipelined chains and trees as flows, with arrival counters.
#include "sim/collective_run.hpp"

#include <simgrid/s4u.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/sync.hpp"

namespace gradsync::sim {

struct CollectiveRun::State {
  CollectiveLinks links_;
  Collective coll;
  double bytes_ = 0;
  int root = -1;
  int k = 0;
  CollectiveChoice choice;
  std::vector<Counter> recv;  // by (channel, rank): chunks arrived (ring: channel 0 counts all); tree: going up
  std::vector<Counter> down;  // by (channel, rank): tree chunks arrived going down

  State(CollectiveLinks l, Collective c, Bytes b, int r, int members, CollectiveChoice ch)
      : links_(std::move(l)),
        coll(c),
        bytes_(static_cast<double>(b)),
        root(r),
        k(members),
        choice(ch),
        recv(static_cast<std::size_t>(members) * std::max<std::size_t>(1, links_.channels->rings.size())),
        down(static_cast<std::size_t>(members) * std::max<std::size_t>(1, links_.channels->rings.size())) {}

  sg4::CommPtr send(int from, int to, double bytes, double wire) { return links_.send(from, to, bytes, wire); }

  std::size_t C() const { return links_.channels->rings.size(); }
  const RingChannel& ring(std::size_t c) const { return links_.channels->rings[c]; }
  int pos(std::size_t c, int r) const {
    const auto& o = ring(c).order;
    return static_cast<int>(std::find(o.begin(), o.end(), r) - o.begin());
  }
  int next(std::size_t c, int r) const {
    const auto& o = ring(c).order;
    return o[static_cast<std::size_t>((pos(c, r) + 1) % k)];
  }
  double hop_latency(PathClass pc) const { return hop_latency_s(hop_kind(pc), choice.algorithm, choice.protocol); }
  double out_latency(std::size_t c, int r) const {
    return hop_latency(ring(c).hops[static_cast<std::size_t>(pos(c, r))].path_class);
  }

  void run(int me) {
    if (k <= 1) return;
    sleep_for(base_latency_s(choice.algorithm, choice.protocol));
    const auto S = bytes_;
    const auto channels = static_cast<double>(C());
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
    double lat = 0;
    for (std::size_t c = 0; c < C(); ++c) lat = std::max(lat, out_latency(c, me));
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
      int node = -1, at = -1;
      for (std::size_t nd = 0; nd < chains.size(); ++nd) {
        const auto it = std::find(chains[nd].begin(), chains[nd].end(), me);
        if (it != chains[nd].end()) {
          node = static_cast<int>(nd);
          at = static_cast<int>(it - chains[nd].begin());
        }
      }
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
  double link_latency(int a, int b) const {
    return hop_latency(links_.topo->host_of(a) == links_.topo->host_of(b) ? links_.channels->intra_class
                                                                          : PathClass::kNET);
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

CollectiveRun::CollectiveRun(CollectiveLinks links, Collective c, Bytes bytes, int root, int members,
                             CollectiveChoice choice)
    : s_(std::make_unique<State>(std::move(links), c, bytes, root, members, choice)) {}

CollectiveRun::~CollectiveRun() = default;

void CollectiveRun::run(int me) { s_->run(me); }

}  // namespace gradsync::sim
