// run.cpp: the runtime (launch, rank, backend) and a scenario run for real (calibrate.cpp: calibrate).
#include "real/run.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <thread>

#include "core/ddp_step.hpp"
#include "core/dp_step.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/pytorch_version.hpp"
#include "core/scenario_keys.hpp"
#include "core/units.hpp"
#include "models/memory_cost.hpp"
#include "models/scenario_basics.hpp"
#include "models/step_costs.hpp"
#include "real/fault.hpp"
#include "real/gpu_backend.hpp"
#include "real/mpi.hpp"

namespace gradsync::real {
namespace {

using json = nlohmann::json;

// cpu_spec: the CPU as the cost model's "GPU": fp32 only, its memory shared by the ranks.
GpuSpec cpu_spec(const std::string& name, double memory) {
  GpuSpec g;
  g.key = "cpu";
  g.name = name;
  g.fp32_flops = 1e11;  // nominal: the real engine runs the op's FLOPs, it does not use the time
  g.tf32_flops = 0;
  g.memory_bytes = static_cast<Bytes>(memory);
  g.memory_bandwidth_Bps = 20e9;
  return g;
}

// gpu_spec_of: the entry of topologies/hardware/gpus.yaml for the GPU the runtime reports.
GpuSpec gpu_spec_of(const GpuProps& p) {
  const bool pcie = p.name.find("PCIe") != std::string::npos;
  const GpuSpec* best = nullptr;
  for (const GpuSpec& g : gpu_specs()) {
    if (g.sm_version != p.sm_version) continue;
    const double mem = static_cast<double>(g.memory_bytes);
    if (std::abs(mem - p.memory_bytes) > 0.15 * mem) continue;
    if ((g.key.find("pcie") != std::string::npos) != pcie) continue;
    best = &g;
    break;
  }
  if (!best) {
    throw ConfigError(fmt::format(
        "GPU \"{}\" (compute capability {}.{}, {:.0f} GiB) is not in topologies/hardware/gpus.yaml; add an entry for "
        "it",
        p.name, p.sm_version / 10, p.sm_version % 10, p.memory_bytes / (1 << 30)));
  }
  return *best;
}

// What one process ran: its events, each device's peak memory, the collectives' kinds.
std::string pack(Rig& rig, int local, int first_rank) {
  json j;
  json ev = json::array();
  for (const TraceEvent& e : rig.recorder().take().events) {
    ev.push_back(
        {e.rank, static_cast<int>(e.stream), e.name, e.start_s, e.end_s, e.bytes, e.bucket, e.iteration, e.peer});
  }
  j["events"] = std::move(ev);
  json peaks = json::object();
  for (int i = 0; i < local; ++i) peaks[std::to_string(first_rank + i)] = rig.peak_bytes(i);
  j["peaks"] = std::move(peaks);
  json kinds = json::object();
  for (const auto& [name, c] : rig.kinds()) kinds[name] = std::string(collective_name(c));
  j["kinds"] = std::move(kinds);
  return json_text(j);
}

struct Unpacked {
  Trace trace;
  std::map<int, double> peaks;
  std::map<std::string, Collective> kinds;
};

void unpack(const std::string& text, Unpacked& u) {
  const json j = json::parse(text);
  for (const json& e : j.at("events")) {
    TraceEvent t;
    t.rank = e[0].get<int>();
    t.stream = static_cast<Stream>(e[1].get<int>());
    t.name = e[2].get<std::string>();
    t.start_s = e[3].get<double>();
    t.end_s = e[4].get<double>();
    t.bytes = e[5].get<Bytes>();
    t.bucket = e[6].get<int>();
    t.iteration = e[7].get<int>();
    t.peer = e[8].get<int>();
    u.trace.add(std::move(t));
  }
  for (const auto& [rank, peak] : j.at("peaks").items()) u.peaks[std::stoi(rank)] = peak.get<double>();
  for (const auto& [name, kind] : j.at("kinds").items()) {
    if (const auto c = parse_collective(kind.get<std::string>())) u.kinds.emplace(name, *c);
  }
}

// The resolved parts of a scenario for this machine.
struct Resolved {
  Model model;
  GpuSpec spec;
  ScenarioBasics basics;
};

// cpu_machine: this machine's CPU model name and the memory each local rank may use.
std::pair<std::string, double> cpu_machine(const Runtime& rt) {
  double capacity = 0;
  {
    std::ifstream in("/proc/meminfo");
    std::string key;
    double kib = 0;
    while (in >> key >> kib)
      if (key == "MemTotal:") {
        capacity = kib * 1024.0 / std::max(1, rt.local());
        break;
      }
  }
  std::string cpu_model = "CPU";
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      cpu_model = line.substr(line.find(':') + 2);
      break;
    }
  return {cpu_model, capacity};
}

// check_hosts: a real run's hosts and ranks per host are the launcher's, not the scenario's; nnodes
// and nproc_per_node, when given, must describe them, as they are recorded beside the measurement.
// Where the launch tells the hosts (one process: this host; mpirun/srun: the ranks' host names)
// they are compared with it; a file:// rendezvous is checked as far as the rank count shows (each a
// divisor of the ranks, their product the ranks).
void check_hosts(const Scenario& s, const Runtime& rt) {
  const int world = rt.world();
  const int hosts = rt.hosts();
  const std::string ranks =
      hosts > 0 ? fmt::format("this run has {} rank{} on {} host{}", world, world == 1 ? "" : "s", hosts,
                              hosts == 1 ? "" : "s")
                : fmt::format("this run has {} rank{} (the launcher's rank count)", world, world == 1 ? "" : "s");
  if (s.nnodes > 0 && (hosts > 0 ? s.nnodes != hosts : world % s.nnodes != 0)) {
    throw ConfigError(fmt::format("nnodes {}: {}; expected {} or leave nnodes unset", s.nnodes, ranks,
                                  hosts > 0 ? std::to_string(hosts) : "a divisor of the ranks"));
  }
  if (s.nproc_per_node > 0) {
    // With the hosts known, the ranks per host are world / hosts where they divide evenly.
    const bool even = hosts > 0 && world % hosts == 0;
    if (hosts > 0 ? !even || s.nproc_per_node != world / hosts : world % s.nproc_per_node != 0) {
      throw ConfigError(fmt::format(
          "nproc_per_node {}: {}; expected {}", s.nproc_per_node, ranks,
          hosts > 0 ? (even ? fmt::format("{} or leave nproc_per_node unset", world / hosts)
                            : std::string("nproc_per_node unset (the hosts run different numbers of ranks)"))
                    : std::string("a divisor of the ranks or leave nproc_per_node unset")));
    }
  }
  if (s.nnodes > 0 && s.nproc_per_node > 0 && s.nnodes * s.nproc_per_node != world) {
    throw ConfigError(fmt::format("nnodes {} x nproc_per_node {} = {}: {}; expected their product to be {}", s.nnodes,
                                  s.nproc_per_node, s.nnodes * s.nproc_per_node, ranks, world));
  }
}

Resolved resolve(const Scenario& s, const Runtime& rt) {
  Resolved r{scenario_model(s), {}, {}};
  Scenario checked = s;
  if (rt.backend() == "cpu") {
    if (!s.precision.empty() && s.precision != "fp32") {
      throw on_every_rank(ConfigError(fmt::format(
          "precision \"{}\": the CPU backend computes in fp32 (OpenBLAS sgemm); expected fp32 or a GPU", s.precision)));
    }
    checked.precision = "fp32";
    const auto [device_name, capacity] = cpu_machine(rt);
    r.spec = cpu_spec(device_name, capacity);
    for (const ScenarioKey& k : scenario_table()) {
      const auto v = key_value(s, k);
      if (k.nccl && !v.is_null() && v != false) {
        // As NCCL's environment writes it: a switch is 1.
        throw on_every_rank(ConfigError(
            fmt::format("{}={}: NCCL's knobs apply to the GPU backend's NCCL; the CPU backend's collectives are MPI's",
                        k.name, v.is_boolean() ? "1" : value_text(v))));
      }
    }
    if (s.nccl_version != "auto") {
      throw on_every_rank(ConfigError(fmt::format(
          "nccl_version {}: the NCCL release applies to the GPU backend; the CPU backend's collectives are MPI's",
          s.nccl_version)));
    }
  } else {
    r.spec = gpu_spec_of(gpu_props(0));
  }
  if (s.gpus > 0 && s.gpus != rt.world()) {
    throw on_every_rank(ConfigError(
        fmt::format("gpus {}: this run has {} rank{} ({}); expected {} or leave gpus unset", s.gpus, rt.world(),
                    rt.world() == 1 ? "" : "s",
                    rt.launch() == Launch::kLocal ? "--world-size" : "the launcher's rank count", rt.world())));
  }
  check_hosts(s, rt);
  if (checked.mixed_precision != "autocast") {
    throw ConfigError(
        fmt::format("mixed_precision {}: real mode trains the model as the scenario writes it, with "
                    "torch.autocast's casts; expected mixed_precision autocast (simulate models {})",
                    checked.mixed_precision, checked.mixed_precision));
  }
  apply_global_batch(checked, rt.world());
  r.basics = resolve_basics(checked, r.model, r.spec);
  return r;
}

void set_nccl_env(const Scenario& s) {
  // NCCL reads its knobs from the environment when the communicator is created: every knob the
  // scenario sets, under NCCL's name and in NCCL's spelling (1 for a switch).
  for (const ScenarioKey& k : scenario_table()) {
    const auto v = key_value(s, k);
    if (!k.nccl || v.is_null() || v == false) continue;
    ::setenv(std::string(k.name).c_str(), v.is_boolean() ? "1" : value_text(v).c_str(), 1);
  }
}

// traffic_of: payload bytes per GPU by event name in `iteration`: copies (out of the source,
// into the destination; host copies into the device) and collectives at nccl-tests' bus bytes,
// each way, but for the rooted ones (as the simulation counts them): a broadcast or reduce is
// rooted at rank 0 (DataParallel's GPU0, DDP's rank 0) and runs NCCL's chain through the ranks in
// order, so a broadcast's root only sends and its last rank only receives, and a reduce's first
// rank after the root only sends and the root only receives.
void add_traffic(std::map<std::string, Traffic>& t, const TraceEvent& e, int gpus,
                 const std::map<std::string, Collective>& kinds, int members) {
  auto& tr = t[e.name];
  if (tr.out.empty()) {
    tr.out.assign(static_cast<std::size_t>(gpus), 0.0);
    tr.in.assign(static_cast<std::size_t>(gpus), 0.0);
  }
  const auto b = static_cast<double>(e.bytes);
  const auto r = static_cast<std::size_t>(e.rank);
  if (e.stream == Stream::kComm) {
    const auto k = kinds.find(e.name);
    const Collective c = k != kinds.end() ? k->second : Collective::kAllreduce;
    const double bus = members > 1 ? b * bus_factor(c, members) : 0.0;
    const auto rank = static_cast<int>(r);
    const bool sends =
        !(c == Collective::kBroadcast && rank == members - 1) && !(c == Collective::kReduce && rank == 0);
    const bool receives = !(c == Collective::kBroadcast && rank == 0) && !(c == Collective::kReduce && rank == 1);
    if (sends) tr.out[r] += bus;
    if (receives) tr.in[r] += bus;
  } else if (e.peer >= 0 && e.peer != e.rank) {
    tr.out[r] += b;
    tr.in[static_cast<std::size_t>(e.peer)] += b;
  } else if (e.peer < 0) {
    tr.in[r] += b;
  }
}

}  // namespace

