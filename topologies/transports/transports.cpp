// transports.cpp: what every transport asks of the topology, and NCCL's order of trying them.
#include <fmt/format.h>

#include <limits>

#include "core/error.hpp"
#include "topologies/transports/transport.hpp"

namespace gradsync {

int TransportContext::gpus_in_machine(int rank) const { return machines.gpus.at(topo.vertex(topo.gpu(rank)).host); }

VertexId TransportContext::cpu_of(VertexId v) const {
  if (const auto known = machines.cpu_of.find(v); known != machines.cpu_of.end()) return known->second;
  const std::optional<VertexId> chosen = routes.host_cpu(v);
  if (!chosen) {
    throw ConfigError(
        fmt::format("{}: {} on host {} has no CPU socket (kind=\"cpu\"): NCCL's SHM transport and a "
                    "network without GPUDirect RDMA stage data in host memory",
                    topo.origin(), topo.vertex(v).name, topo.vertex(v).host));
  }
  machines.cpu_of.emplace(v, *chosen);
  return *chosen;
}

Route TransportContext::via_cpu(VertexId a, VertexId b) const {
  const VertexId c = cpu_of(a);
  return join(topo, routes.route(a, c), routes.route(c, b));
}

double TransportContext::intel_overhead(const Route& r) const {
  if (r.path_class != PathClass::kPHB) return 1;
  for (VertexId v : r.vertices)
    if (topo.vertex(v).kind == VertexKind::kCpu && topo.vertex(v).intel()) return 6.0 / 5.0;
  return 1;
}

std::string_view transport_kind_name(TransportKind k) {
  switch (k) {
    case TransportKind::kP2P:
      return "P2P";
    case TransportKind::kShm:
      return "SHM";
    case TransportKind::kNet:
      return "NET";
  }
  return "?";
}

Transports::Transports(const Topology& topo, const Routes& routes, TransportOptions options, int ranks)
    : topo_(topo), routes_(routes), options_(options) {
  const int n = ranks > 0 ? std::min(ranks, static_cast<int>(topo.gpu_count())) : static_cast<int>(topo.gpu_count());
  for (VertexId v = 0; v < topo.vertex_count(); ++v) {
    const TopoVertex& tv = topo.vertex(v);
    if (tv.kind == VertexKind::kGpu) machines_.gpus.try_emplace(tv.host, 0);
  }
  for (int r = 0; r < n; ++r) ++machines_.gpus[topo.vertex(topo.gpu(r)).host];
  order_.push_back(make_p2p_transport());
  order_.push_back(make_shm_transport());
  order_.push_back(make_net_transport());
}

Transports::~Transports() = default;

Hop Transports::hop(int from, int to) const {
  const TransportContext ctx{topo_, routes_, options_, machines_};
  for (const auto& t : order_) {
    try {
      if (std::optional<Hop> h = t->connect(ctx, from, to)) return *h;
    } catch (const ConfigError& e) {
      if (topo_.host_of(from) != topo_.host_of(to)) throw;
      throw ConfigError(fmt::format(
          "GPU {} to GPU {} of one host: P2P does not connect them{}, so NCCL would go {}, but {}", from, to,
          options_.p2p_disable ? " (NCCL_P2P_DISABLE=1)" : "",
          options_.shm_disable ? "through the network (SHM is off: NCCL_SHM_DISABLE=1)" : "through host memory (SHM)",
          e.what()));
    }
  }
  throw ConfigError(
      fmt::format("{}: no NCCL transport connects GPU {} to GPU {} (P2P and SHM are disabled and the "
                  "host has no NIC)",
                  topo_.origin(), from, to));
}

Hop Transports::net_hop(int from, int to, VertexId nic_from, VertexId nic_to, std::uint64_t flow) const {
  return net_hop_through(TransportContext{topo_, routes_, options_, machines_}, from, to, nic_from, nic_to, flow);
}

NicLeg Transports::nic_leg(int rank, VertexId nic, bool out) const {
  return gradsync::nic_leg(TransportContext{topo_, routes_, options_, machines_}, rank, nic, out);
}

}  // namespace gradsync
