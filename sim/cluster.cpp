// cluster.cpp: streams as actors, works as counters, collectives as NCCL's algorithms in flows
// (the parts: sim/cluster_impl.hpp).
#include "sim/cluster_streams.hpp"

#include <utility>

namespace gradsync::sim {

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
Trace SimCluster::take_trace() { return std::exchange(impl_->trace, Trace{}); }
const std::vector<CollectiveRecord>& SimCluster::collectives() const { return impl_->records; }
std::vector<LinkTraffic> SimCluster::link_traffic(int iteration) const {
  std::vector<LinkTraffic> out;
  const auto it = impl_->link_bytes.find(iteration);
  if (it == impl_->link_bytes.end()) return out;
  const std::vector<double>& bytes_of = it->second;
  std::vector<std::size_t> index(bytes_of.size(), 0);  // by link id: its place in out
  for (std::uint32_t id = 0; id < bytes_of.size(); ++id) {
    if (!(bytes_of[id] > 0)) continue;
    const sg4::Link* link = impl_->id_links[id];
    index[id] = out.size();
    out.push_back({link->get_name(), link->get_bandwidth(), bytes_of[id], {}});
  }
  if (const auto ph = impl_->link_phase_bytes.find(iteration); ph != impl_->link_phase_bytes.end()) {
    // Each event once per link, in name order: its entries summed first (a phase of copies adds a
    // link once per flow).
    std::vector<double> sum(bytes_of.size(), 0.0);
    std::vector<std::uint32_t> touched;
    for (const auto& [event, entries] : ph->second) {
      for (const auto& [id, bytes] : entries) {
        if (sum[id] == 0) touched.push_back(id);
        sum[id] += bytes;
      }
      for (std::uint32_t id : touched) {
        out[index[id]].by_event.emplace_back(event, sum[id]);
        sum[id] = 0;
      }
      touched.clear();
    }
  }
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
