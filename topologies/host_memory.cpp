// host_memory.cpp: where a GPU's host memory is (Routes::host_cpu) and the check that every GPU
// has some (check_host_memory).
#include <fmt/format.h>

#include <limits>
#include <optional>

#include "core/error.hpp"
#include "topologies/routes.hpp"

namespace gradsync {

std::optional<VertexId> Routes::host_cpu(VertexId v) const {
  if (machine_[v] < 0) return std::nullopt;
  std::optional<VertexId> best;
  double best_latency = std::numeric_limits<double>::infinity();
  for (VertexId c : machine_cpus_[static_cast<std::size_t>(machine_[v])]) {
    if (component_[c] != component_[v]) continue;
    const double latency = c == v ? 0.0 : route(v, c).latency_s;
    if (latency < best_latency) {
      best_latency = latency;
      best = c;
    }
  }
  return best;
}

void check_host_memory(const Routes& routes) {
  const Topology& topo = routes.topology();
  for (VertexId g : topo.gpus()) {
    if (routes.host_cpu(g)) continue;
    // A CPU linked to this host's nodes but given another host (or none) is the likely slip: named.
    const std::string& host = topo.vertex(g).host;
    std::string other;
    for (LinkId e : boost::make_iterator_range(boost::edges(topo.graph()))) {
      for (VertexId c : {boost::source(e, topo.graph()), boost::target(e, topo.graph())}) {
        const TopoVertex& cpu = topo.vertex(c);
        if (cpu.kind != VertexKind::kCpu || cpu.host == host || topo.vertex(topo.other_end(e, c)).host != host ||
            !other.empty())
          continue;
        other = fmt::format("; cpu {}{} is linked to host {}'s {} but its host is {}", cpu.name,
                            cpu.line > 0 ? fmt::format(" (line {})", cpu.line) : "", host,
                            topo.vertex(topo.other_end(e, c)).name,
                            cpu.host.empty() ? "not given" : fmt::format("\"{}\"", cpu.host));
      }
    }
    const int line = topo.vertex(g).line;
    throw DataError(fmt::format(
        "{}{}: GPU {} on host {} reaches no CPU socket (a node with kind=\"cpu\", host=\"{}\", linked to its PCIe "
        "switch){}; a run needs host memory behind one (the batch copied in, NCCL's SHM, a network without "
        "GPUDirect RDMA), as every machine has",
        topo.origin(), line > 0 ? fmt::format(":{}", line) : "", topo.vertex(g).name, host, host, other));
  }
}

}  // namespace gradsync
