// routes.cpp: shortest paths by hop count (the widest, then the quickest, among as many hops), path
// reconstruction and NCCL path classes.
#include "topologies/routes.hpp"

#include <boost/range/iterator_range.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gradsync {
std::string_view to_string(PathClass c) {
  static constexpr std::array<std::string_view, kPathClassCount> kNames{"NVL", "NVB", "PIX", "PXB",
                                                                        "PHB", "SYS", "NET"};
  return kNames[static_cast<std::size_t>(c)];
}

PathClass classify(const Topology& topo, const std::vector<VertexId>& vertices, const std::vector<DirectedLink>& hops) {
  const TopoGraph& g = topo.graph();
  const auto& links = topo.links();
  bool net = false, sys = false, cpu = false, all_nvlink = !hops.empty(), via_gpu = false;
  int pcie_switches = 0;
  for (const DirectedLink& h : hops) {
    const LinkType t = g[links[h.link]].type;
    net |= t == LinkType::kInfiniband || t == LinkType::kEthernet;
    sys |= t == LinkType::kCpuLink;
    all_nvlink &= t == LinkType::kNvlink;
  }
  for (std::size_t i = 1; i + 1 < vertices.size(); ++i) {
    switch (g[vertices[i]].kind) {
      case VertexKind::kNic:
      case VertexKind::kSwitch:
        net = true;
        break;
      case VertexKind::kCpu:
        cpu = true;
        break;
      case VertexKind::kPcieSwitch:
        ++pcie_switches;
        break;
      case VertexKind::kGpu:
        via_gpu = true;
        break;
      case VertexKind::kNvswitch:
        break;
    }
  }
  if (net) return PathClass::kNET;
  if (sys) return PathClass::kSYS;
  if (cpu) return PathClass::kPHB;
  if (all_nvlink) return via_gpu ? PathClass::kNVB : PathClass::kNVL;
  if (pcie_switches > 1) return PathClass::kPXB;
  return PathClass::kPIX;
}

namespace {
// peer_capable: what cudaDeviceCanAccessPeer would say of a route between two GPUs: a direct
// NVLink (or NVSwitch) always, PCIe when both GPUs support it and the route stays below the CPU
// (NCCL's default P2P level, PXB). NVLink through a third GPU (NVB: DGX-1's GPU 0 and GPU 5) is
// not a peer path: NVLink does not forward, and a CUDA copy between those two goes through host
// memory (NCCL's own P2P relays such a pair through the middle GPU's memory, p2p.cc useVia, and
// its transports decide that themselves: topologies/transports).
bool peer_capable(const Topology& topo, const Route& r) {
  if (r.path_class == PathClass::kNVL) return true;
  if (r.path_class == PathClass::kNVB) return false;
  if (r.path_class > PathClass::kPXB) return false;
  const TopoVertex& a = topo.vertex(r.from);
  const TopoVertex& b = topo.vertex(r.to);
  return a.kind != VertexKind::kGpu || b.kind != VertexKind::kGpu || (a.p2p_capable() && b.p2p_capable());
}
}  // namespace

Route join(const Topology& topo, const Route& first, const Route& second) {
  Route r;
  r.from = first.from;
  r.to = second.to;
  r.vertices = first.vertices;
  r.vertices.insert(r.vertices.end(), second.vertices.begin() + 1, second.vertices.end());
  r.hops = first.hops;
  r.hops.insert(r.hops.end(), second.hops.begin(), second.hops.end());
  r.latency_s = first.latency_s + second.latency_s;
  r.bottleneck_Bps = std::min(first.bottleneck_Bps, second.bottleneck_Bps);
  r.path_class = classify(topo, r.vertices, r.hops);
  r.p2p = peer_capable(topo, r);
  return r;
}

