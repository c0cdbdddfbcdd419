// generator_parts.cpp: the parts the cluster generators build from (generator_parts.hpp).
#include "topologies/generator_parts.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"

namespace gradsync::generator_detail {
namespace {

// The DGX-1 (Volta) hybrid cube-mesh: two fully connected quads (0-3, 4-7) plus i <-> i+4.
// Pairs joined by two NVLinks: 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6, 6-7 (every GPU uses 6 links).
struct MeshPair {
  int a, b, links;
};
constexpr MeshPair kDgx1Mesh[] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {1, 2, 2}, {1, 3, 1}, {2, 3, 2},
                                  {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2},
                                  {0, 4, 2}, {1, 5, 2}, {2, 6, 1}, {3, 7, 1}};

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

}  // namespace

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

NodeParts add_nvswitch_node(Builder& b, const std::string& prefix, const std::string& host, const GpuSpec& g,
                            const std::string& gpu_key, int gpus, int nics) {
  NodeParts parts;
  const std::size_t cpu0 = b.add(prefix + "cpu0", VertexKind::kCpu, host);
  const std::size_t cpu1 = b.add(prefix + "cpu1", VertexKind::kCpu, host);
  // DGX A100: AMD EPYC 7742; DGX H100, H200 and B200: Intel Xeon (8480C, 8570) (DGX user guides).
  // DGX H100/H200's 8480C is Sapphire Rapids, DGX B200's 8570 Emerald Rapids: NCCL (2.26 on) plans
  // their sockets' link at 22 and 40 GB/s (topo.h SRP_QPI_BW, ERP_QPI_BW).
  const std::string vendor = g.sm_version < 90 ? "amd" : "intel";
  const std::string family = g.sm_version >= 100 ? "emerald-rapids" : g.sm_version >= 90 ? "sapphire-rapids" : "";
  for (const std::size_t cpu : {cpu0, cpu1}) {
    b.set_vendor(cpu, vendor);
    if (!family.empty()) b.set_model(cpu, family);
  }
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
  need(!g.nvlink_bridge, fmt::format("--gpu {}: {} is a PCIe board whose NVLink is a bridge to one other board; {} "
                                     "holds SXM modules (topo generate pcie --nvlink-bridge pairs such boards)",
                                     key, g.name, generator));
  return g;
}

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
    throw ConfigError(
        fmt::format("{} {}: expected 1kBps to 1PBps per link and direction (NDR InfiniBand is 400Gbps)", flag, text));
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

std::vector<std::string> cluster_node_keys() {
  std::vector<std::string> keys;
  for (const ClusterNode& n : kClusterNodes) keys.emplace_back(n.key);
  return keys;
}

}  // namespace gradsync::generator_detail
