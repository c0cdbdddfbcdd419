// simulate.cpp: scenario -> StepModel, costs and cluster -> DpStep / DdpStep on SimGrid -> metrics.
#include "sim/simulate.hpp"

#include <simgrid/s4u.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>

#include "core/comm_hook.hpp"
#include "core/ddp_step.hpp"
#include "core/dp_step.hpp"
#include "core/error.hpp"
#include "core/yaml_reader.hpp"
#include "models/step_costs.hpp"
#include "sim/engine.hpp"
#include "topologies/routes.hpp"

namespace gradsync::sim {

const std::vector<std::string>& scenario_keys() {
  static const std::vector<std::string> keys{"model",
                                             "topology",
                                             "gpus",
                                             "batch_per_gpu",
                                             "seq_len",
                                             "precision",
                                             "optimizer",
                                             "bucket_cap_mb",
                                             "grad_accum",
                                             "comm_hook",
                                             "find_unused_parameters",
                                             "static_graph",
                                             "gradient_as_bucket_view",
                                             "iterations",
                                             "warmup",
                                             "algo",
                                             "proto"};
  return keys;
}

Scenario read_scenario_file(const std::string& path, Scenario s) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot read the scenario file (missing or unreadable)", path));
  std::stringstream text;
  text << in.rdbuf();
  const YamlReader r(path);
  const YAML::Node root = r.load(text.str());
  if (!root.IsMap()) r.fail(root, "scenario", "expected a mapping of scenario keys (model: gpt2, gpus: 8, ...)");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(scenario_keys().begin(), scenario_keys().end(), key) == scenario_keys().end()) {
      std::string known;
      for (const auto& k : scenario_keys()) known += (known.empty() ? "" : ", ") + k;
      r.fail(kv.first, "scenario", fmt::format("unknown key \"{}\"; expected one of {}", key, known));
    }
  }
  const std::string where = "scenario";
  auto has = [&](const char* k) { return root[k] && !root[k].IsNull(); };
  if (has("model")) s.model = r.string(root["model"], where, "model");
  if (has("topology")) s.topology = r.string(root["topology"], where, "topology");
  if (has("gpus")) s.gpus = static_cast<int>(r.positive_int(root["gpus"], where, "gpus"));
  if (has("batch_per_gpu")) s.batch_per_gpu = r.positive_int(root["batch_per_gpu"], where, "batch_per_gpu");
  if (has("seq_len")) s.seq_len = r.positive_int(root["seq_len"], where, "seq_len");
  if (has("precision")) s.precision = r.string(root["precision"], where, "precision");
  if (has("optimizer")) s.optimizer = r.string(root["optimizer"], where, "optimizer");
  if (has("bucket_cap_mb")) s.bucket_cap_mb = r.positive_number(root["bucket_cap_mb"], where, "bucket_cap_mb");
  if (has("grad_accum")) s.grad_accum = static_cast<int>(r.positive_int(root["grad_accum"], where, "grad_accum"));
  if (has("comm_hook")) s.comm_hook = r.string(root["comm_hook"], where, "comm_hook");
  if (has("find_unused_parameters"))
    s.find_unused_parameters = r.boolean(root["find_unused_parameters"], where, "find_unused_parameters");
  if (has("static_graph")) s.static_graph = r.boolean(root["static_graph"], where, "static_graph");
  if (has("gradient_as_bucket_view"))
    s.gradient_as_bucket_view = r.boolean(root["gradient_as_bucket_view"], where, "gradient_as_bucket_view");
  if (has("iterations")) s.iterations = static_cast<int>(r.positive_int(root["iterations"], where, "iterations"));
  if (has("warmup")) s.warmup = static_cast<int>(r.non_negative_int(root["warmup"], where, "warmup"));
  if (has("algo")) s.algo = r.string(root["algo"], where, "algo");
  if (has("proto")) s.proto = r.string(root["proto"], where, "proto");
  return s;
}

// Everything a scenario names, looked up once.
struct ResolvedScenario {
  ResolvedScenario(Scenario sc, Model m, Topology t) : s(std::move(sc)), model(std::move(m)), topo(std::move(t)) {}
  Scenario s;
  Model model;
  Topology topo;
  int gpus = 0;
  const GpuSpec* gpu = nullptr;
  Precision precision = Precision::kBF16;
  Optimizer optimizer = Optimizer::kAdamW;
  std::int64_t batch = 0;
  std::int64_t seq_len = 1;
  CommHook hook;
  CollectiveRequest nccl;
  std::set<int> hosts;  // hosts of the GPUs used
};

