// routes.hpp: how data travels between two endpoints of a topology: the path of fewest hops, the
// widest and then the quickest of those (as NCCL's ncclTopoSetPaths counts a node's paths, and as a
// fabric's minimal routing does), its bottleneck bandwidth, and NCCL's path class.
//
//   Routes routes(topo);
//   const Route r = routes.gpu_route(0, 5);   // DGX-1: NVB, through GPU 1 or 4 over NVLink
//   r.path_class == PathClass::kNVB;  r.p2p == false;  r.bottleneck_Bps == 25e9;
//
// Path classes (NCCL's PATH_*, best first): NVL (NVLink only, direct or through NVSwitches),
// NVB (NVLink through another GPU), PIX (one PCIe switch), PXB (several PCIe switches, no CPU),
// PHB (through a CPU root complex), SYS (across the CPU interconnect), NET (through a NIC).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "topologies/topology.hpp"

namespace gradsync {

enum class PathClass { kNVL, kNVB, kPIX, kPXB, kPHB, kSYS, kNET };
std::string_view to_string(PathClass c);
inline constexpr int kPathClassCount = 7;

// DirectedLink is one link used in one direction (forward = from its first to its second end,
// as written in the file). Its slot in per-direction arrays is 2*link + (forward ? 0 : 1).
struct DirectedLink {
  std::size_t link = 0;
  bool forward = true;
  std::size_t slot() const { return 2 * link + (forward ? 0 : 1); }
};

// Route is one path. For GPU pairs `p2p` says whether a peer copy goes directly: over a direct
// NVLink (not through another GPU: NVB), or
// over PCIe below the CPU (class PXB or better) between GPUs that support PCIe peer-to-peer
// (GeForce boards do not); otherwise a copy is staged through host memory. (NCCL's own choice,
// with its knobs, is topologies/transports.)
struct Route {
  VertexId from = 0, to = 0;
  std::vector<VertexId> vertices;  // from, ..., to
  std::vector<DirectedLink> hops;  // hops[i] joins vertices[i] and vertices[i+1]
  double latency_s = 0;
  double bottleneck_Bps = 0;  // smallest total bandwidth on the path; infinite for from == to
  PathClass path_class = PathClass::kNVL;
  bool p2p = true;
};

// classify computes a route's class from the vertices and links it crosses.
PathClass classify(const Topology& topo, const std::vector<VertexId>& vertices, const std::vector<DirectedLink>& hops);

// join concatenates routes a->b and b->c into a->c (used for GPU -> NIC -> NIC -> GPU hops).
Route join(const Topology& topo, const Route& first, const Route& second);

// Routes answers route queries. A query between two nearby vertices (the same machine) searches
// only until it reaches its target; one that crosses the fabric computes the source's whole
// shortest-path tree and keeps it, among a bounded number of recently used trees (~48 MB of
// them whatever the cluster), so memory stays O(vertices) and a 4096-GPU fat-tree needs no
// tree per GPU.
class Routes {
 public:
  explicit Routes(const Topology& topo);
  ~Routes();
  Routes(const Routes&) = delete;
  Routes& operator=(const Routes&) = delete;

  const Topology& topology() const { return topo_; }
  Route route(VertexId from, VertexId to) const;
  // route with a flow label: among paths of as many hops (a fat-tree's spines) the next hop is
  // picked by hashing `flow` with the vertex, as ECMP spreads flows; flow 0 keeps to one path
  // per pair like the plain overload. Needs only the destination's tree.
  Route route(VertexId from, VertexId to, std::uint64_t flow) const;
  Route gpu_route(int from_rank, int to_rank) const { return route(topo_.gpu(from_rank), topo_.gpu(to_rank)); }

