// generator_parts.hpp (internal to topologies/): what the cluster generators build from: link
// latencies, a builder that validates what it made, the node kinds (an NVSwitch node, the DGX-1
// cube-mesh), the fat-tree node types and the flag checks. generators.cpp holds the single-node
// generators, generators_fat_tree.cpp the fat-trees of nodes; generator_parts.cpp these parts.
#pragma once

#include "topologies/link_model.hpp"  // pcie_Bps

#include <cstddef>
#include <string>
#include <vector>

#include "core/units.hpp"
#include "topologies/gpu_spec.hpp"
#include "topologies/topology.hpp"

namespace gradsync::generator_detail {

// Typical one-way latencies of one link (device to switch or device to device).
// Parsed from text so that a written file reads back to the same numbers.
inline const double kNvlinkLatency_s = parse_duration("100ns");
inline const double kPcieLatency_s = parse_duration("150ns");
inline const double kCpuLinkLatency_s = parse_duration("100ns");
inline const double kNetworkLatency_s =
    parse_duration("500ns");  // NIC or switch port to the next switch, cable included

inline constexpr const char* kLinkNote =
    "bw is per link and per direction (full duplex); links= counts parallel links; latency is one way.";

// Builder collects vertices and links, then builds (and so validates) the Topology.
class Builder {
 public:
  std::size_t add(const std::string& name, VertexKind kind, const std::string& host, const std::string& model = "") {
    TopoVertex v;
    v.name = name;
    v.kind = kind;
    v.host = host;
    v.model = model;
    vertices_.push_back(std::move(v));
    return vertices_.size() - 1;
  }
  void set_vendor(std::size_t v, std::string vendor) { vertices_[v].vendor = std::move(vendor); }
  void set_model(std::size_t v, std::string model) { vertices_[v].model = std::move(model); }
  void set_p2p(std::size_t v, bool p2p) { vertices_[v].pcie_p2p = p2p; }
  void link(std::size_t a, std::size_t b, LinkType type, double bw_Bps, double latency_s, int links = 1) {
    LinkSpec s;
    s.a = a;
    s.b = b;
    s.link.type = type;
    s.link.bw_Bps = bw_Bps;
    s.link.latency_s = latency_s;
    s.link.links = links;
    links_.push_back(s);
  }
  Topology build(const std::string& origin, const std::string& comment) {
    return Topology::build(origin, comment, std::move(vertices_), std::move(links_));
  }

 private:
  std::vector<TopoVertex> vertices_;
  std::vector<LinkSpec> links_;
};

// spec_of: the GPU `gpu` names, the error prefixed with the flag `what`.
const GpuSpec& spec_of(const std::string& gpu, const char* what);
// need: a ConfigError with `message` unless `ok`.
void need(bool ok, const std::string& message);

// NodeParts names what a node generator made, for the fat-tree to wire.
struct NodeParts {
  std::vector<std::size_t> nics;
};

// add_nvswitch_node: GPUs on one NVSwitch vertex; PCIe switch s holds GPUs 2s, 2s+1 and its
// share of the NICs; switches 0..n/2-1 under cpu0, the rest under cpu1.
// add_nvswitch_node: `gpus` GPUs on one NVSwitch vertex; PCIe switch s holds GPUs 2s, 2s+1 and
// its NICs; two CPU sockets.
NodeParts add_nvswitch_node(Builder& b, const std::string& prefix, const std::string& host, const GpuSpec& g,
                            const std::string& gpu_key, int gpus, int nics);
// add_dgx1_node: the DGX-1's hybrid cube-mesh of 8 V100s and its `nics` NICs.
NodeParts add_dgx1_node(Builder& b, const std::string& prefix, const std::string& host, const GpuSpec& g,
                        const std::string& gpu_key, int nics);
// nvlink_gpu: the GPU `key` names, refused when it has no NVLink (`generator` needs it).
const GpuSpec& nvlink_gpu(const std::string& key, const char* generator);

// ClusterNode: a node type for fat-trees.
struct ClusterNode {
  const char* key;
  const char* gpu;
  int nics;
  const char* nic_bw;  // per NIC and direction
  const char* nic_name;
  int switch_ports;  // the matching InfiniBand switch
  const char* switch_name;
  const char* source;
};
// cluster_node: the node type `key` names (--node); cluster_nodes: all of them.
const ClusterNode& cluster_node(const std::string& key);
std::vector<std::string> cluster_node_keys();
// bandwidth_flag: a flag's bandwidth, within the bounds the topology reader takes.
double bandwidth_flag(const std::string& text, const char* flag);
// nvswitch_comment: the comment lines that describe one NVSwitch node.
std::string nvswitch_comment(const GpuSpec& g, int gpus, int nics, const std::string& nic_bw);

}  // namespace gradsync::generator_detail