namespace {

// field runs parse and prefixes its ConfigError with the scenario key.
template <class F>
auto field(const char* key, const std::string& value, F parse) {
  try {
    return parse();
  } catch (const ConfigError& e) {
    // Most parsers already quote the bad value; name the key only where they do not.
    const std::string what = e.what();
    if (what.find("\"" + value + "\"") != std::string::npos) throw;
    throw ConfigError(fmt::format("{} \"{}\": {}", key, value, what));
  }
}

ResolvedScenario resolve(const Scenario& s) {
  ResolvedScenario r(s, field("model", s.model, [&] { return load_model(s.model); }),
                     field("topology", s.topology, [&] { return load_topology(s.topology); }));
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
  for (int g = 0; g < r.gpus; ++g) r.hosts.insert(r.topo.host_of(g));
  r.precision = field("precision", s.precision, [&] {
    const Precision p = !s.precision.empty() ? parse_precision(s.precision)
                        : r.gpu->bf16_flops  ? Precision::kBF16
                                             : Precision::kFP16;
    r.gpu->peak_flops(p);
    return p;
  });
  r.optimizer = field("optimizer", s.optimizer, [&] { return parse_optimizer(s.optimizer); });
  if (s.batch_per_gpu < 0)
    throw ConfigError(fmt::format("batch_per_gpu {}: expected an integer >= 1", s.batch_per_gpu));
  r.batch = s.batch_per_gpu > 0 ? s.batch_per_gpu : r.model.default_batch;
  if (s.seq_len < 0) throw ConfigError(fmt::format("seq_len {}: expected an integer >= 1", s.seq_len));
  if (s.seq_len > 0)
    field("seq_len", std::to_string(s.seq_len), [&] {
      r.model.check_seq_len(s.seq_len);
      return 0;
    });
  r.seq_len = r.model.seq_len(s.seq_len > 0 ? std::optional<std::int64_t>(s.seq_len) : std::nullopt);
  r.hook = field("comm_hook", s.comm_hook, [&] { return parse_comm_hook(s.comm_hook); });
  r.nccl.algorithm = field("algo", s.algo, [&] { return parse_algorithm(s.algo); });
  r.nccl.protocol = field("proto", s.proto, [&] { return parse_protocol(s.proto); });
  if (r.nccl.algorithm == Algorithm::kTree && r.hosts.size() < 2) {
    throw ConfigError(
        fmt::format("algo tree: NCCL's tree runs allreduce across nodes; the {} GPU{} used are on one host", r.gpus,
                    r.gpus == 1 ? "" : "s"));
  }

  if (s.bucket_cap_mb && !(*s.bucket_cap_mb > 0)) {
    throw ConfigError(fmt::format("bucket_cap_mb {}: expected a size in MiB > 0", *s.bucket_cap_mb));
  }
  if (s.grad_accum < 1) throw ConfigError(fmt::format("grad_accum {}: expected an integer >= 1", s.grad_accum));
  if (s.iterations < 1) throw ConfigError(fmt::format("iterations {}: expected an integer >= 1", s.iterations));
  if (s.warmup < 0 || s.warmup >= s.iterations) {
    throw ConfigError(
        fmt::format("warmup {}: expected 0..{} (fewer than iterations {}, so that a steady iteration is left)",
                    s.warmup, s.iterations - 1, s.iterations));
  }
  return r;
}

double mean(const std::vector<IterationMetrics>& its, std::size_t from, double IterationMetrics::*f) {
  double sum = 0;
  for (std::size_t i = from; i < its.size(); ++i) sum += its[i].*f;
  return its.size() > from ? sum / static_cast<double>(its.size() - from) : 0.0;
}

}  // namespace

void check_scenario(const Scenario& s) { (void)resolve(s); }

