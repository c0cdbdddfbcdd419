// nvls.cpp: NVLS and NVLSTree allreduce flows (see nvls.hpp).
#include "sim/collectives/nvls.hpp"

#include <algorithm>
#include <map>

namespace gradsync::sim {

std::vector<NvlsFlow> nvls_flows(int me, double bytes, const Channels& ch, const Topology& topo,
                                 const CollectiveChoice& choice, const std::function<double(int, int)>& bandwidth) {
  // Members by node, in rank order: node n's local GPU i.
  std::map<int, std::vector<int>> by_host;
  for (int r : ch.ranks) by_host[topo.host_of(r)].push_back(r);
  std::vector<std::vector<int>> nodes;
  int node = 0, local = 0;
  for (const auto& [host, ranks] : by_host) {
    const auto at = std::find(ranks.begin(), ranks.end(), me);
    if (at != ranks.end()) {
      node = static_cast<int>(nodes.size());
      local = static_cast<int>(at - ranks.begin());
    }
    nodes.push_back(ranks);
  }
  const std::vector<int>& mine = nodes[static_cast<std::size_t>(node)];
  const auto ppn = static_cast<double>(mine.size());
  const NvlsGraph& g = *ch.nvls;
  std::vector<NvlsFlow> out;
  // Into the NVSwitch and back: S each way through the GPU's NVLink, paired with the next GPU of
  // the node so that every GPU's links carry one flow each way.
  const int peer = mine[static_cast<std::size_t>(local + 1) % mine.size()];
  const double intra_rate = choice.algorithm == Algorithm::kNvls
                                ? choice.alg_bw_Bps
                                : static_cast<double>(g.channels) * g.bw_intra_Bps * 5.0 / 6.0;
  out.push_back({peer, bytes, bytes * bandwidth(me, peer) / intra_rate});
  if (choice.algorithm == Algorithm::kNvlsTree && nodes.size() > 1) {
    // Between nodes: this GPU's share to the same GPU of the next node, at NCCL's inter rate
    // (bwInter, half of it beyond two nodes, x 5/6) for its share of the channels.
    const std::vector<int>& next = nodes[(static_cast<std::size_t>(node) + 1) % nodes.size()];
    const int to = next[static_cast<std::size_t>(local) % next.size()];
    const double inter = nodes.size() <= 2 ? g.bw_inter_Bps : g.bw_inter_Bps / 2;
    const double share = bytes / ppn;
    const double rate = inter * 5.0 / 6.0 * static_cast<double>(g.channels) / ppn;
    out.push_back({to, share, share * bandwidth(me, to) / rate});
  }
  return out;
}

}  // namespace gradsync::sim
