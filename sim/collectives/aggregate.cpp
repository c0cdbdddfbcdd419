// aggregate.cpp: aggregate fidelity of a collective call (sim/collective_run.hpp): each phase one
// flow per member and channel, a pipeline's hops started when their first chunk would, a tree's
// hops inside a machine in closed form, a call across machines solved (sim/fluid.hpp) and kept
// for calls alike (SolvedCalls).
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "sim/collective_run_state.hpp"
#include "sim/collectives/nvls.hpp"
#include "sim/fluid.hpp"

namespace gradsync::sim {

double CollectiveRun::State::chunk_wire(double per_channel_bytes) const {
  const double cb = chunk_bytes(choice.protocol);
  const long n = chunk_count(per_channel_bytes);
  const double last = per_channel_bytes - static_cast<double>(n - 1) * cb;
  return static_cast<double>(n - 1) * whole(cb) + whole(last);
}

double CollectiveRun::State::chunk_time(int a, int b, double per_channel_bytes, const LinkShares& share) const {
  const bool net = !same_machine(a, b);
  const double cb = std::min(chunk_bytes(choice.protocol), per_channel_bytes);
  return hop_latency(net ? PathClass::kNET : links_.channels->intra_class) + links_.latency(a, b) +
         whole(cb) / shared_rate(links_.route(a, b), share);
}

double CollectiveRun::State::shared_rate(const std::vector<sg4::Link*>& route, const LinkShares& share) {
  double rate = std::numeric_limits<double>::infinity();
  for (const sg4::Link* l : route) {
    const bool fat = l->get_sharing_policy() == sg4::Link::SharingPolicy::FATPIPE;
    const auto it = share.find(l);
    const double n = fat || it == share.end() ? 1.0 : std::max(1.0, it->second);
    rate = std::min(rate, l->get_bandwidth() / n);
  }
  return rate;
}

auto CollectiveRun::State::overlaps(const std::vector<Busy>& busy) -> std::vector<LinkShares> {
  // Per link, the intervals of the hops that cross it, sorted by start and by end, with the
  // running sums of their weights: the weight busy on a link during [s, e) is what started
  // before e less what ended by s.
  struct OnLink {
    std::vector<std::pair<double, double>> starts, ends;  // (time, weight), sorted by time
  };
  std::unordered_map<const sg4::Link*, OnLink> on;
  for (const Busy& b : busy)
    for (const sg4::Link* l : *b.route) {
      if (l->get_sharing_policy() == sg4::Link::SharingPolicy::FATPIPE) continue;
      on[l].starts.emplace_back(b.start, b.weight);
      on[l].ends.emplace_back(b.end, b.weight);
    }
  for (auto& [l, o] : on) {
    std::sort(o.starts.begin(), o.starts.end());
    std::sort(o.ends.begin(), o.ends.end());
    for (std::size_t i = 1; i < o.starts.size(); ++i) o.starts[i].second += o.starts[i - 1].second;
    for (std::size_t i = 1; i < o.ends.size(); ++i) o.ends[i].second += o.ends[i - 1].second;
  }
  const auto sum_before = [](const std::vector<std::pair<double, double>>& v, double t, bool inclusive) {
    const auto it =
        inclusive ? std::upper_bound(v.begin(), v.end(), std::make_pair(t, std::numeric_limits<double>::infinity()))
                  : std::lower_bound(v.begin(), v.end(), std::make_pair(t, -std::numeric_limits<double>::infinity()));
    return it == v.begin() ? 0.0 : std::prev(it)->second;
  };
  std::vector<LinkShares> out(busy.size());
  for (std::size_t i = 0; i < busy.size(); ++i) {
    const Busy& b = busy[i];
    for (const sg4::Link* l : *b.route) {
      const auto it = on.find(l);
      if (it == on.end()) continue;
      // Started before this hop ends, less ended by the time it starts (itself counted).
      const double n = sum_before(it->second.starts, b.end, false) - sum_before(it->second.ends, b.start, true);
      out[i][l] = std::max(n, b.weight);
    }
  }
  return out;
}

void CollectiveRun::State::phase(int me, std::vector<Flow> flows) {
  std::stable_sort(flows.begin(), flows.end(), [](const Flow& a, const Flow& b) { return a.start < b.start; });
  const double t0 = sg4::Engine::get_clock();
  std::vector<sg4::CommPtr> comms;
  const int in = incoming_[static_cast<std::size_t>(me)];
  comms.reserve(flows.size() + static_cast<std::size_t>(in));
  for (int i = 0; i < in; ++i) comms.push_back(links_.receive(me));
  double hops_end = 0;  // when the last of me's closed-form hops ends
  for (const Flow& f : flows) {
    if (f.local) {
      links_.record(me, f.to, f.payload, f.wire);
      hops_end = std::max(hops_end, f.start + f.duration);
      continue;
    }
    sleep_for(t0 + f.start - sg4::Engine::get_clock());
    comms.push_back(f.direct ? links_.direct_send(me, f.to, f.payload, f.wire)
                             : links_.put(me, f.to, f.payload, f.wire));
    hops_end = std::max(hops_end, capped_end(f.start + latency_of(me, f), whole_wire(f.wire), f.cap));
  }
  for (auto& cm : comms) cm->wait();
  sleep_for(t0 + hops_end - sg4::Engine::get_clock());
  finished.add(1);
  finished.wait_at_least(k);
}

void CollectiveRun::State::aggregate(int me) {
  if (solved_) {
    // A member joins with the members it stands for (CollectiveLinks::mirrors).
    const double now = sg4::Engine::get_clock();
    joined_at_[static_cast<std::size_t>(me)] = now;
    for (int m : mirrored(me)) joined_at_[static_cast<std::size_t>(m)] = now;
    const int joining = 1 + static_cast<int>(mirrored(me).size());
    joined_ += joining;
    if (joined_ == k) end_ = solve_call();
    all_joined_.add(joining);
    all_joined_.wait_at_least(k);
    sleep_for(end_ - sg4::Engine::get_clock());
    return;
  }
  if (plans_.empty()) {
    plans_.resize(static_cast<std::size_t>(k));
    incoming_.assign(static_cast<std::size_t>(k), 0);
    for (int r = 0; r < k; ++r) plans_[static_cast<std::size_t>(r)] = plan(r);
    local_hops();
    for (const auto& flows : plans_)
      for (const Flow& f : flows)
        if (!f.local && !f.direct) ++incoming_[static_cast<std::size_t>(f.to)];
  }
  phase(me, std::move(plans_[static_cast<std::size_t>(me)]));
}

double CollectiveRun::State::solve_call() {
  const double first = *std::min_element(joined_at_.begin(), joined_at_.end());
  SolvedCalls::Key key{coll, bytes_, root, choice.algorithm, choice.protocol, {}};
  key.joined.reserve(static_cast<std::size_t>(k));
  for (double t : joined_at_) key.joined.push_back(t - first);
  if (links_.solved) {
    if (const SolvedCalls::Result* same = links_.solved->find(key)) {
      links_.record_totals(*same);
      return first + same->span;
    }
  }
  // The call's bytes add up in `result` (per member, per link direction) and are counted once,
  // as a later call alike counts them.
  SolvedCalls::Result result;
  result.out.assign(static_cast<std::size_t>(k), 0.0);
  result.in.assign(static_cast<std::size_t>(k), 0.0);
  std::unordered_map<const sg4::Link*, double> wire_on;
  plans_.resize(static_cast<std::size_t>(k));
  for (int r = 0; r < k; ++r) plans_[static_cast<std::size_t>(r)] = plan(r);
  local_hops();
  double end = *std::max_element(joined_at_.begin(), joined_at_.end());
  std::unordered_map<const sg4::Link*, int> index;
  std::vector<FluidLink> fluid_links;
  std::vector<FluidFlow> flows;
  for (int r = 0; r < k; ++r) {
    const double t0 = joined_at_[static_cast<std::size_t>(r)];
    for (const Flow& f : plans_[static_cast<std::size_t>(r)]) {
      const auto& route = route_of(r, f);
      result.out[static_cast<std::size_t>(r)] += f.payload;
      result.in[static_cast<std::size_t>(f.to)] += f.payload;
      for (const sg4::Link* l : route) wire_on[l] += whole_wire(f.wire);
      if (f.local) {
        end = std::max(end, t0 + f.start + f.duration);
        continue;
      }
      FluidFlow x;
      const double latency = latency_of(r, f);
      x.start = std::max(t0 + f.start, joined_at_[static_cast<std::size_t>(f.to)]) + latency;
      x.bytes = whole_wire(f.wire);
      x.weight = 1.0;  // every flow alike, as SimGrid shares them here (platform.cpp, kNominalLatency_s)
      end = std::max(end, capped_end(t0 + f.start + latency, whole_wire(f.wire), f.cap));
      for (const sg4::Link* l : route) {
        const auto [it, fresh] = index.try_emplace(l, static_cast<int>(fluid_links.size()));
        if (fresh) {
          fluid_links.push_back({l->get_bandwidth(), l->get_sharing_policy() == sg4::Link::SharingPolicy::FATPIPE});
        }
        x.links.push_back(it->second);
      }
      flows.push_back(std::move(x));
    }
  }
  for (double e : fluid_ends(fluid_links, flows)) end = std::max(end, e);
  plans_.clear();
  result.span = end - first;
  result.wire.assign(wire_on.begin(), wire_on.end());
  links_.record_totals(result);
  if (links_.solved) links_.solved->add(std::move(key), std::move(result));
  return end;
}

void CollectiveRun::State::local_hops() {
  using Link = const sg4::Link*;
  std::unordered_set<Link> flowing;
  for (int r = 0; r < k; ++r)
    for (const Flow& f : plans_[static_cast<std::size_t>(r)])
      if (!f.local) {
        const auto& route = route_of(r, f);
        flowing.insert(route.begin(), route.end());
      }
  for (bool changed = true; changed;) {
    changed = false;
    for (int r = 0; r < k; ++r) {
      for (Flow& f : plans_[static_cast<std::size_t>(r)]) {
        const auto& route = route_of(r, f);
        if (!f.local || std::none_of(route.begin(), route.end(), [&](Link l) { return flowing.count(l) > 0; }))
          continue;
        f.local = false;
        flowing.insert(route.begin(), route.end());
        changed = true;
      }
    }
  }
  // The closed-form hops share each link with those that cross it at the same time (a pipeline's
  // hops are busy one after another down its depth, each channel at its own place): their
  // durations and overlaps found together, pass after pass from the links' whole bandwidth.
  std::vector<std::pair<int, Flow*>> local;
  for (int r = 0; r < k; ++r)
    for (Flow& f : plans_[static_cast<std::size_t>(r)])
      if (f.local) local.emplace_back(r, &f);
  std::vector<LinkShares> share(local.size());
  for (int pass = 0; pass < kFillPasses; ++pass) {
    std::vector<Busy> busy;
    busy.reserve(local.size());
    for (std::size_t i = 0; i < local.size(); ++i) {
      const auto [r, f] = local[i];
      f->duration = latency_of(r, *f) + whole_wire(f->wire) / shared_rate(route_of(r, *f), share[i]);
      busy.push_back({&route_of(r, *f), f->start, f->start + f->duration, 1.0});
    }
    if (pass + 1 < kFillPasses) share = overlaps(busy);
  }
}

auto CollectiveRun::State::plan(int me) -> std::vector<Flow> {
  const double S = bytes_;
  const auto channels = static_cast<double>(C());
  if (nvls()) {
    if (nvls_nodes_.nodes.empty()) nvls_nodes_ = nvls_nodes(*links_.channels, *links_.topo);
    std::vector<Flow> flows;
    for (const NvlsFlow& f : nvls_flows(me, S, nvls_nodes_, *links_.channels->nvls, choice, links_.direct_bandwidth)) {
      Flow x{f.to, f.payload, f.wire};
      x.direct = f.direct;
      x.cap = f.cap;
      flows.push_back(x);
    }
    return flows;
  }
  switch (coll) {
    case Collective::kAllreduce:
      if (choice.algorithm == Algorithm::kTree) return aggregate_tree(me);
      return aggregate_ring(me, 2 * (k - 1), S / (k * channels));
    case Collective::kReduceScatter:
      return aggregate_ring(me, k - 1, S / (k * channels));
    case Collective::kAllgather:
      return aggregate_ring(me, k - 1, S / channels);
    case Collective::kBroadcast:
    case Collective::kReduce:
      return aggregate_chain(me);
  }
  return {};
}

auto CollectiveRun::State::aggregate_ring(int me, int steps, double chunk) -> std::vector<Flow> {
  const double lat = ring_step_latency(steps);
  double route = 0;
  std::vector<Flow> flows;
  for (std::size_t c = 0; c < C(); ++c) route = std::max(route, links_.latency(me, next(c, me)));
  for (std::size_t c : reps_) {
    Flow f{next(c, me), mult_ * steps * chunk, mult_ * steps * whole(chunk)};
    f.cap = channel_rate(mult_);
    flows.push_back(f);
  }
  for (Flow& f : flows) f.start = steps * lat + (steps - 1) * route;
  return flows;
}

auto CollectiveRun::State::aggregate_chain(int me) -> std::vector<Flow> {
  const bool bcast = coll == Collective::kBroadcast;
  const double per_channel = bytes_ / static_cast<double>(C());
  const auto J = static_cast<double>(chunk_count(per_channel));
  chain_offsets(per_channel);
  std::vector<Flow> flows;
  for (std::size_t c : reps_) {
    const int to = next(c, me);
    if (!(bcast ? to != root : me != root)) continue;
    const double route = links_.latency(me, to);
    Flow f{to, mult_ * per_channel, mult_ * chunk_wire(per_channel),
           offset_[c][static_cast<std::size_t>(me)] + pipeline_pause(J, out_latency(c, me), route)};
    f.cap = channel_rate(mult_);
    flows.push_back(f);
  }
  return flows;
}

void CollectiveRun::State::chain_offsets(double per_channel) {
  if (!offset_.empty()) return;
  const bool bcast = coll == Collective::kBroadcast;
  offset_.assign(C(), std::vector<double>(static_cast<std::size_t>(k), 0.0));
  std::vector<std::pair<int, int>> hop;  // (from, to), channel by channel from its first member
  std::vector<std::size_t> hop_channel;
  for (std::size_t c : reps_) {
    int r = bcast ? root : next(c, root);
    for (int i = 0; i + 1 < k; ++i) {
      hop.emplace_back(r, next(c, r));
      hop_channel.push_back(c);
      r = next(c, r);
    }
  }
  const double cb = std::min(chunk_bytes(choice.protocol), per_channel);
  std::vector<LinkShares> share(hop.size());
  for (int pass = 0; pass < kFillPasses; ++pass) {
    std::vector<Busy> busy;
    busy.reserve(hop.size());
    double t = 0;
    for (std::size_t h = 0; h < hop.size(); ++h) {
      const auto [a, b] = hop[h];
      if (h == 0 || hop_channel[h] != hop_channel[h - 1]) t = 0;
      offset_[hop_channel[h]][static_cast<std::size_t>(a)] = t;
      // As at step fidelity, a chunk of a chain's hop takes at least its wire at the channel's rate.
      const double e =
          std::max(chunk_time(a, b, per_channel, share[h]), links_.latency(a, b) + whole(cb) / channel_rate());
      busy.push_back({&links_.route(a, b), t, t + e, mult_});
      t += e;
    }
    share = overlaps(busy);
  }
}

auto CollectiveRun::State::aggregate_tree(int me) -> std::vector<Flow> {
  const double per_channel = bytes_ / static_cast<double>(C());
  const auto J = static_cast<double>(chunk_count(per_channel));
  const double wire = chunk_wire(per_channel);
  tree_offsets(per_channel);
  const TreeLinks& t = trees_[static_cast<std::size_t>(me)];
  std::vector<Flow> flows;
  const auto m = static_cast<std::size_t>(me);
  for (std::size_t c : reps_) {
    if (const int p = t.parent[c]; p >= 0) {
      flows.push_back({p, mult_ * per_channel, mult_ * wire,
                       offset_[c][m] + pipeline_pause(J, link_latency(me, p), links_.latency(me, p)),
                       same_machine(me, p)});
    }
    for (int kid : t.children[c]) {
      flows.push_back({kid, mult_ * per_channel, mult_ * wire,
                       down_[c][m] + pipeline_pause(J, link_latency(me, kid), links_.latency(me, kid)),
                       same_machine(me, kid)});
    }
  }
  return flows;
}

void CollectiveRun::State::tree_offsets(double per_channel) {
  if (!offset_.empty()) return;
  trees_.reserve(static_cast<std::size_t>(k));
  for (int r = 0; r < k; ++r) trees_.push_back(tree_links(r));
  const std::vector<TreeLinks>& all = trees_;
  offset_.assign(C(), {});
  down_.assign(C(), {});
  // Per channel, the members breadth first from the root, and each member's hop to its parent
  // (up) and from it (down) by index into `share`.
  std::vector<std::vector<int>> orders(C());
  for (std::size_t c : reps_) {
    std::vector<int>& order = orders[c];
    for (int r = 0; r < k; ++r)
      if (all[static_cast<std::size_t>(r)].parent[c] < 0) order.push_back(r);
    for (std::size_t i = 0; i < order.size(); ++i)
      for (int kid : all[static_cast<std::size_t>(order[i])].children[c]) order.push_back(kid);
  }
  const auto slot = [&](std::size_t c, int r, bool downward) {
    return (c * static_cast<std::size_t>(k) + static_cast<std::size_t>(r)) * 2 + (downward ? 1 : 0);
  };
  std::vector<LinkShares> share(C() * static_cast<std::size_t>(k) * 2);
  for (int pass = 0; pass < kFillPasses; ++pass) {
    std::vector<Busy> busy;
    std::vector<std::size_t> busy_slot;
    for (std::size_t c : reps_) {
      const std::vector<int>& order = orders[c];
      std::vector<double> up(static_cast<std::size_t>(k), 0.0), dn(static_cast<std::size_t>(k), 0.0);
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        for (int kid : all[static_cast<std::size_t>(*it)].children[c]) {
          const double e = chunk_time(kid, *it, per_channel, share[slot(c, kid, false)]);
          busy.push_back({&links_.route(kid, *it), up[static_cast<std::size_t>(kid)],
                          up[static_cast<std::size_t>(kid)] + e, mult_});
          busy_slot.push_back(slot(c, kid, false));
          up[static_cast<std::size_t>(*it)] =
              std::max(up[static_cast<std::size_t>(*it)], up[static_cast<std::size_t>(kid)] + e);
        }
      }
      for (int r : order) {
        const int p = all[static_cast<std::size_t>(r)].parent[c];
        if (p < 0) {
          dn[static_cast<std::size_t>(r)] = up[static_cast<std::size_t>(r)];
          continue;
        }
        const double e = chunk_time(p, r, per_channel, share[slot(c, r, true)]);
        dn[static_cast<std::size_t>(r)] = dn[static_cast<std::size_t>(p)] + e;
        busy.push_back({&links_.route(p, r), dn[static_cast<std::size_t>(p)], dn[static_cast<std::size_t>(r)], mult_});
        busy_slot.push_back(slot(c, r, true));
      }
      offset_[c] = std::move(up);
      down_[c] = std::move(dn);
    }
    const std::vector<LinkShares> found = overlaps(busy);
    for (std::size_t i = 0; i < found.size(); ++i) share[busy_slot[i]] = found[i];
  }
}

}  // namespace gradsync::sim
