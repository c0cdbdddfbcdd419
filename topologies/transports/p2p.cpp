// p2p.cpp: NCCL's P2P transport (src/transport/p2p.cc p2pCanConnect, src/graph/paths.cc
// ncclTopoCheckP2p): a GPU writes straight into its peer's memory over NVLink or PCIe, when the
// path between them is no farther than the P2P level and both GPUs can do it.
#include <fmt/format.h>

#include "topologies/transports/transport.hpp"

namespace gradsync {

PathClass default_p2p_level(NcclRelease release, bool amd, int gpus) {
  // NCCL 2.4 (transport/p2p.cc p2pCanConnect): "Do not use P2P across root complexes by default",
  // pciDistance < PATH_NODE: through the CPU's host bridge (PHB) but no farther.
  if (!release.at_least(2, 5)) return PathClass::kPHB;
  // 2.5-2.22 (graph/paths.cc ncclTopoCheckP2p): PATH_SYS, lowered for some CPUs: Intel's to PXB
  // from 2.9, to PHB in 2.7-2.8 (PXB on Broadwell, which gradsync does not tell apart: a later
  // Xeon is assumed), not at all in 2.5-2.6 (but Broadwell); AMD's never ("In general, use P2P
  // whenever we can").
  if (!release.at_least(2, 23)) {
    if (amd) return PathClass::kSYS;
    if (release.at_least(2, 9)) return PathClass::kPXB;
    return release.at_least(2, 7) ? PathClass::kPHB : PathClass::kSYS;
  }
  // 2.23 on: "By default don't use P2P across CPU Host Bridges and further apart" (PXB), "Allow
  // P2P between pairs of GPUs on AMD systems" (SYS when the machine has at most 2 GPUs).
  return amd && gpus <= 2 ? PathClass::kSYS : PathClass::kPXB;
}

namespace {

class P2pTransport final : public Transport {
 public:
  std::optional<Hop> connect(const TransportContext& ctx, int from, int to) const override {
    if (ctx.options.p2p_disable) return std::nullopt;  // NCCL_P2P_DISABLE: the P2P level becomes LOC
    if (ctx.topo.host_of(from) != ctx.topo.host_of(to)) return std::nullopt;
    const Route r = ctx.routes.gpu_route(from, to);
    const VertexId gpu = ctx.topo.gpu(from);
    const bool amd = ctx.has_cpu(gpu) && ctx.topo.vertex(ctx.cpu_of(gpu)).amd();
    PathClass level = default_p2p_level(ctx.options.nccl, amd, ctx.gpus_in_machine(from));
    if (ctx.options.p2p_level) level = *ctx.options.p2p_level;
    if (r.path_class > level) return std::nullopt;
    // Over PCIe both GPUs must do peer-to-peer (NVML's P2P status; GeForce boards report none).
    if (r.path_class > PathClass::kNVB &&
        !(ctx.topo.vertex(ctx.topo.gpu(from)).p2p_capable() && ctx.topo.vertex(ctx.topo.gpu(to)).p2p_capable()))
      return std::nullopt;
    Hop h;
    h.kind = TransportKind::kP2P;
    // P2P read for Ampere pairs over NVLink only (paths.cc ncclTopoCheckP2p: "Enable P2P Read for
    // Ampere/NVLink only", both GPUs sm80; NCCL_P2P_READ_ENABLE is not modelled).
    const auto sm = [&](int rank) {
      const GpuSpec* g = ctx.topo.vertex(ctx.topo.gpu(rank)).gpu;
      return g != nullptr ? g->sm_version : 0;
    };
    h.read = r.path_class == PathClass::kNVL && sm(from) == 80 && sm(to) == 80;
    // NCCL's name for it, one process per GPU: P2P/CUMEM from 2.19 (NCCL_CUMEM_ENABLE on by default,
    // init.cc), P2P/IPC (CUDA IPC handles) before; "/read" where the receiver reads (p2p.cc).
    const char* api = ctx.options.nccl.at_least(2, 19) ? "P2P/CUMEM" : "P2P/IPC";
    h.name = fmt::format("{}{}", api, h.read ? "/read" : "");
    h.route = r;
    h.wire_factor = h.search_factor = ctx.intel_overhead(r);
    return h;
  }
};

}  // namespace

std::unique_ptr<Transport> make_p2p_transport() { return std::make_unique<P2pTransport>(); }

}  // namespace gradsync
