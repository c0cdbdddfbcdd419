// fluid.cpp: progressive filling between events, a heap of the flows' ends.
#include "sim/fluid.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>

#include "core/error.hpp"

namespace gradsync::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Fair shares within this relative distance of the smallest are frozen together (the solve's
// rounding must not split one bottleneck into two rounds), as are ends within it of each other.
constexpr double kTie = 1e-12;

class Solver {
 public:
  Solver(const std::vector<FluidLink>& links, const std::vector<FluidFlow>& flows)
      : links_(links),
        flows_(flows),
        rate_(flows.size(), 0.0),
        left_(flows.size(), 0.0),
        bound_(flows.size(), kInf),
        epoch_(flows.size(), 0),
        at_(flows.size(), -1),
        frozen_(flows.size(), 0),
        local_(links.size(), -1) {
    for (std::size_t l = 0; l < links.size(); ++l) {
      if (!(links[l].bandwidth > 0) || !std::isfinite(links[l].bandwidth)) {
        throw RuntimeError(fmt::format("sim: fluid link {} has bandwidth {} B/s; expected a positive finite number", l,
                                       links[l].bandwidth));
      }
    }
  }

  std::vector<double> run() {
    const std::size_t n = flows_.size();
    std::vector<double> end(n, kInf);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return flow(a).start < flow(b).start; });
    std::size_t next = 0;
    while (next < n || !active_.empty()) {
      while (!heap_.empty() && stale(heap_.top())) heap_.pop();
      const double t_start = next < n ? flow(order[next]).start : kInf;
      const double t_end = heap_.empty() ? kInf : heap_.top().time;
      if (t_end <= t_start) {
        // Every flow ending with the earliest (within kTie) leaves; the others keep their rates
        // until enough have left to solve again.
        const double until = t_end + kTie * std::abs(t_end);
        while (!heap_.empty() && (stale(heap_.top()) || heap_.top().time <= until)) {
          const End e = heap_.top();
          heap_.pop();
          if (stale(e)) continue;
          end[static_cast<std::size_t>(e.flow)] = e.time;
          leave(e.flow);
          ++ended_;
        }
        if (!active_.empty() && (solved_with_ <= static_cast<std::size_t>(kFluidExactFlows) ||
                                 ended_ * static_cast<std::size_t>(kFluidExactFlows) >= solved_with_)) {
          solve(t_end);
        }
        continue;
      }
      // Flows starting now join, and every active flow's rate is solved again.
      while (next < n && flow(order[next]).start <= t_start) {
        const int f = order[next++];
        if (!(flow(f).weight > 0) || !std::isfinite(flow(f).weight)) {
          throw RuntimeError(
              fmt::format("sim: fluid flow {} has weight {}; expected a positive finite number", f, flow(f).weight));
        }
        if (flow(f).links.empty() || !(flow(f).bytes > 0)) {
          end[static_cast<std::size_t>(f)] = flow(f).start;
          continue;
        }
        left_[static_cast<std::size_t>(f)] = flow(f).bytes;
        rate_[static_cast<std::size_t>(f)] = 0;
        at_[static_cast<std::size_t>(f)] = static_cast<int>(active_.size());
        active_.push_back(f);
      }
      solve(t_start);
    }
    return end;
  }

 private:
  struct End {
    double time;
    int flow;
    unsigned epoch;
    bool operator>(const End& o) const { return time > o.time || (time == o.time && flow > o.flow); }
  };

  const FluidFlow& flow(int f) const { return flows_[static_cast<std::size_t>(f)]; }
  bool stale(const End& e) const {
    const auto f = static_cast<std::size_t>(e.flow);
    return at_[f] < 0 || epoch_[f] != e.epoch;
  }
  void leave(int f) {
    const auto i = static_cast<std::size_t>(at_[static_cast<std::size_t>(f)]);
    const int last = active_.back();
    active_[i] = last;
    at_[static_cast<std::size_t>(last)] = static_cast<int>(i);
    active_.pop_back();
    at_[static_cast<std::size_t>(f)] = -1;
  }

  // solve: the bytes every active flow moved since the last solve, then weighted max-min rates
  // by progressive filling (fill), then each flow's end at those rates.
  void solve(double now) {
    for (int f : active_) {
      const auto i = static_cast<std::size_t>(f);
      left_[i] = std::max(0.0, left_[i] - rate_[i] * (now - solved_at_));
    }
    solved_at_ = now;
    fill();
    for (int f : active_) {
      const auto i = static_cast<std::size_t>(f);
      ++epoch_[i];
      heap_.push({now + left_[i] / rate_[i], f, epoch_[i]});
    }
    solved_with_ = active_.size();
    ended_ = 0;
  }

  void fill() {
    // The shared links the active flows cross, numbered locally, and who crosses each (CSR).
    touched_.clear();
    for (int f : active_) {
      const auto i = static_cast<std::size_t>(f);
      frozen_[i] = 0;
      bound_[i] = kInf;
      for (int l : flow(f).links) {
        const auto li = static_cast<std::size_t>(l);
        if (links_[li].fatpipe) {
          bound_[i] = std::min(bound_[i], links_[li].bandwidth);
        } else if (local_[li] < 0) {
          local_[li] = static_cast<int>(touched_.size());
          touched_.push_back(l);
        }
      }
    }
    const std::size_t L = touched_.size();
    room_.assign(L, 0.0);
    weights_.assign(L, 0.0);
    count_.assign(L, 0);
    head_.assign(L + 1, 0);
    for (std::size_t j = 0; j < L; ++j) room_[j] = links_[static_cast<std::size_t>(touched_[j])].bandwidth;
    for (int f : active_) {
      for (int l : flow(f).links) {
        if (links_[static_cast<std::size_t>(l)].fatpipe) continue;
        const auto j = static_cast<std::size_t>(local_[static_cast<std::size_t>(l)]);
        ++count_[j];
        weights_[j] += flow(f).weight;
      }
    }
    for (std::size_t j = 0; j < L; ++j) head_[j + 1] = head_[j] + count_[j];
    users_.resize(static_cast<std::size_t>(head_[L]));
    std::vector<int> fill_at(head_.begin(), head_.end() - 1);
    for (int f : active_)
      for (int l : flow(f).links)
        if (!links_[static_cast<std::size_t>(l)].fatpipe)
          users_[static_cast<std::size_t>(fill_at[static_cast<std::size_t>(local_[static_cast<std::size_t>(l)])]++)] =
              f;
    bounded_.clear();
    for (int f : active_)
      if (std::isfinite(bound_[static_cast<std::size_t>(f)])) bounded_.push_back(f);
    std::sort(bounded_.begin(), bounded_.end(), [&](int a, int b) {
      return bound_[static_cast<std::size_t>(a)] / flow(a).weight <
             bound_[static_cast<std::size_t>(b)] / flow(b).weight;
    });
    live_.resize(L);
    std::iota(live_.begin(), live_.end(), 0);

    std::size_t unfrozen = active_.size(), b = 0;
    // Each round raises the level lambda (a flow's rate is lambda times its weight) to the
    // least at which a link fills (its room over its unfrozen flows' weights) or a flow meets
    // its FATPIPE bound (bound over weight).
    const auto freeze = [&](int f, double lambda) {
      const auto i = static_cast<std::size_t>(f);
      frozen_[i] = 1;
      rate_[i] = std::min(lambda * flow(f).weight, bound_[i]);
      --unfrozen;
      for (int l : flow(f).links) {
        if (links_[static_cast<std::size_t>(l)].fatpipe) continue;
        const auto j = static_cast<std::size_t>(local_[static_cast<std::size_t>(l)]);
        room_[j] -= rate_[i];
        weights_[j] -= flow(f).weight;
        --count_[j];
      }
    };
    const auto level = [&](int j) {
      const auto i = static_cast<std::size_t>(j);
      return std::max(0.0, room_[i]) / std::max(weights_[i], 1e-300);
    };
    const auto bound_level = [&](int f) { return bound_[static_cast<std::size_t>(f)] / flow(f).weight; };
    while (unfrozen > 0) {
      double lambda = kInf;
      for (int j : live_) lambda = std::min(lambda, level(j));
      while (b < bounded_.size() && frozen_[static_cast<std::size_t>(bounded_[b])]) ++b;
      if (b < bounded_.size()) lambda = std::min(lambda, bound_level(bounded_[b]));
      if (!(lambda > 0) || !std::isfinite(lambda)) {
        throw RuntimeError(fmt::format("sim: fluid flows found a fair level of {}; expected a positive rate", lambda));
      }
      const double tie = lambda * (1 + kTie);
      full_.clear();
      for (int j : live_)
        if (level(j) <= tie) full_.push_back(j);
      for (int j : full_)
        for (int u = head_[static_cast<std::size_t>(j)]; u < head_[static_cast<std::size_t>(j) + 1]; ++u)
          if (!frozen_[static_cast<std::size_t>(users_[static_cast<std::size_t>(u)])])
            freeze(users_[static_cast<std::size_t>(u)], lambda);
      for (; b < bounded_.size() && bound_level(bounded_[b]) <= tie; ++b)
        if (!frozen_[static_cast<std::size_t>(bounded_[b])]) freeze(bounded_[b], lambda);
      live_.erase(
          std::remove_if(live_.begin(), live_.end(), [&](int j) { return count_[static_cast<std::size_t>(j)] == 0; }),
          live_.end());
    }
    for (int l : touched_) local_[static_cast<std::size_t>(l)] = -1;
  }

  const std::vector<FluidLink>& links_;
  const std::vector<FluidFlow>& flows_;
  std::vector<double> rate_, left_, bound_;
  std::vector<unsigned> epoch_;
  std::vector<int> at_;       // per flow: its place in active_, -1 when not active
  std::vector<char> frozen_;  // per flow, during fill
  std::vector<int> local_;    // per link: its index among touched_ during fill, else -1
  std::vector<int> active_;   // the flows moving bytes
  std::vector<int> touched_, live_, full_, bounded_, users_, head_, count_;
  std::vector<double> room_, weights_;  // per touched link: bandwidth left, unfrozen flows' weights
  std::priority_queue<End, std::vector<End>, std::greater<>> heap_;
  double solved_at_ = 0;
  std::size_t solved_with_ = 0;  // active flows at the last solve
  std::size_t ended_ = 0;        // flows that ended since
};

}  // namespace

std::vector<double> fluid_ends(const std::vector<FluidLink>& links, const std::vector<FluidFlow>& flows) {
  return Solver(links, flows).run();
}

}  // namespace gradsync::sim
