// topology_checks.cpp: what a machine must be, checked once the graph is built
// (Topology::build): its parts joined inside it, its NICs on its PCIe tree, no NVLink to another.
#include "topologies/topology_checks.hpp"

#include <fmt/format.h>

#include <boost/graph/connected_components.hpp>
#include <boost/range/iterator_range.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace gradsync {

namespace {

std::string at(const Topology& t, int line) {
  return line > 0 ? fmt::format("{}:{}: ", t.origin(), line) : t.origin() + ": ";
}

bool network(LinkType type) { return type == LinkType::kInfiniband || type == LinkType::kEthernet; }

}  // namespace

void check_nics(const Topology& t) {
  const TopoGraph& g = t.graph();
  // A NIC carries traffic between its machine and the network: it needs a PCIe link into the
  // machine as well as its cable (NCCL's NET transport reaches it from a GPU over PCIe).
  for (VertexId v = 0; v < boost::num_vertices(g); ++v) {
    const TopoVertex& nic = g[v];
    if (nic.kind != VertexKind::kNic) continue;
    bool pcie = false;
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) pcie |= g[e].type == LinkType::kPcie;
    if (!pcie) {
      throw ConfigError(
          fmt::format("{}node {}: nic has no pcie link into host \"{}\"; expected one to a "
                      "pcie_switch or cpu of its host (traffic between hosts goes through it)",
                      at(t, nic.line), nic.name, nic.host));
    }
  }
}

void check_fabrics(const Topology& t) {
  const TopoGraph& g = t.graph();
  // InfiniBand and Ethernet are separate fabrics: a switch (or a NIC's ports) carries one of them.
  // A switch of both would join an IB HCA to an Ethernet port, which no switch does (a gateway
  // between the two is a router, not modelled).
  for (VertexId v = 0; v < boost::num_vertices(g); ++v) {
    const TopoVertex& x = g[v];
    if (x.kind != VertexKind::kSwitch && x.kind != VertexKind::kNic) continue;
    const TopoLink* first = nullptr;
    VertexId first_to = v;
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      const TopoLink& l = g[e];
      if (!network(l.type)) continue;
      if (!first) {
        first = &l;
        first_to = boost::target(e, g);
        continue;
      }
      if (l.type == first->type) continue;
      throw ConfigError(fmt::format(
          "{}link {} -- {}: {} on {} {}, whose link to {}{} is {}; InfiniBand and Ethernet are separate fabrics: "
          "expected every network link of a {} to be of one type",
          at(t, l.line), g[l.a].name, g[l.b].name, to_string(l.type), to_string(x.kind), x.name, g[first_to].name,
          first->line > 0 ? fmt::format(" (line {})", first->line) : "", to_string(first->type), to_string(x.kind)));
    }
  }
}

void check_gpus_connected(const Topology& t) {
  const TopoGraph& g = t.graph();
  std::vector<int> component(boost::num_vertices(g));
  boost::connected_components(g, component.data());
  const VertexId first_gpu = t.gpus().front();
  const TopoVertex& first = g[first_gpu];
  // uncabled: a NIC of `host` with no network link (the likely cause when two hosts are apart).
  const auto uncabled = [&g](const std::string& host) -> std::optional<VertexId> {
    for (VertexId v = 0; v < boost::num_vertices(g); ++v) {
      if (g[v].kind != VertexKind::kNic || g[v].host != host) continue;
      bool cabled = false;
      for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) cabled = cabled || network(g[e].type);
      if (!cabled) return v;
    }
    return std::nullopt;
  };
  for (VertexId v : t.gpus()) {
    if (component[v] == component[first_gpu]) continue;
    const TopoVertex& gpu = g[v];
    std::string why = " (no path of links between them)";
    if (gpu.host != first.host) {
      for (const std::string* host : {&gpu.host, &first.host}) {
        if (const std::optional<VertexId> nic = uncabled(*host)) {
          const int line = g[*nic].line;
          why = fmt::format(
              " (no path of links between them: host {}'s nic {}{} has no infiniband or ethernet link to a network "
              "switch)",
              *host, g[*nic].name, line > 0 ? fmt::format(" (line {})", line) : "");
          break;
        }
      }
    }
    throw ConfigError(fmt::format("{}node {}: gpu cannot reach gpu {}{}", at(t, gpu.line), gpu.name, first.name, why));
  }
}

void check_hosts_joined(const Topology& t) {
  const TopoGraph& g = t.graph();
  // A machine's GPUs meet inside it (NVLink, PCIe, CPU links): GPUs joined only through NICs and
  // the network are two machines, and NCCL's SHM transport or a peer copy cannot cross a network.
  std::map<std::string, VertexId> first_gpu;  // per host, its first GPU
  for (VertexId gpu : t.gpus()) first_gpu.try_emplace(g[gpu].host, gpu);
  for (const auto& [host, start] : first_gpu) {
    std::vector<bool> seen(boost::num_vertices(g), false);
    std::vector<VertexId> stack{start};
    seen[start] = true;
    while (!stack.empty()) {
      const VertexId u = stack.back();
      stack.pop_back();
      for (auto e : boost::make_iterator_range(boost::out_edges(u, g))) {
        const VertexId w = boost::target(e, g);
        if (seen[w] || network(g[e].type) || g[w].host != host) continue;
        seen[w] = true;
        stack.push_back(w);
      }
    }
    for (VertexId gpu : t.gpus()) {
      if (g[gpu].host != host || seen[gpu]) continue;
      throw ConfigError(
          fmt::format("{}node {}: gpu of host \"{}\" reaches gpu {} of the same host only through the "
                      "network; a machine's GPUs meet inside it (nvlink, pcie, cpu_link): give the "
                      "two parts their own host names, or join them",
                      at(t, g[gpu].line), g[gpu].name, host, g[start].name));
    }
  }
}

void check_nvlink_domains(const Topology& t) {
  const TopoGraph& graph = t.graph();
  // One NVLink domain per host: NVLink between machines (multi-node NVLink, GB200 NVL72's, which
  // NCCL 2.20+ drives as MNNVL) is not modelled; gradsync's hosts meet through their NICs, and an
  // NVLink path between two of them would be taken for a path inside one.
  {
    const std::size_t n = boost::num_vertices(graph);
    std::vector<long> domain_gpu(n, -1);  // per vertex: the first GPU found in its NVLink domain
    for (VertexId g : t.gpus()) {
      if (domain_gpu[g] >= 0) continue;
      std::vector<VertexId> stack{g};
      domain_gpu[g] = static_cast<long>(g);
      while (!stack.empty()) {
        const VertexId u = stack.back();
        stack.pop_back();
        for (auto [e, end] = boost::out_edges(u, graph); e != end; ++e) {
          if (graph[*e].type != LinkType::kNvlink) continue;
          const VertexId w = boost::target(*e, graph);
          const TopoVertex& tw = graph[w];
          if (tw.kind == VertexKind::kGpu && tw.host != graph[g].host) {
            throw ConfigError(fmt::format(
                "{}node {}: gpu of host \"{}\" is in one NVLink domain with gpu {} of host \"{}\"; NVLink between "
                "hosts (multi-node NVLink as in GB200 NVL72, NCCL's MNNVL) is not modelled: give each host its own "
                "NVLink and NVSwitches, joined through NICs",
                at(t, tw.line), tw.name, tw.host, graph[g].name, graph[g].host));
          }
          if (domain_gpu[w] >= 0) continue;
          domain_gpu[w] = static_cast<long>(g);
          stack.push_back(w);
        }
      }
    }
  }
}

}  // namespace gradsync