StrategyResult simulate(const Scenario& scenario, Strategy strategy) {
  const ResolvedScenario r = resolve(scenario);
  const Scenario& s = r.s;
  StrategyResult out;
  out.strategy = strategy;
  out.gpus = r.gpus;
  out.tokens_per_sample = r.model.default_seq_len ? r.seq_len : 1;
  out.precision = std::string(precision_name(r.precision));
  out.gpu = r.gpu->key;
  const std::int64_t global = r.batch * r.gpus;
  out.global_batch = global * s.grad_accum;
  if (strategy == Strategy::kDP && r.hosts.size() > 1) {
    int first_host = 0;
    while (first_host < r.topo.gpu_count() && r.topo.host_of(first_host) == r.topo.host_of(0)) ++first_host;
    out.skipped = fmt::format(
        "DataParallel runs in one process on one machine; GPUs 0..{} of {} span {} hosts (use --gpus {} or fewer)",
        r.gpus - 1, s.topology, r.hosts.size(), first_host);
    return out;
  }

  const StepModel model = to_step_model(r.model, r.precision, r.seq_len);
  ComputeContext ctx;
  ctx.gpu = r.gpu;
  ctx.precision = r.precision;
  ctx.batch = r.batch;
  ctx.seq_len = r.seq_len;
  const RooflineCostModel costs(r.model, ctx, r.optimizer);

  auto engine = create_engine();
  const Routes routes(r.topo);
  SimOptions so;
  so.nccl = r.nccl;
  so.nccl.strict = false;
  SimCluster cluster(r.topo, routes, r.gpus, so);

  if (strategy == Strategy::kDDP) {
    DdpStepOptions o;
    o.ddp.buckets.bucket_cap_mb = s.bucket_cap_mb;
    o.ddp.buckets.find_unused_parameters = s.find_unused_parameters;
    o.ddp.buckets.static_graph = s.static_graph;
    o.ddp.gradient_as_bucket_view = s.gradient_as_bucket_view;
    o.ddp.hook = r.hook;
    o.grad_accum = s.grad_accum;
    out.replicas = r.gpus;
    for (int rank = 0; rank < r.gpus; ++rank) {
      Host* host = &cluster.host({rank});
      Device* dev = &cluster.device(rank);
      ProcessGroup* pg = &cluster.world_group(rank);
      cluster.spawn(rank, [&, o, host, dev, pg] {
        DdpStep step(model, costs, o, r.batch, *host, *dev, *pg);
        step.construct();
        for (int it = 1; it <= s.iterations; ++it) step.run_iteration(it);
      });
    }
  } else {
    const int m = DpStep::replicas(global, r.gpus);
    out.replicas = m;
    std::vector<int> ids(static_cast<std::size_t>(r.gpus));
    std::iota(ids.begin(), ids.end(), 0);
    Host* host = &cluster.host(ids);
    std::vector<Device*> devices;
    for (int g = 0; g < r.gpus; ++g) devices.push_back(&cluster.device(g));
    ProcessGroup* group = &cluster.local_group(m);
    DpStepOptions o;
    o.grad_accum = s.grad_accum;
    cluster.spawn(0, [&, o, host, devices, group] {
      DpStep step(model, costs, o, global, *host, devices, *group);
      for (int it = 1; it <= s.iterations; ++it) {
        step.run_iteration(it);
      }
      for (Device* d : devices) d->synchronize();
    });
  }
  cluster.run();

  out.trace = cluster.trace();
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
    out.collectives.push_back(std::move(call));
  }
  out.traffic = cluster.traffic(s.iterations);
  if (strategy == Strategy::kDP) {
    Trace process = out.trace;
    for (TraceEvent& e : process.events) e.rank = 0;  // every GPU's iteration events are equal
    out.iterations = iteration_metrics(process, 0);
  } else {
    out.iterations = iteration_metrics(out.trace, 0);
  }
  if (out.iterations.empty()) throw RuntimeError("sim: the simulation recorded no iteration");
  const auto from = static_cast<std::size_t>(s.warmup);
  out.warmup = s.warmup;
  out.iteration_1_time_s = out.iterations.front().time_s;
  out.steady_iteration_time_s = mean(out.iterations, from, &IterationMetrics::time_s);
  out.compute_s = mean(out.iterations, from, &IterationMetrics::compute_s);
  out.communication_s = mean(out.iterations, from, &IterationMetrics::communication_s);
  out.exposed_communication_s = mean(out.iterations, from, &IterationMetrics::exposed_communication_s);
  out.overlap =
      out.communication_s > 0 ? mean(out.iterations, from, &IterationMetrics::overlap_s) / out.communication_s : 0.0;
  out.samples_per_s = static_cast<double>(out.global_batch) / out.steady_iteration_time_s;
  out.tokens_per_s = out.samples_per_s * static_cast<double>(out.tokens_per_sample);

  const std::vector<std::int64_t> chunks = DpStep::chunk_sizes(global, r.gpus);
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
    ComputeContext mctx = ctx;
    if (strategy == Strategy::kDP) {
      mo.dp_gpu0 = g == 0;
      mo.dp_global_batch = global;
      mctx.batch = static_cast<std::size_t>(g) < chunks.size() ? chunks[static_cast<std::size_t>(g)] : 0;
    }
    if (strategy == Strategy::kDP && g >= out.replicas) {
      gr.peak_memory_bytes = static_cast<double>(kCudaContextBytes);
      gr.capacity_bytes = static_cast<double>(r.gpu->memory_bytes);
    } else {
      const MemoryBreakdown mem = memory_cost(r.model, mctx, mo);
      gr.peak_memory_bytes = mem.total;
      gr.capacity_bytes = mem.capacity;
      gr.oom = mem.oom;
    }
    out.per_gpu.push_back(gr);
  }

  // Link directions by steady wire bytes per iteration, the busiest first.
  std::map<std::string, LinkLoad> loads;
  const double steady_its = s.iterations - s.warmup;
  for (int it = s.warmup + 1; it <= s.iterations; ++it) {
    for (const LinkTraffic& t : cluster.link_traffic(it)) {
      LinkLoad& l = loads[t.name];
      l.name = t.name;
      l.bandwidth_Bps = t.bandwidth_Bps;
      l.bytes += t.bytes / steady_its;
    }
  }
  for (auto& [name, l] : loads) {
    l.utilisation = l.bandwidth_Bps > 0 ? l.bytes / (l.bandwidth_Bps * out.steady_iteration_time_s) : 0.0;
    out.links.push_back(l);
  }
  std::sort(out.links.begin(), out.links.end(), [](const LinkLoad& a, const LinkLoad& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
  });
  if (out.links.size() > StrategyResult::kMaxLinks) out.links.resize(StrategyResult::kMaxLinks);
  return out;
}

