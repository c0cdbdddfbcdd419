// fluid.cpp: progressive filling between events, a heap of the flows' ends.
#include "sim/fluid.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <span>

#include "core/error.hpp"

namespace gradsync::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Flows whose ends lie within this relative distance of each other end together (one solve).
constexpr double kTie = 1e-12;

class Solver {
 public:
  Solver(const std::vector<FluidLink>& links, const std::vector<FluidFlow>& flows)
      : links_(links),
        flows_(flows),
        rate_(flows.size(), 0.0),
        left_(flows.size(), 0.0),
        bound_(flows.size(), kInf),
        since_(flows.size(), 0.0),
        marked_(flows.size(), 0),
        epoch_(flows.size(), 0),
        at_(flows.size(), -1),
        frozen_(flows.size(), 0),
        room_(links.size(), 0.0),
        weights_(links.size(), 0.0),
        count_(links.size(), 0),
        dirty_(links.size(), 0),
        seen_(links.size(), 0) {
    for (std::size_t l = 0; l < links.size(); ++l) {
      if (!(links[l].bandwidth > 0) || !std::isfinite(links[l].bandwidth)) {
        throw RuntimeError(fmt::format("sim: fluid link {} has bandwidth {} B/s; expected a positive finite number", l,
                                       links[l].bandwidth));
      }
    }
    // Once: each flow's shared links and FATPIPE bound, and each shared link's flows (CSR).
    std::vector<int> users(links.size() + 1, 0);
    shared_head_.push_back(0);
    for (std::size_t f = 0; f < flows.size(); ++f) {
      for (int l : flows[f].links) {
        const auto li = static_cast<std::size_t>(l);
        if (links[li].fatpipe) {
          bound_[f] = std::min(bound_[f], links[li].bandwidth);
        } else {
          shared_.push_back(l);
          ++users[li + 1];
        }
      }
      shared_head_.push_back(static_cast<int>(shared_.size()));
    }
    for (std::size_t l = 0; l < links.size(); ++l) users[l + 1] += users[l];
    users_head_ = users;
    users_.resize(shared_.size());
    for (std::size_t f = 0; f < flows.size(); ++f)
      for (int l : shared(static_cast<int>(f)))
        users_[static_cast<std::size_t>(users[static_cast<std::size_t>(l)]++)] = static_cast<int>(f);
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
          // The flows it shared links with may rise at the next solve.
          for (int l : shared(e.flow)) {
            if (!dirty_[static_cast<std::size_t>(l)]) dirty_links_.push_back(l);
            dirty_[static_cast<std::size_t>(l)] = 1;
          }
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
        since_[static_cast<std::size_t>(f)] = flow(f).start;
        joined_.push_back(f);
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
  std::span<const int> shared(int f) const {
    const auto i = static_cast<std::size_t>(f);
    return {shared_.data() + shared_head_[i], static_cast<std::size_t>(shared_head_[i + 1] - shared_head_[i])};
  }
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

  // solve: weighted max-min rates for the active flows that can have changed: those that share a
  // shared link, directly or through other active flows, with a flow that joined or left since
  // the last solve (a part); the others keep rates that a solve of every flow would give them
  // again (max-min rates split over such parts: each part's are its flows' alone). For the part:
  // the bytes each flow moved since it was last solved, its rates by progressive filling (fill),
  // and each flow's end at those rates.
  void solve(double now) {
    gather();
    for (int f : part_) {
      const auto i = static_cast<std::size_t>(f);
      left_[i] = std::max(0.0, left_[i] - rate_[i] * (now - since_[i]));
      since_[i] = now;
    }
    fill();
    for (int f : part_) {
      const auto i = static_cast<std::size_t>(f);
      ++epoch_[i];
      heap_.push({now + left_[i] / rate_[i], f, epoch_[i]});
    }
    solved_with_ = active_.size();
    ended_ = 0;
  }

  // gather: part_, the active flows reachable over shared links from those that joined since the
  // last solve and from the links of those that left.
  void gather() {
    part_.clear();
    const auto visit = [&](int f) {
      const auto i = static_cast<std::size_t>(f);
      if (at_[i] < 0 || marked_[i]) return;
      marked_[i] = 1;
      part_.push_back(f);
    };
    const auto users = [&](int l, auto&& each) {
      const auto li = static_cast<std::size_t>(l);
      for (int u = users_head_[li]; u < users_head_[li + 1]; ++u) each(users_[static_cast<std::size_t>(u)]);
    };
    for (int f : joined_) visit(f);
    joined_.clear();
    for (int l : dirty_links_) {
      dirty_[static_cast<std::size_t>(l)] = 0;
      users(l, visit);
    }
    dirty_links_.clear();
    seen_links_.clear();
    for (std::size_t p = 0; p < part_.size(); ++p) {
      for (int l : shared(part_[p])) {
        if (seen_[static_cast<std::size_t>(l)]) continue;
        seen_[static_cast<std::size_t>(l)] = 1;
        seen_links_.push_back(l);
        users(l, visit);
      }
    }
    for (int l : seen_links_) seen_[static_cast<std::size_t>(l)] = 0;
    for (int f : part_) marked_[static_cast<std::size_t>(f)] = 0;
  }

  void fill() {
    // The shared links the part's flows cross: their room and the flows' weights on them (no
    // active flow outside the part crosses them).
    touched_.clear();
    bounded_.clear();
    for (int f : part_) {
      const auto i = static_cast<std::size_t>(f);
      frozen_[i] = 0;
      if (std::isfinite(bound_[i])) bounded_.push_back(f);
      for (int l : shared(f)) {
        const auto li = static_cast<std::size_t>(l);
        if (count_[li]++ == 0) {
          touched_.push_back(l);
          room_[li] = links_[li].bandwidth;
          weights_[li] = 0;
        }
        weights_[li] += flow(f).weight;
      }
    }
    std::sort(bounded_.begin(), bounded_.end(), [&](int a, int b) {
      return bound_[static_cast<std::size_t>(a)] / flow(a).weight <
             bound_[static_cast<std::size_t>(b)] / flow(b).weight;
    });
    std::size_t unfrozen = part_.size(), b = 0;
    // Progressive filling: the level lambda (a flow's rate is lambda times its weight) rises to
    // the least at which a link fills (its room over its unfrozen flows' weights: the heap's
    // top, kept lazily, since freezing flows only raises the levels of their other links) or a
    // flow meets its FATPIPE bound (bound over weight); those flows keep that rate.
    const auto freeze = [&](int f, double lambda) {
      const auto i = static_cast<std::size_t>(f);
      frozen_[i] = 1;
      rate_[i] = std::min(lambda * flow(f).weight, bound_[i]);
      --unfrozen;
      for (int l : shared(f)) {
        const auto j = static_cast<std::size_t>(l);
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
    levels_.clear();
    for (int j : touched_) levels_.push_back({level(j), j});
    std::make_heap(levels_.begin(), levels_.end(), std::greater<>());
    const auto pop = [&] {
      std::pop_heap(levels_.begin(), levels_.end(), std::greater<>());
      levels_.pop_back();
    };
    while (unfrozen > 0) {
      double link_level = kInf;
      int full = -1;
      while (!levels_.empty()) {
        const auto [lv, j] = levels_.front();
        if (count_[static_cast<std::size_t>(j)] == 0) {
          pop();
          continue;
        }
        if (const double now = level(j); now != lv) {
          pop();
          levels_.push_back({now, j});
          std::push_heap(levels_.begin(), levels_.end(), std::greater<>());
          continue;
        }
        link_level = lv;
        full = j;
        break;
      }
      while (b < bounded_.size() && frozen_[static_cast<std::size_t>(bounded_[b])]) ++b;
      const double flow_level = b < bounded_.size() ? bound_level(bounded_[b]) : kInf;
      const double lambda = std::min(link_level, flow_level);
      if (!(lambda > 0) || !std::isfinite(lambda)) {
        throw RuntimeError(fmt::format("sim: fluid flows found a fair level of {}; expected a positive rate", lambda));
      }
      if (flow_level <= link_level) {
        freeze(bounded_[b++], lambda);
        continue;
      }
      pop();
      for (int u = users_head_[static_cast<std::size_t>(full)]; u < users_head_[static_cast<std::size_t>(full) + 1];
           ++u) {
        const auto i = static_cast<std::size_t>(users_[static_cast<std::size_t>(u)]);
        if (at_[i] >= 0 && !frozen_[i]) freeze(users_[static_cast<std::size_t>(u)], lambda);
      }
    }
    // Every flow of the part is frozen, so every touched link's count is back to 0.
  }

  const std::vector<FluidLink>& links_;
  const std::vector<FluidFlow>& flows_;
  std::vector<double> rate_, left_, bound_;
  std::vector<double> since_;  // per flow: when left_ was last brought up to date
  std::vector<char> marked_;   // per flow, during gather
  std::vector<unsigned> epoch_;
  std::vector<int> at_;                         // per flow: its place in active_, -1 when not active
  std::vector<char> frozen_;                    // per flow, during fill
  std::vector<double> room_, weights_;          // per link during fill: bandwidth left, unfrozen flows' weights
  std::vector<int> count_;                      // per link during fill: unfrozen flows crossing it
  std::vector<char> dirty_, seen_;              // per link: a flow on it left since the last solve; seen by gather
  std::vector<int> dirty_links_, seen_links_;   // the links so marked
  std::vector<int> joined_, part_;              // flows that joined since the last solve; the flows a solve solves
  std::vector<int> active_;                     // the flows moving bytes
  std::vector<int> shared_head_, shared_;       // per flow: its shared links (CSR)
  std::vector<int> users_head_, users_;         // per shared link: the flows crossing it (CSR)
  std::vector<int> touched_, bounded_;          // during fill: links the active flows cross; flows with a bound
  std::vector<std::pair<double, int>> levels_;  // during fill: (level, touched link), a min-heap
  std::priority_queue<End, std::vector<End>, std::greater<>> heap_;
  std::size_t solved_with_ = 0;  // active flows at the last solve
  std::size_t ended_ = 0;        // flows that ended since
};

}  // namespace

std::vector<double> fluid_ends(const std::vector<FluidLink>& links, const std::vector<FluidFlow>& flows) {
  return Solver(links, flows).run();
}

}  // namespace gradsync::sim
