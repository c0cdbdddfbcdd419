// channels.cpp: the NCCL-like ring search (per-direction residual bandwidth, path-class passes,
// speed candidates) and NCCL's double binary tree.
#include "topologies/channels.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/error.hpp"
#include "core/text.hpp"

namespace gradsync {
namespace {

// kSearchBudget: DFS steps allowed per channel and node before the search gives up at that
// speed (NCCL bounds its search by a step budget too).
constexpr long kSearchBudget = 20000;
constexpr double kRelEps = 1e-9;
// kFallbackBw: the channel speed of NCCL's fallback ring (search.cc: bwIntra = bwInter = 0.1).
constexpr double kFallbackBw = 0.1e9;
// kExhaustiveMaxGpus / kMaxRings: the node size and ring count up to which ring sets are chosen
// from all rings rather than greedily.
constexpr std::size_t kExhaustiveMaxGpus = 8;
// Rich fabrics (NVSwitch) have thousands of rings and need no choosing: the greedy search fills
// them; sparse meshes (DGX-1) have a few dozen.
constexpr std::size_t kMaxRings = 64;

// Search holds the residual bandwidth of every link direction while channels are found.
class Search {
 public:
  Search(const Topology& topo, const Routes& routes, const Transports& transports, const std::vector<int>& ranks)
      : topo_(topo),
        routes_(routes),
        transports_(transports),
        full_(2 * topo.links().size()),
        core_(topo.links().size()) {
    for (LinkId e : topo.links()) {
      const TopoLink& l = topo.link(e);
      full_[2 * l.index] = full_[2 * l.index + 1] = l.payload_bw_Bps;
      core_[l.index] = topo.vertex(l.a).kind == VertexKind::kSwitch && topo.vertex(l.b).kind == VertexKind::kSwitch;
    }
    std::vector<int> sorted = ranks;
    std::sort(sorted.begin(), sorted.end());
    for (int r : sorted) {
      const int h = topo.host_of(r);
      auto it = std::find(hosts_.begin(), hosts_.end(), h);
      if (it == hosts_.end()) {
        hosts_.push_back(h);
        nodes_.emplace_back();
        it = hosts_.end() - 1;
      }
      nodes_[static_cast<std::size_t>(it - hosts_.begin())].push_back(r);
    }
    // Nodes in host order, so that multi-node rings visit hosts as the file lists them.
    std::vector<std::size_t> idx(hosts_.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return hosts_[a] < hosts_[b]; });
    std::vector<int> hosts;
    std::vector<std::vector<int>> nodes;
    for (std::size_t i : idx) {
      hosts.push_back(hosts_[i]);
      nodes.push_back(nodes_[i]);
    }
    hosts_ = std::move(hosts);
    nodes_ = std::move(nodes);
    if (multi_node()) {
      for (std::size_t n = 0; n < nodes_.size(); ++n) {
        nics_.push_back(topo.nics_of_host(hosts_[n]));
        if (nics_.back().empty()) {
          throw ConfigError(fmt::format("{}: host {} has GPUs but no nic; GPUs on several hosts talk through NICs",
                                        topo.origin(), topo.hosts()[static_cast<std::size_t>(hosts_[n])]));
        }
      }
    }
  }

  bool multi_node() const { return nodes_.size() > 1; }
  const std::vector<int>& hosts() const { return hosts_; }

  const Route& route(VertexId a, VertexId b) {
    const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
    auto it = cache_.find(key);
    if (it == cache_.end()) it = cache_.emplace(key, routes_.route(a, b)).first;
    return it->second;
  }
  // gpu_route: how NCCL's transports carry a hop between two GPUs of one machine (P2P, or SHM
  // through host memory), found once per pair.
  const Hop& gpu_route(int a, int b) {
    const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
    auto it = gpu_hops_.find(key);
    if (it == gpu_hops_.end()) it = gpu_hops_.emplace(key, transports_.hop(a, b)).first;
    return it->second;
  }
  // net_hop: GPU `from` -> NIC `nic` -> the fabric (an ECMP path labelled by the channel, as
  // switches spread flows) -> the next node's NIC -> GPU `to` (Routes::net_route); found once per
  // pair, NICs and channel.
  const Hop& net_hop(int from, VertexId nic, VertexId next_nic, int to, int channel) {
    const auto key = std::make_tuple(from, nic, next_nic, to, channel);
    auto it = hops_.find(key);
    if (it == hops_.end())
      it = hops_.emplace(key, transports_.net_hop(from, to, nic, next_nic, static_cast<std::uint64_t>(channel) + 1))
               .first;
    return it->second;
  }