namespace {
// mix: splitmix64's finaliser, a cheap well-spread hash for ECMP choices.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

struct Routes::Tree {
  std::vector<std::uint32_t> pred;  // index of the link used to reach each vertex
  std::vector<double> dist;
};

// Search: Dijkstra over the adjacency arrays, from one source. Vertices leave the heap in order
// of (distance, index), and a vertex keeps the first link that reached it at its final distance,
// so a search stopped when its target leaves the heap has found the same path as a full one.
struct Routes::Search {
  std::vector<double> dist;
  std::vector<std::uint32_t> pred;
  std::vector<double> bw;            // the bottleneck payload bandwidth of the path to each vertex
  std::vector<double> lat;           // the latency of the path to each vertex
  std::vector<std::uint32_t> stamp;  // dist/pred valid where stamp == generation
  std::uint32_t generation = 0;
  using Entry = std::pair<double, std::uint32_t>;
  std::vector<Entry> heap;
  std::vector<std::uint32_t> settled;  // in machine mode
};

// Local: the shortest paths from one vertex to every vertex of its machine (and whatever lay
// nearer), as (vertex, link) pairs sorted by vertex.
struct Routes::Local {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pred;
};

Routes::Routes(const Topology& topo)
    : topo_(topo),
      weight_(topo.links().size()),
      latency_(topo.links().size()),
      payload_(topo.links().size()),
      search_(std::make_unique<Search>()) {
  const TopoGraph& g = topo.graph();
  const std::size_t n = topo.vertex_count();
  nvlink_.assign(topo.links().size(), 0);
  network_.assign(topo.links().size(), 0);
  ends_.assign(topo.links().size(), {0, 0});
  for (LinkId e : topo.links()) {
    const TopoLink& l = topo.link(e);
    weight_[l.index] = 1;  // one hop: routes are counted in hops, as NCCL's (dijkstra)
    latency_[l.index] = l.latency_s;
    payload_[l.index] = l.payload_bw_Bps;
    nvlink_[l.index] = l.type == LinkType::kNvlink;
    network_[l.index] = l.type == LinkType::kInfiniband || l.type == LinkType::kEthernet;
    ends_[l.index] = {static_cast<std::uint32_t>(l.a), static_cast<std::uint32_t>(l.b)};
  }
  gpu_.assign(n, 0);
  nic_.assign(n, 0);
  for (VertexId v = 0; v < n; ++v) {
    gpu_[v] = g[v].kind == VertexKind::kGpu;
    nic_[v] = g[v].kind == VertexKind::kNic;
  }
  first_.assign(n + 1, 0);
  for (VertexId v = 0; v < n; ++v) {
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      adj_.push_back({static_cast<std::uint32_t>(boost::target(e, g)), static_cast<std::uint32_t>(g[e].index)});
    }
    first_[v + 1] = static_cast<std::uint32_t>(adj_.size());
  }
  // Machines: vertices sharing a `host` name (network switches have none).
  std::unordered_map<std::string, std::int32_t> ids;
  machine_.assign(n, -1);
  for (VertexId v = 0; v < n; ++v) {
    const std::string& h = topo.vertex(v).host;
    if (h.empty()) continue;
    const auto [it, fresh] = ids.try_emplace(h, static_cast<std::int32_t>(machine_size_.size()));
    if (fresh) machine_size_.push_back(0);
    machine_[v] = it->second;
    ++machine_size_[static_cast<std::size_t>(it->second)];
  }
  machine_cpus_.resize(machine_size_.size());
  for (VertexId v = 0; v < n; ++v)
    if (machine_[v] >= 0 && g[v].kind == VertexKind::kCpu)
      machine_cpus_[static_cast<std::size_t>(machine_[v])].push_back(v);
  // Connected parts, so that host_cpu never asks for a route that does not exist.
  component_.assign(n, -1);
  std::vector<std::uint32_t> stack;
  for (VertexId start = 0, part = 0; start < n; ++start) {
    if (component_[start] >= 0) continue;
    component_[start] = static_cast<std::int32_t>(part);
    stack.assign(1, static_cast<std::uint32_t>(start));
    while (!stack.empty()) {
      const std::uint32_t u = stack.back();
      stack.pop_back();
      for (std::uint32_t i = first_[u]; i < first_[u + 1]; ++i) {
        if (component_[adj_[i].to] >= 0) continue;
        component_[adj_[i].to] = static_cast<std::int32_t>(part);
        stack.push_back(adj_[i].to);
      }
    }
    ++part;
  }
  // Keep at most ~4M (distance, link) entries of whole trees: 48 MB whatever the cluster.
  max_trees_ = std::max<std::size_t>(4, (std::size_t{4} << 20) / std::max<std::size_t>(1, n));
}
Routes::~Routes() = default;

