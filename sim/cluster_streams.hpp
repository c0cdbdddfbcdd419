// cluster_streams.hpp: SimCluster::Impl's streams (StreamActor), processes (Proc) and devices
// (Dev), the parts of sim/cluster_impl.hpp that run work; shared by cluster.cpp,
// cluster_devices.cpp and cluster_groups.cpp. Private to sim/.
#pragma once

#include "core/launch_queue.hpp"
#include "sim/cluster_impl.hpp"

namespace gradsync::sim {

// One stream of one device: its tasks in order. A kernel (a task of known duration, no body)
// is placed on the stream's timeline as soon as the end times of what it waits for are known:
// it starts when the stream, its dependencies and the host that issued it are all there, and
// ends its duration later, without an activity of its own. When issued behind unresolved work
// (a collective's) it waits in the queue of the stream's actor, which places it once that work
// is resolved. Other tasks (copies, collectives: flows) run on the actor at their start time.
struct SimCluster::Impl::StreamActor {
  static constexpr std::size_t kMaxPlaced = 1 << 16;
  struct Task {
    std::vector<WorkPtr> deps;
    std::function<void()> body;  // empty: a kernel of `duration`
    double duration = 0;
    double issued = 0;  // the issuing host's time
    // A compute kernel's launch window (core/launch_queue.hpp), after `issued`: it starts no
    // sooner than its first kernel is issued and ends no sooner than its last kernel can.
    LaunchWindow window{};
    std::shared_ptr<TaskWork> work;
    TraceEvent event;
    std::function<void(double, double)> done;  // told the start and end, after the trace
    ComputeLoad load{};                        // a compute kernel's, for contention with NCCL
    // work_from: when, between its start and end, the task's own work began (an NCCL kernel's,
    // once the last member of its call arrived); the time before is traced as "wait:<name>".
    std::function<double(double, double)> work_from;
  };
  // Placed: a compute kernel on the timeline, kept while an NCCL kernel may still overlap it.
  struct Placed {
    double start = 0, end = 0, time = 0;
    ComputeLoad load;
  };
  Impl* impl = nullptr;
  sg4::Host* where = nullptr;
  std::string name;
  std::deque<Task> queue;
  Counter pushed;
  long popped = 0;
  sg4::ActorPtr actor;
  std::shared_ptr<TaskWork> last;
  std::vector<WorkPtr> pending;          // stream_wait targets for the next task
  double free_at = 0;                    // when the stream's last placed task ends
  std::deque<Placed>* placed = nullptr;  // the compute stream's: where its kernels are kept

  std::shared_ptr<TaskWork> push(Task t) {
    t.work = std::make_shared<TaskWork>(&impl->clocks);
    for (auto& p : pending) t.deps.push_back(std::move(p));
    pending.clear();
    t.issued = impl->clocks.now();
    last = t.work;
    auto w = t.work;
    if (!t.body && queue.empty() && popped == pushed.value()) {
      // The compute stream places a kernel no sooner than it starts (settle), so that an NCCL
      // kernel ending meanwhile slows the kernels it overlapped, not the ones queued behind them.
      if (const auto start = ready_at(t); start && (!placed || *start <= sg4::Engine::get_clock())) {
        place(t, *start);
        return w;
      }
    }
    queue.push_back(std::move(t));
    if (!actor) {
      actor = sg4::Actor::create(name, where, impl->guarded([this] { loop(); }));
      actor->daemonize();
    }
    pushed.add(1);
    return w;
  }

  // ready_at: when t can start, if every end it waits for is known.
  std::optional<double> ready_at(const Task& t) const {
    double start = std::max(t.issued + t.window.first_issue, free_at);
    for (const auto& d : t.deps) {
      const auto e = static_cast<const SimWork&>(*d).end();
      if (!e) return std::nullopt;
      start = std::max(start, *e);
    }
    return start;
  }

  void record(Task& t, double start, double end) {
    t.event.start_s = start;
    t.event.end_s = end;
    if (t.work_from) {
      const double from = std::clamp(t.work_from(start, end), start, end);
      if (from > start) {
        TraceEvent wait = t.event;
        wait.name = wait_event(t.event.name);
        wait.bytes = 0;
        wait.end_s = from;
        impl->trace.add(std::move(wait));
        t.event.start_s = from;
      }
    }
    impl->trace.add(t.event);
    if (placed && t.load.gpu_s > 0) {
      // Bounded: an NCCL kernel ending later pops what ends before it starts (Dev::contend).
      if (placed->size() >= kMaxPlaced) placed->pop_front();
      placed->push_back({start, end, end - start, t.load});
    }
    if (t.done) t.done(start, end);
    free_at = std::max(free_at, end);
    t.work->finish(end);
  }
  // settle: wait until t's start, which an NCCL kernel's contention (Dev::contend: free_at) may
  // move later while it waits.
  void settle(const Task& t) {
    for (;;) {
      const double now = sg4::Engine::get_clock();
      const double start = *ready_at(t);
      if (!(start > now)) return;
      sleep_for(start - now);
      if (!(sg4::Engine::get_clock() > now)) return;  // a wait below the engine's time precision
    }
  }
  void place(Task& t, double start) { record(t, start, std::max(start + t.duration, t.issued + t.window.last_end)); }

