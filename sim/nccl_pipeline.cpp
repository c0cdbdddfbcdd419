// nccl_pipeline.cpp: what NCCL's chunking costs beyond its tuning model (nccl_model.hpp):
// chunk sizes per protocol, NVLS's chunk, the blocks a kernel launches, and the pipeline's
// handshakes and fill (pipeline_sync_s).
#include <algorithm>
#include <cmath>

#include "sim/nccl_model.hpp"

namespace gradsync::sim {

double chunk_bytes(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return 32.0 * 1024;
    case Protocol::kLL128:
      return 576.0 * 1024;
    case Protocol::kSimple:
      return 2.0 * 1024 * 1024;
  }
  return 2.0 * 1024 * 1024;
}

double tuning_bytes(Collective c, double bytes, int k) { return c == Collective::kAllgather ? bytes * k : bytes; }

namespace {

// calcCollChunking's NVLS and NVLSTree chunk (enqueue.cc, NCCL 2.27.7): nvlsChunkSize (128 KiB,
// NCCL_NVLS_CHUNKSIZE) cut for calls that would not fill every channel and head many times.
double nvls_chunk(Algorithm a, double nbytes, double ops, int nodes, double nvls_bus_GBps) {
  double chunk = 128.0 * 1024;
  if (a == Algorithm::kNvls) {
    if (nodes > 1 && nvls_bus_GBps < 150) chunk = 32768;
    if (nbytes < 64 * ops * chunk && chunk > 65536) chunk = 65536;
    if (nbytes < 8 * ops * chunk && chunk > 32768) chunk = 32768;
    if (nbytes < 2 * ops * chunk && chunk > 16384) chunk = 16384;
  } else {
    if (nodes >= 4) chunk = 65536;  // NCCL_NVLSTREE_MAX_CHUNKSIZE's default
    if (nbytes < 32 * ops * chunk && chunk > 262144) chunk = 262144;
    if (nbytes < 16 * ops * chunk && chunk > 131072) chunk = 131072;
    if (nbytes < 4 * ops * chunk && chunk > 65536) chunk = 65536;
    if (nbytes < 1 * ops * chunk && chunk > 32768) chunk = 32768;
  }
  return chunk;
}

}  // namespace

int launched_blocks(Algorithm a, const Channels& ch) {
  if (ch.ranks.size() <= 1) return 0;
  if ((a == Algorithm::kNvls || a == Algorithm::kNvlsTree) && ch.nvls) return ch.nvls->launched;
  return launched_channels(ch);
}

double pipeline_sync_s(Collective c, double nbytes, const Channels& ch, Algorithm a, Protocol p, double alg_Bps) {
  const int k = static_cast<int>(ch.ranks.size());
  if (k <= 1 || p != Protocol::kSimple || !(nbytes > 0)) return 0;
  const double handshake = hop_latency_s(HopKind::kNvlink, Algorithm::kRing, Protocol::kSimple);
  // A ring that also crosses PCIe (A100 PCIe boards bridged in pairs) or the network is paced by
  // those hops; the read hops' handshakes pass while they move. Across nodes NCCL's model counts
  // that pacing itself: each network step's latency, and x1.4 for Simple ("Plateau effect of
  // ring", ncclTopoGetAlgoTime).
  if (a == Algorithm::kRing && ch.p2p_read && ch.intra_class == PathClass::kNVL && ch.nodes() == 1 &&
      (c == Collective::kAllreduce || c == Collective::kAllgather || c == Collective::kReduceScatter)) {
    // Launched channels: the searched ones doubled (connect.cc: nChannels*2, at most MAXCHANNELS),
    // or as NCCL_MIN/MAX_NCHANNELS bound them.
    const double launched = launched_channels(ch);
    const double piece = nbytes / (launched * k);         // per rank and channel
    const double chunk = chunk_bytes(Protocol::kSimple);  // 2 MiB: one loop's part
    const double loops = std::max(1.0, std::ceil(piece / chunk - 1e-12));
    const double last = piece - (loops - 1) * chunk;
    // prims_simple.h: a chunk moves in 2 slices of at least 32 KiB (stepSize * StepPerSlice / 32).
    const double slices = 2 * (loops - 1) + (last > 32768 ? 2 : 1);
    return slices * ring_steps(c, k) * hop_latency_s(hop_kind(ch.intra_class), Algorithm::kRing, Protocol::kSimple);
  }
  if ((a == Algorithm::kNvls || a == Algorithm::kNvlsTree) && ch.nvls) {
    const int nodes = ch.nodes();
    // Launched NVLS channels (nvls.cc NVLS_NCHANNELS_SM90 16; SM100 24 in one NVLink domain, 32
    // across nodes), each a chunk per head (a node's GPU) per round.
    const double launched = ch.nvls->launched;
    const double ops = launched * std::max(1, k / nodes);
    const double bus = ch.nvls->channels * std::min(ch.nvls->bw_intra_Bps, ch.nvls->bw_inter_Bps) / 1e9;
    // NCCL's NVLS bandwidth is what its default chunk (128 KiB) achieves; a call cut into smaller
    // chunks pays one more handshake per extra round.
    const double chunk = nvls_chunk(a, nbytes, ops, nodes, bus);
    const double rounds = std::ceil(nbytes / (ops * chunk) - 1e-12);
    const double full = std::ceil(nbytes / (ops * 128.0 * 1024) - 1e-12);
    // A round of NVLSTree also crosses the network: NCCL's per-step network latency for it.
    const double round_sync = a == Algorithm::kNvls ? handshake : hop_latency_s(HopKind::kNet, a, p);
    // Fill: the first round is scattered before the switch reduces it, the last gathered after:
    // one round's bytes at NCCL's NVLS algorithm bandwidth and its handshake.
    const double round_bytes = std::min(nbytes, ops * chunk);
    double fill = round_bytes / alg_Bps + round_sync;
    if (a == Algorithm::kNvlsTree && nodes > 1) {
      // NVLSTree's first round also crosses the network up the tree and back down before the last
      // stages can start (all_reduce.h runTreeSplit, NVLS_TREE: the leaf head's send, the root
      // head's reduce and send back, the leaf's multicast): 2 x log2(nodes) network hops, each
      // taking half a round's bytes (channels alternate their tree's root, connect.cc) through the
      // node's NICs at the NVLS graph's inter-node rate (nChannels x bwInter, halved beyond two
      // nodes as tuning.cc halves it). The steps behind it follow at the pipeline's rate.
      const double node_inter = ch.nvls->channels * (nodes <= 2 ? ch.nvls->bw_inter_Bps : ch.nvls->bw_inter_Bps / 2);
      const double hops = 2 * std::ceil(std::log2(static_cast<double>(nodes)) - 1e-12);
      if (node_inter > 0) fill += hops * (round_bytes / 2) / node_inter;
    }
    return std::max(0.0, rounds - full) * round_sync + fill;
  }
  return 0;
}

}  // namespace gradsync::sim