// dijkstra runs from `source` until `target` leaves the heap (every vertex nearer than the target
// has left it before; every vertex when target < 0 or when more than `budget` vertices are settled
// first); kWithinMachine settles only the source's machine (recording them in `settled`), never
// relaxing a link to another machine or a network switch. Returns whether it ran to the end.
bool Routes::dijkstra(VertexId source, long target, std::size_t budget, Scope scope) const {
  const bool machine = scope == Scope::kWithinMachine;
  Search& s = *search_;
  const std::size_t n = topo_.vertex_count();
  if (s.dist.size() != n) {
    s.dist.assign(n, 0);
    s.pred.assign(n, 0);
    s.bw.assign(n, 0);
    s.lat.assign(n, 0);
    s.stamp.assign(n, 0);
  }
  if (++s.generation == 0) {
    std::fill(s.stamp.begin(), s.stamp.end(), 0);
    s.generation = 1;
  }
  const auto known = [&](std::uint32_t v) { return s.stamp[v] == s.generation; };
  const auto cmp = [](const Search::Entry& a, const Search::Entry& b) { return a > b; };
  s.heap.clear();
  s.stamp[source] = s.generation;
  s.dist[source] = 0;
  s.bw[source] = std::numeric_limits<double>::infinity();
  s.lat[source] = 0;
  s.heap.emplace_back(0.0, static_cast<std::uint32_t>(source));
  std::size_t settled = 0;
  const std::int32_t home = machine_[source];
  s.settled.clear();
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), cmp);
    const auto [d, u] = s.heap.back();
    s.heap.pop_back();
    if (d > s.dist[u]) continue;  // a stale entry
    if (machine) s.settled.push_back(u);
    if (static_cast<long>(u) == target) return false;
    if (target >= 0 && ++settled > budget) target = -1;  // far away: finish the whole tree
    // A GPU passes traffic on only as NCCL's path search lets it (src/graph/paths.cc,
    // ncclTopoSetPaths: "allow routing through a GPU only as 1 hop"): NVLink in from the source
    // itself and NVLink out to another GPU (NCCL's NVB); never onto PCIe, a CPU or a NIC.
    bool relay = true, relay_nvlink_only = false;
    if (static_cast<VertexId>(u) != source && gpu_[u]) {
      const std::uint32_t in = s.pred[u];
      const std::uint32_t back = ends_[in][0] == u ? ends_[in][1] : ends_[in][0];
      relay = nvlink_[in] && static_cast<VertexId>(back) == source;
      relay_nvlink_only = true;
    }
    if (!relay) continue;
    for (std::uint32_t i = first_[u]; i < first_[u + 1]; ++i) {
      const Adjacent& a = adj_[i];
      if (relay_nvlink_only && (!nvlink_[a.link] || !gpu_[a.to])) continue;
      if (machine && machine_[a.to] != home) continue;
      // A machine is no router: traffic that came in by one of its NICs does not leave by another
      // (a host's NIC forwards between its machine and the network only). Only the source's own
      // machine sends onto the network, so a route between two switches, or between machines,
      // stays in the fabric however many switch hops that takes, and no ring between nodes
      // crosses a third machine's PCIe and CPU links.
      if (network_[a.link] && nic_[u] && machine_[u] != home) continue;
      const double nd = d + weight_[a.link];
      const double nb = std::min(s.bw[u], payload_[a.link]);
      const double nl = s.lat[u] + latency_[a.link];
      // Among paths of as many hops, the widest (NCCL's paths.cc, ncclTopoSetPaths: a path of as
      // many hops replaces another where its bandwidth is higher), then the quickest; the vertex is
      // not settled yet (its hop count is above u's), so its own paths follow the choice.
      const bool as_short = known(a.to) && nd == s.dist[a.to];
      if (as_short) {
        if (nb > s.bw[a.to] || (nb == s.bw[a.to] && nl < s.lat[a.to])) {
          s.pred[a.to] = a.link;
          s.bw[a.to] = nb;
          s.lat[a.to] = nl;
        }
      } else if (!known(a.to) || nd < s.dist[a.to]) {
        s.stamp[a.to] = s.generation;
        s.dist[a.to] = nd;
        s.pred[a.to] = a.link;
        s.bw[a.to] = nb;
        s.lat[a.to] = nl;
        s.heap.emplace_back(nd, a.to);
        std::push_heap(s.heap.begin(), s.heap.end(), cmp);
      }
    }
  }
  return true;
}

