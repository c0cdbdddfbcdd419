// cluster_devices.cpp: a simulated device's streams: kernels placed on their stream's timeline,
// copies between GPUs (peer to peer, or staged through host memory) and from the host as flows.
#include "sim/cluster_streams.hpp"

#include "core/trace.hpp"
#include "models/contention.hpp"

namespace gradsync::sim {

SimCluster::Impl::Dev::Dev(Impl* i, int r) : impl(i), rank(r) {
  for (std::size_t s = 0; s < streams.size(); ++s) {
    streams[s].impl = i;
    // The comm stream runs NCCL: its actor sits on the GPU's NCCL endpoint, so that the flows it
    // (and the helpers it starts) send take NCCL's transports.
    streams[s].where = static_cast<gradsync::Stream>(s) == gradsync::Stream::kComm
                           ? i->platform.nccl[static_cast<std::size_t>(r)]
                           : i->platform.gpus[static_cast<std::size_t>(r)];
    streams[s].name = fmt::format("gpu{}:{}", r, stream_name(static_cast<gradsync::Stream>(s)));
  }
  stream(gradsync::Stream::kCompute).placed = &placed;
  const GpuSpec* spec = i->topo.vertex(i->topo.gpu(r)).gpu;
  dram_Bps = spec ? spec->memory_bandwidth_Bps : 0.0;
}

void SimCluster::Impl::Dev::contend(double start, double end, double dram_bytes, const std::string& name,
                                    int iteration) {
  // NCCL's kernels on this device run in order: nothing ending before this one started can be
  // overlapped by a later one.
  while (!placed.empty() && placed.front().end <= start) placed.pop_front();
  const double extra = contention_extra(start, end, dram_bytes);
  if (!(extra > 0)) return;
  StreamActor& c = stream(gradsync::Stream::kCompute);
  TraceEvent e = event(gradsync::Stream::kCompute, slowdown_event(name), 0, -1, -1);
  e.iteration = iteration;
  e.start_s = c.free_at;
  e.end_s = c.free_at + extra;
  impl->trace.add(e);
  c.free_at += extra;
}

double SimCluster::Impl::Dev::contention_extra(double start, double end, double dram_bytes) const {
  if (!(end > start)) return 0;
  const double share = dram_Bps > 0 ? dram_bytes / ((end - start) * dram_Bps) : 0.0;
  double extra = 0;
  for (const StreamActor::Placed& k : placed) {
    if (k.start >= end) break;
    const double overlap = std::min(end, k.end) - std::max(start, k.start);
    if (!(overlap > 0) || !(k.time > 0)) continue;
    // The part of the kernel that ran beside NCCL takes contended / alone times as long.
    extra += overlap * (contended_time(k.time, k.load, share) / k.time - 1.0);
  }
  return extra;
}

TraceEvent SimCluster::Impl::Dev::event(gradsync::Stream s, const std::string& name, Bytes bytes, int bucket,
                                        int peer) const {
  TraceEvent e;
  e.rank = rank;
  e.stream = s;
  e.name = name;
  e.bytes = bytes;
  e.bucket = bucket;
  e.peer = peer;
  e.iteration = owner ? owner->iteration : 0;
  return e;
}

namespace {

// Queued: how an op runs behind CUDA's asynchronous launches (core/launch_queue.hpp): its GPU
// time once the GPU reaches it, not before its first kernel is issued nor ending before its last
// kernel can. An op whose time is the longer of its GPU and host times (the cost models' ops)
// runs so; any other (a measured time, no GPU time given) lasts its time from its issue.
struct Queued {
  double gpu = 0;
  LaunchWindow window{};
};

// gpu_or_host_bound: whether `op`'s time is the longer of its GPU and host times (as the cost
// models make it), not a measured time or one given without its GPU time.
bool gpu_or_host_bound(const ComputeOp& op) {
  return op.load.gpu_s > 0 && op.host_s > 0 &&
         std::abs(op.time_s - std::max(op.load.gpu_s, op.host_s)) <= 1e-9 * op.time_s;
}

// on_slowest: `op` on a GPU whose SM-bound kernels take `factor` as long (SimOptions::slowest_gpu):
// its GPU time and load grow by (factor - 1) x load.sm_s; a time that was the longer of GPU and
// host time stays so, any other grows by as much.
ComputeOp on_slowest(ComputeOp op, double factor) {
  if (factor == 1.0 || op.load.sm_s <= 0) return op;
  const double extra = op.load.sm_s * (factor - 1.0);
  const bool longer_of_two = gpu_or_host_bound(op);
  op.load.gpu_s += extra;
  op.load.sm_s *= factor;
  op.load.sm_held_s *= factor;
  op.time_s = longer_of_two ? std::max(op.load.gpu_s, op.host_s) : op.time_s + extra;
  return op;
}

Queued queued(const ComputeOp& op) {
  if (gpu_or_host_bound(op)) return {op.load.gpu_s, launch_window(op.host_s, op.load.gpu_s, op.kernels)};
  return {op.time_s, {}};
}

}  // namespace

WorkPtr SimCluster::Impl::Dev::push_compute(double gpu, LaunchWindow window, const ComputeOp& op, gradsync::Stream s) {
  StreamActor::Task t;
  t.duration = gpu;
  t.window = window;
  t.event = event(s, op.name, static_cast<Bytes>(op.bytes), op.bucket, -1);
  t.load = op.load;
  WorkPtr w = stream(s).push(std::move(t));
  impl->clocks.defer(op.host_s);
  return w;
}

WorkPtr SimCluster::Impl::Dev::compute(const ComputeOp& given, gradsync::Stream s) {
  const ComputeOp op = on_slowest(given, impl->opts.slowest_gpu);
  const Queued q = queued(op);
  return push_compute(q.gpu, q.window, op, s);
}

WorkPtr SimCluster::Impl::Dev::compute_run(const std::vector<ComputeOp>& ops, const std::string& name,
                                           gradsync::Stream s) {
  if (ops.empty()) return Device::compute_run(ops, name, s);
  ComputeOp sum;
  sum.name = name;
  sum.kernels = 0;
  double demand = 0;
  // The run ends as the ops issued one by one would: max(start + their GPU time, issue + tail),
  // the tail found by running the launch queue from an idle GPU (its end is max-plus linear in
  // the first op's start).
  double host = 0, tail = -std::numeric_limits<double>::infinity(), gpu = 0;
  LaunchWindow first{};
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const ComputeOp op = on_slowest(ops[i], impl->opts.slowest_gpu);
    const Queued q = queued(op);
    if (i == 0) first = q.window;
    const double start = std::max(tail, host + q.window.first_issue);
    tail = std::max(start + q.gpu, host + q.window.last_end);
    host += op.host_s;
    gpu += q.gpu;
    sum.time_s += op.time_s;
    sum.host_s += op.host_s;
    sum.bytes += op.bytes;
    sum.kernels += op.kernels;
    sum.load.gpu_s += op.load.gpu_s;
    sum.load.sm_s += op.load.sm_s;
    sum.load.sm_held_s += op.load.sm_held_s;
    sum.load.hbm_s += op.load.hbm_s;
    demand += op.load.hbm_demand * op.load.hbm_s;
  }
  sum.load.hbm_demand = sum.load.hbm_s > 0 ? demand / sum.load.hbm_s : 0.0;
  return push_compute(gpu, {first.first_issue, tail}, sum, s);
}

