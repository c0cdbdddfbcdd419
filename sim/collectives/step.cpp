// step.cpp: step fidelity of a collective call's pipelines (sim/collective_run.hpp): broadcast and
// reduce along each channel's chain and the tree allreduce, chunk by chunk, every chunk a flow.
#include "sim/collective_run_state.hpp"

namespace gradsync::sim {

void CollectiveRun::State::chain(int me) {
  const bool bcast = coll == Collective::kBroadcast;
  const double per_channel_bytes = bytes_ / static_cast<double>(C());
  const double cb = chunk_bytes(choice.protocol);
  const long chunks = std::max(1L, static_cast<long>(std::ceil(per_channel_bytes / cb)));
  const double wf = choice.wire_bytes_per_byte();
  per_channel([&](std::size_t c) {
    const int first = bcast ? root : next(c, root);
    const bool receives = me != first;
    const bool sends = bcast ? next(c, me) != root : me != root;
    const int to = next(c, me);
    const double lat = out_latency(c, me);
    for (long j = 0; j < chunks; ++j) {
      const double chunk = std::min(cb, per_channel_bytes - static_cast<double>(j) * cb);
      if (receives) arrivals(c, me).wait_at_least(j + 1);
      if (!sends) continue;
      sleep_for(lat);
      const double t0 = sg4::Engine::get_clock();
      send(me, to, chunk, chunk * wf)->wait();
      sleep_for(capped_end(t0 + links_.latency(me, to), whole_wire(chunk * wf), channel_rate()) -
                sg4::Engine::get_clock());
      arrivals(c, to).add(1);
    }
  });
}

auto CollectiveRun::State::tree_links(int me) const -> TreeLinks {
  TreeLinks t;
  for (std::size_t c = 0; c < C(); ++c) {
    const auto& tr = links_.channels->trees[c % 2];
    const auto& chains = ring(c).chains;
    const auto [node, at] = where_[c][static_cast<std::size_t>(me)];
    const auto& chn = chains[static_cast<std::size_t>(node)];
    std::vector<int> kids;
    int parent = -1;
    if (at > 0) parent = chn[static_cast<std::size_t>(at - 1)];
    if (at + 1 < static_cast<int>(chn.size())) kids.push_back(chn[static_cast<std::size_t>(at + 1)]);
    if (at == 0) {
      const TreeNode& tn = tr[static_cast<std::size_t>(node)];
      if (tn.parent >= 0) parent = chains[static_cast<std::size_t>(tn.parent)].front();
      for (int child : tn.children)
        if (child >= 0) kids.push_back(chains[static_cast<std::size_t>(child)].front());
    }
    t.parent.push_back(parent);
    t.children.push_back(kids);
  }
  return t;
}

void CollectiveRun::State::tree(int me) {
  const TreeLinks t = tree_links(me);
  const double per_channel_bytes = bytes_ / static_cast<double>(C());
  const double cb = chunk_bytes(choice.protocol);
  const long chunks = std::max(1L, static_cast<long>(std::ceil(per_channel_bytes / cb)));
  const double wf = choice.wire_bytes_per_byte();
  auto chunk_of = [&](long j) { return std::min(cb, per_channel_bytes - static_cast<double>(j) * cb); };
  per_channel([&](std::size_t c) {
    const int parent = t.parent[c];
    const std::vector<int>& kids = t.children[c];
    const auto nkids = static_cast<long>(kids.size());
    // Up: reduce chunk j from the children, pass it to the parent (the root turns it around).
    sg4::ActorPtr up = sg4::Actor::create("tree-up", sg4::this_actor::get_host(), links_.guard([&] {
      const double lat = parent >= 0 ? link_latency(me, parent) : 0.0;
      for (long j = 0; j < chunks; ++j) {
        arrivals(c, me).wait_at_least(nkids * (j + 1));
        if (parent < 0) {
          arrivals_down(c, me).add(1);
          continue;
        }
        sleep_for(lat);
        send(me, parent, chunk_of(j), chunk_of(j) * wf)->wait();
        arrivals(c, parent).add(1);
      }
    }));
    // Down: broadcast chunk j to the children once it came down (or was reduced, at the root).
    double lat = 0;
    for (int kid : kids) lat = std::max(lat, link_latency(me, kid));
    for (long j = 0; j < chunks; ++j) {
      arrivals_down(c, me).wait_at_least(j + 1);
      if (kids.empty()) continue;
      sleep_for(lat);
      std::vector<sg4::CommPtr> comms;
      for (int kid : kids) comms.push_back(send(me, kid, chunk_of(j), chunk_of(j) * wf));
      for (std::size_t i = 0; i < kids.size(); ++i) {
        comms[i]->wait();
        arrivals_down(c, kids[i]).add(1);
      }
    }
    up->join();
  });
}

}  // namespace gradsync::sim