  // speeds: candidate per-channel speeds, fastest first, and the upper bound on the total.
  std::vector<double> speeds(double& upper_bound) {
    int sm = std::numeric_limits<int>::max();
    for (const auto& node : nodes_)
      for (int r : node) sm = std::min(sm, topo_.vertex(topo_.gpu(r)).gpu->sm_version);
    const std::vector<double> intra = nccl_speeds(false, sm);
    const std::vector<double> inter = nccl_speeds(true, sm);
    double cap = intra.front();
    if (multi_node()) cap = std::min(cap, inter.front());
    // Only NCCL's own speeds (search.cc's arrays): the channel count and speed are NCCL's, and its
    // model's per-channel caps count them.
    std::set<double, std::greater<>> out;
    for (double s : multi_node() ? inter : intra)
      if (s <= cap) out.insert(s);
    // Upper bound on channels x speed: what the weakest GPU (and node's NICs) can move.
    upper_bound = cap * kMaxChannels;
    const auto remember = [&] { upper_ = upper_bound; };
    for (const auto& node : nodes_) {
      for (int r : node) {
        double sum = 0;
        for (auto e : boost::make_iterator_range(boost::out_edges(topo_.gpu(r), topo_.graph())))
          sum += topo_.link(e).payload_bw_Bps;
        upper_bound = std::min(upper_bound, sum);
      }
    }
    if (multi_node()) {
      for (const auto& nics : nics_) {
        double sum = 0;
        for (VertexId nic : nics)
          for (auto e : boost::make_iterator_range(boost::out_edges(nic, topo_.graph()))) {
            const LinkType t = topo_.link(e).type;
            if (t == LinkType::kInfiniband || t == LinkType::kEthernet) sum += topo_.link(e).payload_bw_Bps;
          }
        upper_bound = std::min(upper_bound, sum);
      }
    }
    remember();
    return {out.begin(), out.end()};
  }

  // channels finds as many channels as fit at speed `s` with intra-node hops of class <= cls:
  // greedily, one channel at a time; on one small node that falls short of the bound, also by
  // choosing among all its rings (the DGX-1 cube-mesh needs that to use all six NVLinks).
  std::vector<RingChannel> channels(PathClass cls, double s) {
    residual_ = full_;
    std::vector<RingChannel> found;
    for (int c = 0; c < kMaxChannels; ++c) {
      const std::vector<double> saved = residual_;
      RingChannel ch;
      if (!channel(c, cls, s, found, ch)) {
        residual_ = saved;
        break;
      }
      found.push_back(std::move(ch));
    }
    if (!multi_node() && nodes_.front().size() <= kExhaustiveMaxGpus && found.size() < kMaxChannels &&
        s * static_cast<double>(found.size()) < upper_ * (1 - kRelEps)) {
      std::vector<RingChannel> better = ring_sets(cls, s);
      if (better.size() > found.size()) found = std::move(better);
    }
    return found;
  }

  // ring_sets enumerates the node's rings that fit at speed s (up to kMaxRings) and picks the
  // largest set (repeats allowed) that fits the links together, within a step budget.
  std::vector<RingChannel> ring_sets(PathClass cls, double s) {
    const std::vector<int>& node = nodes_.front();
    std::vector<std::vector<int>> rings;
    residual_ = full_;
    long budget = kSearchBudget;
    std::vector<int> path{node.front()};
    enumerate(node, cls, s, path, rings, budget);
    residual_ = full_;
    if (rings.size() >= kMaxRings || budget < 0) return {};
    std::vector<std::size_t> chosen, best;
    budget = 20 * kSearchBudget;
    choose(rings, 0, s, chosen, best, budget);
    residual_ = full_;
    std::vector<RingChannel> out;
    for (std::size_t i : best) {
      RingChannel ch;
      reuse(rings[i], cls, s, ch);
      out.push_back(std::move(ch));
    }
    return out;
  }

  void enumerate(const std::vector<int>& node, PathClass cls, double s, std::vector<int>& path,
                 std::vector<std::vector<int>>& rings, long& budget) {
    if (rings.size() >= kMaxRings || --budget < 0) return;  // too many to choose among
    if (path.size() == node.size()) {
      const Hop& close = gpu_route(path.back(), path.front());
      if (close.route.path_class <= cls && fits(close, s)) rings.push_back(path);
      return;
    }
    for (int v : node) {
      if (std::find(path.begin(), path.end(), v) != path.end()) continue;
      const Hop& r = gpu_route(path.back(), v);
      if (r.route.path_class > cls || !fits(r, s)) continue;
      take(r, s, 1);
      path.push_back(v);
      enumerate(node, cls, s, path, rings, budget);
      path.pop_back();
      take(r, s, -1);
    }
  }

