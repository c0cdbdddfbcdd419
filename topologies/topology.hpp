// topology.hpp: a cluster as a graph (Boost.Graph): GPUs, CPUs, PCIe switches, NVSwitches, NICs
// and network switches joined by links with a type, a bandwidth per direction and a latency.
//
//   const Topology topo = load_topology("dgx-a100");       // built-in name or a .dot/.graphml path
//   topo.gpu_count() == 8;  topo.vertex(topo.gpu(0)).name == "gpu0";
//   for (auto e : topo.links()) topo.link(e).total_bw_Bps();  // bw x links (datasheet)
//   topo.link(e).payload_bw_Bps;                              // what NCCL moves over it
//
// GPU ranks follow the order in which GPUs are declared in the file. Every Topology is valid:
// construction checks kinds, models, bandwidths, names and that every GPU reaches every other.
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topologies/gpu_spec.hpp"

namespace gradsync {

// VertexKind: what a vertex is. `cpu` is a CPU socket with its PCIe root complex.
enum class VertexKind { kGpu, kCpu, kPcieSwitch, kNvswitch, kNic, kSwitch };

// LinkType: what a link is. `cpu_link` joins CPU sockets (UPI, QPI, Infinity Fabric).
enum class LinkType { kNvlink, kPcie, kCpuLink, kInfiniband, kEthernet };

std::string_view to_string(VertexKind k);
std::string_view to_string(LinkType t);
// parse_vertex_kind / parse_link_type: the file spelling ("pcie_switch", "cpu_link"); nullopt if unknown.
std::optional<VertexKind> parse_vertex_kind(std::string_view text);
std::optional<LinkType> parse_link_type(std::string_view text);
// kVertexKindNames / kLinkTypeNames: every spelling, for error messages.
inline constexpr std::string_view kVertexKindNames = "gpu, cpu, pcie_switch, nvswitch, nic, switch";
inline constexpr std::string_view kLinkTypeNames = "nvlink, pcie, cpu_link, infiniband, ethernet";

// TopoVertex is one device. `host` names the machine it sits in (required for GPUs and NICs;
// network switches have none). `gpu` points into gpu_specs() for GPUs.
struct TopoVertex {
  std::string name;
  VertexKind kind = VertexKind::kGpu;
  std::string host;
  // model: a GPU's key as written in the file (a key or alias of gpus.yaml); an Intel CPU's Xeon
  // family, canonical (link_model.hpp canonical_cpu_family), or empty.
  std::string model;
  const GpuSpec* gpu = nullptr;
  // pcie_p2p (a gpu's "p2p" attribute): overrides its GPU's PCIe peer-to-peer support (a driver
  // that enables it on GeForce boards, or a VM that hides it); unset: the GPU's (gpus.yaml).
  std::optional<bool> pcie_p2p;
  // vendor (a cpu's "vendor" attribute): "intel", "amd" or "arm". NCCL treats them apart: a peer
  // path through an Intel root complex costs 6/5 of its PCIe bandwidth, AMD lets 2 GPUs use P2P
  // across the CPU, and the link between two sockets is planned per vendor (ARM_BW 6 GB/s, topo.h).
  // Empty: intel.
  std::string vendor;
  int line = 0;  // where it is declared in its file; 0 if unknown

  // p2p_capable: a gpu that can do peer-to-peer over PCIe.
  bool p2p_capable() const { return pcie_p2p ? *pcie_p2p : gpu != nullptr && gpu->pcie_p2p; }
  bool amd() const { return vendor == "amd"; }
  bool arm() const { return vendor == "arm"; }
  bool intel() const { return vendor.empty() || vendor == "intel"; }
};

// TopoLink is one undirected link (full duplex): `bw_Bps` per link and per direction, `links`
// parallel links of that speed (two NVLinks between a DGX-1 pair), `latency_s` one way.
struct TopoLink {
  LinkType type = LinkType::kPcie;
  double bw_Bps = 0;
  int links = 1;
  double latency_s = 0;
  int line = 0;
  std::size_t index = 0;     // position in Topology::links(), set by Topology
  std::size_t a = 0, b = 0;  // its two ends as written (vertex ids), set by Topology; "forward" is a -> b
  // payload_bw_Bps: what the link carries of payload per direction, all parallel links together:
  // the datasheet total times NCCL's link efficiency (topologies/link_model.hpp), set by Topology.
  // Searches, routes and the simulator use it.
  double payload_bw_Bps = 0;

