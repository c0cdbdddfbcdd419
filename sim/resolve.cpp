// resolve.cpp: a scenario resolved once (sim/resolved.hpp), and what is answered from that alone.
#include "sim/resolved.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <tuple>

#include "core/calibration.hpp"
#include "core/called_group.hpp"
#include "core/coalesce.hpp"
#include "core/comm_hook.hpp"
#include "core/ddp_step.hpp"
#include "core/dp_step.hpp"
#include "core/error.hpp"
#include "core/pytorch_version.hpp"
#include "core/yaml_reader.hpp"
#include "models/op_cost.hpp"
#include "models/scenario_basics.hpp"
#include "models/step_costs.hpp"
#include "sim/nccl_options.hpp"
#include "topologies/routes.hpp"

namespace gradsync::sim {
namespace {

template <class F>
auto field(const char* key, const std::string& value, F parse) {
  return scenario_field(key, value, std::move(parse));
}

// torchrun_gpus: the world size --nnodes and --nproc-per-node ask for, checked against the
// topology's hosts; 0 when neither is given. gradsync places ranks on the topology's first GPUs, so
// a layout is taken when it is that prefix: one node, or every GPU of each of the first nnodes
// hosts. ConfigError naming the key otherwise.
int torchrun_gpus(const Scenario& s, const Topology& topo) {
  if (s.nnodes == 0 && s.nproc_per_node == 0) return 0;
  std::vector<int> per_host(topo.hosts().size(), 0);
  for (int g = 0; g < topo.gpu_count(); ++g) ++per_host[static_cast<std::size_t>(topo.host_of(g))];
  const int nnodes = s.nnodes > 0 ? s.nnodes : 1;
  if (nnodes > static_cast<int>(per_host.size())) {
    throw ConfigError(fmt::format("nnodes {}: topology {} has {} host{}", nnodes, s.topology, per_host.size(),
                                  per_host.size() == 1 ? "" : "s"));
  }
  // --nnodes alone: every GPU of each of the first nnodes hosts, as many as each has (torchrun on
  // each node with its own --nproc-per-node; the result records no single nproc_per_node then).
  if (s.nproc_per_node == 0) {
    int world = 0;
    for (int h = 0; h < nnodes; ++h) world += per_host[static_cast<std::size_t>(h)];
    if (s.gpus > 0 && s.gpus != world) {
      throw ConfigError(
          fmt::format("gpus {} disagrees with nnodes {}: its first {} host{} have {} GPUs; give one or "
                      "the other",
                      s.gpus, nnodes, nnodes, nnodes == 1 ? "" : "s", world));
    }
    return world;
  }
  const int nproc = s.nproc_per_node;
  for (int h = 0; h < nnodes; ++h) {
    const int has = per_host[static_cast<std::size_t>(h)];
    if (nproc > has) {
      throw ConfigError(fmt::format("nproc_per_node {}: host {} of topology {} has {} GPU{}", nproc,
                                    topo.hosts()[static_cast<std::size_t>(h)], s.topology, has, has == 1 ? "" : "s"));
    }
    if (nnodes > 1 && nproc < has) {
      throw ConfigError(fmt::format(
          "nproc_per_node {} on {} nodes: host {} has {} GPUs, and gradsync places ranks on the topology's first "
          "GPUs, so P of each node's GPUs cannot be chosen yet; give a topology with {} GPU{} per node (gradsync topo "
          "generate fat-tree --gpus-per-node {}) or nproc_per_node {}",
          nproc, nnodes, topo.hosts()[static_cast<std::size_t>(h)], has, nproc, nproc == 1 ? "" : "s", nproc, has));
    }
  }
  const int world = nnodes * nproc;
  if (s.gpus > 0 && s.gpus != world) {
    throw ConfigError(fmt::format("gpus {} disagrees with nnodes {} x nproc_per_node {} = {}; give one or the other",
                                  s.gpus, nnodes, nproc, world));
  }
  return world;
}

}  // namespace

ResolvedScenario resolve(const Scenario& requested) {
  ResolvedScenario r(requested, scenario_model(requested),
                     field("topology", requested.topology, [&] { return load_topology(requested.topology); }));
  Scenario s = requested;
  if (const int world = torchrun_gpus(s, r.topo); world > 0) s.gpus = world;
  const int available = r.topo.gpu_count();
  if (s.gpus < 0 || s.gpus > available) {
    throw ConfigError(fmt::format("gpus {}: topology {} has {} GPU{}; expected 1..{}", s.gpus, s.topology, available,
                                  available == 1 ? "" : "s", available));
  }
  r.gpus = s.gpus > 0 ? s.gpus : available;
  r.gpu = r.topo.vertex(r.topo.gpu(0)).gpu;
  if (!r.gpu)
    throw ConfigError(
        fmt::format("topology {}: GPU {} has no known model", s.topology, r.topo.vertex(r.topo.gpu(0)).name));
  for (int g = 1; g < r.gpus; ++g) {
    // One cost model per run: the step's compute is priced for one GPU model. A synchronous DDP
    // or DP step runs at its slowest rank, which gradsync does not pick for the user.
    const GpuSpec* other = r.topo.vertex(r.topo.gpu(g)).gpu;
    if (other && other->name != r.gpu->name) {
      // A file with a fault of its own says that first: `--gpus N`, which the message below
      // offers, would only meet it next (topo validate reports it first too).
      check_host_memory(Routes(r.topo));
      throw ConfigError(fmt::format(
          "topology {}: GPU {} is a {} and GPU {} a {}; gradsync simulates a run on one GPU model (its compute is "
          "priced for one), so give a topology whose GPUs used are alike, or --gpus {} to use the first {} only",
          s.topology, r.topo.vertex(r.topo.gpu(0)).name, r.gpu->name, r.topo.vertex(r.topo.gpu(g)).name, other->name, g,
          g));
    }
  }
  for (int g = 0; g < r.gpus; ++g) r.hosts.insert(r.topo.host_of(g));
  apply_global_batch(s, r.gpus);
  const ScenarioBasics basics = resolve_basics(s, r.model, *r.gpu);
  ScenarioFacts facts = scenario_facts(basics, r.model, r.gpus);
  facts.nnodes = static_cast<int>(r.hosts.size());
  std::map<int, int> ranks_on;  // host -> ranks
  for (int g = 0; g < r.gpus; ++g) ++ranks_on[r.topo.host_of(g)];
  facts.nproc_per_node = ranks_on.begin()->second;
  for (const auto& [host, n] : ranks_on)
    if (n != facts.nproc_per_node) facts.nproc_per_node = 0;
  r.resolved = resolved_scenario(requested, facts);
  r.precision = basics.precision;
  r.optimizer = basics.optimizer;
  r.batch = basics.batch;
  r.seq_len = basics.seq_len;
  r.hook = basics.hook;
  // NCCL's knobs and the fidelity were checked against the table (check_scenario_keys).
  r.nccl = nccl_settings(s);
  r.fidelity = *parse_fidelity(s.fidelity);
  if (!s.calibration.empty()) {
    // A calibration's times were measured on the user's GPUs, spread and all: the roofline's
    // median GPU is not what runs, so no spread is applied, and one asked for is refused rather
    // than recorded as if it had been.
    if (s.gpu_spread_pct != "0" && s.gpu_spread_pct != Scenario{}.gpu_spread_pct) {
      throw ConfigError(fmt::format(
          "gpu_spread_pct {}: a calibration holds the measured GPUs' own times, so no spread is applied; expected 0 "
          "or no gpu_spread_pct with calibration {}",
          s.gpu_spread_pct, s.calibration));
    }
    r.resolved.gpu_spread_pct = "0";
    // An imported step's compute was measured already: a calibration would replace those times
    // while the header says they are used as measured.
    if (r.model.measured) {
      throw ConfigError(fmt::format(
          "calibration {}: model {} holds a step measured on {} ({}), whose compute times are used as measured; a "
          "calibration would replace them: expected no calibration with an imported model",
          s.calibration, r.model.name, r.model.measured->device, r.model.measured->trace));
    }
    r.calibration = read_calibration(s.calibration);
    if (r.calibration->precision != precision_name(r.precision)) {
      const std::string wanted(precision_name(r.precision));
      throw ConfigError(fmt::format(
          "calibration {}: its GEMMs were timed in {} (hardware.precision), the scenario runs {}; {}", s.calibration,
          r.calibration->precision, wanted,
          r.calibration->backend == "cpu"
              ? fmt::format("the CPU backend computes in fp32 only: give --precision {}", r.calibration->precision)
              : fmt::format("calibrate with --precision {}, or give --precision {}", wanted,
                            r.calibration->precision)));
    }
    if (r.calibration->collective_time(Collective::kAllreduce, r.gpus, 1.0) == std::nullopt && r.gpus > 1) {
      int measured = 0;
      for (const CollectiveTable& t : r.calibration->collectives)
        if (t.collective == Collective::kAllreduce) measured = t.ranks;
      if (measured == 0)
        throw ConfigError(fmt::format(
            "calibration {}: holds no allreduce measurement, and the scenario uses {} GPUs; calibrate with as many "
            "ranks (mpirun -np {} gradsync calibrate)",
            s.calibration, r.gpus, r.gpus));
      throw ConfigError(fmt::format(
          "calibration {}: allreduce was measured on {} rank{}, the scenario uses {} GPUs; calibrate with as many "
          "ranks (mpirun -np {} gradsync calibrate) or pass --gpus {}",
          s.calibration, measured, measured == 1 ? "" : "s", r.gpus, r.gpus, measured));
    }
  }
  return r;
}

ComputeContext context_of(const ResolvedScenario& r) {
  ComputeContext ctx;
  ctx.gpu = r.gpu;
  ctx.precision = r.precision;
  ctx.batch = r.batch;
  ctx.seq_len = r.seq_len;
  apply_framework(ctx, r.s);
  return ctx;
}

BucketOptions buckets_of(const Scenario& s) {
  BucketOptions b;
  b.bucket_cap_mb = s.bucket_cap_mb;
  b.first_bucket_mb = s.first_bucket_mb;
  b.find_unused_parameters = s.find_unused_parameters;
  b.static_graph = s.static_graph;
  b.pytorch = parse_pytorch_version(s.pytorch_version);
  return b;
}

void check_ddp_run(const ResolvedScenario& r) {
  // DDP(static_graph=True) takes no backward under no_sync(): the Reducer asserts on the first one
  // (reducer.cpp, "expect_autograd_hooks_ INTERNAL ASSERT FAILED", reproduced on PyTorch 1.13),
  // and from 2.1 on (pytorch/pytorch#103487) the first no_sync backward fails the same way or its
  // gradients stop being reduced (pytorch/pytorch#143580, open). grad_accum runs all but the last
  // micro-step under no_sync().
  if (r.s.static_graph && r.s.grad_accum > 1) {
    throw ConfigError(fmt::format(
        "static_graph with grad_accum {}: DDP(static_graph=True) fails on the first backward under no_sync() "
        "(reducer.cpp: \"expect_autograd_hooks_ INTERNAL ASSERT FAILED\"; pytorch/pytorch#143580), and grad_accum "
        "runs all but the last micro-step under no_sync(); expected static_graph false or grad_accum 1",
        r.s.grad_accum));
  }
  if (r.gpus <= 1 || r.resolved.nccl_algo.empty()) return;
  // A request that leaves DDP's allreduce nothing to run with fails now (NCCL_ALGO=tree on one
  // host). DataParallel's broadcast and reduce are ring-only in NCCL and fall back to it.
  const Routes routes(r.topo);
  const Transports transports(r.topo, routes, r.nccl.transport, r.gpus);
  const Channels ch = build_channels(r.topo, routes, first_ranks(r.gpus), transports);
  (void)choose_collective(Collective::kAllreduce, 64 << 20, ch, r.nccl.request);
}

Scenario resolve_scenario(const Scenario& s, bool ddp) {
  const ResolvedScenario r = resolve(s);
  if (ddp) check_ddp_run(r);
  return r.resolved;
}

int bucket_rebuild_iteration(const Scenario& s) { return buckets_of(s).rebuild_iteration(); }

std::vector<std::string> calibration_extrapolations(const Scenario& s, const std::vector<Strategy>& strategies) {
  if (s.calibration.empty()) return {};
  const ResolvedScenario r = resolve(s);
  if (!r.calibration) return {};
  // The roofline's ops, per kernel, as CalibratedCostModel times them (models/step_costs.cpp).
  const RooflineCostModel costs(r.model, context_of(r), r.optimizer);
  std::map<OpKind, double> largest;
  auto see = [&](const ComputeOp& op) {
    const double k = std::max(1, op.kernels);
    const double size = op.kind == OpKind::kMemory || !(op.flops > 0) ? op.bytes / k : op.flops / k;
    const OpKind kind = op.kind != OpKind::kMemory && op.flops > 0 ? op.kind : OpKind::kMemory;
    largest[kind] = std::max(largest[kind], size);
  };
  for (std::size_t i = 0; i < r.model.layers.size(); ++i) {
    see(costs.forward(i, r.batch));
    see(costs.backward(i, r.batch));
  }
  see(costs.optimizer());
  // kReach: beyond 4x the last point a calibration's line is a guess (calibrate's sizes grow 4x
  // per row: one row further than it measured).
  constexpr double kReach = 4;
  std::vector<std::string> out;
  for (const auto& [kind, size] : largest) {
    const auto it = r.calibration->compute.find(kind);
    if (it == r.calibration->compute.end() || it->second.points.empty()) continue;
    const double last = it->second.points.back().first;
    if (size <= kReach * last) continue;
    const bool bytes = kind == OpKind::kMemory;
    out.push_back(
        fmt::format("{} up to {:.3g} {}, and the model's largest is {:.3g} {} ({:.0f}x): those times are "
                    "extrapolated (calibrate with a larger {})",
                    op_kind_name(kind), last, bytes ? "B" : "FLOP", size, bytes ? "B" : "FLOP", size / last,
                    bytes ? "--max-bytes" : "--max-flops"));
  }
  if (r.gpus <= 1) return out;
  // The strategies' collectives: DDP's largest bucket (allreduce); DataParallel's largest
  // coalesced group of parameters (broadcast) and of gradients (reduce), as dp_step.cpp cuts them.
  const StepModel model = to_step_model(r.model, r.precision, r.seq_len);
  std::vector<CoalesceTensor> params, grads;
  for (const ParamInfo& p : model.params) params.push_back({p.bytes(), p.dtype});
  for (std::size_t p : model.trainable()) grads.push_back({model.params[p].bytes(), model.params[p].dtype});
  const auto largest_group = [](const std::vector<CoalesceTensor>& t, const Groups& groups) {
    double most = 0;
    for (const auto& g : groups) most = std::max(most, static_cast<double>(group_bytes(t, g)));
    return most;
  };
  const auto check = [&](Collective c, double size, const char* what) {
    double timed = 0;
    for (const CollectiveTable& t : r.calibration->collectives)
      if (t.collective == c && t.ranks == r.gpus && !t.table.points.empty()) timed = t.table.points.back().first;
    if (timed > 0 && size > kReach * timed) {
      out.push_back(
          fmt::format("{} up to {:.3g} B over {} ranks, and {} is {:.3g} B ({:.0f}x): those times are "
                      "extrapolated (calibrate with a larger --max-bytes)",
                      collective_name(c), timed, r.gpus, what, size, size / timed));
    }
  };
  for (Strategy st : strategies) {
    if (st == Strategy::kDDP) {
      double bucket = 0;
      for (const Bucket& b : initial_buckets(model, buckets_of(s)).buckets)
        bucket = std::max(bucket, static_cast<double>(b.bytes));
      check(Collective::kAllreduce, bucket, "DDP's largest bucket");
    } else {
      check(Collective::kBroadcast, largest_group(params, coalesce_reaching(params, kDataParallelBufferBytes)),
            "DataParallel's largest broadcast of parameters");
      check(Collective::kReduce, largest_group(grads, coalesce_before_exceeding(grads, kDataParallelBufferBytes)),
            "DataParallel's largest reduce of gradients");
    }
  }
  return out;
}

std::int64_t largest_batch_per_gpu(const Scenario& s, Strategy strategy) {
  const ResolvedScenario r = resolve(s);
  ComputeContext ctx = context_of(r);
  MemoryOptions mo;
  mo.strategy = strategy;
  mo.optimizer = r.optimizer;
  mo.gradient_as_bucket_view = s.gradient_as_bucket_view;
  // DP: GPU0 holds its chunk and the gathered outputs of every replica (memory_cost's hub).
  auto fits = [&](std::int64_t b) {
    ctx.batch = b;
    mo.dp_global_batch = b * r.gpus;
    mo.dp_one_device = strategy == Strategy::kDP && r.gpus == 1;
    return !memory_cost(r.model, ctx, mo).oom;
  };
  // Memory grows with the batch (activations), so the largest that fits is found by doubling,
  // then bisecting. kLargestBatchSearched bounds a model that saves nothing per sample.
  constexpr std::int64_t kMaxBatch = kLargestBatchSearched;
  if (!fits(1)) return 0;
  std::int64_t lo = 1, hi = 2;
  while (hi <= kMaxBatch && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > kMaxBatch) return lo;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace gradsync::sim
