// nccl_graphs.cpp: NCCL's channel speeds (the arrays its search tries), and the tree and NVLS
// graphs beside the rings (src/graph/search.cc): the speeds NCCL's tuning model gives a tree
// between two nodes, and NVLink SHARP's channels.
#include <algorithm>
#include <limits>
#include <map>

#include "topologies/channels.hpp"

namespace gradsync {
namespace {

// NCCL's per-channel speed tables, GB/s (src/graph/search.cc: speedArrayIntra/Inter and the
// sm90/sm100 variants). The first entry is the fastest a channel may go.
constexpr double kIntraSm80[] = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
constexpr double kIntraSm90[] = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
constexpr double kIntraSm100[] = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18};
constexpr double kInterSm80[] = {48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12};
constexpr double kInterSm90[] = {48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
constexpr double kInterSm100[] = {96, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};

std::vector<double> speed_table(bool inter, int sm) {
  const auto pick = [](auto& a) { return std::vector<double>(std::begin(a), std::end(a)); };
  if (sm >= 100) return inter ? pick(kInterSm100) : pick(kIntraSm100);
  if (sm >= 90) return inter ? pick(kInterSm90) : pick(kIntraSm90);
  return inter ? pick(kInterSm80) : pick(kIntraSm80);
}

}  // namespace

std::vector<double> nccl_speeds(bool inter, int sm) {
  std::vector<double> out = speed_table(inter, sm);
  for (double& v : out) v *= 1e9;
  return out;
}

namespace {

// largest: the fastest speed of NCCL's array no more than `cap` (0 if none).
double largest(const std::vector<double>& speeds, double cap) {
  for (double s : speeds)
    if (s <= cap * (1 + 1e-9)) return s;
  return 0;
}

// nvlink_Bps: a GPU's NVLink payload bandwidth, all links (0 without NVLink); nvswitch: the
// NVSwitch its links reach (all to one), or none.
double nvlink_Bps(const Topology& topo, VertexId gpu, std::optional<VertexId>& nvswitch, bool& only_switch) {
  double sum = 0;
  only_switch = true;
  for (auto e : boost::make_iterator_range(boost::out_edges(gpu, topo.graph()))) {
    const TopoLink& l = topo.link(e);
    if (l.type != LinkType::kNvlink) continue;
    sum += l.payload_bw_Bps;
    const VertexId other = topo.other_end(e, gpu);
    if (topo.vertex(other).kind != VertexKind::kNvswitch) {
      only_switch = false;
    } else if (!nvswitch) {
      nvswitch = other;
    } else if (*nvswitch != other) {
      only_switch = false;  // several NVSwitch vertices: gradsync's generators make one (NCCL merges them)
    }
  }
  return sum;
}

}  // namespace

void graph_nvls_and_tree(const Topology& topo, const Routes& routes, const Transports& transports, Channels& ch) {
  if (ch.rings.empty()) return;
  const int nodes = ch.nodes();
  const auto channels = static_cast<double>(ch.rings.size());
  // Every GPU's NVLink bandwidth (its PCIe link where it has none) bounds what a node's chain or
  // NVLS head moves per channel.
  std::map<int, std::vector<int>> by_host;
  for (int r : ch.ranks) by_host[topo.host_of(r)].push_back(r);
  double intra_cap = std::numeric_limits<double>::infinity();
  double nvswitch_link = std::numeric_limits<double>::infinity();
  bool nvls = ch.sm_version >= 90;
  for (const auto& [host, ranks] : by_host) {
    std::optional<VertexId> common;
    nvls = nvls && ranks.size() > 2;  // NCCL's NVLS needs more than two GPUs (nvls.cc)
    for (int r : ranks) {
      std::optional<VertexId> sw;
      bool only_switch = true;
      const double nv = nvlink_Bps(topo, topo.gpu(r), sw, only_switch);
      double cap = nv;
      if (nv == 0) {
        for (auto e : boost::make_iterator_range(boost::out_edges(topo.gpu(r), topo.graph())))
          cap = std::max(cap, topo.link(e).payload_bw_Bps);
      }
      intra_cap = std::min(intra_cap, cap);
      nvls = nvls && sw && only_switch && (!common || *common == *sw);
      if (sw) common = sw;
      nvswitch_link = std::min(nvswitch_link, nv);
    }
  }
  const std::vector<double> inter = nccl_speeds(true, ch.sm_version);
  if (nodes > 1) {
    // search.cc, second pass: "increase bwIntra for trees (2 nodes or collnet)" while below twice
    // bwInter, where the node's links hold the channels.
    // The search charges each chain hop's route at the speed tried, forward only (search.cc
    // followPath, 6/5 through an Intel root complex: Hop::search_factor), so a speed whose chains
    // overfill a link fails: the rings' hops inside the nodes, which the chains follow, bound it
    // (two sockets' 10 GB/s QPI between a node's GPUs keeps the tree at the ring's 10).
    std::map<std::size_t, double> load;  // per link direction: channels x search factor
    for (const RingChannel& ring : ch.rings)
      for (const Hop& h : ring.hops)
        if (h.route.path_class != PathClass::kNET)
          for (const DirectedLink& d : h.route.hops) load[d.slot()] += h.search_factor;
    double chain_cap = std::numeric_limits<double>::infinity();
    for (const auto& [slot, l] : load)
      chain_cap = std::min(chain_cap, topo.link(topo.links()[slot / 2]).payload_bw_Bps / l);
    ch.tree_bw_inter_Bps = ch.channel_bw_Bps;
    ch.tree_bw_intra_Bps =
        std::max(ch.channel_bw_Bps, largest(inter, std::min({2 * ch.channel_bw_Bps, intra_cap / channels, chain_cap})));
  }
  if (!nvls) return;
  const int ppn = static_cast<int>(by_host.begin()->second.size());
  NvlsGraph g;
  g.channels = std::min(32, ppn);  // NCCL_MAX_NVLS_ARITY
  g.default_launched = ch.sm_version >= 100 ? (nodes > 1 ? 32 : 24) : 16;
  g.launched = g.default_launched;
  if (nodes > 1) {
    // Across nodes NCCL's NVLS search pairs each NIC with its local GPU, the head of one channel
    // (search.cc ncclTopoSearchRecNet: "NVLS search only tries to find NIC:GPU combinations to
    // compute the heads", a GPU local to two NICs heading one channel): a node has as many
    // channels as such heads, and only they cross the network (DGX H100: a NIC per GPU, 8 heads).
    std::size_t fewest = std::numeric_limits<std::size_t>::max();
    for (const auto& [host, ranks] : by_host) {
      std::vector<int> heads;
      for (VertexId nic : topo.nics_of_host(host)) {
        // The NIC's local GPU (topo.cc ncclTopoGetLocalGpu): the GPU whose own NIC it is, as NICs
        // are dealt out among their nearest GPUs (Routes::nic_of); else the nearest GPU.
        int best = -1;
        for (int r : ranks)
          if (routes.nic_of(r) == nic) {
            best = r;
            break;
          }
        PathClass best_class = PathClass::kNET;
        for (int r : ranks) {
          if (best >= 0 && routes.nic_of(best) == nic) break;
          const PathClass c = routes.route(topo.gpu(r), nic).path_class;
          if (best < 0 || c < best_class) best = r, best_class = c;
        }
        if (best >= 0 && std::find(heads.begin(), heads.end(), best) == heads.end()) heads.push_back(best);
      }
      fewest = std::min(fewest, heads.size());
      g.heads.push_back(std::move(heads));
    }
    g.channels = static_cast<int>(std::min<std::size_t>(32, std::max<std::size_t>(1, fewest)));
  }
  // ncclTopoSearchTryNvls charges the head GPU's NVSwitch links twice a channel and every other
  // GPU's once: each link carries (channels + 1) channels at most.
  const std::vector<double> speeds = nccl_speeds(nodes > 1, ch.sm_version);
  g.bw_intra_Bps = largest(speeds, nvswitch_link / (g.channels + 1));
  g.bw_inter_Bps = g.bw_intra_Bps;
  if (nodes == 1 && g.bw_intra_Bps > 0) {
    // On one node nothing the search follows is inter (GPU <-> NVSwitch paths check bwIntra), so
    // its second pass (search.cc ncclTopoCompute, pass 2, NVLS) raises bwInter a speed at a time
    // while it is below twice bwIntra, as far as the array's top: 8 H100s 40/60 GB/s, 6 of them
    // 50/60. NCCL 2.27's model takes the smaller of the two; 2.28's reads bwInter (nccl_model.cpp).
    auto at = std::find(speeds.begin(), speeds.end(), g.bw_intra_Bps);
    while (at != speeds.begin() && g.bw_inter_Bps < 2 * g.bw_intra_Bps) g.bw_inter_Bps = *--at;
  }
  if (nodes > 1) {
    // Between nodes each head goes through its NIC, on the NET transport's leg: staged in host
    // memory where GPUDirect RDMA does not reach (NCCL_NET_GDR_LEVEL) or NCCL_IB_DISABLE leaves
    // sockets (paths.cc routes GPU->NET through the CPU then, and the NVLS graph's search follows
    // that path). The heads' legs share links (a CPU's root ports when staged), which NCCL's
    // search charges once per head: each head gets its links' payload over the heads crossing
    // them. Its second pass raises bwInter no further than twice bwIntra.
    double nic_path = std::numeric_limits<double>::infinity();
    for (const std::vector<int>& heads : g.heads) {
      std::vector<Route> legs;
      std::map<std::size_t, int> heads_on;  // per link direction (DirectedLink::slot)
      for (int r : heads) {
        legs.push_back(transports.nic_leg(r, routes.nic_of(r), true).route);
        for (const DirectedLink& d : legs.back().hops) ++heads_on[d.slot()];
      }
      for (const Route& leg : legs) {
        double rate = leg.bottleneck_Bps;
        for (const DirectedLink& d : leg.hops)
          rate = std::min(rate, topo.link(topo.links()[d.link]).payload_bw_Bps / heads_on[d.slot()]);
        nic_path = std::min(nic_path, rate);
      }
    }
    g.bw_inter_Bps = largest(inter, std::min(nic_path, 2 * g.bw_intra_Bps));
  }
  if (g.bw_intra_Bps > 0 && g.bw_inter_Bps > 0) ch.nvls = g;
}

void finish_graphs(const Topology& topo, const Routes& routes, const Transports& transports, Channels& out) {
  // NCCL's ncclTopoDupChannels (src/graph/search.cc): fast channels are doubled at half the speed
  // (more CTAs in flight, the same bandwidth), except below 25 GB/s and, past Ampere, below
  // 50 GB/s with more than 4 channels. The model's per-channel caps count the doubled channels.
  int sm = std::numeric_limits<int>::max();
  for (int r : out.ranks) sm = std::min(sm, topo.vertex(topo.gpu(r)).gpu->sm_version);
  const double gbps = out.channel_bw_Bps / 1e9;
  const auto n = out.rings.size();
  if (gbps >= 25.0 * (1 - 1e-9) && !(sm > 80 && gbps < 50.0 * (1 - 1e-9) && n > 4)) {
    const std::size_t dup = std::min<std::size_t>(2 * n, kMaxDupChannels);
    for (std::size_t c = n; c < dup; ++c) out.rings.push_back(out.rings[c - n]);
    out.channel_bw_Bps /= static_cast<double>((dup + n - 1) / n);
  }
  out.sm_version = sm;
  for (int r : out.ranks) {
    const VertexId g = topo.gpu(r);
    for (VertexId c = 0; c < topo.vertex_count(); ++c)
      if (topo.vertex(c).kind == VertexKind::kCpu && topo.vertex(c).host == topo.vertex(g).host) {
        out.amd = topo.vertex(c).amd();
        out.arm = topo.vertex(c).arm();
      }
    break;
  }
  graph_nvls_and_tree(topo, routes, transports, out);
  out.same_channels = true;
  for (const RingChannel& ch : out.rings) {
    const RingChannel& first = out.rings.front();
    const bool forward = ch.order == first.order;
    // The same cycle the other way round: first's order read backwards from its first rank.
    bool backward = ch.order.size() == first.order.size() && !ch.order.empty() && ch.order[0] == first.order[0];
    for (std::size_t i = 1; backward && i < ch.order.size(); ++i)
      backward = ch.order[i] == first.order[first.order.size() - i];
    if (!(forward || backward) || ch.nics != first.nics) out.same_channels = false;
  }
  out.intra_class = PathClass::kNVL;
  out.inter_class = PathClass::kPIX;
  out.inter_pxn = false;
  for (const RingChannel& ch : out.rings)
    for (const Hop& r : ch.hops)
      if (r.kind == TransportKind::kNet && r.route.path_class == PathClass::kNET) {  // between machines
        out.inter_class = std::max(out.inter_class, r.nic_class);
        out.inter_pxn = out.inter_pxn || r.pxn;
      } else if (r.route.path_class != PathClass::kNET) {
        out.intra_class = std::max(out.intra_class, r.route.path_class);
        out.p2p_read = out.p2p_read || r.read;
      }
}

}  // namespace gradsync