  void choose(const std::vector<std::vector<int>>& rings, std::size_t from, double s, std::vector<std::size_t>& chosen,
              std::vector<std::size_t>& best, long& budget) {
    if (chosen.size() > best.size()) best = chosen;
    if (chosen.size() == kMaxChannels || --budget < 0) return;
    if (s * static_cast<double>(best.size()) >= upper_ * (1 - kRelEps)) return;
    for (std::size_t i = from; i < rings.size(); ++i) {
      const std::vector<int>& ring = rings[i];
      bool ok = true;
      std::size_t taken = 0;
      for (; taken < ring.size(); ++taken) {
        const Hop& r = gpu_route(ring[taken], ring[(taken + 1) % ring.size()]);
        if (!fits(r, s)) {
          ok = false;
          break;
        }
        take(r, s, 1);
      }
      if (ok) {
        chosen.push_back(i);
        choose(rings, i, s, chosen, best, budget);
        chosen.pop_back();
      }
      for (std::size_t k = 0; k < taken; ++k) take(gpu_route(ring[k], ring[(k + 1) % ring.size()]), s, -1);
      if (budget < 0) return;
    }
  }

 private:
  // fits / take: the search sees the network only through the NICs, as NCCL does; links
  // between network switches (the fabric's core) are left to the simulator's contention.
  // A hop at speed s uses s times its search factor of every link it crosses (6/5 through an Intel
  // root complex, Hop::search_factor).
  bool fits(const Hop& r, double s) const {
    for (const DirectedLink& h : r.route.hops)
      if (!core_[h.link] && residual_[h.slot()] < s * r.search_factor * (1 - kRelEps)) return false;
    return true;
  }
  void take(const Hop& r, double s, double sign) {
    for (const DirectedLink& h : r.route.hops)
      if (!core_[h.link]) residual_[h.slot()] -= sign * s * r.search_factor;
  }

  // reuse tries an earlier ring's order on one node: links are full duplex, so a ring and its
  // reverse use opposite directions of the same links (NCCL's rings come in such pairs too).
  bool reuse(const std::vector<int>& order, PathClass cls, double s, RingChannel& ch) {
    std::vector<Hop> hops;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const Hop& r = gpu_route(order[i], order[(i + 1) % order.size()]);
      if (r.route.path_class > cls) return false;
      hops.push_back(r);
    }
    std::vector<double> saved = residual_;
    for (const Hop& r : hops) {
      if (!fits(r, s)) {
        residual_ = std::move(saved);
        return false;
      }
      take(r, s, 1);
    }
    ch.order = order;
    ch.hops = std::move(hops);
    return true;
  }

