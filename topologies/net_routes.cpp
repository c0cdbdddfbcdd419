// net_routes.cpp: the routes between ranks of different machines (topologies/routes.hpp): each
// rank's NIC as NCCL picks it, and the fabric between two NICs (ECMP over equal-cost paths).
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "topologies/routes.hpp"

namespace gradsync {

VertexId Routes::nic_of(int rank) const {
  if (nic_of_.empty()) nic_of_.assign(static_cast<std::size_t>(topo_.gpu_count()), -1);
  const std::int64_t known = nic_of_.at(static_cast<std::size_t>(rank));
  if (known >= 0) return static_cast<VertexId>(known);
  // Deal the machine's NICs to all of its GPUs at once, in rank order.
  const int host = topo_.host_of(rank);
  const std::vector<VertexId> nics = topo_.nics_of_host(host);
  if (nics.empty()) {
    throw ConfigError(fmt::format("{}: host {} has GPUs but no nic; GPUs on several hosts talk through NICs",
                                  topo_.origin(), topo_.hosts()[static_cast<std::size_t>(host)]));
  }
  std::map<VertexId, int> used;
  for (int g = 0; g < topo_.gpu_count(); ++g) {
    if (topo_.host_of(g) != host) continue;
    const auto key = [&](VertexId nic) {
      const Route r = route(topo_.gpu(g), nic);
      return std::make_pair(r.path_class, r.latency_s);
    };
    VertexId best = nics.front();
    for (VertexId nic : nics) {
      const auto k = key(nic), b = key(best);
      if (k < b || (k == b && used[nic] < used[best])) best = nic;
    }
    ++used[best];
    nic_of_[static_cast<std::size_t>(g)] = static_cast<std::int64_t>(best);
  }
  return static_cast<VertexId>(nic_of_[static_cast<std::size_t>(rank)]);
}

std::uint64_t Routes::nic_ordinal(VertexId nic) const {
  if (nic_ordinals_.empty()) {
    nic_ordinals_.assign(topo_.vertex_count(), 0);
    std::uint64_t n = 0;
    for (VertexId v = 0; v < topo_.vertex_count(); ++v)
      if (topo_.vertex(v).kind == VertexKind::kNic) nic_ordinals_[v] = n++;
  }
  return nic_ordinals_[nic];
}

Route Routes::net_route(int from_rank, int to_rank, std::uint64_t flow) const {
  return net_route(from_rank, to_rank, nic_of(from_rank), nic_of(to_rank), flow);
}

Route Routes::net_route(int from_rank, int to_rank, VertexId nic_a, VertexId nic_b, std::uint64_t flow) const {
  return join(topo_, join(topo_, route(topo_.gpu(from_rank), nic_a), fabric_route(nic_a, nic_b, flow)),
              route(nic_b, topo_.gpu(to_rank)));
}

Route Routes::fabric_route(VertexId nic_a, VertexId nic_b, std::uint64_t flow) const {
  // port: a NIC's first network link (InfiniBand or Ethernet) and the vertex at its other end.
  const auto port = [&](VertexId nic) {
    for (auto e : boost::make_iterator_range(boost::out_edges(nic, topo_.graph()))) {
      const LinkType t = topo_.link(e).type;
      if (t == LinkType::kInfiniband || t == LinkType::kEthernet) return std::make_pair(e, topo_.other_end(e, nic));
    }
    // A fault of the file (exit 1 on every command), named where the NIC is declared.
    const TopoVertex& v = topo_.vertex(nic);
    throw DataError(
        fmt::format("{}{}: nic {} has no infiniband or ethernet link to the network; expected one, since "
                    "traffic between hosts goes through it",
                    topo_.origin(), v.line > 0 ? fmt::format(":{}", v.line) : "", v.name));
  };
  const auto single = [&](VertexId from, LinkId e) {
    Route r;
    r.from = from;
    r.to = topo_.other_end(e, from);
    r.vertices = {from, r.to};
    const TopoLink& l = topo_.link(e);
    r.hops = {DirectedLink{l.index, l.a == from}};
    r.latency_s = l.latency_s;
    r.bottleneck_Bps = l.payload_bw_Bps;
    r.path_class = classify(topo_, r.vertices, r.hops);
    r.p2p = false;
    return r;
  };
  const auto [ea, sa] = port(nic_a);
  const auto [eb, sb] = port(nic_b);
  const Route out = single(nic_a, ea);
  if (sa == nic_b) return out;  // NICs cabled back to back
  const Route in = single(sb, eb);
  if (sa == sb) return join(topo_, out, in);
  if (topo_.link(ea).type == LinkType::kInfiniband) {
    return join(topo_, join(topo_, out, route_by_destination(sa, sb, nic_ordinal(nic_b))), in);
  }
  return join(topo_, join(topo_, out, route(sa, sb, flow)), in);
}

}  // namespace gradsync
