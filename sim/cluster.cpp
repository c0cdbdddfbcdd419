// cluster.cpp: streams as actors, works as counters, collectives as NCCL's algorithms in flows.
#include "sim/cluster.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <exception>
#include <limits>
#include <optional>
#include <unordered_map>

#include "core/error.hpp"
#include "sim/collective_run.hpp"
#include "sim/nccl_options.hpp"
#include "sim/sync.hpp"

namespace gradsync::sim {
namespace {

namespace sg4 = simgrid::s4u;

// HostClocks: each host thread's (actor's) time not yet slept. Issuing work costs host time
// (kernel launches); a thread adds it up and sleeps it only where it blocks or reads the clock,
// while everything it issues is stamped with its own time (now plus what it owes): the same
// times as sleeping at every launch, without an activity per launch.
class HostClocks {
 public:
  void defer(double s) {
    if (s > 0) owed_[sg4::this_actor::get_pid()] += s;
  }
  double now() const {
    const auto it = owed_.find(sg4::this_actor::get_pid());
    return sg4::Engine::get_clock() + (it == owed_.end() ? 0.0 : it->second);
  }
  // flush: the calling thread catches up with its own time.
  void flush() {
    const auto it = owed_.find(sg4::this_actor::get_pid());
    if (it == owed_.end() || it->second <= 0) return;
    const double s = it->second;
    it->second = 0;
    sleep_for(s);
  }

 private:
  std::unordered_map<aid_t, double> owed_;
};

// SimWork: every Work of this engine, shareable from a reference (stream_wait takes Work&).
// Work is resolved once its end time is known (it may lie ahead: kernels are placed on their
// stream's timeline when issued, see StreamActor).
class SimWork : public Work, public std::enable_shared_from_this<SimWork> {
 public:
  // end: the end time if resolved.
  virtual std::optional<double> end() const = 0;
  // wait_resolved blocks until the end time is known (not until it is reached).
  virtual void wait_resolved() = 0;
};

// TaskWork: one piece of stream work; done once its stream has run it (its end time reached).
class TaskWork final : public SimWork {
 public:
  explicit TaskWork(HostClocks* clocks) : clocks_(clocks) {}
  void wait() override {
    clocks_->flush();
    done_.wait_at_least(1);
    sleep_for(at_ - sg4::Engine::get_clock());
  }
  bool done() const override { return done_.value() > 0 && at_ <= sg4::Engine::get_clock(); }
  std::optional<double> end() const override {
    if (done_.value() > 0) return at_;
    return std::nullopt;
  }
  void wait_resolved() override { done_.wait_at_least(1); }
  // finish: the work ends at `at` (now or later).
  void finish(double at) {
    at_ = at;
    done_.add(1);
  }

 private:
  HostClocks* clocks_;
  Counter done_;
  double at_ = 0;
};

// AllWork: a collective of a single-process group: done when every member's part is.
class AllWork final : public SimWork {
 public:
  explicit AllWork(std::vector<WorkPtr> parts) : parts_(std::move(parts)) {}
  void wait() override {
    for (auto& p : parts_) p->wait();
  }
  bool done() const override {
    return std::all_of(parts_.begin(), parts_.end(), [](const WorkPtr& p) { return p->done(); });
  }
  std::optional<double> end() const override {
    double last = 0;
    for (const auto& p : parts_) {
      const auto e = static_cast<const SimWork&>(*p).end();
      if (!e) return std::nullopt;
      last = std::max(last, *e);
    }
    return last;
  }
  void wait_resolved() override {
    for (auto& p : parts_) static_cast<SimWork&>(*p).wait_resolved();
  }