  bool channel(int c, PathClass cls, double s, const std::vector<RingChannel>& found, RingChannel& ch) {
    if (!multi_node()) {
      if (!found.empty()) {
        std::vector<int> reversed(found.back().order.rbegin(), found.back().order.rend());
        std::rotate(reversed.begin(), reversed.end() - 1, reversed.end());  // keep rank order[0] first
        if (reuse(reversed, cls, s, ch) || reuse(found.back().order, cls, s, ch)) return true;
      }
      const std::vector<int>& node = nodes_.front();
      std::vector<int> path{node.front()};
      long budget = kSearchBudget;
      if (!dfs(node, cls, s, -1, path, budget)) return false;
      ch.order = path;
      for (std::size_t i = 0; i < path.size(); ++i) ch.hops.push_back(gpu_route(path[i], path[(i + 1) % path.size()]));
      return true;
    }
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      const VertexId nic = nics_[n][static_cast<std::size_t>(c) % nics_[n].size()];
      const auto [start, end] = endpoints(n, nic);
      std::vector<int> path{start};
      long budget = kSearchBudget;
      if (!dfs(nodes_[n], cls, s, end, path, budget)) return false;
      ch.chains.push_back(path);
      ch.nics.push_back(nic);
    }
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      const auto& chain = ch.chains[n];
      for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
        ch.order.push_back(chain[i]);
        ch.hops.push_back(gpu_route(chain[i], chain[i + 1]));
      }
      ch.order.push_back(chain.back());
      const std::size_t next = (n + 1) % nodes_.size();
      // The fabric leg takes an ECMP path labelled by the channel, as switches spread flows.
      const Hop& hop = net_hop(chain.back(), ch.nics[n], ch.nics[next], ch.chains[next].front(), c);
      if (!fits(hop, s)) return false;
      take(hop, s, 1);
      ch.hops.push_back(hop);
    }
    return true;
  }

  // closest: node n's GPUs nearest to `nic` (best path class, then lowest latency), rank order.
  std::vector<int> closest(std::size_t n, VertexId nic) {
    std::vector<int> near = nodes_[n];
    const auto key = [&](int r) {
      const Route& x = route(nic, topo_.gpu(r));
      return std::make_pair(x.path_class, x.latency_s);
    };
    std::stable_sort(near.begin(), near.end(), [&](int a, int b) { return key(a) < key(b); });
    std::vector<int> group;
    for (int r : near)
      if (key(r) == key(near.front())) group.push_back(r);
    return group;
  }

  // endpoints: where node n's chain starts (receives from the NIC) and ends (sends to it). The
  // NICs that share the same nearest GPUs take turns over them (NIC q of a PCIe switch pairs with
  // GPU q under it), so that channels through different NICs use different GPU links.
  std::pair<int, int> endpoints(std::size_t n, VertexId nic) {
    const std::vector<int> group = closest(n, nic);
    std::size_t q = 0;
    for (VertexId other : nics_[n]) {
      if (other == nic) break;
      if (closest(n, other) == group) ++q;
    }
    const int start = group[q % group.size()];
    if (nodes_[n].size() == 1) return {start, -1};
    if (group.size() > 1) return {start, group[(q + 1) % group.size()]};
    std::vector<int> rest = nodes_[n];
    rest.erase(std::find(rest.begin(), rest.end(), start));
    std::stable_sort(rest.begin(), rest.end(), [&](int a, int b) {
      const Route& x = route(nic, topo_.gpu(a));
      const Route& y = route(nic, topo_.gpu(b));
      return std::make_pair(x.path_class, x.latency_s) < std::make_pair(y.path_class, y.latency_s);
    });
    return {start, rest.front()};
  }

  // dfs extends `path` through every GPU of `node` (a ring back to path[0] when end < 0, else a
  // chain finishing at `end`), best path class first, then the next GPU in index order.
  bool dfs(const std::vector<int>& node, PathClass cls, double s, int end, std::vector<int>& path, long& budget) {
    const std::size_t m = node.size();
    const int cur = path.back();
    if (path.size() == m) {
      if (end >= 0 || m == 1) return true;
      const Hop& close = gpu_route(cur, path.front());
      if (close.route.path_class > cls || !fits(close, s)) return false;
      take(close, s, 1);
      return true;
    }
    if (--budget < 0) return false;
    const auto pos = [&](int r) {
      return static_cast<std::size_t>(std::find(node.begin(), node.end(), r) - node.begin());
    };
    struct Cand {
      int rank;
      PathClass cls;
      std::size_t dist;
      const Hop* route;
    };
    std::vector<Cand> cands;
    const std::size_t here = pos(cur);
    for (int v : node) {
      if (std::find(path.begin(), path.end(), v) != path.end()) continue;
      if (v == end && path.size() + 1 != m) continue;
      const Hop& r = gpu_route(cur, v);
      if (r.route.path_class > cls || !fits(r, s)) continue;
      cands.push_back({v, r.route.path_class, (pos(v) + m - here) % m, &r});
    }
    std::sort(cands.begin(), cands.end(),
              [](const Cand& a, const Cand& b) { return a.cls != b.cls ? a.cls < b.cls : a.dist < b.dist; });
    for (const Cand& c : cands) {
      take(*c.route, s, 1);
      path.push_back(c.rank);
      if (dfs(node, cls, s, end, path, budget)) return true;
      path.pop_back();
      take(*c.route, s, -1);
      if (budget < 0) return false;
    }
    return false;
  }

  const Topology& topo_;
  const Routes& routes_;
  const Transports& transports_;
  std::vector<double> full_;
  std::vector<char> core_;  // per link: joins two network switches
  std::vector<double> residual_;
  double upper_ = std::numeric_limits<double>::infinity();
  std::vector<int> hosts_;
  std::vector<std::vector<int>> nodes_;
  std::vector<std::vector<VertexId>> nics_;
  std::unordered_map<std::uint64_t, Route> cache_;
  std::map<std::tuple<int, VertexId, VertexId, int, int>, Hop> hops_;
  std::unordered_map<std::uint64_t, Hop> gpu_hops_;
};

}  // namespace

