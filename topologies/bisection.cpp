// bisection.cpp: the split and the maximum flow.
#include "topologies/bisection.hpp"

#include <fmt/format.h>
#include <boost/graph/push_relabel_max_flow.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.hpp"

namespace gradsync {
namespace {

using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, std::int64_t,
                    boost::property<boost::edge_residual_capacity_t, std::int64_t,
                                    boost::property<boost::edge_reverse_t, FlowTraits::edge_descriptor>>>>;

// Capacities are whole bytes per second: push-relabel checks flow conservation exactly, which
// floating-point capacities fail.
void add_arc(FlowGraph& g, std::size_t u, std::size_t v, std::int64_t capacity) {
  auto cap = boost::get(boost::edge_capacity, g);
  auto rev = boost::get(boost::edge_reverse, g);
  const auto e = boost::add_edge(u, v, g).first;
  const auto r = boost::add_edge(v, u, g).first;
  cap[e] = capacity;
  cap[r] = 0;
  rev[e] = r;
  rev[r] = e;
}

}  // namespace

Bisection bisection(const Topology& topo, const std::vector<int>& ranks) {
  if (ranks.size() < 2) throw ConfigError("bisection needs at least two GPUs");
  Bisection out;
  std::vector<int> hosts;
  for (int r : ranks)
    if (std::find(hosts.begin(), hosts.end(), topo.host_of(r)) == hosts.end()) hosts.push_back(topo.host_of(r));
  if (hosts.size() >= 2) {
    const std::vector<int> first(hosts.begin(), hosts.begin() + static_cast<std::ptrdiff_t>(hosts.size() / 2));
    for (int r : ranks) {
      const bool a = std::find(first.begin(), first.end(), topo.host_of(r)) != first.end();
      (a ? out.half_a : out.half_b).push_back(r);
    }
  } else {
    for (std::size_t i = 0; i < ranks.size(); ++i) (i < ranks.size() / 2 ? out.half_a : out.half_b).push_back(ranks[i]);
  }
  const std::size_t n = topo.vertex_count();
  FlowGraph g(n + 2);
  const std::size_t source = n, sink = n + 1;
  std::int64_t unbounded = 1;  // more than all links together: the source and sink arcs
  for (LinkId e : topo.links()) {
    const TopoLink& l = topo.link(e);
    const auto cap = static_cast<std::int64_t>(std::llround(l.payload_bw_Bps));
    add_arc(g, l.a, l.b, cap);
    add_arc(g, l.b, l.a, cap);
    unbounded += 2 * cap;
  }
  for (int r : out.half_a) add_arc(g, source, topo.gpu(r), unbounded);
  for (int r : out.half_b) add_arc(g, topo.gpu(r), sink, unbounded);
  out.bw_Bps = static_cast<double>(boost::push_relabel_max_flow(g, source, sink));
  return out;
}

}  // namespace gradsync
