// platform.cpp: Topology -> SimGrid hosts, split-duplex links and a zone that routes on demand.
#include "sim/platform.hpp"

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <fmt/format.h>

#include <limits>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/error.hpp"

namespace gradsync::sim {
namespace {

namespace sg4 = simgrid::s4u;
namespace sgr = simgrid::kernel::routing;

// kNominalLatency_s: the latency every route with links tells SimGrid (TopologyZone::
// get_local_route), so that every flow has the same sharing penalty once its latency is paid (1,
// as a flow of no latency has); the latency factor turns it back into the route's own latency.
constexpr double kNominalLatency_s = 1.0;

// kHostSpeed: SimGrid hosts need a speed; gradsync times compute with sleeps (the cost model's
// durations), so any positive value does.
constexpr double kHostSpeed = 1e12;

// TopologyZone: one flat zone whose routes are the topology's, looked up the first time a flow
// takes them (or pinned before: a ring channel's hop between machines) and kept (a full zone
// would hold n^2 routes: 16.7 million at 4096 GPUs). Between machines, among equal-latency paths
// (a fat-tree's spines) the path is chosen by the destination, as InfiniBand's static
// destination-based routing spreads a fabric's traffic.
class TopologyZone final : public sgr::NetZoneImpl {
 public:
  TopologyZone(const Topology& topo, const Routes& routes, const Transports* transports)
      : NetZoneImpl("cluster"), topo_(topo), routes_(routes), transports_(transports) {
    if (!transports_) {
      owned_ = std::make_unique<Transports>(topo, routes, TransportOptions{});
      transports_ = owned_.get();
    }
  }

  void place(const sg4::Host* host, VertexId v) { vertex_[host->get_netpoint()->id()] = v; }
  void place_nccl(const sg4::Host* host, int rank) {
    vertex_[host->get_netpoint()->id()] = topo_.gpu(rank);
    nccl_rank_[host->get_netpoint()->id()] = rank;
  }

  // pin: the hop NCCL flows between two endpoints take; the first pinned (or looked up) stays.
  bool pin(const sg4::Host* a, const sg4::Host* b, const Hop& h) {
    const std::uint64_t key = (static_cast<std::uint64_t>(a->get_netpoint()->id()) << 32) | b->get_netpoint()->id();
    auto [it, fresh] = cache_.try_emplace(key);
    if (fresh) fill(it->second, h.route, h.wire_factor);
    return fresh;
  }
  // wire_factor: of the NCCL hop between two endpoints (looked up as a route would be).
  double wire_factor(const sg4::Host* a, const sg4::Host* b) {
    return cached(a->get_netpoint(), b->get_netpoint()).wire;
  }
  void set_links(std::vector<sg4::SplitDuplexLink*> links) { links_ = std::move(links); }

  // A route's latency is told to SimGrid as kNominalLatency_s and made its own again by the
  // latency factor (build_platform): SimGrid's CM02 shares a link among flows in inverse
  // proportion to that figure (its "sharing penalty", TCP's RTT unfairness), which no GPU fabric
  // has; NVLink, PCIe and InfiniBand arbitrate among flows by credits, not by round trips.
  void get_local_route(const sgr::NetPoint* src, const sgr::NetPoint* dst, sgr::Route* into, double* latency) override {
    const Cached& c = cached(src, dst);
    into->link_list_.insert(into->link_list_.end(), c.links.begin(), c.links.end());
    if (latency) *latency += c.links.empty() ? c.latency_s : kNominalLatency_s;
  }

