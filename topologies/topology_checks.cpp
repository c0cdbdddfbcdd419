// topology_checks.cpp: what a machine must be, checked once the graph is built
// (Topology::build): its parts joined inside it, its NICs on its PCIe tree.
#include "topologies/topology_checks.hpp"

#include <fmt/format.h>

#include <boost/range/iterator_range.hpp>
#include <map>
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

}  // namespace gradsync
