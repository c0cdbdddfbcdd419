// collective_run.cpp: one collective call among its members: NCCL's handshakes and latency,
// then ring steps (step fidelity) or aggregate flows (collectives/aggregate.cpp), chains and trees
// chunk by chunk (collectives/step.cpp).
#include "sim/collective_run.hpp"

#include <fmt/format.h>

#include "sim/collective_run_state.hpp"

namespace gradsync::sim {

void CollectiveRun::State::find_repeats() {
  const bool trees = choice.algorithm == Algorithm::kTree;
  const auto same = [&](std::size_t a, std::size_t b) {
    return (!trees || a % 2 == b % 2) && ring(a).order == ring(b).order && ring(a).chains == ring(b).chains;
  };
  std::vector<std::size_t> reps, size;
  for (std::size_t c = 0; c < C(); ++c) {
    std::size_t i = 0;
    while (i < reps.size() && !same(reps[i], c)) ++i;
    if (i == reps.size()) {
      reps.push_back(c);
      size.push_back(0);
    }
    ++size[i];
  }
  const bool even = std::all_of(size.begin(), size.end(), [&](std::size_t n) { return n == size.front(); });
  if (even && !reps.empty()) {
    reps_ = std::move(reps);
    mult_ = static_cast<double>(size.front());
  } else {
    for (std::size_t c = 0; c < C(); ++c) reps_.push_back(c);
    mult_ = 1;
  }
}

int CollectiveRun::State::next(std::size_t c, int r) const {
  const auto& o = ring(c).order;
  return o[static_cast<std::size_t>((pos(c, r) + 1) % k)];
}

void CollectiveRun::State::run(int me) {
  if (k <= 1) return;
  if (!mirrored(me).empty() && !solved_)
    throw MirrorBroken(fmt::format("sim: a {} call of {} members is not solved; rank {}'s mirrors cannot join it",
                                   collective_name(coll), k, me));
  // The handshakes NCCL's chunking adds to its model (sim/nccl_model.hpp pipeline_sync_s).
  sleep_for(choice.sync_s);
  if (nvls()) {
    // NVLS has no steps: its latency (NCCL's model), then every member's flows at once.
    sleep_for(choice.latency_s);
    aggregate(me);
    return;
  }
  sleep_for(base_latency_s(choice.algorithm, choice.protocol));
  const auto S = bytes_;
  const auto channels = static_cast<double>(C());
  if (fidelity == Fidelity::kAggregate) {
    aggregate(me);
    return;
  }
  switch (coll) {
    case Collective::kAllreduce:
      if (choice.algorithm == Algorithm::kTree) {
        tree(me);
      } else {
        ring_steps(me, 2 * (k - 1), S / (k * channels));
      }
      break;
    case Collective::kReduceScatter:
      ring_steps(me, k - 1, S / (k * channels));
      break;
    case Collective::kAllgather:
      ring_steps(me, k - 1, S / channels);
      break;
    case Collective::kBroadcast:
    case Collective::kReduce:
      chain(me);
      break;
  }
}

void CollectiveRun::State::ring_steps(int me, int steps, double chunk) {
  const double wire = chunk * choice.wire_bytes_per_byte();
  const double lat = ring_step_latency(steps);
  std::vector<sg4::CommPtr> comms(C());
  std::vector<int> to(C());
  double route = 0;  // the slowest channel's route latency: its first byte's, before the cap counts
  for (std::size_t c = 0; c < C(); ++c) {
    to[c] = next(c, me);
    route = std::max(route, links_.latency(me, to[c]));
  }
  for (int s = 0; s < steps; ++s) {
    sleep_for(lat);
    const double t0 = sg4::Engine::get_clock();
    for (std::size_t c = 0; c < C(); ++c) comms[c] = send(me, to[c], chunk, wire);
    for (auto& cm : comms) cm->wait();
    sleep_for(capped_end(t0 + route, whole_wire(wire), channel_rate()) - sg4::Engine::get_clock());
    for (std::size_t c = 0; c < C(); ++c) recv[static_cast<std::size_t>(to[c])].add(1);
    recv[static_cast<std::size_t>(me)].wait_at_least(static_cast<long>(C()) * (s + 1));
  }
}

std::optional<Fidelity> parse_fidelity(std::string_view s) {
  if (s == "step") return Fidelity::kStep;
  if (s == "aggregate") return Fidelity::kAggregate;
  if (s == "auto") return Fidelity::kAuto;
  return std::nullopt;
}

std::string_view fidelity_name(Fidelity f) {
  switch (f) {
    case Fidelity::kStep:
      return "step";
    case Fidelity::kAggregate:
      return "aggregate";
    case Fidelity::kAuto:
      return "auto";
  }
  return "auto";
}

double step_flows(Collective c, double bytes, int members, std::size_t channels, const CollectiveChoice& choice) {
  const double k = members, C = static_cast<double>(std::max<std::size_t>(1, channels));
  const double chunks = std::max(1.0, std::ceil(bytes / C / chunk_bytes(choice.protocol)));
  if (choice.algorithm == Algorithm::kNvls || choice.algorithm == Algorithm::kNvlsTree) return 2 * k;
  switch (c) {
    case Collective::kAllreduce:
      return choice.algorithm == Algorithm::kTree ? 2 * chunks * k * C : 2 * (k - 1) * k * C;
    case Collective::kReduceScatter:
    case Collective::kAllgather:
      return (k - 1) * k * C;
    case Collective::kBroadcast:
    case Collective::kReduce:
      return chunks * (k - 1) * C;
  }
  return 0;
}

CollectiveRun::CollectiveRun(CollectiveLinks links, Collective c, Bytes bytes, int root, int members,
                             CollectiveChoice choice, Fidelity fidelity)
    : s_(std::make_unique<State>(std::move(links), c, bytes, root, members, choice, fidelity)) {}

CollectiveRun::~CollectiveRun() = default;

void CollectiveRun::run(int me) { s_->run(me); }

}  // namespace gradsync::sim