std::unique_ptr<Rig> make_rig(const RigOptions& o) { return o.backend == "gpu" ? make_gpu_rig(o) : make_cpu_rig(o); }

StrategyResult bench(const Scenario& s, Strategy strategy, Runtime& rt, const std::string& command) {
  if (strategy == Strategy::kDP && rt.processes() > 1) {
    throw on_every_rank(UsageError(fmt::format(
        "DataParallel runs in one process driving every GPU; {} started {} processes. Run it as: gradsync {} "
        "--strategy dp --launch local --world-size {}",
        rt.launcher(), rt.processes(), command, rt.world())));
  }
  Resolved r = resolve(s, rt);
  const ScenarioBasics& b = r.basics;
  if (rt.backend() == "gpu") set_nccl_env(s);

  const StepModel model = to_step_model(r.model, b.precision, b.seq_len);
  ComputeContext ctx;
  ctx.gpu = &r.spec;
  ctx.precision = b.precision;
  ctx.batch = b.batch;
  ctx.seq_len = b.seq_len;
  apply_framework(ctx, s);
  // DataParallel over several replicas: AccumulateGrad on GPU0 after the reduce (as simulated).
  const bool dp_accumulates = strategy == Strategy::kDP && DpStep::replicas(b.batch * rt.world(), rt.world()) > 1;
  if (dp_accumulates) ctx.accumulate_in_backward = false;
  const RooflineCostModel costs(r.model, ctx, b.optimizer);

  StrategyResult out;
  out.strategy = strategy;
  out.gpus = rt.world();
  out.tokens_per_sample = r.model.default_seq_len ? b.seq_len : 0;
  out.precision = std::string(precision_name(b.precision));
  const std::int64_t global = b.batch * rt.world();
  out.global_batch = global * s.grad_accum;

  RigOptions ro = rt.rig_options(model.parameter_bytes(), model.gradient_bytes());
  ro.precision = out.precision;
  auto rig = make_rig(ro);
  out.gpu = rig->device_name();
  rt.barrier();
  rig->recorder().set_epoch(now_s());

  if (strategy == Strategy::kDDP) {
    DdpStepOptions o;
    o.ddp.buckets.bucket_cap_mb = s.bucket_cap_mb;
    o.ddp.buckets.first_bucket_mb = s.first_bucket_mb;
    o.ddp.buckets.find_unused_parameters = s.find_unused_parameters;
    o.ddp.buckets.static_graph = s.static_graph;
    // The release's bucket rules (first iteration, first rebuilt bucket, division), as simulate.
    o.ddp.buckets.pytorch = parse_pytorch_version(s.pytorch_version);
    o.ddp.gradient_as_bucket_view = s.gradient_as_bucket_view;
    o.ddp.broadcast_buffers = s.broadcast_buffers;
    o.input = input_location(s);
    o.ddp.allreduce_after_backward = s.allreduce_after_backward;
    o.ddp.hook = b.hook;
    o.grad_accum = s.grad_accum;
    o.clip_grad_norm = s.clip_grad_norm;
    o.clip_syncs = clip_grad_norm_syncs(parse_pytorch_version(s.pytorch_version));
    o.scaler = {ctx.grad_scaler, ctx.optimizer_impl == OptimizerImpl::kFused};
    out.replicas = rt.world();
    std::vector<std::unique_ptr<RealHost>> hosts;
    for (int i = 0; i < rt.local(); ++i) {
      hosts.push_back(std::make_unique<RealHost>(rig->recorder(), std::vector<int>{rt.rank() + i}));
      rig->attach(i, &hosts.back()->iteration());
    }
    const Fault fault = fault_from_env();
    auto rank_main = [&](int i) {
      DdpStep step(model, costs, o, b.batch, *hosts[static_cast<std::size_t>(i)], rig->device(i), rig->rank_group(i));
      step.construct();
      for (int it = 1; it <= s.iterations; ++it) {
        inject(fault, rt.rank() + i, it);
        step.run_iteration(it);
      }
      rig->device(i).synchronize();
    };
    if (rt.local() == 1) {
      rank_main(0);
    } else {
      RealHost threads(rig->recorder(), {});
      threads.parallel(rt.local(), rank_main);
    }
  } else {
    const int m = DpStep::replicas(global, rt.world());
    out.replicas = m;
    std::vector<int> ids(static_cast<std::size_t>(rt.world()));
    std::iota(ids.begin(), ids.end(), 0);
    RealHost host(rig->recorder(), ids);
    std::vector<Device*> devices;
    for (int g = 0; g < rt.world(); ++g) {
      devices.push_back(&rig->device(g));
      rig->attach(g, &host.iteration());
    }
    DpStepOptions o;
    o.location = input_location(s);
    o.grad_accum = s.grad_accum;
    o.clip_grad_norm = s.clip_grad_norm;
    o.clip_syncs = clip_grad_norm_syncs(parse_pytorch_version(s.pytorch_version));
    o.scaler = {ctx.grad_scaler, ctx.optimizer_impl == OptimizerImpl::kFused};
    o.accumulate_grads = dp_accumulates && ctx.grads_defined;
    DpStep step(model, costs, o, global, host, devices, rig->local_group(m));
    for (int it = 1; it <= s.iterations; ++it) step.run_iteration(it);
    for (Device* d : devices) d->synchronize();
  }

  const std::vector<std::string> parts = rt.gather(pack(*rig, rt.local(), rt.rank()));
  const double capacity = rig->capacity_bytes();
  rt.barrier();
  rig.reset();
  if (!rt.root()) return out;

  Unpacked u;
  for (const std::string& p : parts) unpack(p, u);
  out.trace = std::move(u.trace);
  std::stable_sort(out.trace.events.begin(), out.trace.events.end(), [](const TraceEvent& a, const TraceEvent& c) {
    return a.rank != c.rank ? a.rank < c.rank : a.start_s < c.start_s;
  });
  summarize(out, s.warmup);

  const int members = strategy == Strategy::kDP ? out.replicas : out.gpus;
  std::map<int, std::map<std::string, Traffic>> traffic;
  for (const TraceEvent& e : out.trace.events) {
    if (e.stream == Stream::kHost || e.iteration < 1) continue;
    // Compute-stream events without a peer are kernels, except the copies from host memory
    // (x.to(device) on the current stream), which the simulation counts into the device too.
    if (e.stream == Stream::kCompute && e.peer < 0 && !is_host_copy_event(e.name)) continue;
    // Kernels a comm hook runs on NCCL's stream (the fp16 hook's decompress, PowerSGD's products)
    // move no bytes between devices: only the calls issued as collectives do.
    if (e.stream == Stream::kComm && !u.kinds.count(e.name)) continue;
    if (e.stream == Stream::kCompute || e.stream == Stream::kComm || e.stream == Stream::kCopy)
      add_traffic(traffic[e.iteration], e, out.gpus, u.kinds, members);
  }
  out.traffic = traffic[s.iterations];
  for (int g = 0; g < out.gpus; ++g) {
    GpuResult gr;
    gr.rank = g;
    for (int it = s.warmup + 1; it <= s.iterations; ++it) {
      for (const auto& [name, t] : traffic[it]) {
        gr.bytes_in += t.in[static_cast<std::size_t>(g)];
        gr.bytes_out += t.out[static_cast<std::size_t>(g)];
      }
    }
    const double steady = s.iterations - s.warmup;
    gr.bytes_in /= steady;
    gr.bytes_out /= steady;
    gr.peak_memory_bytes = u.peaks.count(g) ? u.peaks[g] : 0.0;
    gr.capacity_bytes = capacity;
    gr.oom = gr.peak_memory_bytes > gr.capacity_bytes;
    out.per_gpu.push_back(gr);
  }
  for (const TraceEvent& e : out.trace.events) {
    if (e.rank != 0 || e.stream != Stream::kComm) continue;
    CollectiveCall c;
    c.name = e.name;
    const auto k = u.kinds.find(e.name);
    c.collective = k != u.kinds.end() ? k->second : Collective::kAllreduce;
    c.bytes = e.bytes;
    c.members = members;
    c.algorithm = rt.backend() == "gpu" ? "nccl" : (rt.launch() == Launch::kMpi ? "mpi" : "threads");
    c.protocol = "measured";
    const double d = e.duration_s();
    c.bus_bw_Bps = d > 0 ? static_cast<double>(e.bytes) * bus_factor(c.collective, members) / d : 0.0;
    c.start_s = e.start_s;
    c.end_s = e.end_s;
    c.iteration = e.iteration;
    out.collectives.push_back(std::move(c));
  }
  return out;
}

Scenario resolve_scenario(const Scenario& s, const Runtime& rt) {
  Resolved r = resolve(s, rt);
  return resolved_scenario(s, scenario_facts(r.basics, r.model, rt.world()));
}

}  // namespace gradsync::real