WorkPtr SimCluster::Impl::Dev::copy_to(Device& dst, const CopyOp& op, gradsync::Stream s) {
  const int to = dst.index();
  StreamActor::Task t;
  const auto bytes = static_cast<double>(op.bytes);
  t.event = event(s, op.name, op.bytes, -1, to);
  const int it = t.event.iteration;
  const Calibration* cal = impl->opts.calibration;
  if (to == rank) {
    t.duration = 0;  // nothing moves: a kernel of no time
  } else if (cal && !cal->peer_copy.points.empty()) {
    t.body = [this, it, name = op.name, to, bytes, cal] {
      sleep_for(cal->peer_copy.time(bytes));
      impl->tally(it, name, rank, to, bytes);
    };
  } else if (!impl->mirrors_of(rank).empty()) {
    throw MirrorBroken(
        fmt::format("sim: rank {} copies \"{}\" to a peer; its mirrors would copy elsewhere", rank, op.name));
  } else if (impl->routes.gpu_route(rank, to).p2p) {
    t.body = [this, it, name = op.name, to, bytes] { impl->send(it, name, rank, to, bytes, bytes)->wait(); };
  } else {
    // No peer access: device to host memory, then host memory to the peer.
    t.body = [this, it, name = op.name, to, bytes] {
      const auto wire = static_cast<std::uint64_t>(std::llround(bytes));
      sg4::Host* src = impl->platform.gpus[static_cast<std::size_t>(rank)];
      sg4::Host* staging = impl->platform.host_memory[static_cast<std::size_t>(rank)];
      sg4::Host* peer_gpu = impl->platform.gpus[static_cast<std::size_t>(to)];
      impl->account(it, name, src, staging, static_cast<double>(wire));
      sg4::Comm::sendto(src, staging, wire);
      impl->account(it, name, staging, peer_gpu, static_cast<double>(wire));
      sg4::Comm::sendto(staging, peer_gpu, wire);
      impl->tally(it, name, rank, to, bytes);
    };
  }
  return stream(s).push(std::move(t));
}

WorkPtr SimCluster::Impl::Dev::copy_from_host(const CopyOp& op, gradsync::Stream s) {
  StreamActor::Task t;
  const auto bytes = static_cast<double>(op.bytes);
  t.event = event(s, op.name, op.bytes, -1, -1);
  const Calibration* cal = impl->opts.calibration;
  if (cal && !cal->host_copy.points.empty()) {
    t.body = [this, it = t.event.iteration, name = op.name, bytes, cal] {
      sleep_for(cal->host_copy.time(bytes));
      impl->tally(it, name, -1, rank, bytes);
    };
  } else {
    t.body = [this, it = t.event.iteration, name = op.name, bytes] {
      sg4::CommPtr mine = impl->send(it, name, -1, rank, bytes, bytes);
      std::vector<sg4::CommPtr> mirrored;
      for (int m : impl->mirrors_of(rank)) mirrored.push_back(impl->send(it, name, -1, m, bytes, bytes));
      mine->wait();
      for (const sg4::CommPtr& c : mirrored) {
        c->wait();
        if (c->get_finish_time() != mine->get_finish_time())
          throw MirrorBroken(fmt::format("sim: rank {}'s copy \"{}\" ends at {} s, a rank it stands for at {} s", rank,
                                         name, mine->get_finish_time(), c->get_finish_time()));
      }
    };
  }
  return stream(s).push(std::move(t));
}

void SimCluster::Impl::Dev::synchronize() {
  impl->clocks.flush();
  for (auto& s : streams)
    if (s.last) s.last->wait();
}

void SimCluster::Impl::Proc::end_iteration(int it) {
  impl->clocks.flush();
  const double now = sg4::Engine::get_clock();
  for (int d : devices) {
    TraceEvent e;
    e.rank = d;
    e.stream = gradsync::Stream::kHost;
    e.name = iteration_event(it);
    e.start_s = iteration_start;
    e.end_s = now;
    e.iteration = it;
    impl->trace.add(e);
  }
}

}  // namespace gradsync::sim
