// routes.cpp: Dijkstra over link latencies, path reconstruction and NCCL path classes.
#include "topologies/routes.hpp"

#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/dijkstra_shortest_paths_no_color_map.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

namespace gradsync {
namespace {

// kHopTieBreak_s: added to every link's weight so that among equal-latency paths the one with
// fewer hops wins (and zero-latency links do not make long detours free).
constexpr double kHopTieBreak_s = 1e-12;

// RecordLink stores, for every vertex reached, the link Dijkstra relaxed to reach it.
struct RecordLink : boost::default_dijkstra_visitor {
  std::vector<std::uint32_t>* pred;
  template <typename Graph>
  void edge_relaxed(LinkId e, const Graph& g) {
    (*pred)[boost::target(e, g)] = static_cast<std::uint32_t>(g[e].index);
  }
};

}  // namespace

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
  r.p2p = r.path_class <= PathClass::kPXB;
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

Routes::Routes(const Topology& topo) : topo_(topo), trees_(topo.vertex_count()), weight_(topo.links().size()) {
  for (LinkId e : topo.links()) weight_[topo.link(e).index] = topo.link(e).latency_s + kHopTieBreak_s;
}
Routes::~Routes() = default;

const Routes::Tree& Routes::tree(VertexId source) const {
  std::unique_ptr<Tree>& slot = trees_.at(source);
  if (slot) return *slot;
  const TopoGraph& g = topo_.graph();
  auto t = std::make_unique<Tree>();
  t->pred.assign(topo_.vertex_count(), 0);
  t->dist.assign(topo_.vertex_count(), std::numeric_limits<double>::infinity());
  RecordLink visitor;
  visitor.pred = &t->pred;
  boost::dijkstra_shortest_paths_no_color_map(
      g, source,
      boost::weight_map(boost::make_iterator_property_map(weight_.data(), boost::get(&TopoLink::index, g)))
          .distance_map(t->dist.data())
          .visitor(visitor));
  slot = std::move(t);
  return *slot;
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
    r.bottleneck_Bps = std::min(r.bottleneck_Bps, l.total_bw_Bps());
    v = topo.other_end(e, v);
    r.vertices.push_back(v);
  }
  r.path_class = classify(topo, r.vertices, r.hops);
  r.p2p = r.path_class <= PathClass::kPXB;
  return r;
}

}  // namespace

Route Routes::route(VertexId from, VertexId to) const {
  const Tree& t = tree(from);
  std::vector<LinkId> links;
  for (VertexId v = to; v != from;) {
    const LinkId e = topo_.links()[t.pred[v]];
    links.push_back(e);
    v = topo_.other_end(e, v);
  }
  std::reverse(links.begin(), links.end());
  return walk(topo_, from, to, links);
}

Route Routes::route(VertexId from, VertexId to, std::uint64_t flow) const {
  if (flow == 0 || from == to) return route(from, to);
  const TopoGraph& g = topo_.graph();
  const Tree& ts = tree(from);
  const Tree& tt = tree(to);
  const double total = ts.dist[to];
  std::vector<LinkId> links;
  for (VertexId v = from; v != to;) {
    // Next hops on some shortest path: dist(from, v) + w + dist(w, to) == dist(from, to).
    std::vector<LinkId> next;
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      const double via = ts.dist[v] + weight_[g[e].index] + tt.dist[topo_.other_end(e, v)];
      if (std::abs(via - total) <= 1e-9 * total + 1e-15) next.push_back(e);
    }
    const LinkId e = next[mix(flow ^ (static_cast<std::uint64_t>(v) << 20)) % next.size()];
    links.push_back(e);
    v = topo_.other_end(e, v);
  }
  return walk(topo_, from, to, links);
}

}  // namespace gradsync
