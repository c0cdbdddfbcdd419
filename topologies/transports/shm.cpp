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
    h.wire_factor = ctx.intel_overhead(h.route);
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
