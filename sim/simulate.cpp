// simulate.cpp: scenario -> StepModel, costs and cluster -> DpStep / DdpStep on SimGrid -> metrics.
#include "sim/simulate.hpp"

#include "models/gpu_spread.hpp"

#include <simgrid/s4u.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "core/calibration.hpp"
#include "core/called_group.hpp"
#include "core/comm_hook.hpp"
#include "core/ddp_step.hpp"
#include "core/dp_step.hpp"
#include "core/error.hpp"
#include "core/pytorch_version.hpp"
#include "core/yaml_reader.hpp"
#include "models/op_cost.hpp"
#include "models/scenario_basics.hpp"
#include "models/step_costs.hpp"
#include "sim/engine.hpp"
#include "sim/nccl_model.hpp"
#include "sim/nccl_options.hpp"
#include "topologies/routes.hpp"

#include "sim/mirror.hpp"
#include "sim/resolved.hpp"
#include "sim/shm_duplex.hpp"

namespace gradsync::sim {

namespace {

// powersgd_state: PowerSGDState's memory over every trainable gradient (the buckets cover them all;
// the gradients' type is the model's first trainable parameter's).
double powersgd_state(const CommHook& h, const StepModel& model) {
  std::vector<std::vector<std::int64_t>> shapes;
  DType grad = DType::kFloat32;
  for (std::size_t p : model.trainable()) {
    if (shapes.empty()) grad = model.params[p].dtype;
    shapes.push_back(model.params[p].shape);
  }
  return powersgd_state_bytes(h, shapes, grad);
}

// run: the resolved scenario in this process's engine (created here), the ranks that `mirrors`
// stand for (sim/mirror.hpp) not simulated but given their standing rank's events; with `keep`,
// only the traced ranks' events (traced_ranks: a rank standing for others is the lowest of them,
// so the slowest ranks are found on the standing ranks' events alone).
// input_of: where each batch starts; a measured step's copies are inside its measured time
// (models/compute_cost.cpp with_measured), so its batch is taken as on the device.
InputLocation input_of(const ResolvedScenario& r, const Scenario& s) {
  return r.model.measured ? InputLocation::kDevice : input_location(s);
}

StrategyResult run(const ResolvedScenario& r, Strategy strategy, bool fluid,
                   const std::vector<std::vector<int>>& mirrors, const TraceOptions* keep,
                   std::shared_ptr<const Channels> channels = nullptr) {
  const Scenario& s = r.s;
  StrategyResult out;
  out.strategy = strategy;
  out.gpus = r.gpus;
  out.tokens_per_sample = r.model.default_seq_len ? r.seq_len : 0;
  out.precision = std::string(precision_name(r.precision));
  out.gpu = r.gpu->key;
  out.fidelity.mode = s.fidelity;
  const std::int64_t global = r.batch * r.gpus;
  out.global_batch = global * s.grad_accum;
  if (strategy == Strategy::kDP && r.hosts.size() > 1) {
    int first_host = 0;
    while (first_host < r.topo.gpu_count() && r.topo.host_of(first_host) == r.topo.host_of(0)) ++first_host;
    std::vector<std::string> names;
    for (int h : r.hosts) names.push_back(r.topo.hosts().at(static_cast<std::size_t>(h)));
    out.skipped = fmt::format(
        "DataParallel runs in one process on one machine; GPUs 0..{} of {} span {} hosts ({}) (use --gpus {} or "
        "fewer)",
        r.gpus - 1, s.topology, r.hosts.size(), fmt::join(names, ", "), first_host);
    return out;
  }

  const StepModel model = to_step_model(r.model, r.precision, r.seq_len);
  auto engine = create_engine(r.gpus);
  const Routes routes(r.topo);
  SimOptions so;
  so.nccl = r.nccl.request;
  so.nccl.strict = false;
  so.transport = r.nccl.transport;
  so.min_channels = r.nccl.min_channels;
  so.max_channels = r.nccl.max_channels;
  so.nvls_min_channels = r.nccl.nvls_min_channels;
  so.nvls_max_channels = r.nccl.nvls_max_channels;
  so.fidelity = r.fidelity;
  so.fluid = fluid;
  so.mirrors = mirrors;
  so.world_channels = std::move(channels);
  if (r.calibration) so.calibration = &*r.calibration;
  // The step waits for its slowest GPU (models/gpu_spread.hpp); a calibration's times are the
  // measured GPUs' own.
  if (!r.calibration) so.slowest_gpu = slowest_gpu_factor(r.gpus, gpu_spread(s));
  SimCluster cluster(r.topo, routes, r.gpus, so);

  ComputeContext ctx = context_of(r);
  // DataParallel over several replicas: AccumulateGrad runs on GPU0 after the reduce, not in
  // each replica's backward.
  const bool dp_accumulates = strategy == Strategy::kDP && DpStep::replicas(global, r.gpus) > 1;
  if (dp_accumulates) ctx.accumulate_in_backward = false;
  // torch.compile(DataParallel(model)) over several GPUs runs eager: DataParallel runs its replicas
  // in threads, which Dynamo does not trace ("for multi-gpu it falls back to the non-compile speed",
  // pytorch/pytorch#94636; PyTorch documents compile with DDP and FSDP). The header says so.
  if (strategy == Strategy::kDP && DpStep::replicas(global, r.gpus) > 1) ctx.mode.compile = false;
  if (r.gpus > 1) {
    // The NCCL kernel beside backward: a bucket's allreduce as NCCL would run it over every rank.
    const Channels& ch = cluster.channels(r.gpus);
    const double bucket = static_cast<double>(buckets_of(s).bucket_cap_bytes());
    ctx.nccl_blocks = launched_blocks(choose_collective(Collective::kAllreduce, bucket, ch, so.nccl).algorithm, ch);
  }
  const RooflineCostModel roofline(r.model, ctx, r.optimizer);
  std::optional<CalibratedCostModel> calibrated;
  if (r.calibration) {
    calibrated.emplace(roofline, *r.calibration);
    out.gpu = fmt::format("{} (calibrated)", r.calibration->device);
  }
  const CostModel& costs = calibrated ? static_cast<const CostModel&>(*calibrated) : roofline;

  if (strategy == Strategy::kDDP) {
    DdpStepOptions o;
    o.ddp.buckets = buckets_of(s);
    o.ddp.gradient_as_bucket_view = s.gradient_as_bucket_view;
    o.ddp.broadcast_buffers = s.broadcast_buffers;
    o.input = input_of(r, s);
    o.ddp.allreduce_after_backward = s.allreduce_after_backward;
    o.ddp.hook = r.hook;
    o.grad_accum = s.grad_accum;
    o.clip_grad_norm = s.clip_grad_norm;
    o.clip_syncs = clip_grad_norm_syncs(parse_pytorch_version(s.pytorch_version));
    o.scaler = {ctx.grad_scaler, ctx.optimizer_impl == OptimizerImpl::kFused};
    out.replicas = r.gpus;
    std::vector<bool> mirrored(static_cast<std::size_t>(r.gpus), false);
    for (const auto& others : mirrors)
      for (int m : others) mirrored[static_cast<std::size_t>(m)] = true;
    for (int rank = 0; rank < r.gpus; ++rank) {
      if (mirrored[static_cast<std::size_t>(rank)]) continue;  // its standing rank lives its timeline
      ++out.fidelity.simulated_ranks;
      Host* host = &cluster.host({rank});
      Device* dev = &cluster.device(rank);
      ProcessGroup* pg = &cluster.world_group(rank);
      cluster.spawn(rank, [&, o, host, dev, pg] {
        CalledGroup called(*pg, *host, costs.host().collective_call_s);
        DdpStep step(model, costs, o, r.batch, *host, *dev, called);
        step.construct();
        for (int it = 1; it <= s.iterations; ++it) step.run_iteration(it);
      });
    }
  } else {
    const int m = DpStep::replicas(global, r.gpus);
    out.replicas = m;
    out.fidelity.simulated_ranks = r.gpus;  // one process drives every GPU
    std::vector<int> ids(static_cast<std::size_t>(r.gpus));
    std::iota(ids.begin(), ids.end(), 0);
    Host* host = &cluster.host(ids);
    std::vector<Device*> devices;
    for (int g = 0; g < r.gpus; ++g) devices.push_back(&cluster.device(g));
    ProcessGroup* group = &cluster.local_group(m);
    DpStepOptions o;
    o.location = input_of(r, s);
    o.grad_accum = s.grad_accum;
    o.clip_grad_norm = s.clip_grad_norm;
    o.clip_syncs = clip_grad_norm_syncs(parse_pytorch_version(s.pytorch_version));
    o.scaler = {ctx.grad_scaler, ctx.optimizer_impl == OptimizerImpl::kFused};
    o.accumulate_grads = dp_accumulates && ctx.grads_defined;
    // DataParallel's collectives (torch.cuda.comm's broadcast_coalesced and reduce_add_coalesced)
    // are NCCL group calls that its one thread makes for every replica's GPU (torch/csrc/cuda/
    // nccl.cpp: AutoNcclGroup, then ncclBcast or ncclReduce per device): NCCL launches each GPU's
    // kernel in turn (group.cc doLaunches), kGroupLaunchPerGpuS each, as for nccl-tests' -g N.
    const double dp_call_s = m * kGroupLaunchPerGpuS;
    cluster.spawn(0, [&, o, host, devices, group, dp_call_s] {
      CalledGroup called(*group, *host, dp_call_s);
      DpStep step(model, costs, o, global, *host, devices, called);
      for (int it = 1; it <= s.iterations; ++it) {
        step.run_iteration(it);
      }
      for (Device* d : devices) d->synchronize();
    });
  }
  cluster.run();

  out.trace = cluster.take_trace();
  for (const CollectiveRecord& c : cluster.collectives()) {
    CollectiveCall call;
    call.name = c.name;
    call.collective = c.collective;
    call.bytes = c.bytes;
    call.members = c.members;
    call.algorithm = std::string(algorithm_name(c.choice.algorithm));
    call.protocol = std::string(protocol_name(c.choice.protocol));
    call.predicted_s = c.choice.predicted_s;
    call.bus_bw_Bps = c.choice.bus_bw_Bps;
    call.start_s = c.start_s;
    call.end_s = c.end_s;
    call.iteration = c.iteration;
    if (c.members > 1 && !r.calibration) {
      call.fidelity = std::string(fidelity_name(c.fidelity));
      ++out.fidelity.calls;
      if (c.fidelity == Fidelity::kAggregate) ++out.fidelity.aggregate_calls;
    }
    out.collectives.push_back(std::move(call));
  }
  out.fidelity.bound = out.fidelity.aggregate_calls > 0 ? kAggregateBound : 0.0;
  if (r.gpus > 1 && !r.calibration) {
    std::map<std::string, int> hops;
    const Channels& ch = cluster.channels(r.gpus);
    for (const RingChannel& rc : ch.rings)
      for (const Hop& h : rc.hops) ++hops[fmt::format("{} over {}", h.name, to_string(h.route.path_class))];
    // DDP's buckets go round a ring; DataParallel broadcasts from GPU 0 (and reduces to it).
    const double cap = shm_duplex_cap_Bps(
        ch, strategy == Strategy::kDP ? Collective::kBroadcast : Collective::kAllreduce, Algorithm::kRing, 0);
    if (std::isfinite(cap)) out.shm_duplex_Bps = cap;
    std::vector<std::string> names;
    for (const auto& [name, count] : hops) names.push_back(name);
    out.transports = fmt::format("{}", fmt::join(names, ", "));
  }
  out.traffic = cluster.traffic(s.iterations);
  summarize(out, s.warmup);

  const std::vector<std::int64_t> chunks = DpStep::chunk_sizes(global, r.gpus);
  std::map<std::tuple<std::int64_t, bool>, MemoryBreakdown> memory_by_case;
  for (int g = 0; g < r.gpus; ++g) {
    GpuResult gr;
    gr.rank = g;
    for (int it = s.warmup + 1; it <= s.iterations; ++it) {
      gr.bytes_in += cluster.bytes_in(g, it);
      gr.bytes_out += cluster.bytes_out(g, it);
    }
    const double steady = s.iterations - s.warmup;
    gr.bytes_in /= steady;
    gr.bytes_out /= steady;
    MemoryOptions mo;
    mo.strategy = strategy;
    mo.optimizer = r.optimizer;
    mo.gradient_as_bucket_view = s.gradient_as_bucket_view;
    // PowerSGD's state exists once it compresses (from iteration start_iter + 1): in the run's peak
    // when a simulated iteration got there.
    if (strategy == Strategy::kDDP && r.hook.kind == CommHookKind::kPowerSGD &&
        s.iterations > r.hook.powersgd_start_iter)
      mo.hook_state_bytes = powersgd_state(r.hook, model);
    ComputeContext mctx = ctx;
    if (strategy == Strategy::kDP) {
      mo.dp_gpu0 = g == 0;
      mo.dp_global_batch = global;
      mo.dp_one_device = r.gpus == 1;
      mctx.batch = static_cast<std::size_t>(g) < chunks.size() ? chunks[static_cast<std::size_t>(g)] : 0;
    }
    if (strategy == Strategy::kDP && g >= out.replicas) {
      gr.peak_memory_bytes = static_cast<double>(kCudaContextBytes);
      gr.capacity_bytes = static_cast<double>(r.gpu->memory_bytes);
    } else {
      // Ranks alike in batch and role cost alike: each distinct case is costed once (1,024 DDP
      // ranks: one).
      const auto key = std::make_tuple(mctx.batch, mo.dp_gpu0);
      auto known = memory_by_case.find(key);
      if (known == memory_by_case.end()) known = memory_by_case.emplace(key, memory_cost(r.model, mctx, mo)).first;
      const MemoryBreakdown& mem = known->second;
      gr.peak_memory_bytes = mem.total;
      gr.capacity_bytes = mem.capacity;
      gr.oom = mem.oom;
    }
    out.per_gpu.push_back(gr);
  }

  // Link directions over the steady iterations: average and peak utilisation (core/result.hpp),
  // the busiest (highest average share of the link, so a slow NIC ranks above a busier NVLink)
  // first.
  std::map<std::string, LinkLoad> loads;
  const double steady_its = s.iterations - s.warmup;
  for (int it = s.warmup + 1; it <= s.iterations; ++it) {
    // event name -> first start, last end (names viewed in the trace: a million events at 1,024 GPUs)
    std::unordered_map<std::string_view, std::pair<double, double>> span;
    for (const TraceEvent& e : out.trace.events) {
      if (e.iteration != it || e.stream == gradsync::Stream::kHost) continue;
      auto [pos, fresh] = span.try_emplace(std::string_view(e.name), e.start_s, e.end_s);
      if (!fresh) pos->second = {std::min(pos->second.first, e.start_s), std::max(pos->second.second, e.end_s)};
    }
    for (const LinkTraffic& t : cluster.link_traffic(it)) {
      LinkLoad& l = loads[t.name];
      l.name = t.name;
      l.bandwidth_Bps = t.bandwidth_Bps;
      l.bytes += t.bytes / steady_its;
      for (const auto& [event, bytes] : t.by_event) {
        const auto sp = span.find(event);
        if (sp == span.end() || sp->second.second <= sp->second.first || t.bandwidth_Bps <= 0) continue;
        const double share = bytes / (t.bandwidth_Bps * (sp->second.second - sp->second.first));
        if (share > l.peak_utilisation) {
          l.peak_utilisation = share;
          l.peak_event = std::string(event);
        }
      }
    }
  }
  for (auto& [name, l] : loads) {
    l.utilisation = l.bandwidth_Bps > 0 ? l.bytes / (l.bandwidth_Bps * out.steady_iteration_time_s) : 0.0;
    out.links.push_back(l);
  }
  std::sort(out.links.begin(), out.links.end(), [](const LinkLoad& a, const LinkLoad& b) {
    if (a.utilisation != b.utilisation) return a.utilisation > b.utilisation;
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
  });
  // Kept: the busiest link direction of each kind first (a kind: the name without its digits, so
  // every GPU's PCIe uplink is one kind), so that NICs and switch ports show beside the many alike
  // NVLinks and PCIe links; then the next busiest, up to kMaxLinks, in that order.
  if (out.links.size() > StrategyResult::kMaxLinks) {
    std::vector<LinkLoad> kept, rest;
    std::set<std::string> kinds;
    for (LinkLoad& l : out.links) {
      std::string kind;
      for (char c : l.name)
        if (c < '0' || c > '9') kind += c;
      (kinds.insert(kind).second && kept.size() < StrategyResult::kMaxLinks ? kept : rest).push_back(std::move(l));
    }
    for (LinkLoad& l : rest) {
      if (kept.size() == StrategyResult::kMaxLinks) break;
      kept.push_back(std::move(l));
    }
    std::stable_sort(kept.begin(), kept.end(), [](const LinkLoad& a, const LinkLoad& b) {
      if (a.utilisation != b.utilisation) return a.utilisation > b.utilisation;
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
    });
    out.links = std::move(kept);
  }
  // Every event's time is in the trace already: the mirrors' events change no sum above.
  if (keep) {
    const std::vector<int> traced = traced_ranks(out, r.resolved.nproc_per_node, *keep);
    mirror_events(out.trace, mirrors, traced);
    keep_ranks(out, traced);
  } else {
    std::vector<int> every(static_cast<std::size_t>(r.gpus));
    std::iota(every.begin(), every.end(), 0);
    mirror_events(out.trace, mirrors, every);
  }
  return out;
}

}  // namespace

StrategyResult simulate(const Scenario& scenario, Strategy strategy, bool fluid, const TraceOptions* keep,
                        bool mirror) {
  const ResolvedScenario r = resolve(scenario);
  if (strategy == Strategy::kDDP) check_ddp_run(r);
  std::shared_ptr<const Channels> channels;  // NCCL's, when mirror_plan searched them
  const std::vector<std::vector<int>> mirrors =
      mirror ? mirror_plan(r, strategy, fluid, &channels) : std::vector<std::vector<int>>{};
  if (!mirrors.empty()) {
    // Mirrored in a process of its own: a run that finds a rank unlike the one standing for it
    // (MirrorBroken) leaves this process without an engine, to run every rank.
    try {
      ChildProcess child([&] { return result_bytes(run(r, strategy, fluid, mirrors, keep, channels), true); },
                         fmt::format("the mirrored {} simulation", strategy_label(strategy)));
      return result_from_bytes(child.finish());
    } catch (const MirrorBroken&) {
    }
  }
  return run(r, strategy, fluid, {}, keep, channels);
}

std::string simulate_record(const Scenario& scenario, Strategy strategy, const TraceOptions* keep, bool full,
                            bool mirror) {
  const ResolvedScenario r = resolve(scenario);
  if (strategy == Strategy::kDDP) check_ddp_run(r);
  std::shared_ptr<const Channels> channels;
  const std::vector<std::vector<int>> mirrors =
      mirror ? mirror_plan(r, strategy, true, &channels) : std::vector<std::vector<int>>{};
  return result_bytes(run(r, strategy, true, mirrors, keep, channels), full);
}

ClosedForm closed_form_ddp(const Scenario& scenario) {
  const ResolvedScenario r = resolve(scenario);
  const StepModel model = to_step_model(r.model, r.precision, r.seq_len);
  const ComputeContext ctx = context_of(r);
  const RooflineCostModel costs(r.model, ctx, r.optimizer);
  double forward = 0, backward = 0;
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    forward += costs.forward(l, r.batch).time_s;
    backward += costs.backward(l, r.batch).time_s;
  }
  ClosedForm out;
  // GradScaler's kernels (core/grad_scaler.hpp), as DdpStep issues them; its wait costs nothing
  // here, where nothing runs ahead.
  const GradScalerOptions scaler{ctx.grad_scaler, ctx.optimizer_impl == OptimizerImpl::kFused};
  double scaler_s = 0;
  if (scaler.on) {
    const ComputeOp scalar = costs.memory("grad_scaler:scale", kGradScalerScalarBytes, 1);
    scaler_s += (r.s.grad_accum + 1) * scalar.time_s;  // scale before each backward, update after the step
  }
  if (scaler.unscales(r.s.clip_grad_norm)) {
    const GradScalerWork w =
        grad_scaler_work(static_cast<double>(model.gradient_bytes()), static_cast<int>(model.trainable().size()));
    scaler_s += costs.memory("grad_scaler:unscale", w.unscale_bytes, w.unscale_kernels).time_s;
  }
  const double step_end = costs.optimizer().time_s + scaler_s +
                          (r.s.clip_grad_norm ? costs.clip_grad_norm().time_s + costs.clip_grad_scale().time_s : 0.0);
  out.compute_s = forward + backward + step_end;
  const BucketSchedule plan = bucket_schedule(model, buckets_of(r.s));
  const BucketPlan& steady = plan.at(r.s.iterations);
  double last = 0;
  if (r.gpus > 1) {
    const Routes routes(r.topo);
    const Transports transports(r.topo, routes, r.nccl.transport, r.gpus);
    const Channels ch = build_channels(r.topo, routes, first_ranks(r.gpus), transports);
    CollectiveRequest req = r.nccl.request;
    req.strict = false;
    for (const Bucket& b : steady.buckets) {
      last = choose_collective(Collective::kAllreduce, static_cast<double>(b.bytes), ch, req).predicted_s;
      out.communication_s += last;
    }
  }
  out.buckets = static_cast<int>(steady.buckets.size());
  out.step_s = forward + std::max(backward + last, out.communication_s) + step_end;
  return out;
}

}  // namespace gradsync::sim