std::vector<int> first_ranks(int n) {
  std::vector<int> r(static_cast<std::size_t>(std::max(n, 0)));
  for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}

Channels build_channels(const Topology& topo, const Routes& routes, const std::vector<int>& ranks) {
  const Transports defaults(topo, routes, {});
  return build_channels(topo, routes, ranks, defaults);
}

Channels build_channels(const Topology& topo, const Routes& routes, const std::vector<int>& ranks,
                        const Transports& transports) {
  if (ranks.empty()) throw ConfigError(fmt::format("{}: no GPUs selected for rings", topo.origin()));
  std::set<int> seen;
  for (int r : ranks) {
    if (r < 0 || r >= topo.gpu_count()) {
      throw ConfigError(fmt::format("{}: GPU rank {} does not exist; the topology has {} GPUs (ranks 0-{})",
                                    topo.origin(), r, topo.gpu_count(), topo.gpu_count() - 1));
    }
    if (!seen.insert(r).second) throw ConfigError(fmt::format("{}: GPU rank {} selected twice", topo.origin(), r));
  }
  Search search(topo, routes, transports, ranks);
  Channels out;
  out.ranks.assign(seen.begin(), seen.end());
  out.hosts = search.hosts();
  if (search.multi_node()) out.trees = double_binary_tree(static_cast<int>(out.hosts.size()));
  if (ranks.size() == 1) return out;

  double upper = 0;
  const std::vector<double> speeds = search.speeds(upper);
  double best_total = 0;
  // Inside a node the search takes hops of every class up to SYS, then, where no ring is found
  // (NCCL_P2P_DISABLE and NCCL_SHM_DISABLE both set), NET: a hop out through a NIC and back in
  // (paths.cc: without P2P or SHM a pair's path becomes PATH_NET, through the NIC).
  for (int c = 0; c <= static_cast<int>(PathClass::kNET) && out.rings.empty(); ++c) {
    const PathClass cls = static_cast<PathClass>(c);
    for (double s : speeds) {
      if (s * kMaxChannels <= best_total * (1 + kRelEps)) break;  // cannot beat what we have
      std::vector<RingChannel> rings = search.channels(cls, s);
      const double total = s * static_cast<double>(rings.size());
      if (total > best_total * (1 + kRelEps)) {
        best_total = total;
        out.rings = std::move(rings);
        out.channel_bw_Bps = s;
      }
      if (best_total >= upper * (1 - kRelEps)) break;  // as good as the hardware allows
    }
  }
  if (out.rings.empty()) {
    // NCCL's ncclTopoCompute (search.cc): no ring at any speed, so one channel "in simple order"
    // at bwIntra = bwInter = 0.1 GB/s over paths of any type (PATH_SYS). The search at that speed
    // finds the ring (its order follows the links, its NICs are pinned as any ring's).
    std::vector<RingChannel> rings = search.channels(PathClass::kNET, kFallbackBw);
    if (!rings.empty()) {
      rings.resize(1);
      out.rings = std::move(rings);
      out.channel_bw_Bps = kFallbackBw;
      out.fallback = true;
    }
  }
  if (out.rings.empty()) {
    // The slowest link below the fallback speed, with its line: the likely culprit.
    const TopoLink* slowest = topo.slowest_link();
    const std::string culprit = slowest != nullptr && slowest->payload_bw_Bps < kFallbackBw
                                    ? fmt::format(" (the slowest: {}, {:.3g} B/s of payload per direction)",
                                                  topo.link_text(*slowest), slowest->payload_bw_Bps)
                                    : std::string();
    const std::string message = fmt::format(
        "{}: no ring through GPUs {} fits the links, not even at the {} GB/s NCCL falls "
        "back to: a link on their paths carries less than that{}, or no transport joins two "
        "of them (NCCL_P2P_DISABLE and NCCL_SHM_DISABLE leave only the network between GPUs "
        "of one node)",
        topo.origin(), rank_runs(out.ranks), kFallbackBw / 1e9, culprit);
    // A link of the file slower than the fallback: the file's fault (exit 1 whichever command read
    // it); otherwise the knobs may have left no transport, which the command line set.
    if (!culprit.empty()) throw DataError(message);
    throw ConfigError(message);
  }
  finish_graphs(topo, routes, transports, out);
  return out;
}

}  // namespace gradsync