 private:
  std::vector<WorkPtr> parts_;
};

WorkPtr share(Work& w) { return static_cast<SimWork&>(w).shared_from_this(); }

}  // namespace

struct SimCluster::Impl {
  const Topology& topo;
  const Routes& routes;
  int n = 0;
  SimOptions opts;
  Transports transports;  // NCCL's transports under the scenario's knobs
  Platform platform;
  Trace trace;
  std::vector<CollectiveRecord> records;
  std::map<int, std::map<std::string, Traffic>> traffic;  // by iteration, by event name
  // Wire bytes by iteration and link direction; routes looked up once per pair of hosts.
  std::map<int, std::unordered_map<const sg4::Link*, double>> link_bytes;
  struct PairRoute {
    std::vector<sg4::Link*> links;
    double latency_s = 0;
    double bottleneck_Bps = 0;
  };
  struct PairHash {
    std::size_t operator()(const std::pair<const sg4::Host*, const sg4::Host*>& p) const {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  std::unordered_map<std::pair<const sg4::Host*, const sg4::Host*>, PairRoute, PairHash> route_links;
  std::map<int, std::unique_ptr<Channels>> channels;
  std::exception_ptr error;
  HostClocks clocks;
  int sm_version = 0;
  int spawned = 0, finished = 0;

  struct StreamActor;
  struct Dev;
  struct Proc;
  struct GroupState;
  struct Instance;
  struct Group;
  struct LocalGroup;
  std::vector<std::unique_ptr<Dev>> devs;
  std::vector<std::unique_ptr<Proc>> procs;
  std::unique_ptr<GroupState> world;
  std::vector<std::unique_ptr<Group>> world_views;
  std::map<int, std::unique_ptr<GroupState>> local_states;
  std::map<int, std::unique_ptr<LocalGroup>> locals;

  Impl(const Topology& t, const Routes& r, int gpus, SimOptions o);
  ~Impl();

  const Channels& channels_of(int m) {
    auto& c = channels[m];
    if (!c) {
      c = std::make_unique<Channels>(build_channels(topo, routes, first_ranks(m), transports));
      limit_channels(*c, opts.min_channels, opts.max_channels);
      // Each ring hop between machines goes through its channel's NICs, as the search counted it.
      for (const RingChannel& rc : c->rings)
        for (std::size_t i = 0; i < rc.hops.size(); ++i)
          if (rc.hops[i].kind == TransportKind::kNet) {
            const int from = rc.order[i], to = rc.order[(i + 1) % rc.order.size()];
            if (platform.pin_route(from, to, rc.hops[i])) route_links.erase({nccl_host(from), nccl_host(to)});
          }
    }
    return *c;
  }

  // tally: payload bytes of event `name` in iteration `it` leaving `from` and entering `to`
  // (-1: host memory).
  void tally(int it, const std::string& name, int from, int to, double bytes) {
    Traffic& t = traffic[it][name];
    if (t.out.empty()) {
      t.out.assign(static_cast<std::size_t>(n), 0.0);
      t.in.assign(static_cast<std::size_t>(n), 0.0);
    }
    if (from >= 0) t.out[static_cast<std::size_t>(from)] += bytes;
    if (to >= 0) t.in[static_cast<std::size_t>(to)] += bytes;
  }

  // tally_totals: tally's bytes of many flows at once, per rank.
  void tally_totals(int it, const std::string& name, const std::vector<double>& out, const std::vector<double>& in) {
    Traffic& t = traffic[it][name];
    if (t.out.empty()) {
      t.out.assign(static_cast<std::size_t>(n), 0.0);
      t.in.assign(static_cast<std::size_t>(n), 0.0);
    }
    for (std::size_t r = 0; r < out.size(); ++r) {
      t.out[r] += out[r];
      t.in[r] += in[r];
    }
  }

  // flow_bytes counts a flow's `bytes` of payload for event `name` of iteration `it` and its
  // wire bytes on every link from a to b; returns the wire bytes: whole, at least one (a chunk
  // smaller than a byte per channel still costs a message).
  std::uint64_t flow_bytes(int it, const std::string& name, int from, int to, sg4::Host* a, sg4::Host* b, double bytes,
                           double wire_bytes) {
    tally(it, name, from, to, bytes);
    const auto wire = static_cast<std::uint64_t>(std::max(1.0, std::ceil(wire_bytes - 1e-9)));
    account(it, a, b, static_cast<double>(wire));
    return wire;
  }

  // send starts a flow of `wire_bytes` between two GPUs, or a GPU and its host memory (-1),
  // counting `bytes` of payload for event `name` of iteration `it`.
  sg4::CommPtr send(int it, const std::string& name, int from, int to, double bytes, double wire_bytes) {
    sg4::Host* a =
        from >= 0 ? platform.gpus[static_cast<std::size_t>(from)] : platform.host_memory[static_cast<std::size_t>(to)];
    sg4::Host* b =
        to >= 0 ? platform.gpus[static_cast<std::size_t>(to)] : platform.host_memory[static_cast<std::size_t>(from)];
    return sg4::Comm::sendto_async(a, b, flow_bytes(it, name, from, to, a, b, bytes, wire_bytes));
  }

  // NCCL's flows run between the GPUs' NCCL endpoints (sim/platform.hpp), along the transport
  // NCCL picks for the pair, each payload byte costing the hop's wire factor on top of the
  // protocol's.
  sg4::Host* nccl_host(int rank) const { return platform.nccl[static_cast<std::size_t>(rank)]; }
  double nccl_wire(int from, int to, double wire_bytes) const {
    return wire_bytes * platform.nccl_wire_factor(from, to);
  }
  // send_nccl: a collective's flow between two GPUs (step fidelity).
  sg4::CommPtr send_nccl(int it, const std::string& name, int from, int to, double bytes, double wire_bytes) {
    return sg4::Comm::sendto_async(nccl_host(from), nccl_host(to), record(it, name, from, to, bytes, wire_bytes));
  }
  // put: send_nccl's flow as a mailbox communication into `inbox` (to's), flowing once to's comm
  // actor has posted a receive there (aggregate fidelity; sim/collective_run.hpp).
  sg4::CommPtr put(int it, const std::string& name, sg4::Mailbox* inbox, int from, int to, double bytes,
                   double wire_bytes) {
    return inbox->put_async(&payload, record(it, name, from, to, bytes, wire_bytes));
  }
  // record counts a collective's flow between two GPUs (payload and wire bytes) without starting
  // it: what put sends, or a hop aggregate fidelity times in closed form.
  std::uint64_t record(int it, const std::string& name, int from, int to, double bytes, double wire_bytes) {
    return flow_bytes(it, name, from, to, nccl_host(from), nccl_host(to), bytes, nccl_wire(from, to, wire_bytes));
  }
  int payload = 0;           // what put carries (mailboxes move a pointer; only the size matters)
  void* received = nullptr;  // where receives leave it
  int groups = 0;            // process groups made, naming their inboxes

  // account adds a flow's wire bytes to every link direction on its route.
  void account(int it, sg4::Host* a, sg4::Host* b, double wire) {
    auto& per_link = link_bytes[it];
    for (const sg4::Link* l : pair_route(a, b).links) per_link[l] += wire;
  }
  const PairRoute& pair_route(sg4::Host* a, sg4::Host* b) {
    auto [pos, fresh] = route_links.try_emplace({a, b});
    if (fresh) {
      a->route_to(b, pos->second.links, &pos->second.latency_s);
      pos->second.bottleneck_Bps = std::numeric_limits<double>::infinity();
      for (const sg4::Link* l : pos->second.links)
        pos->second.bottleneck_Bps = std::min(pos->second.bottleneck_Bps, l->get_bandwidth());
    }
    return pos->second;
  }
  // nccl_route: the route of NCCL's flows between two ranks' GPUs.
  const PairRoute& nccl_route(int from, int to) { return pair_route(nccl_host(from), nccl_host(to)); }

  // Guard an actor's body: the first exception is kept and every other actor is killed, so the
  // simulation ends and run() rethrows it.
  template <class F>
  auto guarded(F fn) {
    return [this, fn = std::move(fn)]() mutable {
      try {
        fn();
      } catch (const simgrid::ForcefulKillException&) {
        throw;
      } catch (...) {
        if (!error) error = std::current_exception();
        sg4::Actor::kill_all();
      }
    };
  }
};

// One stream of one device: its tasks in order. A kernel (a task of known duration, no body)
// is placed on the stream's timeline as soon as the end times of what it waits for are known:
// it starts when the stream, its dependencies and the host that issued it are all there, and
// ends its duration later, without an activity of its own. When issued behind unresolved work
// (a collective's) it waits in the queue of the stream's actor, which places it once that work
// is resolved. Other tasks (copies, collectives: flows) run on the actor at their start time.
struct SimCluster::Impl::StreamActor {
  struct Task {
    std::vector<WorkPtr> deps;
    std::function<void()> body;  // empty: a kernel of `duration`
    double duration = 0;
    double issued = 0;  // the issuing host's time
    std::shared_ptr<TaskWork> work;
    TraceEvent event;
    std::function<void(double, double)> done;  // told the start and end, after the trace
  };
  Impl* impl = nullptr;
  sg4::Host* where = nullptr;
  std::string name;
  std::deque<Task> queue;
  Counter pushed;
  long popped = 0;
  sg4::ActorPtr actor;
  std::shared_ptr<TaskWork> last;
  std::vector<WorkPtr> pending;  // stream_wait targets for the next task
  double free_at = 0;            // when the stream's last placed task ends

