// collective_sweep.cpp: simulated nccl-tests (`gradsync collectives`): the sizes nccl-tests runs for
// -b/-e/-f/-i, each rounded as nccl-tests rounds its count, and one SimGrid run over them all.
#include <simgrid/s4u.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "models/scenario_basics.hpp"
#include "sim/engine.hpp"
#include "sim/nccl_model.hpp"
#include "sim/simulate.hpp"
#include "topologies/routes.hpp"

namespace gradsync::sim {

std::vector<CollectivePoint> simulate_collectives(const CollectiveSweep& sw) {
  const Topology topo = scenario_field("topology", sw.topology, [&] { return load_topology(sw.topology); });
  return simulate_collectives(sw, topo);
}

double nccl_tests_bytes(Collective op, double requested, int ranks, int element_bytes) {
  const double elt = std::max(1, element_bytes);
  const double count = std::floor(requested / elt);
  if (op == Collective::kAllgather || op == Collective::kReduceScatter) {
    const double share = std::floor(count / std::max(1, ranks));
    const double align = std::max(1.0, 16 / elt);  // (count / nranks) & ~(16 / eltSize - 1)
    return std::floor(share / align) * align * elt * std::max(1, ranks);
  }
  return count * elt;
}

std::vector<double> requested_sizes(const CollectiveSweep& sw) {
  if (!sw.sizes.empty()) return sw.sizes;
  if (!(sw.step_factor >= 1) || sw.step_factor != std::floor(sw.step_factor) || sw.step_factor >= 1e9)
    throw ConfigError(
        fmt::format("step-factor {}: expected a whole number >= 1 (1: steps of step-bytes)", sw.step_factor));
  if (sw.step_factor == 1 && !(sw.step_bytes >= 1))
    throw ConfigError(fmt::format("step-bytes {}: expected at least 1 byte", sw.step_bytes));
  // kMaxRows: a table to read, not a search: nccl-tests' -f 2 from 8 B to 16 GiB is 32 rows;
  // linear steps of 1 MiB to 8 GiB would be 8192 simulations.
  constexpr double kMaxRows = 4096;
  const double rows = sw.step_factor > 1
                          ? std::floor(std::log(sw.max_bytes / sw.min_bytes) / std::log(sw.step_factor) + 1e-9) + 1
                          : std::floor((sw.max_bytes - sw.min_bytes) / sw.step_bytes) + 1;
  if (rows > kMaxRows) {
    throw ConfigError(
        sw.step_factor > 1
            ? fmt::format("step-factor {}: {:.0f} sizes from {} to {} bytes; expected at most {:.0f} (a larger "
                          "factor or a narrower min-bytes..max-bytes)",
                          sw.step_factor, rows, sw.min_bytes, sw.max_bytes, kMaxRows)
            : fmt::format("step-bytes {}: {:.0f} sizes from {} to {} bytes in steps of it (step-factor 1); expected at "
                          "most {:.0f} (larger steps, a step-factor such as 2, or a narrower min-bytes..max-bytes)",
                          sw.step_bytes, rows, sw.min_bytes, sw.max_bytes, kMaxRows));
  }
  std::vector<double> out;
  for (double b = sw.min_bytes; b <= sw.max_bytes * (1 + 1e-12);
       b = sw.step_factor > 1 ? b * sw.step_factor : b + sw.step_bytes)
    out.push_back(b);
  return out;
}

std::vector<CollectivePoint> simulate_collectives(const CollectiveSweep& sw, const Topology& topo) {
  const int n = sw.gpus > 0 ? sw.gpus : topo.gpu_count();
  if (n > topo.gpu_count()) {
    throw ConfigError(fmt::format("gpus {}: topology {} has {} GPUs", sw.gpus, sw.topology, topo.gpu_count()));
  }
  if (!(sw.min_bytes > 0) || sw.max_bytes < sw.min_bytes) {
    throw ConfigError(fmt::format("sizes {}..{}: expected 0 < min-bytes <= max-bytes", sw.min_bytes, sw.max_bytes));
  }
  if (sw.gpus_per_thread < 1 || sw.gpus_per_thread > n || n % sw.gpus_per_thread != 0) {
    throw ConfigError(fmt::format(
        "gpus-per-thread {}: expected a whole number from 1 to {} that divides the {} GPUs (nccl-tests' -g: each "
        "thread drives that many)",
        sw.gpus_per_thread, n, n));
  }
  if (sw.gpus_per_thread > 1) {
    // A thread drives GPUs of its own machine only: the GPUs of each thread (consecutive ranks)
    // must share a node.
    for (int first = 0; first < n; first += sw.gpus_per_thread) {
      for (int r = first + 1; r < first + sw.gpus_per_thread; ++r) {
        if (topo.host_of(r) != topo.host_of(first)) {
          throw ConfigError(fmt::format(
              "gpus-per-thread {}: GPUs {} and {} of one thread are on different nodes of {}; a process drives "
              "the GPUs of its own machine only (expected a count that divides each node's GPUs)",
              sw.gpus_per_thread, first, r, sw.topology.empty() ? std::string("the cluster") : sw.topology));
        }
      }
    }
  }
  const std::vector<double> requested = requested_sizes(sw);
  SimOptions so;
  so.nccl = sw.nccl.request;
  so.transport = sw.nccl.transport;
  so.min_channels = sw.nccl.min_channels;
  so.max_channels = sw.nccl.max_channels;
  so.nvls_min_channels = sw.nccl.nvls_min_channels;
  so.nvls_max_channels = sw.nccl.nvls_max_channels;
  const auto fidelity = parse_fidelity(sw.fidelity);
  if (!fidelity) throw ConfigError(fmt::format("fidelity \"{}\": expected step, aggregate or auto", sw.fidelity));
  so.fidelity = *fidelity;
  so.fluid = sw.fluid;

  // nccl-tests' sizes: min, min*f, ... up to max, or those given, each as nccl-tests runs it; a
  // row for every step, as nccl-tests prints one, even where two steps round to the same bytes.
  std::vector<double> sizes;
  for (double b : requested) sizes.push_back(nccl_tests_bytes(sw.op, b, n, sw.element_bytes));
  const double largest = sizes.empty() ? 0.0 : *std::max_element(sizes.begin(), sizes.end());

  auto engine = create_engine(n);
  const Routes routes(topo);
  SimCluster cluster(topo, routes, n, so);
  // Fail early (before the engine runs) when the forced algorithm cannot serve this operation.
  if (largest > 0) (void)choose_collective(sw.op, largest, cluster.channels(n), so.nccl);
  auto barrier = simgrid::s4u::Barrier::create(static_cast<unsigned>(n));
  for (int rank = 0; rank < n; ++rank) {
    ProcessGroup* pg = &cluster.world_group(rank);
    cluster.host({rank});
    cluster.spawn(rank, [&, pg] {
      for (double size : sizes) {
        if (!(size > 0)) continue;  // count 0: NCCL returns without a kernel
        CollectiveOp op;
        op.name = std::string(collective_name(sw.op));
        op.bytes = static_cast<Bytes>(sw.op == Collective::kAllgather ? size / n : size);
        WorkPtr w = issue_collective(*pg, sw.op, op, 0);
        w->wait();
        barrier->wait();
      }
    });
  }
  cluster.run();
  std::vector<CollectivePoint> points;
  const auto& recs = cluster.collectives();
  std::size_t rec = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    CollectivePoint p;
    p.bytes = sizes[i];
    if (!(p.bytes > 0)) {
      p.ran = false;
      points.push_back(p);
      continue;
    }
    p.time_s = recs.at(rec).end_s - recs.at(rec).start_s;
    p.choice = recs.at(rec).choice;
    // One thread launches every GPU's kernel of the call in turn (kGroupLaunchPerGpuS each); the
    // calls queue without a wait, so the slower of the host and the GPUs sets the pace.
    const double launches = sw.gpus_per_thread * kGroupLaunchPerGpuS;
    if (sw.gpus_per_thread > 1 && p.time_s < launches) {
      p.time_s = launches;
      p.host_bound = true;
    }
    ++rec;
    p.algbw_GBps = p.time_s > 0 ? p.bytes / p.time_s / 1e9 : 0.0;
    p.busbw_GBps = p.algbw_GBps * bus_factor(sw.op, n);
    points.push_back(p);
  }
  return points;
}

}  // namespace gradsync::sim
