// advice.cpp: the changes simulated in child processes (sim/isolate.cpp), several at once.
#include "sim/advice.hpp"

#include <poll.h>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core/bucket_plan.hpp"
#include "core/error.hpp"
#include "core/scenario_keys.hpp"
#include "models/op_cost.hpp"
#include "models/scenario_basics.hpp"
#include "models/step_costs.hpp"
#include "sim/resolved.hpp"
#include "sim/simulate.hpp"

namespace gradsync::sim {
namespace {

using Clock = std::chrono::steady_clock;

ModelTraits traits_of(const Scenario& s) {
  const Model m = scenario_model(s);
  ModelTraits t;
  t.attention = has_attention(m);
  t.causal = std::any_of(m.ops.begin(), m.ops.end(),
                         [](const Op& op) { return op.attention.has_value() && op.attention->causal; });
  // A non-causal attention that adds to or fills its scores with a second input: a mask (BERT's
  // padding mask, added to the scores before the softmax).
  t.masked = !t.causal && std::any_of(m.ops.begin(), m.ops.end(), [](const Op& op) {
    return op.attn >= 0 && (op.name == "add" || op.name == "masked_fill") && op.in.size() >= 2;
  });
  t.convolution =
      std::any_of(m.layers.begin(), m.layers.end(), [](const Layer& l) { return l.kind == LayerKind::kConv2d; });
  t.batchnorm =
      std::any_of(m.layers.begin(), m.layers.end(), [](const Layer& l) { return l.kind == LayerKind::kBatchNorm; });
  if (products_span_vocabulary(m)) t.vocabulary = vocabulary_size(m);
  t.measured = m.measured.has_value();
  if (t.attention) {
    Scenario flash = s;
    flash.attention = "flash";
    try {
      (void)resolve_scenario(flash, false);
    } catch (const ConfigError&) {
      t.flash = false;  // check_attention_gpu: this GPU (or precision) has no flash kernel
    }
  }
  const auto runs = [&s](const char* precision) {
    Scenario p = s;
    p.precision = precision;
    try {
      (void)resolve_scenario(p, false);
      return true;
    } catch (const ConfigError&) {
      return false;  // not on this GPU or release
    }
  };
  if ((s.precision == "fp16" || s.precision == "fp32") && s.mixed_precision != "master-weights") t.bf16 = runs("bf16");
  if (s.precision == "fp32") {
    // TF32 tensor cores came with Ampere (sm_80): before it allow_tf32 leaves float32 as it is, so
    // the change would be the run itself (a new user's report: V100s were offered "TF32 products").
    const auto tf32_cores = [&s] {
      try {
        const ResolvedScenario r = resolve(s);
        return r.gpu == nullptr || r.gpu->sm_version == 0 || r.gpu->sm_version >= 80;
      } catch (const ConfigError&) {
        return false;
      }
    };
    t.tf32 = !matmul_tf32_by_default(parse_pytorch_version(s.pytorch_version)) && runs("tf32") && tf32_cores();
    t.fp16 = runs("fp16");
  }
  return t;
}

// fill_largest_batch: a "largest batch that fits" change at b, the largest; false when b is the
// run's own batch (nothing to try).
bool fill_largest_batch(const Scenario& resolved, Strategy strategy, std::int64_t b, ChangeResult& c) {
  if (b == resolved.batch_per_gpu) return false;
  if (b == 0) {
    c.status = "failed";
    c.error = "not even batch_per_gpu 1 fits the GPU's memory";
    return true;
  }
  const std::int64_t per_step = static_cast<std::int64_t>(resolved.gpus) * resolved.grad_accum;
  c.change.what = b >= kLargestBatchSearched
                      ? fmt::format("batch_per_gpu {} (the largest gradsync tries; larger ones may fit too)", b)
                      : fmt::format("batch_per_gpu {} (largest that fits)", b);
  c.change.keys = {{"batch_per_gpu", std::to_string(b)}};
  // DataParallel splits the DataLoader's batch across its GPUs; under DDP each rank loads its own.
  c.change.pytorch =
      fmt::format("DataLoader(dataset, batch_size={}){}", strategy == Strategy::kDP ? b * resolved.gpus : b,
                  strategy == Strategy::kDP && resolved.gpus > 1 ? "  # DataParallel splits it across the GPUs" : "");
  c.change.alters = fmt::format("global batch {} instead of {}", b * per_step, resolved.batch_per_gpu * per_step);
  return true;
}

// fill_accumulation: the keys of a "micro-batches that fit, same global batch" change: the run's
// batch_per_gpu B in k micro-batches for the fewest k that divides B and fits (B / k no more than
// `fits`, the largest batch that fits), grad_accum times k, so that the global batch stays; false when
// the run fits, when nothing does, or when no divisor of B fits.
bool fill_accumulation(const Scenario& resolved, Strategy strategy, std::int64_t fits, ChangeResult& c) {
  const std::int64_t whole = resolved.batch_per_gpu;
  if (fits >= whole || fits == 0) return false;
  std::int64_t k = 2;
  while (k <= whole && (whole % k != 0 || whole / k > fits)) ++k;
  if (k > whole) return false;
  const std::int64_t micro = whole / k, accum = resolved.grad_accum * k;
  c.change.what = fmt::format("batch_per_gpu {} x grad_accum {} (same global batch)", micro, accum);
  c.change.keys = {{"batch_per_gpu", std::to_string(micro)}, {"grad_accum", std::to_string(accum)}};
  // DataParallel's DataLoader batch is split across its GPUs; under DDP each rank loads its own,
  // and every micro-batch but the last runs under no_sync() (what grad_accum simulates).
  c.change.pytorch = fmt::format(
      "DataLoader(dataset, batch_size={}); (loss / {}).backward() on {} micro-batches per optimizer.step(){}",
      strategy == Strategy::kDP ? micro * resolved.gpus : micro, accum, accum,
      strategy == Strategy::kDDP && resolved.gpus > 1 ? ", all but the last under model.no_sync()" : "");
  return true;
}

Scenario changed(const Scenario& asked, const Change& c) {
  Scenario s = asked;
  for (const auto& [name, text] : c.keys) {
    const ScenarioKey& k = scenario_key(name);
    set_key(s, k, text == kUnsetValue ? key_value(Scenario{}, k) : parse_key_value(k, text));
  }
  return s;
}

void record(ChangeResult& c, const StrategyResult& r, double base_samples_per_s) {
  if (!r.skipped.empty() || !r.failed.empty()) {
    c.status = "failed";
    c.error = r.skipped.empty() ? r.failed : r.skipped;
    return;
  }
  c.steady_s = r.steady_iteration_time_s;
  c.samples_per_s = r.samples_per_s;
  c.gain = base_samples_per_s > 0 ? r.samples_per_s / base_samples_per_s - 1 : 0;
  bool oom = false;
  for (const GpuResult& g : r.per_gpu) {
    if (g.peak_memory_bytes >= c.peak_memory_bytes) {
      c.peak_memory_bytes = g.peak_memory_bytes;
      c.capacity_bytes = g.capacity_bytes;
    }
    oom = oom || g.oom;
  }
  c.status = oom ? "oom" : "ok";
}

// same_buckets: two bucket schedules that put the same parameters in the same buckets, in every
// iteration: DDP runs them alike, whatever cap made them.
bool same_buckets(const BucketSchedule& a, const BucketSchedule& b) {
  const auto same = [](const BucketPlan& x, const BucketPlan& y) {
    return std::equal(x.buckets.begin(), x.buckets.end(), y.buckets.begin(), y.buckets.end(),
                      [](const Bucket& p, const Bucket& q) { return p.params == q.params; });
  };
  return a.rebuild_iteration == b.rebuild_iteration && same(a.initial, b.initial) && same(a.rebuilt, b.rebuilt);
}

// BucketCaps: the bucket schedules that the run and the bucket caps tried so far make, so that a
// cap that makes one of them again (5 and 10 MiB on a model whose gradients are each over 10 MiB
// or a few hundred KiB) is not tried, nor shown, twice.
class BucketCaps {
 public:
  BucketCaps(const Scenario& asked, Strategy strategy) {
    if (strategy != Strategy::kDDP) return;
    const ResolvedScenario r = resolve(asked);
    model_ = to_step_model(r.model, r.precision, r.seq_len);
    seen_.push_back(bucket_schedule(*model_, buckets_of(asked)));
  }
  // fresh: whether `c`, a change of bucket_cap_mb alone, makes buckets not seen yet (and records
  // them); true for any other change.
  bool fresh(const Scenario& asked, const Change& c) {
    if (!model_ || c.keys.size() != 1 || c.keys.front().first != "bucket_cap_mb" || c.strategy) return true;
    BucketSchedule s = bucket_schedule(*model_, buckets_of(changed(asked, c)));
    if (std::any_of(seen_.begin(), seen_.end(), [&](const BucketSchedule& o) { return same_buckets(s, o); }))
      return false;
    seen_.push_back(std::move(s));
    return true;
  }