std::shared_ptr<const Routes::Tree> Routes::tree(VertexId source) const {
  if (auto t = kept(source)) return t;
  (void)dijkstra(source, -1, 0, Scope::kAll);
  return keep(source);
}

std::shared_ptr<const Routes::Tree> Routes::kept(VertexId source) const {
  const auto it = index_.find(source);
  if (it == index_.end()) return nullptr;
  trees_.splice(trees_.begin(), trees_, it->second);  // most recently used first
  return it->second->second;
}

std::shared_ptr<const Routes::Tree> Routes::keep(VertexId source) const {
  const Search& s = *search_;
  auto t = std::make_shared<Tree>();
  t->pred = s.pred;
  t->dist = s.dist;
  for (std::size_t v = 0; v < s.stamp.size(); ++v)
    if (s.stamp[v] != s.generation) t->dist[v] = std::numeric_limits<double>::infinity();
  trees_.emplace_front(source, t);
  index_[source] = trees_.begin();
  if (trees_.size() > max_trees_) {
    index_.erase(trees_.back().first);
    trees_.pop_back();
  }
  return t;
}

namespace {

// walk builds the route that leaves `from` along `links` in order: vertices, directions,
// latency, bottleneck and class.
Route walk(const Topology& topo, VertexId from, VertexId to, const std::vector<LinkId>& links) {
  Route r;
  r.from = from;
  r.to = to;
  r.bottleneck_Bps = std::numeric_limits<double>::infinity();
  r.vertices.push_back(from);
  VertexId v = from;
  for (LinkId e : links) {
    const TopoLink& l = topo.link(e);
    r.hops.push_back(DirectedLink{l.index, l.a == v});
    r.latency_s += l.latency_s;
    r.bottleneck_Bps = std::min(r.bottleneck_Bps, l.payload_bw_Bps);
    v = topo.other_end(e, v);
    r.vertices.push_back(v);
  }
  r.path_class = classify(topo, r.vertices, r.hops);
  r.p2p = peer_capable(topo, r);
  return r;
}

}  // namespace