  std::shared_ptr<TaskWork> push(Task t) {
    t.work = std::make_shared<TaskWork>(&impl->clocks);
    for (auto& p : pending) t.deps.push_back(std::move(p));
    pending.clear();
    t.issued = impl->clocks.now();
    last = t.work;
    auto w = t.work;
    if (!t.body && queue.empty() && popped == pushed.value()) {
      if (const auto start = ready_at(t)) {
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
    double start = std::max(t.issued, free_at);
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
    impl->trace.add(t.event);
    if (t.done) t.done(start, end);
    free_at = std::max(free_at, end);
    t.work->finish(end);
  }
  void place(Task& t, double start) { record(t, start, start + t.duration); }

  void loop() {
    for (;;) {
      pushed.wait_at_least(popped + 1);
      Task t = std::move(queue.front());
      queue.pop_front();
      if (!t.body) {
        for (auto& d : t.deps) static_cast<SimWork&>(*d).wait_resolved();
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
      impl->clocks.defer(op.time_s);
      return;
    }
    impl->clocks.flush();
    std::unique_lock<sg4::Mutex> lock(*gil);
    try {
      sleep_for(op.time_s);
    } catch (const simgrid::ForcefulKillException&) {
      lock.release();  // as in Counter::wait_at_least
      throw;
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

  Dev(Impl* i, int r) : impl(i), rank(r) {
    for (std::size_t s = 0; s < streams.size(); ++s) {
      streams[s].impl = i;
      // The comm stream runs NCCL: its actor sits on the GPU's NCCL endpoint, so that the flows it
      // (and the helpers it starts) send take NCCL's transports.
      streams[s].where = static_cast<gradsync::Stream>(s) == gradsync::Stream::kComm
                             ? i->platform.nccl[static_cast<std::size_t>(r)]
                             : i->platform.gpus[static_cast<std::size_t>(r)];
      streams[s].name = fmt::format("gpu{}:{}", r, stream_name(static_cast<gradsync::Stream>(s)));
    }
  }
  StreamActor& stream(gradsync::Stream s) { return streams[static_cast<std::size_t>(s)]; }

  TraceEvent event(gradsync::Stream s, const std::string& name, Bytes bytes, int bucket, int peer) const {
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

  int index() const override { return rank; }
  WorkPtr compute(const ComputeOp& op, gradsync::Stream s) override {
    impl->clocks.defer(op.host_s);
    StreamActor::Task t;
    t.duration = op.time_s;
    t.event = event(s, op.name, static_cast<Bytes>(op.bytes), op.bucket, -1);
    return stream(s).push(std::move(t));
  }
  WorkPtr copy_to(Device& dst, const CopyOp& op, gradsync::Stream s) override {
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
    } else if (impl->routes.gpu_route(rank, to).p2p) {
      t.body = [this, it, name = op.name, to, bytes] { impl->send(it, name, rank, to, bytes, bytes)->wait(); };
    } else {
      // No peer access: device to host memory, then host memory to the peer.
      t.body = [this, it, name = op.name, to, bytes] {
        const auto wire = static_cast<std::uint64_t>(std::llround(bytes));
        sg4::Host* src = impl->platform.gpus[static_cast<std::size_t>(rank)];
        sg4::Host* staging = impl->platform.host_memory[static_cast<std::size_t>(rank)];
        sg4::Host* peer_gpu = impl->platform.gpus[static_cast<std::size_t>(to)];
        impl->account(it, src, staging, static_cast<double>(wire));
        sg4::Comm::sendto(src, staging, wire);
        impl->account(it, staging, peer_gpu, static_cast<double>(wire));
        sg4::Comm::sendto(staging, peer_gpu, wire);
        impl->tally(it, name, rank, to, bytes);
      };
    }
    return stream(s).push(std::move(t));
  }
  WorkPtr copy_from_host(const CopyOp& op, gradsync::Stream s) override {
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
        impl->send(it, name, -1, rank, bytes, bytes)->wait();
      };
    }
    return stream(s).push(std::move(t));
  }
  void stream_wait(gradsync::Stream s, Work& w) override { stream(s).pending.push_back(share(w)); }
  void synchronize() override {
    impl->clocks.flush();
    for (auto& s : streams)
      if (s.last) s.last->wait();
  }
};

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

// One collective call, shared by its members: its algorithm's run and when it ran.
struct SimCluster::Impl::Instance {
  Collective coll;
  CollectiveOp op;
  int root = -1;
  CollectiveChoice choice;
  Fidelity fidelity = Fidelity::kStep;
  int iteration = 0;
  std::unique_ptr<CollectiveRun> algorithm;
  int finished = 0;
  double start = 1e300, end = 0;
  // Calibrated: the measured time, once every member has arrived.
  std::optional<double> measured_s;
  Counter arrived;
  int members_ = 0;
  Impl* impl_ = nullptr;

  Instance(Impl* impl, const Channels* ch, const std::vector<sg4::Mailbox*>* inboxes, SolvedCalls* solved, Collective c,
           CollectiveOp o, int r, int members, int it)
      : coll(c), op(std::move(o)), root(r), iteration(it), members_(members), impl_(impl) {
    if (impl->opts.calibration) {
      measured_s = impl->opts.calibration->collective_time(coll, members, static_cast<double>(op.bytes));
      if (measured_s) {
        choice.predicted_s = *measured_s;
        return;
      }
    }
    choice = choose_collective(coll, static_cast<double>(op.bytes), *ch, impl->opts.nccl);
    fidelity = impl->opts.fidelity;
    if (fidelity == Fidelity::kAuto) {
      fidelity =
          step_flows(coll, static_cast<double>(op.bytes), members, ch->rings.size(), choice) > kAutoAggregateFlows
              ? Fidelity::kAggregate
              : Fidelity::kStep;
    }
    CollectiveLinks links;
    links.topo = &impl->topo;
    links.channels = ch;
    links.send = [impl, it, name = op.name](int from, int to, double bytes, double wire) {
      return impl->send_nccl(it, name, from, to, bytes, wire);
    };
    links.put = [impl, it, name = op.name, inboxes](int from, int to, double bytes, double wire) {
      return impl->put(it, name, (*inboxes)[static_cast<std::size_t>(to)], from, to, bytes, wire);
    };
    links.receive = [impl, inboxes](int me) {
      return (*inboxes)[static_cast<std::size_t>(me)]->get_async<void>(&impl->received);
    };
    links.guard = [impl](std::function<void()> fn) -> std::function<void()> { return impl->guarded(std::move(fn)); };
    links.latency = [impl](int from, int to) { return impl->nccl_route(from, to).latency_s; };
    links.bandwidth = [impl](int from, int to) {
      return impl->nccl_route(from, to).bottleneck_Bps / impl->platform.nccl_wire_factor(from, to);
    };
    links.route = [impl](int from, int to) -> const std::vector<sg4::Link*>& {
      return impl->nccl_route(from, to).links;
    };
    links.record = [impl, it, name = op.name](int from, int to, double bytes, double wire) {
      (void)impl->record(it, name, from, to, bytes, wire);
    };
    links.record_totals = [impl, it, name = op.name](const SolvedCalls::Result& solved_call) {
      impl->tally_totals(it, name, solved_call.out, solved_call.in);
      auto& per_link = impl->link_bytes[it];
      for (const auto& [l, wire] : solved_call.wire) per_link[l] += wire;
    };
    links.fluid = impl->opts.fluid;
    links.solved = solved;
    algorithm = std::make_unique<CollectiveRun>(std::move(links), coll, op.bytes, root, members, choice, fidelity);
  }
  void run(int me) {
    if (!measured_s) {
      algorithm->run(me);
      return;
    }
    arrived.add();
    arrived.wait_at_least(members_);
    sleep_for(*measured_s);
    const double bus = members_ > 1 ? static_cast<double>(op.bytes) * bus_factor(coll, members_) : 0.0;
    impl_->tally(iteration, op.name, me, -1, bus);
    impl_->tally(iteration, op.name, -1, me, bus);
  }
};

// The state of one group shared by its members: the calls matched by sequence number.
struct SimCluster::Impl::GroupState {
  Impl* impl;
  int size;
  std::vector<std::uint64_t> next_seq;
  std::map<std::uint64_t, std::shared_ptr<Instance>> live;
  std::vector<sg4::Mailbox*> inboxes;  // per member: where aggregate fidelity's flows arrive
  SolvedCalls solved;                  // the group's solved calls (sim/collective_run.hpp)

  GroupState(Impl* i, int n) : impl(i), size(n), next_seq(static_cast<std::size_t>(n), 0) {
    const int id = impl->groups++;
    for (int m = 0; m < n; ++m) inboxes.push_back(sg4::Mailbox::by_name(fmt::format("group{}:{}", id, m)));
  }

  // join: member `me`'s call, matched with the other members' calls of the same number.
  std::shared_ptr<Instance> join(int me, Collective c, const CollectiveOp& op, int root, int iteration) {
    const std::uint64_t seq = next_seq[static_cast<std::size_t>(me)]++;
    auto& inst = live[seq];
    if (!inst) {
      inst =
          std::make_shared<Instance>(impl, &impl->channels_of(size), &inboxes, &solved, c, op, root, size, iteration);
    } else if (inst->coll != c || inst->op.bytes != op.bytes || inst->root != root) {
      throw RuntimeError(fmt::format(
          "sim: collective #{} differs across ranks: rank {} calls {} \"{}\" of {} bytes (root {}), another rank {} "
          "\"{}\" of {} bytes (root {}); every rank must issue the same collectives in the same order",
          seq, me, collective_name(c), op.name, op.bytes, root, collective_name(inst->coll), inst->op.name,
          inst->op.bytes, inst->root));
    }
    return inst;
  }

  // enqueue: member `me`'s part on its device's comm stream, after its compute stream's point.
  WorkPtr enqueue(int me, const std::shared_ptr<Instance>& inst, std::uint64_t seq) {
    Dev& d = *impl->devs[static_cast<std::size_t>(me)];
    StreamActor& comm = d.stream(gradsync::Stream::kComm);
    StreamActor& compute = d.stream(gradsync::Stream::kCompute);
    StreamActor::Task t;
    if (compute.last) t.deps.push_back(compute.last);
    for (const auto& p : compute.pending) t.deps.push_back(p);
    t.body = [inst, me] { inst->run(me); };
    t.event = d.event(gradsync::Stream::kComm, inst->op.name, inst->op.bytes, inst->op.bucket, -1);
    t.done = [this, inst, seq](double start, double end) {
      inst->start = std::min(inst->start, start);
      inst->end = std::max(inst->end, end);
      if (++inst->finished == size) {
        impl->records.push_back({inst->op.name, inst->coll, inst->op.bytes, size, inst->choice, inst->start, inst->end,
                                 inst->iteration, inst->fidelity});
        live.erase(seq);
      }
    };
    return comm.push(std::move(t));
  }
};

// A DDP rank's view of the world group.
struct SimCluster::Impl::Group final : public CollectiveCalls {
  GroupState* state;
  int me;
  Group(GroupState* s, int r) : state(s), me(r) {}
  int rank() const override { return me; }
  int size() const override { return state->size; }
  WorkPtr call(Collective c, const CollectiveOp& op, int root) override {
    const std::uint64_t seq = state->next_seq[static_cast<std::size_t>(me)];
    const Dev& d = *state->impl->devs[static_cast<std::size_t>(me)];
    auto inst = state->join(me, c, op, root, d.owner ? d.owner->iteration : 0);
    return state->enqueue(me, inst, seq);
  }
};

// DataParallel's single-process group: one call runs on every member device.
struct SimCluster::Impl::LocalGroup final : public CollectiveCalls {
  GroupState* state;
  explicit LocalGroup(GroupState* s) : state(s) {}
  int rank() const override { return 0; }
  int size() const override { return state->size; }
  WorkPtr call(Collective c, const CollectiveOp& op, int root) override {
    std::vector<WorkPtr> parts;
    for (int m = 0; m < state->size; ++m) {
      const std::uint64_t seq = state->next_seq[static_cast<std::size_t>(m)];
      const Dev& d = *state->impl->devs[static_cast<std::size_t>(m)];
      auto inst = state->join(m, c, op, root, d.owner ? d.owner->iteration : 0);
      parts.push_back(state->enqueue(m, inst, seq));
    }
    return std::make_shared<AllWork>(std::move(parts));
  }
};

SimCluster::Impl::Impl(const Topology& t, const Routes& r, int gpus, SimOptions o)
    : topo(t), routes(r), n(gpus), opts(o), transports(t, r, o.transport) {
  if (gpus < 1 || gpus > topo.gpu_count()) {
    throw ConfigError(fmt::format("{}: {} GPUs asked for; the topology has {}", topo.origin(), gpus, topo.gpu_count()));
  }
  platform = build_platform(topo, routes, &transports);
  const GpuSpec* spec = topo.vertex(topo.gpu(0)).gpu;
  sm_version = spec ? spec->sm_version : 80;
  for (int i = 0; i < n; ++i) devs.push_back(std::make_unique<Dev>(this, i));
}

SimCluster::Impl::~Impl() = default;

SimCluster::SimCluster(const Topology& topo, const Routes& routes, int gpus, SimOptions opts)
    : impl_(std::make_unique<Impl>(topo, routes, gpus, opts)) {}

SimCluster::~SimCluster() = default;

int SimCluster::gpus() const { return impl_->n; }

Device& SimCluster::device(int rank) { return *impl_->devs.at(static_cast<std::size_t>(rank)); }

Host& SimCluster::host(const std::vector<int>& devices) {
  impl_->procs.push_back(std::make_unique<Impl::Proc>(impl_.get(), devices));
  for (int d : devices) impl_->devs.at(static_cast<std::size_t>(d))->owner = impl_->procs.back().get();
  return *impl_->procs.back();
}

ProcessGroup& SimCluster::world_group(int rank) {
  if (!impl_->world) {
    impl_->world = std::make_unique<Impl::GroupState>(impl_.get(), impl_->n);
    for (int r = 0; r < impl_->n; ++r)
      impl_->world_views.push_back(std::make_unique<Impl::Group>(impl_->world.get(), r));
  }
  return *impl_->world_views.at(static_cast<std::size_t>(rank));
}

ProcessGroup& SimCluster::local_group(int m) {
  auto& g = impl_->locals[m];
  if (!g) {
    auto& s = impl_->local_states[m];
    s = std::make_unique<Impl::GroupState>(impl_.get(), m);
    g = std::make_unique<Impl::LocalGroup>(s.get());
  }
  return *g;
}

const Channels& SimCluster::channels(int m) { return impl_->channels_of(m); }

void SimCluster::spawn(int rank, std::function<void()> fn) {
  ++impl_->spawned;
  sg4::Actor::create(fmt::format("rank{}", rank), impl_->platform.gpus.at(static_cast<std::size_t>(rank)),
                     impl_->guarded([this, fn = std::move(fn)] {
                       fn();
                       impl_->clocks.flush();
                       ++impl_->finished;
                     }));
}

void SimCluster::run() {
  sg4::Engine::get_instance()->run();
  if (impl_->error) std::rethrow_exception(impl_->error);
  // Kernels are recorded when placed, possibly ahead of time: the trace in order of ends (ties
  // in the order recorded). Sorted as (end, index) pairs, then moved once: an event carries its
  // name, which the merge sort would move log n times.
  auto& events = impl_->trace.events;
  std::vector<std::pair<double, std::size_t>> order(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) order[i] = {events[i].end_s, i};
  std::sort(order.begin(), order.end());
  std::vector<TraceEvent> sorted;
  sorted.reserve(events.size());
  for (const auto& [end, i] : order) sorted.push_back(std::move(events[i]));
  events = std::move(sorted);
  if (impl_->finished != impl_->spawned) {
    throw RuntimeError(fmt::format(
        "sim: the simulation stopped at t = {:.6f} s with {} of {} processes unfinished: they wait for work that never "
        "completes (a collective some rank never joined)",
        sg4::Engine::get_clock(), impl_->spawned - impl_->finished, impl_->spawned));
  }
}

double SimCluster::now() const { return sg4::Engine::get_clock(); }
const Trace& SimCluster::trace() const { return impl_->trace; }
const std::vector<CollectiveRecord>& SimCluster::collectives() const { return impl_->records; }
std::vector<LinkTraffic> SimCluster::link_traffic(int iteration) const {
  std::vector<LinkTraffic> out;
  const auto it = impl_->link_bytes.find(iteration);
  if (it == impl_->link_bytes.end()) return out;
  for (const auto& [link, bytes] : it->second) out.push_back({link->get_name(), link->get_bandwidth(), bytes});
  std::sort(out.begin(), out.end(), [](const LinkTraffic& a, const LinkTraffic& b) { return a.name < b.name; });
  return out;
}

const std::map<std::string, Traffic>& SimCluster::traffic(int iteration) const {
  static const std::map<std::string, Traffic> kNone;
  const auto it = impl_->traffic.find(iteration);
  return it == impl_->traffic.end() ? kNone : it->second;
}
double SimCluster::bytes_out(int rank, int iteration) const {
  double sum = 0;
  for (const auto& [name, t] : traffic(iteration)) sum += t.out.at(static_cast<std::size_t>(rank));
  return sum;
}
double SimCluster::bytes_in(int rank, int iteration) const {
  double sum = 0;
  for (const auto& [name, t] : traffic(iteration)) sum += t.in.at(static_cast<std::size_t>(rank));
  return sum;
}

}  // namespace gradsync::sim
