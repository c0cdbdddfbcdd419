// net.cpp: NCCL's NET transport (src/transport/net.cc, src/graph/paths.cc ncclTopoCheckGdr):
// through a NIC to another host. With GPUDirect RDMA (the GPU-NIC path no farther than
// NCCL_NET_GDR_LEVEL, PXB by default) the NIC reads and writes GPU memory directly; without it
// (farther, or NCCL_IB_DISABLE's sockets) the buffers sit in host memory and the data crosses the
// CPU's root complex on its way to and from the NIC: NCCL plans that at 6/5 through an Intel CPU,
// but only peer traffic pays it (Hop::search_factor).
#include "topologies/transports/transport.hpp"

namespace gradsync {
namespace {

class NetTransport final : public Transport {
 public:
  std::optional<Hop> connect(const TransportContext& ctx, int from, int to) const override {
    if (ctx.topo.nics_of_host(ctx.topo.host_of(from)).empty() || ctx.topo.nics_of_host(ctx.topo.host_of(to)).empty())
      return std::nullopt;
    return net_hop_through(ctx, from, to, ctx.routes.nic_of(from), ctx.routes.nic_of(to),
                           static_cast<std::uint64_t>(ctx.topo.gpu(to)) + 1);
  }
};

}  // namespace

Hop net_hop_through(const TransportContext& ctx, int from, int to, VertexId nic_from, VertexId nic_to,
                    std::uint64_t flow) {
  const PathClass level = ctx.options.net_gdr_level.value_or(PathClass::kPXB);
  bool gdr = !ctx.options.ib_disable;
  // wire: what a payload byte costs the flows: 6/5 only on a leg where the NIC reaches GPU memory
  // through an Intel root complex (peer traffic, NCCL_NET_GDR_LEVEL=PHB); a leg staged in host
  // memory is ordinary DMA to DRAM (as SHM's, Hop::search_factor).
  double wire = 1;
  // leg: GPU g and NIC n, directly when GPUDirect RDMA reaches, else through g's host memory.
  const auto leg = [&](VertexId g, VertexId n, bool out) {
    const Route direct = out ? ctx.routes.route(g, n) : ctx.routes.route(n, g);
    if (!ctx.options.ib_disable && direct.path_class <= level) {
      wire = std::max(wire, ctx.intel_overhead(direct));
      return direct;
    }
    gdr = false;
    return out ? ctx.via_cpu(g, n)
               : join(ctx.topo, ctx.routes.route(n, ctx.cpu_of(g)), ctx.routes.route(ctx.cpu_of(g), g));
  };
  const Route out = leg(ctx.topo.gpu(from), nic_from, true);
  const Route in = leg(ctx.topo.gpu(to), nic_to, false);
  Hop h;
  h.kind = TransportKind::kNet;
  h.route = nic_from == nic_to
                ? join(ctx.topo, out, in)
                : join(ctx.topo, join(ctx.topo, out, ctx.routes.fabric_route(nic_from, nic_to, flow)), in);
  h.route.p2p = false;
  h.name = ctx.options.ib_disable ? "NET/Socket" : gdr ? "NET/IB/GDRDMA" : "NET/IB";
  h.search_factor = std::max(ctx.intel_overhead(out), ctx.intel_overhead(in));
  h.wire_factor = wire;
  return h;
}

std::unique_ptr<Transport> make_net_transport() { return std::make_unique<NetTransport>(); }

}  // namespace gradsync