Route Routes::route(VertexId from, VertexId to) const {
  std::shared_ptr<const Tree> whole = kept(from);
  std::function<std::uint32_t(VertexId)> pred;
  if (whole) {
    pred = [&](VertexId v) { return whole->pred[v]; };
  } else if (machine_[from] >= 0 && machine_[from] == machine_[to]) {
    // Within one machine: the source's paths inside its machine, found once and kept (a few dozen
    // vertices each). NCCL routes within a node only through the node (leaving by one NIC and
    // coming back by another is NET, a path between nodes: src/graph/paths.cc), so the search
    // does not step outside; a vertex it cannot reach that way (a machine whose parts meet only
    // through the network, no real server) gets the point-to-point search below.
    auto& local = locals_[from];
    if (!local) {
      local = std::make_unique<Local>();
      (void)dijkstra(from, -1, 0, Scope::kWithinMachine);
      for (std::uint32_t v : search_->settled)
        if (v != from) local->pred.emplace_back(v, search_->pred[v]);
      std::sort(local->pred.begin(), local->pred.end());
    }
    const auto& kept_pred = local->pred;
    const auto at = [&kept_pred](VertexId v) {
      return std::lower_bound(kept_pred.begin(), kept_pred.end(), std::make_pair(static_cast<std::uint32_t>(v), 0u));
    };
    if (const auto it = at(to); it != kept_pred.end() && it->first == to)
      pred = [at](VertexId v) { return at(v)->second; };
  }
  if (!pred) {
    // A point-to-point search stops once `to` is settled; one that has to cross most of the
    // fabric becomes a kept tree, since the same source is usually asked again.
    if (dijkstra(from, static_cast<long>(to), topo_.vertex_count() / 8, Scope::kAll)) whole = keep(from);
    pred = [&](VertexId v) { return whole ? whole->pred[v] : search_->pred[v]; };
  }
  std::vector<LinkId> links;
  for (VertexId v = to; v != from;) {
    const LinkId e = topo_.links()[pred(v)];
    links.push_back(e);
    v = topo_.other_end(e, v);
  }
  std::reverse(links.begin(), links.end());
  return walk(topo_, from, to, links);
}

Route Routes::route(VertexId from, VertexId to, std::uint64_t flow) const {
  if (flow == 0 || from == to) return route(from, to);
  return route_choosing(from, to, [&](VertexId v, std::size_t options) {
    return static_cast<std::size_t>(mix(flow ^ (static_cast<std::uint64_t>(v) << 20)) % options);
  });
}

Route Routes::route_by_destination(VertexId from, VertexId to, std::uint64_t ordinal) const {
  if (from == to) return route(from, to);
  std::uint64_t d = ordinal;
  return route_choosing(from, to, [&](VertexId, std::size_t options) {
    const std::size_t pick = static_cast<std::size_t>(d % options);
    d /= options;
    return pick;
  });
}

Route Routes::route_choosing(VertexId from, VertexId to,
                             const std::function<std::size_t(VertexId, std::size_t)>& choose) const {
  // Distances to `to` (links are symmetric) tell which links lie on a shortest path: those with
  // dist(w) + weight == dist(v). They are needed only for vertices nearer to `to` than `from`
  // is: the destination's kept tree, or a search from it that stops at `from` (all of those have
  // left the heap by then; a vertex still in it cannot be on a shortest path).
  std::shared_ptr<const Tree> tt = kept(to);
  if (!tt && dijkstra(to, static_cast<long>(from), topo_.vertex_count() / 4, Scope::kAll)) tt = keep(to);
  const Search& s = *search_;
  const auto dist = [&](std::uint32_t v) {
    if (tt) return tt->dist[v];
    return s.stamp[v] == s.generation ? s.dist[v] : std::numeric_limits<double>::infinity();
  };
  std::vector<LinkId> links;
  std::vector<std::uint32_t> next;
  for (VertexId v = from; v != to;) {
    next.clear();
    const double here = dist(static_cast<std::uint32_t>(v));
    for (std::uint32_t i = first_[v]; i < first_[v + 1]; ++i) {
      const double via = weight_[adj_[i].link] + dist(adj_[i].to);
      if (std::abs(via - here) <= 1e-9 * here + 1e-15) next.push_back(i);
    }
    const Adjacent& a = adj_[next.size() == 1 ? next.front() : next[choose(v, next.size())]];
    links.push_back(topo_.links()[a.link]);
    v = a.to;
  }
  return walk(topo_, from, to, links);
}

}  // namespace gradsync
