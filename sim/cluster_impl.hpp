// cluster_impl.hpp: SimCluster's inside, shared by its three files: cluster.cpp (the cluster and
// its public calls), cluster_devices.cpp (devices: kernels and copies on streams) and
// cluster_groups.cpp (process groups: collective calls matched across ranks and run as NCCL's
// algorithms). Its streams, processes and devices are in sim/cluster_streams.hpp. Private to sim/.
#pragma once

#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "core/error.hpp"
#include "sim/cluster.hpp"
#include "sim/collective_run.hpp"
#include "sim/nccl_options.hpp"
#include "sim/sync.hpp"

namespace gradsync::sim {
namespace cluster_detail {

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

inline WorkPtr share(Work& w) { return static_cast<SimWork&>(w).shared_from_this(); }

}  // namespace cluster_detail

using cluster_detail::AllWork;
using cluster_detail::HostClocks;
using cluster_detail::share;
using cluster_detail::SimWork;
using cluster_detail::TaskWork;
namespace sg4 = simgrid::s4u;

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
  // Link directions by a dense id, given on first sight: the per-call wire bytes below are added
  // by id, without hashing (a 4,096-GPU llama2-7b iteration adds 226 calls x 16,000 link
  // directions).
  std::unordered_map<const sg4::Link*, std::uint32_t> link_ids;
  std::vector<const sg4::Link*> id_links;
  std::uint32_t link_id(const sg4::Link* l) {
    const auto [it, fresh] = link_ids.try_emplace(l, static_cast<std::uint32_t>(id_links.size()));
    if (fresh) id_links.push_back(l);
    return it->second;
  }
  // Wire bytes by iteration and link id; routes looked up once per pair of hosts.
  std::map<int, std::vector<double>> link_bytes;
  // link_phase_bytes: the same per event name (a collective call, a phase of copies), as added
  // (a link may come more than once), for the links' peak utilisation (SimCluster::link_traffic).
  std::map<int, std::map<std::string, std::vector<std::pair<std::uint32_t, double>>>> link_phase_bytes;
  // add_wire: `wire` bytes of event `name` of iteration `it` on link `id`.
  void add_wire(std::vector<double>& per_link, std::vector<std::pair<std::uint32_t, double>>& per_phase,
                std::uint32_t id, double wire) {
    if (per_link.size() <= id) per_link.resize(id_links.size(), 0.0);
    per_link[id] += wire;
    per_phase.emplace_back(id, wire);
  }
  struct PairRoute {
    std::vector<sg4::Link*> links;
    std::vector<std::uint32_t> ids;  // link_id of each of links
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
  // auto_step_flows: per iteration, the flows of the calls --fidelity auto ran at step fidelity
  // (sim/collective_run.hpp: kAutoIterationFlows).
  std::map<int, double> auto_step_flows;
  std::exception_ptr error;
  HostClocks clocks;
  std::vector<std::vector<int>> mirrors;  // per rank (SimOptions::mirrors), empty when none
  const std::vector<int>& mirrors_of(int rank) const {
    static const std::vector<int> kNone;
    return mirrors.empty() ? kNone : mirrors[static_cast<std::size_t>(rank)];
  }
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
      c = m == n && opts.world_channels
              ? std::make_unique<Channels>(*opts.world_channels)
              : std::make_unique<Channels>(build_channels(topo, routes, first_ranks(m), transports));
      limit_nvls_channels(*c, opts.nvls_min_channels, opts.nvls_max_channels);
      limit_channels(*c, opts.min_channels, opts.max_channels, nvls_channel_floor(*c, opts.nccl));
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
    account(it, name, a, b, static_cast<double>(wire));
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
  void account(int it, const std::string& name, sg4::Host* a, sg4::Host* b, double wire) {
    auto& per_link = link_bytes[it];
    auto& per_phase = link_phase_bytes[it][name];
    for (std::uint32_t id : pair_route(a, b).ids) add_wire(per_link, per_phase, id, wire);
  }
  const PairRoute& pair_route(sg4::Host* a, sg4::Host* b) {
    auto [pos, fresh] = route_links.try_emplace({a, b});
    if (fresh) {
      a->route_to(b, pos->second.links, nullptr);
      // The links' own latency (SimGrid is told a nominal one: platform.cpp, kNominalLatency_s).
      pos->second.latency_s = 0;
      pos->second.bottleneck_Bps = std::numeric_limits<double>::infinity();
      for (const sg4::Link* l : pos->second.links) {
        pos->second.latency_s += l->get_latency();
        pos->second.bottleneck_Bps = std::min(pos->second.bottleneck_Bps, l->get_bandwidth());
        pos->second.ids.push_back(link_id(l));
      }
    }
    return pos->second;
  }
  // nccl_route: the route of NCCL's flows between two ranks' GPUs.
  const PairRoute& nccl_route(int from, int to) { return pair_route(nccl_host(from), nccl_host(to)); }
  // gpu_route: the topology's route between two ranks' GPUs (peer copies; NVLS's multicast).
  const PairRoute& gpu_route(int from, int to) {
    return pair_route(platform.gpus[static_cast<std::size_t>(from)], platform.gpus[static_cast<std::size_t>(to)]);
  }

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

}  // namespace gradsync::sim
