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

namespace {

// local_gpu: the GPU whose own NIC `nic` is (Routes::nic_of; NCCL's ncclTopoGetLocalGpu: the
// NIC's local GPU whose channels use it), on `host`; -1 when none.
int local_gpu(const TransportContext& ctx, VertexId nic, int host) {
  for (int r = 0; r < ctx.topo.gpu_count(); ++r)
    if (ctx.topo.host_of(r) == host && ctx.routes.nic_of(r) == nic) return r;
  return -1;
}

}  // namespace

NicLeg nic_leg(const TransportContext& ctx, int rank, VertexId nic, bool out) {
  const PathClass level = ctx.options.net_gdr_level.value_or(PathClass::kPXB);
  const VertexId g = ctx.topo.gpu(rank);
  NicLeg leg;
  const Route direct = out ? ctx.routes.route(g, nic) : ctx.routes.route(nic, g);
  // PXN (paths.cc, "Update paths for NICs"): toward the NIC only ("favor receiving locally and
  // sending remotely"), through the NIC's local GPU p when p reaches it by GPUDirect RDMA within
  // PCIe switches (PXB), p and this GPU share NVLink (NVL), and p has more bandwidth to the NIC
  // or this GPU's own path crosses a CPU (PHB, SYS). Not over sockets (no GPUDirect RDMA).
  if (out && !ctx.options.pxn_disable && !ctx.options.ib_disable && ctx.options.nccl.at_least(2, 12)) {
    const int p = local_gpu(ctx, nic, ctx.topo.host_of(rank));
    if (p >= 0 && p != rank) {
      const Route to_nic = ctx.routes.route(ctx.topo.gpu(p), nic);
      const Route to_peer = ctx.routes.route(g, ctx.topo.gpu(p));
      if (to_nic.path_class <= PathClass::kPXB && to_nic.path_class <= level && to_peer.path_class == PathClass::kNVL &&
          (to_nic.bottleneck_Bps > direct.bottleneck_Bps || direct.path_class >= PathClass::kPHB)) {
        leg.route = join(ctx.topo, to_peer, to_nic);
        leg.gdr = leg.pxn = true;
        return leg;
      }
    }
  }
  if (!ctx.options.ib_disable && direct.path_class <= level) {
    leg.route = direct;
    leg.gdr = true;
    return leg;
  }
  leg.route = out ? ctx.via_cpu(g, nic)
                  : join(ctx.topo, ctx.routes.route(nic, ctx.cpu_of(g)), ctx.routes.route(ctx.cpu_of(g), g));
  return leg;
}

Hop net_hop_through(const TransportContext& ctx, int from, int to, VertexId nic_from, VertexId nic_to,
                    std::uint64_t flow) {
  const NicLeg out = nic_leg(ctx, from, nic_from, true);
  const NicLeg in = nic_leg(ctx, to, nic_to, false);
  // wire: what a payload byte costs the flows: 6/5 only on a leg where the NIC reaches GPU memory
  // through an Intel root complex (peer traffic, NCCL_NET_GDR_LEVEL=PHB); a leg staged in host
  // memory is ordinary DMA to DRAM (as SHM's, Hop::search_factor).
  double wire = 1;
  for (const NicLeg* l : {&out, &in})
    if (l->gdr) wire = std::max(wire, ctx.intel_overhead(l->route));
  Hop h;
  h.kind = TransportKind::kNet;
  h.route = nic_from == nic_to
                ? join(ctx.topo, out.route, in.route)
                : join(ctx.topo, join(ctx.topo, out.route, ctx.routes.fabric_route(nic_from, nic_to, flow)), in.route);
  h.route.p2p = false;
  // NCCL's log writes a PXN hop's proxy GPU after the NIC, "NET/IB/0(1)/GDRDMA"; here "PXN".
  h.name = ctx.options.ib_disable ? "NET/Socket"
           : out.gdr && in.gdr    ? (out.pxn ? "NET/IB/PXN/GDRDMA" : "NET/IB/GDRDMA")
                                  : (out.pxn ? "NET/IB/PXN" : "NET/IB");
  h.search_factor = std::max(ctx.intel_overhead(out.route), ctx.intel_overhead(in.route));
  for (const NicLeg* l : {&out, &in}) {
    if (l->pxn) continue;  // PATH_PXN, which `pxn` says
    const PathClass c = l->gdr ? l->route.path_class : std::max(PathClass::kPHB, l->route.path_class);
    h.nic_class = std::max(h.nic_class, std::min(c, PathClass::kSYS));
  }
  h.pxn = out.pxn;
  h.wire_factor = wire;
  return h;
}

std::unique_ptr<Transport> make_net_transport() { return std::make_unique<NetTransport>(); }

}  // namespace gradsync