 private:
  std::optional<StepModel> model_;
  std::vector<BucketSchedule> seen_;
};

}  // namespace

Advice advise(const Scenario& requested, const StrategyResult& run, const AdviceOptions& o) {
  Advice a;
  a.strategy = run.strategy;
  a.steady_s = run.steady_iteration_time_s;
  a.samples_per_s = run.samples_per_s;
  a.budget_s = o.budget_s;
  for (const GpuResult& g : run.per_gpu) a.oom = a.oom || g.oom;
  const Scenario resolved = resolve_scenario(requested, run.strategy == Strategy::kDDP);
  // A global batch asked for is the run's per-GPU batch from here on: a change of grad_accum alone
  // keeps each GPU's batch (its global batch grows, as its note says), one of the batch sets it.
  Scenario asked = requested;
  if (asked.global_batch > 0) {
    asked.batch_per_gpu = resolved.batch_per_gpu;
    asked.global_batch = 0;
  }
  // The largest batch that fits (a search of the memory model), once per strategy for the changes
  // that need it.
  std::map<Strategy, std::int64_t> fits;
  const auto largest = [&](Strategy st) {
    const auto f = fits.find(st);
    return f != fits.end() ? f->second : fits[st] = largest_batch_per_gpu(asked, st);
  };
  BucketCaps caps(asked, run.strategy);
  for (Change& c : candidate_changes(resolved, run.strategy, traits_of(asked))) {
    if (!caps.fresh(asked, c)) continue;
    ChangeResult r;
    r.change = std::move(c);
    const Strategy st = r.change.strategy.value_or(run.strategy);
    if (r.change.largest_batch && !fill_largest_batch(resolved, st, largest(st), r)) continue;
    if (r.change.accumulate_to_fit && !fill_accumulation(resolved, st, largest(st), r)) continue;
    a.changes.push_back(std::move(r));
  }

  struct Running {
    std::size_t index;
    std::unique_ptr<IsolatedSimulation> child;
  };
  // No budget (the default): every change runs, and the advice is the same on every machine.
  const bool limited = std::isfinite(o.budget_s);
  const auto deadline = limited ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(std::max(0.0, o.budget_s)))
                                : Clock::time_point::max();
  std::vector<Running> running;
  std::size_t next = 0;
  auto start_more = [&] {
    while (static_cast<int>(running.size()) < std::max(1, o.jobs) && next < a.changes.size() &&
           Clock::now() < deadline) {
      ChangeResult& c = a.changes[next];
      const std::size_t i = next++;
      if (!c.status.empty()) continue;  // failed before it could run
      try {
        running.push_back({i, std::make_unique<IsolatedSimulation>(changed(asked, c.change),
                                                                   c.change.strategy.value_or(run.strategy), false)});
      } catch (const ConfigError& e) {
        c.status = "failed";
        c.error = e.what();
      }
    }
  };
  start_more();
  while (!running.empty()) {
    const long long left =
        limited ? std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count() : 1000;
    if (left <= 0) break;
    std::vector<pollfd> fds;
    for (const Running& r : running) fds.push_back({r.child->fd(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 1000))) < 0 && errno != EINTR)
      throw RuntimeError(fmt::format("advice: poll: {}", std::strerror(errno)));
    for (std::size_t i = running.size(); i-- > 0;) {
      if (fds[i].revents == 0 || !running[i].child->read_some()) continue;
      Running r = std::move(running[i]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      ChangeResult& c = a.changes[r.index];
      try {
        record(c, r.child->finish(), a.samples_per_s);
      } catch (const Error& e) {
        c.status = "failed";
        c.error = e.what();
      }
    }
    start_more();
  }
  running.clear();  // past the budget: the children still running are killed
  for (ChangeResult& c : a.changes)
    if (c.status.empty()) c.status = "budget";
  rank_changes(a);
  return a;
}

}  // namespace gradsync::sim
