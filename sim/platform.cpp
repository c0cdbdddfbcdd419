// platform.cpp: Topology -> SimGrid hosts, split-duplex links and full-zone routes.
#include "sim/platform.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <fmt/format.h>

#include <limits>
#include <map>
#include <set>
#include <utility>

#include "core/error.hpp"

namespace gradsync::sim {
namespace {

namespace sg4 = simgrid::s4u;

// kHostSpeed: SimGrid hosts need a speed; gradsync times compute with sleeps (the cost model's
// durations), so any positive value does.
constexpr double kHostSpeed = 1e12;

std::vector<sg4::LinkInRoute> links_of(const Route& r, const std::vector<sg4::Link*>& links) {
  std::vector<sg4::LinkInRoute> out;
  out.reserve(r.hops.size());
  for (const DirectedLink& h : r.hops)
    out.emplace_back(links[h.link], h.forward ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
  return out;
}

}  // namespace

Platform build_platform(const Topology& topo, const Routes& routes) {
  if (!sg4::Engine::has_instance()) throw RuntimeError("sim: build_platform needs the engine (create_engine) first");
  auto* zone = sg4::create_full_zone("cluster");
  Platform p;
  for (VertexId g : topo.gpus()) p.gpus.push_back(zone->create_host(topo.vertex(g).name, kHostSpeed));

  // Host memory: per GPU the CPU socket of its host with the fewest-latency route.
  std::map<VertexId, sg4::Host*> cpu_hosts;
  std::vector<VertexId> cpu_of(topo.gpus().size());
  for (std::size_t r = 0; r < topo.gpus().size(); ++r) {
    const VertexId g = topo.gpus()[r];
    double best = std::numeric_limits<double>::infinity();
    VertexId chosen = g;
    for (VertexId v = 0; v < topo.vertex_count(); ++v) {
      if (topo.vertex(v).kind != VertexKind::kCpu || topo.vertex(v).host != topo.vertex(g).host) continue;
      const double lat = routes.route(v, g).latency_s;
      if (lat < best) {
        best = lat;
        chosen = v;
      }
    }
    if (chosen == g) {
      throw ConfigError(fmt::format("{}: GPU {} on host {} has no CPU socket (kind=\"cpu\") for host memory",
                                    topo.origin(), topo.vertex(g).name, topo.vertex(g).host));
    }
    cpu_of[r] = chosen;
    auto [it, fresh] = cpu_hosts.try_emplace(chosen, nullptr);
    if (fresh) it->second = zone->create_host("mem:" + topo.vertex(chosen).name, kHostSpeed);
    p.host_memory.push_back(it->second);
  }

  for (LinkId e : topo.links()) {
    const TopoLink& l = topo.link(e);
    sg4::SplitDuplexLink* link = zone->create_split_duplex_link(
        fmt::format("{}--{}", topo.vertex(l.a).name, topo.vertex(l.b).name), l.total_bw_Bps());
    link->set_latency(l.latency_s);
    link->seal();
    p.links.push_back(link);
  }

  const std::size_t n = p.gpus.size();
  std::set<std::pair<sg4::Host*, sg4::Host*>> staged;
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      const Route r = routes.gpu_route(static_cast<int>(a), static_cast<int>(b));
      zone->add_route(p.gpus[a]->get_netpoint(), p.gpus[b]->get_netpoint(), nullptr, nullptr, links_of(r, p.links),
                      false);
    }
    const Route to_gpu = routes.route(cpu_of[a], topo.gpus()[a]);
    const Route from_gpu = routes.route(topo.gpus()[a], cpu_of[a]);
    zone->add_route(p.host_memory[a]->get_netpoint(), p.gpus[a]->get_netpoint(), nullptr, nullptr,
                    links_of(to_gpu, p.links), false);
    zone->add_route(p.gpus[a]->get_netpoint(), p.host_memory[a]->get_netpoint(), nullptr, nullptr,
                    links_of(from_gpu, p.links), false);
  }
  // Staged peer copies (no peer access) go through the source GPU's host memory to any GPU of
  // the same machine.
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (p.host_memory[a] == p.host_memory[b]) continue;
      if (topo.vertex(topo.gpus()[a]).host != topo.vertex(topo.gpus()[b]).host) continue;
      if (!staged.insert({p.host_memory[a], p.gpus[b]}).second) continue;
      zone->add_route(p.host_memory[a]->get_netpoint(), p.gpus[b]->get_netpoint(), nullptr, nullptr,
                      links_of(routes.route(cpu_of[a], topo.gpus()[b]), p.links), false);
      zone->add_route(p.gpus[b]->get_netpoint(), p.host_memory[a]->get_netpoint(), nullptr, nullptr,
                      links_of(routes.route(topo.gpus()[b], cpu_of[a]), p.links), false);
    }
  }
  zone->seal();
  return p;
}

}  // namespace gradsync::sim
