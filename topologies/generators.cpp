// generators.cpp: NVSwitch nodes, the DGX-1 cube-mesh, PCIe boxes and fat-trees of them.
#include "topologies/generators.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/units.hpp"

namespace gradsync {
namespace {

// Typical one-way latencies of one link (device to switch or device to device).
// Parsed from text so that a written file reads back to the same numbers.
const double kNvlinkLatency_s = parse_duration("100ns");
const double kPcieLatency_s = parse_duration("150ns");
const double kCpuLinkLatency_s = parse_duration("100ns");
const double kNetworkLatency_s = parse_duration("500ns");  // NIC or switch port to the next switch, cable included

constexpr const char* kLinkNote =
    "bw is per link and per direction (full duplex); links= counts parallel links; latency is one way.";

// pcie_x16_Bps: PCIe bandwidth per direction for a generation at x16 (8, 16, 32 GT/s for Gen3-5
// with 128b/130b encoding: 15.75, 31.5, 63 GB/s), scaled for narrower links.
double pcie_Bps(int gen, int lanes) {
  const double x16 = parse_bandwidth(gen <= 3 ? "15.75GBps" : gen == 4 ? "31.5GBps" : "63GBps");
  return x16 * lanes / 16.0;
}

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

const GpuSpec& spec_of(const std::string& gpu, const char* what) {
  try {
    return gpu_spec(gpu);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", what, e.what()));
  }
}

void need(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

// NodeParts names what a node generator made, for the fat-tree to wire.
struct NodeParts {
  std::vector<std::size_t> nics;
};

// add_nvswitch_node: GPUs on one NVSwitch vertex; PCIe switch s holds GPUs 2s, 2s+1 and its
// share of the NICs; switches 0..n/2-1 under cpu0, the rest under cpu1.
NodeParts add_nvswitch_node(Builder& b, const std::string& prefix, const std::string& host, const GpuSpec& g,
                            const std::string& gpu_key, int gpus, int nics) {
  NodeParts parts;
  const std::size_t cpu0 = b.add(prefix + "cpu0", VertexKind::kCpu, host);
  const std::size_t cpu1 = b.add(prefix + "cpu1", VertexKind::kCpu, host);
  // DGX A100: AMD EPYC 7742; DGX H100, H200 and B200: Intel Xeon (8480C, 8570) (DGX user guides).
  const std::string vendor = g.sm_version < 90 ? "amd" : "intel";
  b.set_vendor(cpu0, vendor);
  b.set_vendor(cpu1, vendor);
  b.link(cpu0, cpu1, LinkType::kCpuLink, parse_bandwidth("32GBps"), kCpuLinkLatency_s, 4);
  const std::size_t nvs = b.add(prefix + "nvswitch", VertexKind::kNvswitch, host);
  const int switches = (gpus + 1) / 2;
  std::vector<std::size_t> sw;
  const double pcie = pcie_Bps(g.pcie_gen, g.pcie_lanes);
  for (int s = 0; s < switches; ++s) {
    sw.push_back(b.add(fmt::format("{}pcie{}", prefix, s), VertexKind::kPcieSwitch, host));
    b.link(s < (switches + 1) / 2 || switches == 1 ? cpu0 : cpu1, sw.back(), LinkType::kPcie, pcie, kPcieLatency_s);
  }
  for (int i = 0; i < gpus; ++i) {
    const std::size_t gpu = b.add(fmt::format("{}gpu{}", prefix, i), VertexKind::kGpu, host, gpu_key);
    b.link(gpu, nvs, LinkType::kNvlink, g.nvlink_bw_Bps, kNvlinkLatency_s, g.nvlink_links);
    b.link(sw[static_cast<std::size_t>(i / 2)], gpu, LinkType::kPcie, pcie, kPcieLatency_s);
  }
  for (int j = 0; j < nics; ++j) {
    parts.nics.push_back(b.add(fmt::format("{}nic{}", prefix, j), VertexKind::kNic, host));
    // The NIC's own PCIe slot, of the node's generation (ConnectX-6 HDR: Gen4 x16, ConnectX-7
    // NDR: Gen5 x16); its line rate is the network link's (a 400 Gb/s NIC in a Gen4 slot is
    // PCIe-bound, as NCCL's topology counts it).
    b.link(sw[static_cast<std::size_t>(j * switches / nics)], parts.nics.back(), LinkType::kPcie, pcie, kPcieLatency_s);
  }
  return parts;
}

// The DGX-1 (Volta) hybrid cube-mesh: two fully connected quads (0-3, 4-7) plus i <-> i+4.
// Pairs joined by two NVLinks: 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6, 6-7 (every GPU uses 6 links).
struct MeshPair {
  int a, b, links;
};
constexpr MeshPair kDgx1Mesh[] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {1, 2, 2}, {1, 3, 1}, {2, 3, 2},
                                  {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2},
                                  {0, 4, 2}, {1, 5, 2}, {2, 6, 1}, {3, 7, 1}};

NodeParts add_dgx1_node(Builder& b, const std::string& prefix, const std::string& host, const GpuSpec& g,
                        const std::string& gpu_key, int nics) {
  NodeParts parts;
  const std::size_t cpu0 = b.add(prefix + "cpu0", VertexKind::kCpu, host);
  const std::size_t cpu1 = b.add(prefix + "cpu1", VertexKind::kCpu, host);
  b.set_vendor(cpu0, "intel");  // DGX-1: Xeon E5-2698 v4 (Broadwell)
  b.set_vendor(cpu1, "intel");
  b.link(cpu0, cpu1, LinkType::kCpuLink, parse_bandwidth("19.2GBps"), kCpuLinkLatency_s, 2);
  const double pcie = pcie_Bps(g.pcie_gen, g.pcie_lanes);
  std::vector<std::size_t> sw, gpu;
  for (int s = 0; s < 4; ++s) {
    sw.push_back(b.add(fmt::format("{}pcie{}", prefix, s), VertexKind::kPcieSwitch, host));
    b.link(s < 2 ? cpu0 : cpu1, sw.back(), LinkType::kPcie, pcie, kPcieLatency_s);
  }
  for (int i = 0; i < 8; ++i) {
    gpu.push_back(b.add(fmt::format("{}gpu{}", prefix, i), VertexKind::kGpu, host, gpu_key));
    b.link(sw[static_cast<std::size_t>(i / 2)], gpu.back(), LinkType::kPcie, pcie, kPcieLatency_s);
  }
  for (const MeshPair& p : kDgx1Mesh) {
    b.link(gpu[static_cast<std::size_t>(p.a)], gpu[static_cast<std::size_t>(p.b)], LinkType::kNvlink, g.nvlink_bw_Bps,
           kNvlinkLatency_s, p.links);
  }
  for (int j = 0; j < nics; ++j) {
    parts.nics.push_back(b.add(fmt::format("{}nic{}", prefix, j), VertexKind::kNic, host));
    b.link(sw[static_cast<std::size_t>(j * 4 / nics)], parts.nics.back(), LinkType::kPcie, pcie, kPcieLatency_s);
  }
  return parts;
}

const GpuSpec& nvlink_gpu(const std::string& key, const char* generator) {
  const GpuSpec& g = spec_of(key, "--gpu");
  need(g.nvlink_links > 0, fmt::format("--gpu {}: {} has no NVLink; {} needs NVLink GPUs", key, g.name, generator));
  return g;
}

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
constexpr ClusterNode kClusterNodes[] = {
    {"dgx-a100", "a100-sxm4-80gb", 8, "200Gbps", "HDR InfiniBand (ConnectX-6)", 40, "QM8700 (40 HDR ports)",
     "NVIDIA DGX A100 User Guide (8 HDR compute NICs); DGX SuperPOD A100 reference architecture"},
    {"dgx-h100", "h100-sxm5-80gb", 8, "400Gbps", "NDR InfiniBand (ConnectX-7)", 64, "QM9700 (64 NDR ports)",
     "NVIDIA DGX H100 User Guide (8 NDR compute NICs); DGX SuperPOD H100 reference architecture"},
    {"dgx-h200", "h200-sxm-141gb", 8, "400Gbps", "NDR InfiniBand (ConnectX-7)", 64, "QM9700 (64 NDR ports)",
     "NVIDIA DGX H200 datasheet (8 NDR compute NICs)"},
    {"dgx-b200", "b200", 8, "400Gbps", "NDR InfiniBand (ConnectX-7)", 64, "QM9700 (64 NDR ports)",
     "NVIDIA DGX B200 User Guide (8 single-port ConnectX-7 400 Gb/s compute NICs)"},
    {"dgx1-v100", "v100-sxm2-32gb", 4, "100Gbps", "EDR InfiniBand (ConnectX-4)", 36, "SB7800 (36 EDR ports)",
     "NVIDIA DGX-1 System Architecture whitepaper (4 EDR NICs)"},
};

const ClusterNode& cluster_node(const std::string& key) {
  for (const ClusterNode& n : kClusterNodes)
    if (key == n.key) return n;
  std::vector<std::string> keys;
  for (const ClusterNode& n : kClusterNodes) keys.emplace_back(n.key);
  throw ConfigError(fmt::format("--node: unknown node type \"{}\"; expected one of {}", key, fmt::join(keys, ", ")));
}

double bandwidth_flag(const std::string& text, const char* flag) {
  double bps = 0;
  try {
    bps = parse_bandwidth(text);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", flag, e.what()));
  }
  // The bounds the topology reader puts on every link (topology_attributes.cpp), so that what is
  // generated loads again.
  if (bps < 1e3 || bps > 1e15) {
    throw ConfigError(fmt::format("{} {}: expected 1kBps to 1PBps per link and direction (NDR InfiniBand is 400Gbps)",
                                  flag, text));
  }
  return bps;
}

std::string nvswitch_comment(const GpuSpec& g, int gpus, int nics, const std::string& nic_bw) {
  return fmt::format(
      "{} on one NVSwitch fabric ({} NVLinks x {} per GPU), {} of {}.\n"
      "Sources: {}; NVSwitch systems as in the NVIDIA DGX A100 and DGX H100 user guides (PCIe switches each\n"
      "pairing two GPUs with NICs, two CPU sockets); CPU sockets joined by 4 links of 32 GB/s per direction\n"
      "(xGMI-2 on DGX A100's EPYC 7742, UPI 2.0 on DGX H100's Xeon 8480C; approximate).\n{}",
      fmt::format("{} GPU{}", gpus, gpus == 1 ? "" : "s") + " " + g.name, g.nvlink_links,
      human_bandwidth(g.nvlink_bw_Bps), fmt::format("{} NIC{}", nics, nics == 1 ? "" : "s"), nic_bw, g.source,
      kLinkNote);
}

}  // namespace

std::vector<std::string> cluster_node_types() {
  std::vector<std::string> keys;
  for (const ClusterNode& n : kClusterNodes) keys.emplace_back(n.key);
  return keys;
}

Topology generate_nvswitch(const NvswitchOptions& o) {
  const GpuSpec& g = nvlink_gpu(o.gpu, "an NVSwitch fabric");
  need(o.gpus >= 1 && o.gpus <= 72, fmt::format("--gpus {}: expected 1 to 72 GPUs on one NVSwitch fabric", o.gpus));
  // Unset: one NIC per GPU, as DGX/HGX nodes pair each GPU with its own NIC (at most 64).
  if (o.nics) need(*o.nics >= 0 && *o.nics <= 64, fmt::format("--nics {}: expected 0 to 64", *o.nics));
  const int nics = o.nics.value_or(std::min(o.gpus, 64));
  (void)bandwidth_flag(o.nic_bw, "--nic-bw");  // checked; one node's NICs carry no traffic between its GPUs
  Builder b;
  add_nvswitch_node(b, "", "node0", g, o.gpu, o.gpus, nics);
  const std::string cmd = fmt::format("gradsync topo generate nvswitch --gpu {} --gpus {} --nics {} --nic-bw {}", o.gpu,
                                      o.gpus, nics, o.nic_bw);
  return b.build("generated nvswitch",
                 fmt::format("Generated by: {}\n{}", cmd, nvswitch_comment(g, o.gpus, nics, o.nic_bw)));
}

Topology generate_nvlink_mesh(const NvlinkMeshOptions& o) {
  const GpuSpec& g = nvlink_gpu(o.gpu, "the DGX-1 cube-mesh");
  need(g.nvlink_links >= 6,
       fmt::format("--gpu {}: the DGX-1 cube-mesh needs 6 NVLinks per GPU; {} has {}", o.gpu, g.name, g.nvlink_links));
  Builder b;
  add_dgx1_node(b, "", "node0", g, o.gpu, 4);
  const std::string cmd = fmt::format("gradsync topo generate nvlink-mesh --gpu {}", o.gpu);
  return b.build(
      "generated nvlink-mesh",
      fmt::format("Generated by: {}\n"
                  "DGX-1 with 8 {}: hybrid cube-mesh NVLink (two fully connected quads 0-3 and 4-7 plus i <-> i+4;\n"
                  "pairs 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6, 6-7 have two links), 4 PCIe Gen3 switches each with two\n"
                  "GPUs and one EDR NIC, two Xeon E5-2698 v4 sockets joined by 2 QPI links of 19.2 GB/s.\n"
                  "Sources: NVIDIA DGX-1 System Architecture whitepaper (WP-08437-002); nvidia-smi topo -m on a\n"
                  "DGX-1V; {}.\n{}",
                  cmd, g.name, g.source, kLinkNote));
}

Topology generate_pcie(const PcieOptions& o) {
  const GpuSpec& g = spec_of(o.gpu, "--gpu");
  need(o.gpus >= 1 && o.gpus <= 64, fmt::format("--gpus {}: expected 1 to 64", o.gpus));
  need(o.sockets == 1 || o.sockets == 2, fmt::format("--sockets {}: expected 1 or 2", o.sockets));
  need(o.gpus_per_switch >= 0 && o.gpus_per_switch <= 16,
       fmt::format("--gpus-per-switch {}: expected 0 (GPUs on CPU root ports) to 16", o.gpus_per_switch));
  need(o.cpu == "intel" || o.cpu == "amd", fmt::format("--cpu \"{}\": expected intel or amd", o.cpu));
  need(o.p2p == "auto" || o.p2p == "on" || o.p2p == "off",
       fmt::format("--p2p \"{}\": expected auto (the GPU's), on or off", o.p2p));
  if (o.nvlink_bridge) {
    need(g.nvlink_links > 0, fmt::format("--nvlink-bridge: {} has no NVLink", g.name));
    need(o.gpus % 2 == 0, fmt::format("--nvlink-bridge: bridges join GPU pairs; --gpus {} is odd", o.gpus));
  }
  // GPUs split evenly over sockets in order (socket s holds GPUs i with i * sockets / gpus == s),
  // and a switch hangs under one socket: a switch cannot hold more GPUs than its socket has.
  if (o.gpus_per_switch > 0) {
    int fewest = o.gpus;
    for (int s = 0; s < o.sockets; ++s) {
      int on_socket = 0;
      for (int i = 0; i < o.gpus; ++i) on_socket += i * o.sockets / o.gpus == s;
      fewest = std::min(fewest, on_socket);
    }
    need(o.gpus_per_switch <= fewest,
         fmt::format("--gpus-per-switch {}: the {} GPUs split over {} sockets leave {} GPU{} on a socket, and a PCIe "
                     "switch hangs under one socket; expected --gpus-per-switch 0 (CPU root ports) to {}{}",
                     o.gpus_per_switch, o.gpus, o.sockets, fewest, fewest == 1 ? "" : "s", fewest,
                     o.sockets == 2 ? " (or --sockets 1)" : ""));
  }
  Builder b;
  const std::string host = "node0";
  const double pcie = pcie_Bps(g.pcie_gen, g.pcie_lanes);
  std::vector<std::size_t> cpus;
  for (int s = 0; s < o.sockets; ++s) {
    cpus.push_back(b.add(fmt::format("cpu{}", s), VertexKind::kCpu, host));
    b.set_vendor(cpus.back(), o.cpu);
  }
  if (o.sockets == 2) b.link(cpus[0], cpus[1], LinkType::kCpuLink, parse_bandwidth("20.8GBps"), kCpuLinkLatency_s, 2);
  // GPUs split evenly over sockets in order; on each socket, groups of gpus_per_switch share a switch.
  std::vector<std::size_t> gpus;
  std::vector<int> per_switch;  // GPUs under each switch, in order
  std::size_t current_switch = 0;
  int in_switch = 0, switches = 0, last_socket = -1;
  for (int i = 0; i < o.gpus; ++i) {
    const int socket = i * o.sockets / o.gpus;
    const std::size_t gpu = b.add(fmt::format("gpu{}", i), VertexKind::kGpu, host, o.gpu);
    if (o.p2p != "auto") b.set_p2p(gpu, o.p2p == "on");
    gpus.push_back(gpu);
    if (o.gpus_per_switch == 0) {
      b.link(cpus[static_cast<std::size_t>(socket)], gpu, LinkType::kPcie, pcie, kPcieLatency_s);
      continue;
    }
    if (socket != last_socket || in_switch == o.gpus_per_switch) {
      current_switch = b.add(fmt::format("pcie{}", switches++), VertexKind::kPcieSwitch, host);
      b.link(cpus[static_cast<std::size_t>(socket)], current_switch, LinkType::kPcie, pcie, kPcieLatency_s);
      in_switch = 0;
      last_socket = socket;
      per_switch.push_back(0);
    }
    b.link(current_switch, gpu, LinkType::kPcie, pcie, kPcieLatency_s);
    ++in_switch;
    ++per_switch.back();
  }
  // The header says what was built: "2 per PCIe switch", or the groups when they differ (3 GPUs, 2
  // per switch: "PCIe switches of 2 and 1 GPUs").
  std::string switch_text = ", on CPU root ports";
  if (!per_switch.empty()) {
    const bool even = std::all_of(per_switch.begin(), per_switch.end(), [&](int n) { return n == per_switch[0]; });
    if (even) {
      switch_text = fmt::format(", {} per PCIe switch", per_switch[0]);
    } else {
      std::vector<std::string> sizes;
      for (int n : per_switch) sizes.push_back(std::to_string(n));
      const std::string last = sizes.back();
      sizes.pop_back();
      switch_text = fmt::format(", PCIe switches of {} and {} GPUs", fmt::join(sizes, ", "), last);
    }
  }
  if (o.nvlink_bridge) {
    for (int i = 0; i + 1 < o.gpus; i += 2) {
      b.link(gpus[static_cast<std::size_t>(i)], gpus[static_cast<std::size_t>(i + 1)], LinkType::kNvlink,
             g.nvlink_bw_Bps, kNvlinkLatency_s, g.nvlink_links);
    }
  }
  const std::string cmd =
      fmt::format("gradsync topo generate pcie --gpu {} --gpus {} --sockets {} --gpus-per-switch {}{}{}{}", o.gpu,
                  o.gpus, o.sockets, o.gpus_per_switch, o.nvlink_bridge ? " --nvlink-bridge" : "",
                  o.cpu != "intel" ? " --cpu " + o.cpu : "", o.p2p != "auto" ? " --p2p " + o.p2p : "");
  return b.build(
      "generated pcie",
      fmt::format(
          "Generated by: {}\n"
          "{} {} on PCIe Gen{} x{} ({} per direction){}{}{}.\n"
          "Sources: {}; PCIe bandwidth from the PCI-SIG base specifications (8/16/32 GT/s, 128b/130b){}\n{}",
          cmd, o.gpus, g.name, g.pcie_gen, g.pcie_lanes, human_bandwidth(pcie),
          switch_text,
          o.sockets == 2 ? ", split over two CPU sockets" : ", one CPU socket",
          o.nvlink_bridge ? fmt::format(", NVLink bridges joining pairs ({} links x {})", g.nvlink_links,
                                        human_bandwidth(g.nvlink_bw_Bps))
                          : ", no NVLink",
          g.source,
          o.sockets == 2 ? ";\ntwo sockets joined by 2 UPI links of 20.8 GB/s per direction (10.4 GT/s, Xeon Scalable)."
                         : ".",
          kLinkNote));
}

Topology generate_fat_tree(const FatTreeOptions& o) {
  const ClusterNode& type = cluster_node(o.node);
  const GpuSpec& g = spec_of(type.gpu, "--node");
  // kMaxFatTreeNodes: 2,048 nodes (16,384 GPUs) is the largest cluster the benches check
  // (bench/e2e_bench.cpp: GPT-2 within 60 s and 8 GiB); 4,096 generated in a second but took more
  // than 5 minutes and 20 GB to validate (the ring search's routes grow with the square of it).
  constexpr int kMaxFatTreeNodes = 2048;
  need(o.nodes >= 1 && o.nodes <= kMaxFatTreeNodes,
       fmt::format("--nodes {}: expected 1 to {} (16,384 GPUs of 8-GPU nodes: the largest cluster gradsync is "
                   "checked on)",
                   o.nodes, kMaxFatTreeNodes));
  // Fewer GPUs per node (a node per GPU, as a scaling study runs): the same node type with that
  // many GPUs on its NVSwitch, and by default one NIC per GPU (the DGX pairs them).
  const bool mesh = std::string(type.key) == "dgx1-v100";
  const int per_node = o.gpus_per_node.value_or(8);
  need(per_node >= 1 && per_node <= 8,
       fmt::format("--gpus-per-node {}: expected 1 to 8 (a {} holds 8)", per_node, type.key));
  need(!mesh || per_node == 8,
       fmt::format("--gpus-per-node {}: a dgx1-v100 is its 8-GPU hybrid cube-mesh; other counts are for NVSwitch "
                   "nodes",
                   per_node));
  const int nics = o.nics_per_node.value_or(std::min(type.nics, per_node));
  need(nics >= 1 && nics <= type.nics,
       fmt::format("--nics-per-node {}: a {} has 1 to {} compute NICs", nics, type.key, type.nics));
  need(o.oversubscription >= 1 && o.oversubscription <= 64,
       fmt::format("--oversubscription {}: expected 1 (non-blocking) to 64", o.oversubscription));
  const int ports = o.leaf_ports.value_or(type.switch_ports);
  const int spine_ports = o.spine_ports.value_or(ports);
  need(ports >= 2, fmt::format("--leaf-ports {}: expected at least 2", ports));
  need(spine_ports >= 2, fmt::format("--spine-ports {}: expected at least 2", spine_ports));
  const int down = std::max(1, static_cast<int>(std::floor(ports * o.oversubscription / (o.oversubscription + 1))));
  const std::string nic_bw = o.nic_bw.empty() ? std::string(type.nic_bw) : o.nic_bw;
  const double nic_Bps = bandwidth_flag(nic_bw, "--nic-bw");

  Builder b;
  std::vector<std::vector<std::size_t>> node_nics;
  for (int k = 0; k < o.nodes; ++k) {
    const std::string host = fmt::format("node{}", k);
    const std::string prefix = host + ".";
    node_nics.push_back(mesh ? add_dgx1_node(b, prefix, host, g, type.gpu, nics).nics
                             : add_nvswitch_node(b, prefix, host, g, type.gpu, per_node, nics).nics);
  }
  // Leaf of every NIC: in node order, or per rail (NIC i of every node on the rail-i leaves).
  const int per_rail = (o.nodes + down - 1) / down;
  const auto leaf_of = [&](int k, int i) { return o.rail_optimized ? i * per_rail + k / down : (k * nics + i) / down; };
  const int leaves = o.rail_optimized ? nics * per_rail : (o.nodes * nics + down - 1) / down;
  std::vector<std::size_t> leaf;
  std::vector<int> used(static_cast<std::size_t>(leaves), 0);
  for (int l = 0; l < leaves; ++l) leaf.push_back(b.add(fmt::format("leaf{}", l), VertexKind::kSwitch, ""));
  for (int k = 0; k < o.nodes; ++k) {
    for (int i = 0; i < nics; ++i) {
      const int l = leaf_of(k, i);
      ++used[static_cast<std::size_t>(l)];
      b.link(node_nics[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)], leaf[static_cast<std::size_t>(l)],
             LinkType::kInfiniband, nic_Bps, kNetworkLatency_s);
    }
  }
  int spines = 0, pods = 0, cores = 0;
  if (leaves > 1) {
    for (int u : used) spines = std::max(spines, static_cast<int>(std::ceil(u / o.oversubscription)));
    if (leaves <= spine_ports) {
      // Two levels: every leaf's uplinks go to the first of the spines, each spine reaching every leaf.
      std::vector<std::size_t> spine;
      for (int s = 0; s < spines; ++s) spine.push_back(b.add(fmt::format("spine{}", s), VertexKind::kSwitch, ""));
      for (int l = 0; l < leaves; ++l) {
        const int up = static_cast<int>(std::ceil(used[static_cast<std::size_t>(l)] / o.oversubscription));
        for (int s = 0; s < up; ++s) {
          b.link(leaf[static_cast<std::size_t>(l)], spine[static_cast<std::size_t>(s)], LinkType::kInfiniband, nic_Bps,
                 kNetworkLatency_s);
        }
      }
    } else {
      // Three levels (a k-ary fat-tree's pods): leaves in pods of spine_ports / 2, each pod with
      // its own `spines` spines (leaf uplink s to the pod's spine s); spine s of every pod has
      // spine_ports / 2 uplinks, one to each core of core group s, and every core reaches every pod.
      // Non-blocking above the leaves.
      const int per_pod = spine_ports / 2, up = spine_ports - per_pod;
      pods = (leaves + per_pod - 1) / per_pod;
      // The spine's ports are --spine-ports, or --leaf-ports when only that was given (the
      // switches alike): the message says which.
      need(pods <= spine_ports,
           fmt::format("fat-tree: {} pod{} of {} lea{} need{} core switches with at least {} ports; {}", pods,
                       pods == 1 ? "" : "s", per_pod, per_pod == 1 ? "f" : "ves", pods == 1 ? "s" : "", pods,
                       o.spine_ports ? fmt::format("--spine-ports is {}", spine_ports)
                                     : fmt::format("the spines have --leaf-ports' {} (no --spine-ports given)",
                                                   spine_ports)));
      cores = spines * up;
      std::vector<std::size_t> core;
      for (int c = 0; c < cores; ++c) core.push_back(b.add(fmt::format("core{}", c), VertexKind::kSwitch, ""));
      for (int p = 0; p < pods; ++p) {
        std::vector<std::size_t> spine;
        for (int s = 0; s < spines; ++s) {
          spine.push_back(b.add(fmt::format("pod{}.spine{}", p, s), VertexKind::kSwitch, ""));
          for (int c = 0; c < up; ++c) {
            b.link(spine.back(), core[static_cast<std::size_t>(s * up + c)], LinkType::kInfiniband, nic_Bps,
                   kNetworkLatency_s);
          }
        }
        for (int l = p * per_pod; l < std::min(leaves, (p + 1) * per_pod); ++l) {
          const int lup = static_cast<int>(std::ceil(used[static_cast<std::size_t>(l)] / o.oversubscription));
          for (int s = 0; s < lup; ++s) {
            b.link(leaf[static_cast<std::size_t>(l)], spine[static_cast<std::size_t>(s)], LinkType::kInfiniband,
                   nic_Bps, kNetworkLatency_s);
          }
        }
      }
    }
  }
  const std::string kind = o.rail_optimized ? "rail-optimized" : "fat-tree";
  std::string cmd = fmt::format("gradsync topo generate {} --nodes {} --node {}", kind, o.nodes, o.node);
  if (o.gpus_per_node) cmd += fmt::format(" --gpus-per-node {}", *o.gpus_per_node);
  if (o.nics_per_node) cmd += fmt::format(" --nics-per-node {}", *o.nics_per_node);
  if (!o.nic_bw.empty()) cmd += fmt::format(" --nic-bw {}", o.nic_bw);
  if (o.oversubscription != 1) cmd += fmt::format(" --oversubscription {}", o.oversubscription);
  if (o.leaf_ports) cmd += fmt::format(" --leaf-ports {}", *o.leaf_ports);
  if (o.spine_ports) cmd += fmt::format(" --spine-ports {}", *o.spine_ports);
  const std::string layout =
      std::string(type.key) == "dgx1-v100"
          ? std::string("Each node: DGX-1 hybrid cube-mesh (see gradsync topo generate nvlink-mesh).")
          : fmt::format("Each node: {}", nvswitch_comment(g, per_node, nics, nic_bw));
  return b.build(
      "generated " + kind,
      fmt::format("Generated by: {}\n"
                  "{} {}s ({} GPUs), {} NIC{} of {} {} per node; {} leaf switch{} of {} ports ({} down){}{}.\n"
                  "Sources: {}; switch: NVIDIA {}.\n{}",
                  cmd, o.nodes, o.node, o.nodes * per_node, nics, nics == 1 ? "" : "s", nic_bw, type.nic_name, leaves,
                  leaves == 1 ? "" : "es",
                  ports, down, o.rail_optimized ? ", rail-optimized (NIC i of every node on rail i)" : "",
                  pods > 0 ? fmt::format(", {} pods of {} spines ({} ports) under {} core switches, oversubscription "
                                         "{}:1 at the leaves",
                                         pods, spines, spine_ports, cores, o.oversubscription)
                  : spines > 0 ? fmt::format(", {} spines, oversubscription {}:1", spines, o.oversubscription)
                               : "",
                  type.source, type.switch_name, layout));
}

}  // namespace gradsync
