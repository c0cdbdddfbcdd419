// shm.cpp: NCCL's SHM transport (src/transport/shm.cc): between GPUs of one host without P2P, the
// sender's SMs store into a buffer in host memory and the receiver's SMs load from it, so every
// byte crosses PCIe twice through the CPU's root complex (NCCL re-routes the pair's path through the
// CPU, paths.cc, and counts it so: two GPUs behind one PCIe switch share its uplink both ways).
// Before Ada/Hopper a GPU that both sends and receives so moves at most kShmDuplexBps each way.
#include "topologies/transports/transport.hpp"

namespace gradsync {
namespace {

class ShmTransport final : public Transport {
 public:
  std::optional<Hop> connect(const TransportContext& ctx, int from, int to) const override {
    if (ctx.options.shm_disable) return std::nullopt;  // NCCL_SHM_DISABLE
    if (ctx.topo.host_of(from) != ctx.topo.host_of(to)) return std::nullopt;
    Hop h;
    h.kind = TransportKind::kShm;
    h.name = "SHM/direct/direct";
    h.route = ctx.via_cpu(ctx.topo.gpu(from), ctx.topo.gpu(to));
    h.route.p2p = false;
    // NCCL plans the path at 6/5 through an Intel CPU (search.cc followPath), but the 64 B TLPs
    // behind that factor are those of peer traffic an Intel root complex forwards (topo.h
    // INTEL_P2P_OVERHEAD: "Intel CPU convert GPU P2P traffic into 64B PCI TLPs"); SHM's stores
    // into host memory and loads from it are ordinary DMA to DRAM. Four H100s of a DGX H100
    // (Xeon 8480C) allreduce through SHM at 24.0 GB/s busbw, the full share of their PCIe Gen5
    // uplinks, where 6/5 on the wire gave 20.0 (validation/published, llminsights).
    h.search_factor = ctx.intel_overhead(h.route);
    const auto old_gpu = [&](int rank) {
      const GpuSpec* g = ctx.topo.vertex(ctx.topo.gpu(rank)).gpu;
      return g != nullptr && g->sm_version < kShmDuplexUntilSm;
    };
    if (old_gpu(from) || old_gpu(to)) h.duplex_cap_Bps = kShmDuplexBps;
    return h;
  }
};

}  // namespace

std::unique_ptr<Transport> make_shm_transport() { return std::make_unique<ShmTransport>(); }

}  // namespace gradsync