 private:
  struct Cached {
    std::vector<simgrid::kernel::resource::StandardLinkImpl*> links;
    double latency_s = 0;
    double wire = 1;
  };
  const Cached& cached(const sgr::NetPoint* src, const sgr::NetPoint* dst) {
    const std::uint64_t key = (static_cast<std::uint64_t>(src->id()) << 32) | dst->id();
    auto [it, fresh] = cache_.try_emplace(key);
    Cached& c = it->second;
    if (fresh) {
      const auto ra = nccl_rank_.find(src->id());
      const auto rb = nccl_rank_.find(dst->id());
      if (ra != nccl_rank_.end() && rb != nccl_rank_.end()) {
        const Hop h = transports_->hop(ra->second, rb->second);
        fill(c, h.route, h.wire_factor);
      } else {
        fill(c, default_route(vertex_.at(src->id()), vertex_.at(dst->id())), 1);
      }
    }
    return c;
  }
  // default_route: inside a machine the topology's route; between machines a GPU's traffic
  // leaves and enters by its own NIC (Routes::nic_of), the fabric path picked by the destination.
  Route default_route(VertexId a, VertexId b) const {
    const bool across = topo_.vertex(a).host != topo_.vertex(b).host;
    const bool gpus = topo_.rank_of(a) >= 0 && topo_.rank_of(b) >= 0;
    return !across ? routes_.route(a, b)
           : gpus  ? routes_.net_route(topo_.rank_of(a), topo_.rank_of(b), static_cast<std::uint64_t>(b) + 1)
                   : routes_.route(a, b, static_cast<std::uint64_t>(b) + 1);
  }
  void fill(Cached& c, const Route& r, double wire) const {
    c.wire = wire;
    for (const DirectedLink& h : r.hops) {
      sg4::SplitDuplexLink* l = links_[h.link];
      c.links.push_back((h.forward ? l->get_link_up() : l->get_link_down())->get_impl());
      c.latency_s += topo_.link(topo_.links()[h.link]).latency_s;
    }
  }
  const Topology& topo_;
  const Routes& routes_;
  const Transports* transports_;
  std::unique_ptr<Transports> owned_;
  std::unordered_map<unsigned long, VertexId> vertex_;  // by netpoint id
  std::unordered_map<unsigned long, int> nccl_rank_;    // NCCL endpoints' netpoints: their rank
  std::vector<sg4::SplitDuplexLink*> links_;
  std::unordered_map<std::uint64_t, Cached> cache_;
};

}  // namespace

Platform build_platform(const Topology& topo, const Routes& routes, const Transports* transports) {
  if (!sg4::Engine::has_instance()) throw RuntimeError("sim: build_platform needs the engine (create_engine) first");
  auto* zone = new TopologyZone(topo, routes, transports);  // the root zone; the engine owns and deletes it
  check_host_memory(routes);
  Platform p;
  for (VertexId g : topo.gpus()) {
    p.gpus.push_back(zone->create_host(topo.vertex(g).name, {kHostSpeed}));
    zone->place(p.gpus.back(), g);
  }
  for (int r = 0; r < topo.gpu_count(); ++r) {
    p.nccl.push_back(zone->create_host("nccl:" + topo.vertex(topo.gpu(r)).name, {kHostSpeed}));
    zone->place_nccl(p.nccl.back(), r);
  }

  // Host memory: per GPU its machine's CPU socket (Routes::host_cpu; check_host_memory found one).
  std::map<VertexId, sg4::Host*> cpu_hosts;
  for (VertexId g : topo.gpus()) {
    const VertexId chosen = *routes.host_cpu(g);
    auto [it, fresh] = cpu_hosts.try_emplace(chosen, nullptr);
    if (fresh) {
      it->second = zone->create_host("mem:" + topo.vertex(chosen).name, {kHostSpeed});
      zone->place(it->second, chosen);
    }
    p.host_memory.push_back(it->second);
  }

  std::vector<sg4::SplitDuplexLink*> duplex;
  for (LinkId e : topo.links()) {
    const TopoLink& l = topo.link(e);
    sg4::SplitDuplexLink* link = zone->create_split_duplex_link(
        fmt::format("{}--{}", topo.vertex(l.a).name, topo.vertex(l.b).name), {l.payload_bw_Bps});
    link->set_latency(l.latency_s);
    link->seal();
    duplex.push_back(link);
    p.links.push_back(link);
  }
  zone->set_links(std::move(duplex));
  zone->seal();
  // The route's own latency: its links' (kNominalLatency_s was told in its place).
  zone->get_iface()->get_network_model()->set_lat_factor_cb([](double, const sg4::Host*, const sg4::Host*,
                                                               const std::vector<sg4::Link*>& links,
                                                               const std::unordered_set<sg4::NetZone*>&) {
    double latency = 0;
    for (const sg4::Link* l : links) latency += l->get_latency();
    return latency / kNominalLatency_s;
  });
  p.pin_route = [zone, nccl = p.nccl](int from, int to, const Hop& h) {
    return zone->pin(nccl.at(static_cast<std::size_t>(from)), nccl.at(static_cast<std::size_t>(to)), h);
  };
  p.nccl_wire_factor = [zone, nccl = p.nccl](int from, int to) {
    return zone->wire_factor(nccl.at(static_cast<std::size_t>(from)), nccl.at(static_cast<std::size_t>(to)));
  };
  return p;
}

}  // namespace gradsync::sim
