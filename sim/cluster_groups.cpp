// cluster_groups.cpp: process groups: each member's collective call matched with the others'
// by sequence number, then run as NCCL's algorithm (sim/collective_run.hpp) on the members' comm
// streams, or for the time a calibration measured.
#include "sim/cluster_streams.hpp"

#include "models/contention.hpp"

namespace gradsync::sim {

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
  // arrived_members, last_arrival: the members (with those they mirror) whose comm stream reached
  // the call, and when the last of them did: the call's own work starts then.
  int arrived_members = 0;
  double last_arrival = 0;
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
      const double flows = step_flows(coll, static_cast<double>(op.bytes), members, ch->rings.size(), choice);
      double& used = impl->auto_step_flows[it];
      fidelity =
          flows > kAutoAggregateFlows || used + flows > kAutoIterationFlows ? Fidelity::kAggregate : Fidelity::kStep;
      if (fidelity == Fidelity::kStep) used += flows;
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
    links.direct_send = [impl, it, name = op.name](int from, int to, double bytes, double wire) {
      return impl->send(it, name, from, to, bytes, wire);
    };
    links.direct_latency = [impl](int from, int to) { return impl->gpu_route(from, to).latency_s; };
    links.direct_bandwidth = [impl](int from, int to) { return impl->gpu_route(from, to).bottleneck_Bps; };
    links.direct_route = [impl](int from, int to) -> const std::vector<sg4::Link*>& {
      return impl->gpu_route(from, to).links;
    };
    links.record = [impl, it, name = op.name](int from, int to, double bytes, double wire) {
      (void)impl->record(it, name, from, to, bytes, wire);
    };
    links.record_totals = [impl, it, name = op.name](const SolvedCalls::Result& solved_call) {
      impl->tally_totals(it, name, solved_call.out, solved_call.in);
      if (solved_call.link_ids.size() != solved_call.wire.size()) {
        solved_call.link_ids.clear();
        for (const auto& [l, wire] : solved_call.wire) solved_call.link_ids.push_back(impl->link_id(l));
      }
      auto& per_link = impl->link_bytes[it];
      auto& per_phase = impl->link_phase_bytes[it][name];
      per_phase.reserve(per_phase.size() + solved_call.wire.size());
      for (std::size_t i = 0; i < solved_call.wire.size(); ++i)
        impl->add_wire(per_link, per_phase, solved_call.link_ids[i], solved_call.wire[i].second);
    };
    links.fluid = impl->opts.fluid;
    links.solved = solved;
    if (!impl->mirrors.empty()) links.mirrors = &impl->mirrors;
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
    // The bytes the flows would have moved (as real mode counts them, real/run.cpp): every member
    // sends and receives the bus bytes, except along a rooted call's chain: a broadcast's root only
    // sends and its last member only receives; a reduce's root only receives and the member after
    // it only sends.
    const double bus = members_ > 1 ? static_cast<double>(op.bytes) * bus_factor(coll, members_) : 0.0;
    const int pos = members_ > 0 ? ((me - root) % members_ + members_) % members_ : 0;
    const bool sends =
        !(coll == Collective::kBroadcast && pos == members_ - 1) && !(coll == Collective::kReduce && pos == 0);
    const bool receives = !(coll == Collective::kBroadcast && pos == 0) && !(coll == Collective::kReduce && pos == 1);
    if (sends) impl_->tally(iteration, op.name, me, -1, bus);
    if (receives) impl_->tally(iteration, op.name, -1, me, bus);
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
    t.body = [this, inst, me] {
      inst->arrived_members += 1 + static_cast<int>(impl->mirrors_of(me).size());
      inst->last_arrival = std::max(inst->last_arrival, sg4::Engine::get_clock());
      inst->run(me);
    };
    // A member that reached the call before the others waited for them (a broadcast's root runs
    // ahead of its receivers): that time is "wait:<name>", the rest the call's own.
    t.work_from = [this, inst](double start, double) {
      return inst->arrived_members >= size ? std::max(start, inst->last_arrival) : start;
    };
    t.event = d.event(gradsync::Stream::kComm, inst->op.name, inst->op.bytes, inst->op.bucket, -1);
    t.done = [this, inst, seq, me](double start, double end) {
      if (size > 1) {
        // The NCCL kernel held SMs and DRAM bandwidth beside this device's compute.
        const Traffic* moved = nullptr;
        if (auto it = impl->traffic.find(inst->iteration); it != impl->traffic.end())
          if (auto n = it->second.find(inst->op.name); n != it->second.end()) moved = &n->second;
        const auto m = static_cast<std::size_t>(me);
        const bool reduces = inst->coll == Collective::kAllreduce || inst->coll == Collective::kReduce ||
                             inst->coll == Collective::kReduceScatter;
        const double dram = moved && m < moved->in.size() ? nccl_dram_bytes(moved->in[m], moved->out[m], reduces) : 0.0;
        // Its working time: NCCL's own time for the call, ending with it. Time spent waiting for a
        // late peer also holds SMs, but this engine would put that slowdown into the rank's next
        // iteration (Dev::contend) and ranks would take turns being late; a run whose ranks are
        // alike never waits.
        const double works = inst->choice.predicted_s + inst->choice.sync_s;
        const double from = works > 0 ? std::max(start, end - works) : start;
        for (int mirror : impl->mirrors_of(me)) {
          const auto x = static_cast<std::size_t>(mirror);
          const double its =
              moved && x < moved->in.size() ? nccl_dram_bytes(moved->in[x], moved->out[x], reduces) : 0.0;
          if (its != dram &&
              impl->devs[m]->contention_extra(from, end, its) != impl->devs[m]->contention_extra(from, end, dram))
            throw MirrorBroken(fmt::format("sim: \"{}\" would slow rank {}'s compute otherwise than rank {}'s",
                                           inst->op.name, mirror, me));
        }
        impl->devs[m]->contend(from, end, dram, inst->op.name, inst->iteration);
      }
      inst->start = std::min(inst->start, start);
      inst->end = std::max(inst->end, end);
      inst->finished += 1 + static_cast<int>(impl->mirrors_of(me).size());
      if (inst->finished == size) {
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

// Built and destroyed here, where every group type is complete.
SimCluster::Impl::Impl(const Topology& t, const Routes& r, int gpus, SimOptions o)
    : topo(t), routes(r), n(gpus), opts(o), transports(t, r, o.transport, gpus) {
  if (gpus < 1 || gpus > topo.gpu_count()) {
    throw ConfigError(fmt::format("{}: {} GPUs asked for; the topology has {}", topo.origin(), gpus, topo.gpu_count()));
  }
  platform = build_platform(topo, routes, &transports);
  const GpuSpec* spec = topo.vertex(topo.gpu(0)).gpu;
  sm_version = spec ? spec->sm_version : 80;
  for (int i = 0; i < n; ++i) devs.push_back(std::make_unique<Dev>(this, i));
  if (!opts.mirrors.empty()) {
    if (static_cast<int>(opts.mirrors.size()) != n)
      throw std::logic_error(fmt::format("sim: mirrors for {} ranks in a cluster of {}", opts.mirrors.size(), n));
    mirrors = opts.mirrors;
  }
}

SimCluster::Impl::~Impl() = default;

}  // namespace gradsync::sim