  void loop() {
    for (;;) {
      pushed.wait_at_least(popped + 1);
      Task t = std::move(queue.front());
      queue.pop_front();
      if (!t.body) {
        for (auto& d : t.deps) static_cast<SimWork&>(*d).wait_resolved();
        if (placed) settle(t);
        place(t, *ready_at(t));
        ++popped;
        continue;
      }
      for (auto& d : t.deps) d->wait();
      sleep_for(std::max(t.issued, free_at) - sg4::Engine::get_clock());
      const double start = sg4::Engine::get_clock();
      t.body();
      record(t, start, sg4::Engine::get_clock());
      ++popped;
    }
  }
};

// A process: its GIL, its devices, its iteration.
struct SimCluster::Impl::Proc final : public Host {
  Impl* impl;
  std::vector<int> devices;
  sg4::MutexPtr gil = sg4::Mutex::create();
  int iteration = 0;
  double iteration_start = 0;

  Proc(Impl* i, std::vector<int> d) : impl(i), devices(std::move(d)) {}

  void run(const HostOp& op) override {
    if (!op.gil) {
      // Issuing a collective (core/called_group.hpp) is traced on the host lane of the process's
      // first device: the --explain phase "collective calls".
      if (op.name.rfind("call:", 0) == 0 && !devices.empty() && op.time_s > 0) {
        TraceEvent e;
        e.rank = devices.front();
        e.stream = gradsync::Stream::kHost;
        e.name = op.name;
        e.iteration = iteration;
        e.start_s = impl->clocks.now();
        e.end_s = e.start_s + op.time_s;
        impl->trace.add(std::move(e));
      }
      impl->clocks.defer(op.time_s);
      return;
    }
    impl->clocks.flush();
    std::unique_lock<sg4::Mutex> lock(*gil);
    const double start = sg4::Engine::get_clock();
    try {
      sleep_for(op.time_s);
    } catch (const simgrid::ForcefulKillException&) {
      lock.release();  // as in Counter::wait_at_least
      throw;
    }
    // Work under the GIL is traced on the host lane of the process's first device ("host:<op>",
    // the --explain phase "host work"): one thread at a time, so its events never overlap.
    if (!devices.empty() && op.time_s > 0) {
      TraceEvent e;
      e.rank = devices.front();
      e.stream = gradsync::Stream::kHost;
      e.name = "host:" + op.name;
      e.iteration = iteration;
      e.start_s = start;
      e.end_s = sg4::Engine::get_clock();
      impl->trace.add(std::move(e));
    }
  }
  void parallel(int count, const std::function<void(int)>& fn) override {
    impl->clocks.flush();
    std::vector<sg4::ActorPtr> threads;
    for (int i = 0; i < count; ++i) {
      threads.push_back(
          sg4::Actor::create(fmt::format("thread{}", i), sg4::this_actor::get_host(), impl->guarded([this, &fn, i] {
            fn(i);
            impl->clocks.flush();
          })));
    }
    for (auto& t : threads) t->join();
  }
  void begin_iteration(int it) override {
    impl->clocks.flush();
    iteration = it;
    iteration_start = sg4::Engine::get_clock();
  }
  void end_iteration(int it) override;
};

struct SimCluster::Impl::Dev final : public Device {
  Impl* impl;
  int rank;
  Proc* owner = nullptr;
  std::array<StreamActor, 4> streams;
  std::deque<StreamActor::Placed> placed;  // compute kernels an NCCL kernel may overlap
  double dram_Bps = 0;                     // the GPU's DRAM bandwidth (gpus.yaml)

  Dev(Impl* i, int r);
  // contend: an NCCL kernel of this device ran from `start` to `end`, moving `dram_bytes` through
  // its DRAM: the compute kernels it overlapped lose SMs and DRAM bandwidth
  // (models/contention.hpp). Their extra time is put on the compute stream after its placed
  // work, as an event "slowdown:<name>" (the kernels themselves keep their places).
  void contend(double start, double end, double dram_bytes, const std::string& name, int iteration);
  // contention_extra: the compute time that contend would add for an NCCL kernel over
  // [start, end) moving `dram_bytes` (what a mirror's own bytes would cost: SimOptions::mirrors).
  double contention_extra(double start, double end, double dram_bytes) const;
  StreamActor& stream(gradsync::Stream s) { return streams[static_cast<std::size_t>(s)]; }
  TraceEvent event(gradsync::Stream s, const std::string& name, Bytes bytes, int bucket, int peer) const;

  int index() const override { return rank; }
  WorkPtr compute(const ComputeOp& op, gradsync::Stream s) override;
  // compute_run: one task of the ops' summed time, host time, bytes and load (hbm_demand
  // weighted by hbm_s), ending when the ops one after another would: each op starts when the one
  // before ends, and the host issues it no later (its time_s covers its host_s).
  WorkPtr compute_run(const std::vector<ComputeOp>& ops, const std::string& name, gradsync::Stream s) override;
  // push_compute: a compute task of GPU time `gpu` in launch window `window` on stream s, whose
  // issue costs the host `host_s` (what compute and compute_run share).
  WorkPtr push_compute(double gpu, LaunchWindow window, const ComputeOp& op, gradsync::Stream s);
  WorkPtr copy_to(Device& dst, const CopyOp& op, gradsync::Stream s) override;
  WorkPtr copy_from_host(const CopyOp& op, gradsync::Stream s) override;
  void stream_wait(gradsync::Stream s, Work& w) override { stream(s).pending.push_back(share(w)); }
  void synchronize() override;
};

}  // namespace gradsync::sim