double bus_factor(Collective c, int n) {
  switch (c) {
    case Collective::kAllreduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllgather:
    case Collective::kReduceScatter:
      return static_cast<double>(n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
      return 1.0;
  }
  return 1.0;
}

std::vector<CollectivePoint> simulate_collectives(const CollectiveSweep& sw) {
  const Topology topo = field("topology", sw.topology, [&] { return load_topology(sw.topology); });
  const int n = sw.gpus > 0 ? sw.gpus : topo.gpu_count();
  if (n > topo.gpu_count()) {
    throw ConfigError(fmt::format("gpus {}: topology {} has {} GPUs", sw.gpus, sw.topology, topo.gpu_count()));
  }
  if (!(sw.min_bytes > 0) || sw.max_bytes < sw.min_bytes) {
    throw ConfigError(fmt::format("sizes {}..{}: expected 0 < min-bytes <= max-bytes", sw.min_bytes, sw.max_bytes));
  }
  if (!(sw.step_factor > 1)) throw ConfigError(fmt::format("step-factor {}: expected a number > 1", sw.step_factor));
  SimOptions so;
  so.nccl.algorithm = field("algo", sw.algo, [&] { return parse_algorithm(sw.algo); });
  so.nccl.protocol = field("proto", sw.proto, [&] { return parse_protocol(sw.proto); });

  // nccl-tests' sizes: min, min*f, ... up to max, each a whole number of 4-byte floats (and of
  // n of them for allgather and reduce-scatter, whose size is the whole buffer).
  std::vector<double> sizes;
  const double align = (sw.op == Collective::kAllgather || sw.op == Collective::kReduceScatter) ? 4.0 * n : 4.0;
  for (double b = sw.min_bytes; b <= sw.max_bytes * (1 + 1e-12); b *= sw.step_factor) {
    const double aligned = std::max(align, std::floor(b / align) * align);
    if (sizes.empty() || aligned != sizes.back()) sizes.push_back(aligned);
  }

  auto engine = create_engine();
  const Routes routes(topo);
  SimCluster cluster(topo, routes, n, so);
  // Fail early (before the engine runs) when the forced algorithm cannot serve this operation.
  (void)choose_collective(sw.op, sizes.front(), cluster.channels(n), 0, so.nccl);
  auto barrier = simgrid::s4u::Barrier::create(static_cast<unsigned>(n));
  for (int rank = 0; rank < n; ++rank) {
    ProcessGroup* pg = &cluster.world_group(rank);
    cluster.host({rank});
    cluster.spawn(rank, [&, pg] {
      for (double size : sizes) {
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
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    CollectivePoint p;
    p.bytes = sizes[i];
    p.time_s = recs.at(i).end_s - recs.at(i).start_s;
    p.choice = recs.at(i).choice;
    p.algbw_GBps = p.time_s > 0 ? p.bytes / p.time_s / 1e9 : 0.0;
    p.busbw_GBps = p.algbw_GBps * bus_factor(sw.op, n);
    points.push_back(p);
  }
  return points;
}

}  // namespace gradsync::sim