  // nic_of: the NIC through which a GPU's traffic leaves and enters its machine: among the
  // machine's NICs the nearest (path class, then latency), dealt out in rank order so that GPUs
  // with the same nearest NICs take one each, the least used first (DGX: GPU i and NIC i, two
  // of each under one PCIe switch). NCCL's search likewise picks a NIC local to the GPU a channel
  // enters or leaves by, and a rail-optimized cluster wires NIC i to rail i. ConfigError when the
  // machine has no NIC.
  VertexId nic_of(int rank) const;
  // net_route: between GPUs of different machines, GPU from -> NIC a -> the fabric -> NIC b ->
  // GPU to, with a = nic_of(from) and b = nic_of(to) unless given. The fabric leg leaves NIC a by
  // its network link and enters NIC b by its own (fabric_route), never through a machine.
  Route net_route(int from_rank, int to_rank, std::uint64_t flow) const;
  Route net_route(int from_rank, int to_rank, VertexId nic_a, VertexId nic_b, std::uint64_t flow) const;
  // fabric_route: NIC a's network link, the switches between, NIC b's network link. A NIC
  // forwards only between its machine and the network. Among paths of as many hops an InfiniBand
  // fabric routes by destination (the subnet manager's fat-tree routing, OpenSM "ftree"/D-mod-K:
  // the i-th choice on the way up is (d / k_1 / ... / k_(i-1)) mod k_i for the destination NIC's
  // ordinal d), so a shift of NICs, as a ring's hops between nodes, shares no link; an Ethernet
  // fabric spreads flows by hashing `flow` (ECMP), and flows may collide.
  Route fabric_route(VertexId nic_a, VertexId nic_b, std::uint64_t flow) const;
  // route_by_destination: route() choosing among next hops of as many hops by D-mod-K on `ordinal`.
  Route route_by_destination(VertexId from, VertexId to, std::uint64_t ordinal) const;

  // host_cpu: where v's host memory is: among the CPU sockets of v's machine that v reaches, the
  // one of least route latency (the first in file order on a tie). The batch starts there, and
  // NCCL's SHM transport and a NIC without GPUDirect RDMA stage data there. nullopt when v's
  // machine has no CPU socket v reaches.
  std::optional<VertexId> host_cpu(VertexId v) const;

 private:
  struct Tree;
  struct Search;
  struct Local;
  struct Adjacent {
    std::uint32_t to;
    std::uint32_t link;
  };
  // Scope of a search: the whole graph, or only the source's machine.
  enum class Scope { kAll, kWithinMachine };
  bool dijkstra(VertexId source, long target, std::size_t budget, Scope scope) const;
  // route_choosing: a shortest route, `choose(v, options)` picking among equal next hops at v.
  Route route_choosing(VertexId from, VertexId to,
                       const std::function<std::size_t(VertexId, std::size_t)>& choose) const;
  // nic_ordinal: a NIC's place among the topology's NICs in vertex order (D-mod-K's destination).
  std::uint64_t nic_ordinal(VertexId nic) const;
  mutable std::vector<std::uint64_t> nic_ordinals_;
  std::shared_ptr<const Tree> tree(VertexId source) const;
  std::shared_ptr<const Tree> keep(VertexId source) const;
  std::shared_ptr<const Tree> kept(VertexId source) const;

  const Topology& topo_;
  std::vector<double> weight_;        // per link: one hop
  std::vector<double> latency_;       // per link: latency (the tie-break among paths as short and as wide)
  std::vector<double> payload_;       // each link's payload bandwidth (TopoLink::payload_bw_Bps)
                                      // plus a per-hop tie-break
  std::vector<std::uint32_t> first_;  // adjacency of vertex v: adj_[first_[v] .. first_[v+1])
  std::vector<Adjacent> adj_;
  // relay rule (NCCL's paths.cc): per vertex whether it is a GPU, per link whether it is NVLink and
  // its two ends.
  std::vector<std::uint8_t> gpu_;
  std::vector<std::uint8_t> nvlink_;
  std::vector<std::uint8_t> nic_;      // per vertex: a NIC
  std::vector<std::uint8_t> network_;  // per link: InfiniBand or Ethernet
  std::vector<std::array<std::uint32_t, 2>> ends_;
  std::unique_ptr<Search> search_;                                             // scratch of the last search
  mutable std::list<std::pair<VertexId, std::shared_ptr<const Tree>>> trees_;  // most recent first
  mutable std::unordered_map<VertexId, decltype(trees_)::iterator> index_;
  std::size_t max_trees_ = 4;
  std::vector<std::int32_t> machine_;                // per vertex: its machine (-1: a network switch)
  std::vector<std::int32_t> component_;              // per vertex: its connected part of the graph
  std::vector<std::vector<VertexId>> machine_cpus_;  // per machine: its CPU sockets
  std::vector<std::size_t> machine_size_;            // vertices per machine
  mutable std::unordered_map<VertexId, std::unique_ptr<Local>> locals_;  // per source, its machine
  mutable std::vector<std::int64_t> nic_of_;                             // per rank, -1 until asked
};

// check_host_memory: DataError naming the first GPU whose machine has no CPU socket it reaches
// (host_cpu): a run needs host memory (the batch copied in, NCCL's SHM, a network without
// GPUDirect RDMA), and every real machine has one.
void check_host_memory(const Routes& routes);

}  // namespace gradsync
