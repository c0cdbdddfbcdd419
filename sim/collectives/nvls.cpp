// nvls.cpp: NVLS and NVLSTree allreduce flows (see nvls.hpp).
#include "sim/collectives/nvls.hpp"

#include <algorithm>
#include <map>

namespace gradsync::sim {

NvlsNodes nvls_nodes(const Channels& ch, const Topology& topo) {
  std::map<int, std::vector<int>> by_host;
  for (int r : ch.ranks) by_host[topo.host_of(r)].push_back(r);
  NvlsNodes out;
  int top = -1;
  for (int r : ch.ranks) top = std::max(top, r);
  out.node_of.assign(static_cast<std::size_t>(top + 1), 0);
  out.local_of.assign(static_cast<std::size_t>(top + 1), 0);
  for (auto& [host, ranks] : by_host) {
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      out.node_of[static_cast<std::size_t>(ranks[i])] = static_cast<int>(out.nodes.size());
      out.local_of[static_cast<std::size_t>(ranks[i])] = static_cast<int>(i);
    }
    out.nodes.push_back(std::move(ranks));
  }
  return out;
}

std::vector<NvlsFlow> nvls_flows(int me, double bytes, const NvlsNodes& nn, const NvlsGraph& g,
                                 const CollectiveChoice& choice,
                                 const std::function<double(int, int)>& direct_bandwidth) {
  const std::vector<std::vector<int>>& nodes = nn.nodes;
  const int node = nn.node_of[static_cast<std::size_t>(me)];
  const int local = nn.local_of[static_cast<std::size_t>(me)];
  const std::vector<int>& mine = nodes[static_cast<std::size_t>(node)];
  // Fewer blocks than NCCL's default (NCCL_MAX_CTAS): each block moves its share of the data at
  // the rate it has by default ("NVLS should not need more than 16 channels to get peak BW",
  // enqueue.cc), so the call slows in proportion; more blocks (NCCL_MIN_CTAS) add nothing.
  const double blocks =
      g.default_launched > 0 ? std::min(1.0, static_cast<double>(g.launched) / g.default_launched) : 1.0;
  std::vector<NvlsFlow> out;
  // Into the NVSwitch and back: S each way through the GPU's NVLink, paired with the next GPU of
  // the node so that every GPU's links carry one flow each way.
  const int peer = mine[static_cast<std::size_t>(local + 1) % mine.size()];
  const double intra_rate =
      blocks * (choice.algorithm == Algorithm::kNvls ? choice.rate_Bps
                                                     : static_cast<double>(g.channels) * g.bw_intra_Bps * 5.0 / 6.0);
  out.push_back({peer, bytes, bytes * direct_bandwidth(me, peer) / intra_rate, true});
  if (choice.algorithm == Algorithm::kNvlsTree && nodes.size() > 1) {
    // Between nodes: each head (a NIC's local GPU, NvlsGraph::heads; every GPU when none are
    // known) carries its node's share S / heads to the same head of the next node, at most at
    // NCCL's inter rate (bwInter, half of it beyond two nodes, x 5/6) for its share of the
    // channels. The flow carries its bytes as the protocol does and is capped at that rate: its
    // NIC (and the PCIe to it) are shared with whatever else crosses them, as SimGrid shares them.
    // Its wire bytes stretched to take share / rate at the route's full speed instead (before
    // 2026-12-01) made GPUs that share a NIC each take it for itself.
    const auto heads_of = [&](std::size_t n) -> const std::vector<int>& {
      return n < g.heads.size() && !g.heads[n].empty() ? g.heads[n] : nodes[n];
    };
    const std::vector<int>& heads = heads_of(static_cast<std::size_t>(node));
    const auto at = std::find(heads.begin(), heads.end(), me);
    if (at != heads.end()) {
      const auto j = static_cast<std::size_t>(at - heads.begin());
      const std::vector<int>& next = heads_of((static_cast<std::size_t>(node) + 1) % nodes.size());
      const int to = next[j % next.size()];
      const double inter = nodes.size() <= 2 ? g.bw_inter_Bps : g.bw_inter_Bps / 2;
      const auto count = static_cast<double>(heads.size());
      const double share = bytes / count;
      const double rate = blocks * inter * 5.0 / 6.0 * static_cast<double>(g.channels) / count;
      const double per_byte = choice.wire_bytes_per_byte();
      NvlsFlow f{to, share, share * per_byte};
      f.cap = rate * per_byte;
      out.push_back(f);
    }
  }
  return out;
}

}  // namespace gradsync::sim
