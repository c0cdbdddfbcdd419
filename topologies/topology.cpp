// topology.cpp: vertex and link kinds and Topology::build (the checks every reader and generator
// shares); the built-in clusters and load_topology are in topology_load.cpp.
#include "topologies/topology.hpp"
#include "topologies/topology_checks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "core/error.hpp"
#include "core/text.hpp"
#include "topologies/link_model.hpp"

namespace gradsync {

// kFastestNetworkPort_Bps: 1.6 Tb/s, twice the fastest InfiniBand/Ethernet port shipping (800 Gb/s).
constexpr double kFastestNetworkPort_Bps = 1.6e12 / 8;
// kFastestPcieLink_Bps: PCIe 6.0 x16, 64 GT/s x 16 lanes / 8 = 128 GB/s per direction before FLIT
// framing (PCI-SIG, PCIe 6.0 base specification), the widest port any device ships.
constexpr double kFastestPcieLink_Bps = 64e9 * 16 / 8;
namespace {

constexpr std::array<std::pair<VertexKind, std::string_view>, 6> kKinds{{{VertexKind::kGpu, "gpu"},
                                                                         {VertexKind::kCpu, "cpu"},
                                                                         {VertexKind::kPcieSwitch, "pcie_switch"},
                                                                         {VertexKind::kNvswitch, "nvswitch"},
                                                                         {VertexKind::kNic, "nic"},
                                                                         {VertexKind::kSwitch, "switch"}}};
constexpr std::array<std::pair<LinkType, std::string_view>, 5> kTypes{{{LinkType::kNvlink, "nvlink"},
                                                                       {LinkType::kPcie, "pcie"},
                                                                       {LinkType::kCpuLink, "cpu_link"},
                                                                       {LinkType::kInfiniband, "infiniband"},
                                                                       {LinkType::kEthernet, "ethernet"}}};

// Locator formats "origin:line: " prefixes and element names for error messages.
struct Locator {
  const std::string& origin;
  std::string at(int line) const { return line > 0 ? fmt::format("{}:{}: ", origin, line) : origin + ": "; }
};

}  // namespace

std::string_view to_string(VertexKind k) {
  for (const auto& [kind, name] : kKinds)
    if (kind == k) return name;
  return "?";
}

std::string_view to_string(LinkType t) {
  for (const auto& [type, name] : kTypes)
    if (type == t) return name;
  return "?";
}

std::optional<VertexKind> parse_vertex_kind(std::string_view text) {
  const std::string wanted = ascii_lower(text);  // "GPU" as "gpu", as GPU models and flags are read
  for (const auto& [kind, name] : kKinds)
    if (name == wanted) return kind;
  return std::nullopt;
}

std::optional<LinkType> parse_link_type(std::string_view text) {
  const std::string wanted = ascii_lower(text);  // "NVLink" as "nvlink"
  for (const auto& [type, name] : kTypes)
    if (name == wanted) return type;
  return std::nullopt;
}

Topology::Topology(const Topology& other)
    : graph_(other.graph_),
      origin_(other.origin_),
      comment_(other.comment_),
      gpus_(other.gpus_),
      rank_of_(other.rank_of_),
      hosts_(other.hosts_),
      host_of_rank_(other.host_of_rank_),
      host_nics_(other.host_nics_) {
  index_links();
}

Topology::Topology(Topology&& other) noexcept
    : graph_(std::move(other.graph_)),
      origin_(std::move(other.origin_)),
      comment_(std::move(other.comment_)),
      gpus_(std::move(other.gpus_)),
      rank_of_(std::move(other.rank_of_)),
      hosts_(std::move(other.hosts_)),
      host_of_rank_(std::move(other.host_of_rank_)),
      host_nics_(std::move(other.host_nics_)) {
  index_links();
}

Topology& Topology::operator=(const Topology& other) {
  if (this != &other) *this = Topology(other);
  return *this;
}

Topology& Topology::operator=(Topology&& other) noexcept {
  graph_ = std::move(other.graph_);
  origin_ = std::move(other.origin_);
  comment_ = std::move(other.comment_);
  gpus_ = std::move(other.gpus_);
  rank_of_ = std::move(other.rank_of_);
  hosts_ = std::move(other.hosts_);
  host_of_rank_ = std::move(other.host_of_rank_);
  host_nics_ = std::move(other.host_nics_);
  index_links();
  return *this;
}

void Topology::index_links() {
  links_.assign(boost::num_edges(graph_), LinkId{});
  for (LinkId e : boost::make_iterator_range(boost::edges(graph_))) links_[graph_[e].index] = e;
}

Topology Topology::build(std::string origin, std::string comment, std::vector<TopoVertex> vertices,
                         std::vector<LinkSpec> links) {
  Topology t;
  t.origin_ = std::move(origin);
  const Locator loc{t.origin_};
  t.comment_ = std::move(comment);

  std::map<std::string, std::size_t, std::less<>> by_name;
  for (std::size_t i = 0; i < vertices.size(); ++i) {
    TopoVertex& v = vertices[i];
    const std::string where = fmt::format("{}node {}: ", loc.at(v.line), v.name);
    if (v.name.empty()) throw ConfigError(loc.at(v.line) + "a node has an empty name");
    if (auto [it, fresh] = by_name.emplace(v.name, i); !fresh) {
      const int first = vertices[it->second].line;
      throw ConfigError(where + (first > 0 ? fmt::format("duplicate name; first declared on line {}", first)
                                           : std::string("duplicate name")));
    }
    if (v.kind == VertexKind::kGpu) {
      if (v.model.empty())
        throw ConfigError(where +
                          "gpu needs attribute \"model\" (a key of topologies/hardware/gpus.yaml); it is "
                          "missing or empty");
      try {
        v.gpu = &gpu_spec(v.model);
      } catch (const ConfigError& e) {
        throw ConfigError(where + "attribute \"model\": " + e.what());
      }
    } else if (v.kind == VertexKind::kCpu && !v.model.empty()) {
      // An Intel CPU's family, which sets NCCL's inter-socket figure (topo.cc ncclTopoGetInterCpuBw).
      if (v.amd() || v.arm()) {
        throw ConfigError(where + fmt::format("attribute \"model\" \"{}\" on an {} cpu: NCCL rates every {} CPU "
                                              "alike (topo.h {}); remove it",
                                              v.model, v.amd() ? "AMD" : "ARM", v.amd() ? "AMD" : "ARM",
                                              v.amd() ? "AMD_BW" : "ARM_BW"));
      }
      const std::optional<std::string> family = canonical_cpu_family(v.model);
      if (!family) {
        throw ConfigError(where + fmt::format("cpu attribute \"model\" is \"{}\"; expected an Intel Xeon family: {}",
                                              v.model, kCpuFamilyNames));
      }
      v.model = *family;
    } else if (!v.model.empty()) {
      throw ConfigError(where + fmt::format("attribute \"model\" is for gpus and cpus, not a {}", to_string(v.kind)));
    }
    if (v.pcie_p2p && v.kind != VertexKind::kGpu) {
      throw ConfigError(where + fmt::format("attribute \"p2p\" is for gpus, not a {}", to_string(v.kind)));
    }
    if (!v.vendor.empty() && v.kind != VertexKind::kCpu) {
      throw ConfigError(where + fmt::format("attribute \"vendor\" is for cpus, not a {}", to_string(v.kind)));
    }
    if (!v.vendor.empty() && v.vendor != "intel" && v.vendor != "amd" && v.vendor != "arm") {
      throw ConfigError(where + fmt::format("attribute \"vendor\" is \"{}\"; expected intel, amd or arm", v.vendor));
    }
    if ((v.kind == VertexKind::kGpu || v.kind == VertexKind::kNic) && v.host.empty()) {
      throw ConfigError(where + fmt::format("{} needs attribute \"host\" (the machine it is in)", to_string(v.kind)));
    }
    if (v.kind == VertexKind::kSwitch && !v.host.empty()) {
      throw ConfigError(where + "a network switch belongs to no host; remove attribute \"host\"");
    }
  }

  for (auto& v : vertices) boost::add_vertex(std::move(v), t.graph_);
  std::map<std::pair<std::size_t, std::size_t>, int> seen;  // each pair's first link, and its line
  std::map<std::size_t, int> nvlinks_used;                  // per GPU vertex: NVLinks its edges take so far
  std::map<std::size_t, std::string> bridged_to;            // per bridged GPU vertex: the board its bridge joins
  for (std::size_t i = 0; i < links.size(); ++i) {
    LinkSpec& s = links[i];
    const TopoVertex& a = t.graph_[s.a];
    const TopoVertex& b = t.graph_[s.b];
    const std::string where = fmt::format("{}edge {}--{}: ", loc.at(s.link.line), a.name, b.name);
    if (s.a == s.b) throw ConfigError(where + "a link from a node to itself");
    if (!(s.link.bw_Bps > 0)) throw ConfigError(where + fmt::format("bandwidth {} B/s must be > 0", s.link.bw_Bps));
    if (!(s.link.latency_s >= 0)) throw ConfigError(where + fmt::format("latency {} s must be >= 0", s.link.latency_s));
    if (s.link.links < 1) throw ConfigError(where + fmt::format("links {} must be >= 1", s.link.links));
    if (const auto [first, fresh] = seen.emplace(std::make_pair(std::min(s.a, s.b), std::max(s.a, s.b)), s.link.line);
        !fresh) {
      throw ConfigError(where + fmt::format("duplicate link between the same two nodes{}; give one link attribute "
                                            "\"links\" instead",
                                            first->second > 0 ? fmt::format(" (the first on line {})", first->second)
                                                              : std::string()));
    }
    const auto nvlink_end = [](const TopoVertex& v) {
      return v.kind == VertexKind::kGpu || v.kind == VertexKind::kNvswitch;
    };
    if (s.link.type == LinkType::kNvlink && !(nvlink_end(a) && nvlink_end(b))) {
      throw ConfigError(where + fmt::format("an nvlink joins gpus and nvswitches, not a {} and a {}", to_string(a.kind),
                                            to_string(b.kind)));
    }
    // A GPU has the NVLinks its datasheet gives (gpus.yaml nvlink.links), or none.
    for (const std::size_t end : {s.a, s.b}) {
      const TopoVertex& g = t.graph_[end];
      if (s.link.type != LinkType::kNvlink || g.kind != VertexKind::kGpu || !g.gpu) continue;
      // An NVLink between hosts is refused below for what it is, not for the links it would count.
      if (!a.host.empty() && !b.host.empty() && a.host != b.host) continue;
      const int used = nvlinks_used[end] += s.link.links;
      if (g.gpu->nvlink_links <= 0) {
        throw ConfigError(where + fmt::format("gpu {} ({}) has no NVLink (topologies/hardware/gpus.yaml); "
                                              "expected its GPUs joined over pcie",
                                              g.name, g.gpu->name));
      }
      // Each NVLink carries at most the datasheet's rate (gpus.yaml nvlink.per_link); 5% over is taken.
      if (g.gpu->nvlink_bw_Bps > 0 && s.link.bw_Bps > g.gpu->nvlink_bw_Bps * 1.05) {
        throw ConfigError(where + fmt::format("gpu {} ({}) has NVLinks of {:.2f} GB/s per direction "
                                              "(topologies/hardware/gpus.yaml nvlink.per_link), and this nvlink edge "
                                              "gives {:.2f} GB/s per link; expected at most that (bw is per link: "
                                              "give the link count in links)",
                                              g.name, g.gpu->name, g.gpu->nvlink_bw_Bps / 1e9, s.link.bw_Bps / 1e9));
      }
      // NVLink signals at its generation's fixed rate: a link at under half of it is a unit slip (25Gbps,
      // bits, for 25GBps), not a slower NVLink.
      if (g.gpu->nvlink_bw_Bps > 0 && s.link.bw_Bps < g.gpu->nvlink_bw_Bps * 0.5) {
        throw ConfigError(where + fmt::format("gpu {} ({}) has NVLinks of {:.2f} GB/s per direction "
                                              "(topologies/hardware/gpus.yaml nvlink.per_link), and this nvlink edge "
                                              "gives {:.3g} GB/s per link; an NVLink runs at its generation's rate "
                                              "(a figure in bits, Gbps, for bytes, GBps?): expected {:.2f}GBps",
                                              g.name, g.gpu->name, g.gpu->nvlink_bw_Bps / 1e9, s.link.bw_Bps / 1e9,
                                              g.gpu->nvlink_bw_Bps / 1e9));
      }
      // A bridged PCIe board's NVLink is a bridge to one other board: no NVSwitch, one peer.
      if (g.gpu->nvlink_bridge) {
        const TopoVertex& other = t.graph_[end == s.a ? s.b : s.a];
        if (other.kind != VertexKind::kGpu) {
          throw ConfigError(where + fmt::format("gpu {} ({}) has an NVLink bridge to one other board "
                                                "(topologies/hardware/gpus.yaml nvlink.bridge), not a port on a {}; "
                                                "expected its nvlink edge to go to the one gpu it is bridged to",
                                                g.name, g.gpu->name, to_string(other.kind)));
        }
        auto [it, fresh] = bridged_to.emplace(end, other.name);
        if (!fresh && it->second != other.name) {
          throw ConfigError(where + fmt::format("gpu {} ({}) is bridged to {} already; an NVLink bridge joins two "
                                                "boards (topologies/hardware/gpus.yaml nvlink.bridge), expected one "
                                                "bridged peer",
                                                g.name, g.gpu->name, it->second));
        }
      }
      if (used > g.gpu->nvlink_links) {
        throw ConfigError(where + fmt::format("gpu {} ({}) has {} NVLinks (topologies/hardware/gpus.yaml), "
                                              "and its nvlink edges take {} so far; expected at most {} in all",
                                              g.name, g.gpu->name, g.gpu->nvlink_links, used, g.gpu->nvlink_links));
      }
    }
    if (s.link.type == LinkType::kCpuLink && !(a.kind == VertexKind::kCpu && b.kind == VertexKind::kCpu)) {
      throw ConfigError(
          where + fmt::format("a cpu_link joins two cpus, not a {} and a {}", to_string(a.kind), to_string(b.kind)));
    }
    // A network cable ends at a NIC or a network switch: a GPU reaches the network through a NIC
    // on its PCIe tree (NCCL's NET transport), never by a cable of its own. PCIe joins the PCIe
    // tree's devices, not a network switch or an NVSwitch.
    const auto net_end = [](const TopoVertex& v) {
      return v.kind == VertexKind::kNic || v.kind == VertexKind::kSwitch;
    };
    const bool network = s.link.type == LinkType::kInfiniband || s.link.type == LinkType::kEthernet;
    if (network && !(net_end(a) && net_end(b))) {
      const TopoVertex& off = net_end(a) ? b : a;
      throw ConfigError(where + fmt::format("an {} cable joins nics and network switches, not a {} ({}); connect the "
                                            "{} to a nic over pcie",
                                            to_string(s.link.type), to_string(off.kind), off.name,
                                            to_string(off.kind)));
    }
    // No network port runs faster than 1.6 Tb/s (200 GB/s; ConnectX-8 and the Quantum-X800 and
    // Spectrum-X800 switches run 800 Gb/s): 400GBps (3.2 Tb/s) is 400Gbps written in bytes.
    if (network && s.link.bw_Bps > kFastestNetworkPort_Bps * 1.05) {
      throw ConfigError(where + fmt::format("{:.4g} GB/s ({:.4g} Gb/s) per link; no network port runs faster than "
                                            "1.6 Tb/s (a figure in bytes, GBps, for bits, Gbps?): expected a NIC's "
                                            "line rate such as \"400Gbps\"",
                                            s.link.bw_Bps / 1e9, s.link.bw_Bps * 8 / 1e9));
    }
    const auto pcie_end = [](const TopoVertex& v) {
      return v.kind != VertexKind::kSwitch && v.kind != VertexKind::kNvswitch;
    };
    if (s.link.type == LinkType::kPcie && !(pcie_end(a) && pcie_end(b))) {
      throw ConfigError(where + fmt::format("a pcie link joins gpus, cpus, pcie_switches and nics, not a {} and a {}",
                                            to_string(a.kind), to_string(b.kind)));
    }
    // Two GPUs are PCIe endpoints: they meet at a switch's or a CPU root port's downstream ports,
    // never on a cable of their own (peer traffic crosses the switch: NCCL's PIX/PXB/PHB paths).
    if (s.link.type == LinkType::kPcie && a.kind == VertexKind::kGpu && b.kind == VertexKind::kGpu) {
      throw ConfigError(where +
                        "a pcie link between two gpus: PCIe endpoints meet at a pcie_switch or a cpu's root "
                        "port; expected each gpu linked to a pcie_switch or cpu over pcie (or the two gpus "
                        "joined over nvlink)");
    }
    // A GPU's PCIe link carries at most its own port (gpus.yaml pcie: generation and lanes); a
    // switch's uplink may be wider, the GPU's end is not. 5% over the datasheet figure is taken
    // (32GBps for Gen4 x16's 31.5).
    for (const std::size_t end : {s.a, s.b}) {
      const TopoVertex& g = t.graph_[end];
      if (s.link.type != LinkType::kPcie || g.kind != VertexKind::kGpu || !g.gpu || g.gpu->pcie_gen <= 0) continue;
      const double port = pcie_Bps(g.gpu->pcie_gen, g.gpu->pcie_lanes);
      const double given = s.link.bw_Bps * s.link.links;
      if (given > port * 1.05) {
        throw ConfigError(where + fmt::format("gpu {} ({}) has a PCIe Gen{} x{} port, {:.2f} GB/s per direction "
                                              "(topologies/hardware/gpus.yaml), and this pcie edge gives {:.2f} GB/s; "
                                              "expected at most the port's rate",
                                              g.name, g.gpu->name, g.gpu->pcie_gen, g.gpu->pcie_lanes, port / 1e9,
                                              given / 1e9));
      }
    }
    // No PCIe link runs faster than Gen6 x16: 504GBps is Gen5 x16's 504 Gb/s written in bytes.
    if (s.link.type == LinkType::kPcie && s.link.bw_Bps > kFastestPcieLink_Bps * 1.05) {
      throw ConfigError(where + fmt::format("{:.4g} GB/s ({:.4g} Gb/s) per link; no PCIe link runs faster than "
                                            "Gen6 x16's 128 GB/s (a figure in bytes, GBps, for bits, Gbps?): "
                                            "expected a port's rate such as \"63GBps\" (Gen5 x16)",
                                            s.link.bw_Bps / 1e9, s.link.bw_Bps * 8 / 1e9));
    }
    s.link.index = i;
    s.link.a = s.a;
    s.link.b = s.b;
    s.link.payload_bw_Bps = link_payload_Bps(s.link, a, b);
    t.links_.push_back(boost::add_edge(s.a, s.b, s.link, t.graph_).first);
  }

  t.rank_of_.assign(boost::num_vertices(t.graph_), -1);
  std::map<std::string, int> host_index;
  for (VertexId v = 0; v < boost::num_vertices(t.graph_); ++v) {
    const TopoVertex& tv = t.graph_[v];
    if (tv.kind != VertexKind::kGpu) continue;
    t.rank_of_[v] = static_cast<int>(t.gpus_.size());
    t.gpus_.push_back(v);
    auto [it, fresh] = host_index.emplace(tv.host, static_cast<int>(t.hosts_.size()));
    if (fresh) t.hosts_.push_back(tv.host);
    // Ranks follow declaration order and torchrun numbers them node by node: a host's GPUs come
    // together, or --nnodes 1 would take GPUs of two hosts.
    if (!fresh && t.host_of_rank_.back() != it->second) {
      const TopoVertex& between = t.graph_[t.gpus_[t.gpus_.size() - 2]];
      throw ConfigError(
          fmt::format("{}node {}: gpu of host \"{}\" declared after gpu {} of host \"{}\"; ranks follow "
                      "the order gpus are declared in and torchrun numbers them node by node: expected "
                      "each host's gpus declared together",
                      loc.at(tv.line), tv.name, tv.host, between.name, between.host));
    }
    t.host_of_rank_.push_back(it->second);
  }
  if (t.gpus_.empty())
    throw ConfigError(loc.at(0) + "no gpu in the topology; expected at least one node with kind=\"gpu\"");
  // Bounds that keep the searches (paths, rings, trees) within minutes: 4 x the generators' largest
  // cluster (16,384 GPUs), and 256 GPUs in one machine (the largest NVLink domain sold, GB200 NVL72,
  // has 72; a PCIe host a few tens). Beyond them a file is a mistake, not a cluster.
  constexpr std::size_t kMaxGpus = 65536, kMaxGpusPerHost = 256;
  if (t.gpus_.size() > kMaxGpus)
    throw ConfigError(fmt::format("{}{} gpus; expected at most {} in a topology (4 x the generators' largest)",
                                  loc.at(0), t.gpus_.size(), kMaxGpus));
  {
    std::vector<std::size_t> per_host(t.hosts_.size(), 0);
    for (int h : t.host_of_rank_) ++per_host[static_cast<std::size_t>(h)];
    for (std::size_t h = 0; h < per_host.size(); ++h)
      if (per_host[h] > kMaxGpusPerHost)
        throw ConfigError(
            fmt::format("{}host \"{}\" has {} gpus; expected at most {} in one machine (GB200 NVL72's "
                        "NVLink domain has 72)",
                        loc.at(0), t.hosts_[h], per_host[h], kMaxGpusPerHost));
  }
  t.host_nics_.resize(t.hosts_.size());
  for (VertexId v = 0; v < boost::num_vertices(t.graph_); ++v) {
    if (t.graph_[v].kind != VertexKind::kNic) continue;
    if (const auto h = host_index.find(t.graph_[v].host); h != host_index.end())
      t.host_nics_[static_cast<std::size_t>(h->second)].push_back(v);
  }

  // PCIe and the CPUs' own links stay inside a machine: hosts meet through their NICs and network
  // switches (which belong to no host). A pcie or cpu_link edge between two hosts' nodes would make
  // a path between machines that is neither a network path nor one inside a host.
  for (auto [e, end] = boost::edges(t.graph_); e != end; ++e) {
    const TopoLink& l = t.graph_[*e];
    if (l.type != LinkType::kPcie && l.type != LinkType::kCpuLink) continue;
    const TopoVertex& a = t.graph_[boost::source(*e, t.graph_)];
    const TopoVertex& b = t.graph_[boost::target(*e, t.graph_)];
    if (a.host.empty() || b.host.empty() || a.host == b.host) continue;
    throw ConfigError(fmt::format(
        "{}link {} -- {}: a {} link between host \"{}\" and host \"{}\"; PCIe and CPU links stay inside one "
        "machine: join hosts through their NICs and a network switch",
        loc.at(l.line), a.name, b.name, to_string(l.type), a.host, b.host));
  }

  check_nvlink_domains(t);
  check_nics(t);
  check_fabrics(t);
  check_gpus_connected(t);
  check_hosts_joined(t);
  return t;
}

std::optional<VertexId> Topology::find(std::string_view name) const {
  for (VertexId v = 0; v < boost::num_vertices(graph_); ++v)
    if (graph_[v].name == name) return v;
  return std::nullopt;
}

VertexId Topology::other_end(LinkId e, VertexId from) const {
  const VertexId s = boost::source(e, graph_);
  return s == from ? boost::target(e, graph_) : s;
}

const std::vector<VertexId>& Topology::nics_of_host(int host) const {
  return host_nics_.at(static_cast<std::size_t>(host));
}

const TopoLink* Topology::slowest_link() const {
  const TopoLink* slowest = nullptr;
  for (const LinkId e : links_)
    if (slowest == nullptr || graph_[e].payload_bw_Bps < slowest->payload_bw_Bps) slowest = &graph_[e];
  return slowest;
}

std::string Topology::link_text(const TopoLink& l) const {
  return fmt::format("{}{}--{}", l.line > 0 ? fmt::format("line {}: ", l.line) : std::string(), graph_[l.a].name,
                     graph_[l.b].name);
}

}  // namespace gradsync