  // total_bw_Bps is the link's datasheet bandwidth per direction, all parallel links together.
  double total_bw_Bps() const { return bw_Bps * links; }
};

using TopoGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, TopoVertex, TopoLink>;
using VertexId = TopoGraph::vertex_descriptor;
using LinkId = TopoGraph::edge_descriptor;

// LinkSpec is a link between two vertices by index, as readers and generators produce them.
struct LinkSpec {
  std::size_t a = 0;
  std::size_t b = 0;
  TopoLink link;
};

// Topology is a validated cluster. Build one with Topology::build (readers and generators do).
class Topology {
 public:
  // build checks and assembles a topology. `origin` names the source in error messages (a path or
  // "built-in dgx-a100"); `comment` is the file's opening comment (where its numbers come from).
  // ConfigError for an unknown GPU model, a GPU or NIC without host, a zero or negative bandwidth,
  // a negative latency, a duplicate name or link, a link to itself, an NVLink that does not join
  // GPUs or NVSwitches, no GPU at all, or a GPU that cannot reach every other GPU.
  static Topology build(std::string origin, std::string comment, std::vector<TopoVertex> vertices,
                        std::vector<LinkSpec> links);

  // Copies and moves re-point links() at the new graph: Boost's undirected edge descriptors
  // point into the graph that made them.
  Topology(const Topology& other);
  Topology(Topology&& other) noexcept;
  Topology& operator=(const Topology& other);
  Topology& operator=(Topology&& other) noexcept;
  ~Topology() = default;

  const TopoGraph& graph() const { return graph_; }
  const std::string& origin() const { return origin_; }
  const std::string& comment() const { return comment_; }

  std::size_t vertex_count() const { return boost::num_vertices(graph_); }
  const TopoVertex& vertex(VertexId v) const { return graph_[v]; }
  std::optional<VertexId> find(std::string_view name) const;

  // links returns every link in file order; link(e) its properties; other_end the far vertex.
  const std::vector<LinkId>& links() const { return links_; }
  const TopoLink& link(LinkId e) const { return graph_[e]; }
  // slowest_link: the link of least payload bandwidth (nullptr without links); link_text: a link as
  // an error names it, "line 4: g0--cpu0" (without "line N: " where the line is unknown).
  const TopoLink* slowest_link() const;
  std::string link_text(const TopoLink& l) const;
  VertexId other_end(LinkId e, VertexId from) const;

  // GPUs in rank order (declaration order).
  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  VertexId gpu(int rank) const { return gpus_.at(static_cast<std::size_t>(rank)); }
  const std::vector<VertexId>& gpus() const { return gpus_; }
  // rank_of returns a GPU's rank, -1 for other vertices.
  int rank_of(VertexId v) const { return rank_of_[v]; }

  // Hosts in order of their first GPU; host_of(rank) indexes into hosts().
  const std::vector<std::string>& hosts() const { return hosts_; }
  int host_of(int rank) const { return host_of_rank_.at(static_cast<std::size_t>(rank)); }
  // nics_of_host: the NICs whose `host` is that host, in declaration order.
  const std::vector<VertexId>& nics_of_host(int host) const;

 private:
  Topology() = default;
  void index_links();

  TopoGraph graph_;
  std::string origin_;
  std::string comment_;
  std::vector<LinkId> links_;
  std::vector<VertexId> gpus_;
  std::vector<int> rank_of_;
  std::vector<std::string> hosts_;
  std::vector<int> host_of_rank_;
  std::vector<std::vector<VertexId>> host_nics_;  // per host, its NICs in declaration order
};

// builtin_topology_names lists the clusters compiled into gradsync (topologies/*.dot), by name
// without extension: "dgx-a100", "dgx1-v100", ...
std::vector<std::string> builtin_topology_names();

// builtin_topology_text returns a built-in file's text; nullopt if there is none by that name.
std::optional<std::string_view> builtin_topology_text(std::string_view name);

// load_topology reads a built-in name or a path (.dot/.gv as Graphviz DOT, .graphml/.xml as
// GraphML). A name that is neither a file nor built in is a ConfigError listing the built-ins.
Topology load_topology(const std::string& name_or_path);

// read_topology_dot / read_topology_graphml parse text; `origin` names it in errors.
Topology read_topology_dot(std::string_view text, const std::string& origin);
Topology read_topology_graphml(std::string_view text, const std::string& origin);

// write_topology_dot / write_topology_graphml serialise a topology so that reading it back gives
// the same vertices, links and attributes (the comment is kept in DOT).
std::string write_topology_dot(const Topology& topo);
std::string write_topology_graphml(const Topology& topo);

}  // namespace gradsync
