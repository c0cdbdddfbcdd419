// buckets_command.cpp: `gradsync buckets --model M`: DDP's bucket plan per iteration, as the
// PyTorch Reducer builds it (core/bucket_plan.hpp).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

#include "apps/cli.hpp"
#include "apps/scenario_args.hpp"
#include "core/bucket_plan.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/pytorch_version.hpp"
#include "core/reducer.hpp"
#include "core/scenario_keys.hpp"
#include "models/compute_cost.hpp"
#include "models/step_costs.hpp"

namespace gradsync::apps {
namespace {

// BucketsOptions: the scenario keys that shape buckets (read by the key table), and the rest.
struct BucketsOptions {
  ScenarioArgs keys;
  bool last_bucket_cap = false;
  bool json = false;
};

// IterationPlan: one printed iteration.
struct IterationPlan {
  int iteration;
  bool steady;
  const BucketPlan* plan;
};

std::vector<IterationPlan> iterations_of(const BucketSchedule& s) {
  // Iterations 1 and 2 always; 3 too when the rebuild comes one iteration later (static graph).
  const int last = std::max(2, s.rebuild_iteration);
  std::vector<IterationPlan> out;
  for (int it = 1; it <= last; ++it) out.push_back({it, it == last, &s.at(it)});
  return out;
}

std::string what_happens(const BucketOptions& b) {
  if (!rebuilds_buckets(b.pytorch))
    return fmt::format("buckets stay as constructed (PyTorch {}: rebuilding came with 1.6)", b.pytorch.text());
  if (!b.rebuilds()) return "buckets stay as constructed (find_unused_parameters: never rebuilt)";
  if (b.static_graph) return "iteration 1 and 2 on the constructed buckets, rebuilt from iteration 2's ready order";
  return "iteration 1 on the constructed buckets, rebuilt from its gradient-ready order for iteration 2 on";
}

void print_text(const StepModel& m, const BucketOptions& b, const BucketSchedule& s, const std::string& note,
                std::ostream& out) {
  const std::size_t trainable = m.trainable().size();
  out << fmt::format("# gradsync buckets: DDP's bucket plan for {} (PyTorch {} rules)\n", m.name, b.pytorch.text());
  std::size_t unused = 0;
  for (std::size_t p : m.trainable()) unused += m.params[p].unused ? 1 : 0;
  // The unused ones get no gradient; DDP still gives each its bucket slot (zeroed).
  out << fmt::format("# {} trainable parameters{}, {} ({} bytes) of bucket space\n", trainable,
                     unused > 0 ? fmt::format(" ({} unused: no gradient, their bucket slots zeroed)", unused) : "",
                     human_bytes(static_cast<double>(m.gradient_bytes())), m.gradient_bytes());
  if (!note.empty()) out << fmt::format("# {}\n", note);
  out << fmt::format(
      "# bucket_cap_mb {}{}, first bucket {}{}, find_unused_parameters {}, static_graph {}\n",
      b.bucket_cap_mb ? fmt::format("{:.10g}", *b.bucket_cap_mb) : "25",
      b.bucket_cap_mb ? fmt::format(" ({})", human_bytes(static_cast<double>(b.bucket_cap_bytes()))) : " (default)",
      human_bytes(static_cast<double>(b.first_bucket_bytes())),
      b.last_bucket_cap ? " (placed last: DDP_SET_LAST_BUCKET_CAP=1)" : "", b.find_unused_parameters, b.static_graph);
  out << fmt::format("# {}\n", what_happens(b));
  for (const IterationPlan& it : iterations_of(s)) {
    out << fmt::format("#\n# iteration {}{}: {} bucket{}\n", it.iteration, it.steady ? " (steady)" : "",
                       it.plan->buckets.size(), it.plan->buckets.size() == 1 ? "" : "s");
    out << fmt::format("# {:>6}  {:>12}  {:>10}  {:>6}  {}\n", "bucket", "bytes", "size", "params", "parameters");
    for (std::size_t i = 0; i < it.plan->buckets.size(); ++i) {
      const Bucket& bk = it.plan->buckets[i];
      std::string names;
      std::size_t line = 0;
      for (std::size_t k = 0; k < bk.params.size(); ++k) {
        const std::string& n = m.params[bk.params[k]].name;
        if (k > 0) {
          names += ",";
          ++line;
          if (line + n.size() > 80) {
            names += fmt::format("\n  {:>6}  {:>12}  {:>10}  {:>6}  ", "", "", "", "");
            line = 0;
          } else {
            names += " ";
            ++line;
          }
        }
        names += n;
        line += n.size();
      }
      out << fmt::format("  {:>6}  {:>12}  {:>10}  {:>6}  {}\n", i, bk.bytes,
                         human_bytes(static_cast<double>(bk.bytes)), bk.params.size(), names);
    }
  }
}

void print_json(const StepModel& m, const BucketOptions& b, const BucketSchedule& s, const std::string& grad_dtype,
                std::ostream& out) {
  nlohmann::ordered_json j;
  j["model"] = m.name;
  j["options"] = {{"bucket_cap_bytes", b.bucket_cap_bytes()}, {"first_bucket_bytes", b.first_bucket_bytes()},
                  {"last_bucket_cap", b.last_bucket_cap},     {"find_unused_parameters", b.find_unused_parameters},
                  {"static_graph", b.static_graph},           {"pytorch_version", b.pytorch.text()}};
  j["gradient_dtype"] = grad_dtype;  // float32 under autocast; the model's 16-bit type under master-weights
  j["gradient_bytes"] = m.gradient_bytes();
  auto& its = j["iterations"] = nlohmann::ordered_json::array();
  for (const IterationPlan& it : iterations_of(s)) {
    nlohmann::ordered_json e;
    e["iteration"] = it.iteration;
    e["steady"] = it.steady;
    auto& buckets = e["buckets"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < it.plan->buckets.size(); ++i) {
      const Bucket& bk = it.plan->buckets[i];
      std::vector<std::string> names;
      for (std::size_t p : bk.params) names.push_back(m.params[p].name);
      buckets.push_back({{"index", i}, {"bytes", bk.bytes}, {"params", names}});
    }
    its.push_back(std::move(e));
  }
  out << json_text(j, 2) << '\n';
}

void run_buckets(const BucketsOptions& o) {
  const Scenario sc = scenario_of(o.keys);
  // The variable PyTorch's DDP reads for it (distributed.py: os.environ.get("DDP_SET_LAST_BUCKET_CAP")):
  // gradsync reads flags, not the shell, and says so rather than ignore it without a word.
  if (const char* v = std::getenv("DDP_SET_LAST_BUCKET_CAP"); v != nullptr && !o.last_bucket_cap)
    std::cerr << fmt::format(
        "note: DDP_SET_LAST_BUCKET_CAP={} is set in this shell and not read: --last-bucket-cap puts the small "
        "bucket last\n",
        v);
  Model model = load_model_arg(sc.model);
  // Gradients have their parameters' dtype: float32 under autocast (whatever the precision), 16 bits
  // when the model itself is (model.half(): mixed_precision master-weights), which halves every
  // bucket's bytes and so changes where buckets close.
  std::string note;
  std::string grad_dtype = "float32";
  if (sc.mixed_precision == "master-weights") {
    if (sc.precision.empty())
      throw UsageError(
          "--mixed-precision master-weights: the model's 16-bit type is --precision bf16 or fp16, which buckets "
          "needs given (it has no GPU to choose it by)");
    const Precision p = parse_precision(sc.precision);
    try {
      half_model(model, p);
    } catch (const ConfigError& e) {
      throw UsageError(fmt::format("--precision {}: {}", sc.precision, e.what()));
    }
    grad_dtype = p == Precision::kBF16 ? "bfloat16" : "float16";
    note = fmt::format("gradients in {} (the model itself in 16 bits: mixed_precision master-weights)", grad_dtype);
  } else if (!sc.precision.empty()) {
    const bool sixteen = sc.precision == "bf16" || sc.precision == "fp16";
    note = fmt::format("--precision {}: {} the parameters and their gradients stay float32: it changes nothing here{}",
                       sc.precision,
                       sixteen                  ? "under autocast"
                       : sc.precision == "tf32" ? "TF32 changes how products compute;"
                                                : "in float32",
                       sixteen ? " (--mixed-precision master-weights makes them 16-bit)" : "");
  }
  const StepModel m = to_step_model(model, Precision::kFP32, std::nullopt);
  BucketOptions b;
  b.bucket_cap_mb = sc.bucket_cap_mb;
  b.first_bucket_mb = sc.first_bucket_mb;
  b.last_bucket_cap = o.last_bucket_cap;
  b.find_unused_parameters = sc.find_unused_parameters;
  b.static_graph = sc.static_graph;
  b.pytorch = parse_pytorch_version(sc.pytorch_version);
  if (b.static_graph && !has_static_graph(b.pytorch)) {
    throw UsageError(
        fmt::format("--static-graph: DDP's static graph exists from PyTorch 1.9 (ddp_model._set_static_graph(); the "
                    "constructor's static_graph=True from 1.11), not {}",
                    b.pytorch.text()));
  }
  // A parameter forward never uses gets no gradient: without find_unused_parameters (or
  // static_graph) DDP's second forward raises, as `simulate` says; there is no plan to show.
  if (!b.find_unused_parameters && !b.static_graph) {
    std::vector<std::string> missing;
    for (std::size_t p : m.trainable())
      if (m.params[p].unused) missing.push_back(fmt::format("{} ({})", p, m.params[p].name));
    if (!missing.empty())
      throw RuntimeError(
          fmt::format("{}: DDP raises at iteration 2: {}", sc.model, unfinished_reduction_error(0, missing)));
  }
  const BucketSchedule s = bucket_schedule(m, b);
  if (o.json) {
    print_json(m, b, s, grad_dtype, std::cout);
  } else {
    print_text(m, b, s, note, std::cout);
  }
}

}  // namespace

void register_buckets_command(CLI::App& app) {
  auto o = std::make_shared<BucketsOptions>();
  CLI::App* cmd = app.add_subcommand("buckets", "DDP's bucket plan per iteration, as PyTorch's Reducer builds it");
  add_scenario_options(cmd, o->keys,
                       {"model", "precision", "mixed_precision", "bucket_cap_mb", "first_bucket_mb",
                        "find_unused_parameters", "static_graph", "pytorch_version"});
  o->keys.given.at("model")->required()->description(std::string(scenario_key("model").help));
  // No GPU here to choose a 16-bit type by: the precision matters only with master-weights.
  o->keys.given.at("precision")
      ->description(
          "bf16 or fp16: the model's 16-bit type under --mixed-precision master-weights, which needs it; under "
          "autocast (the default) gradients stay float32 whatever it is");
  cmd->add_flag("--last-bucket-cap", o->last_bucket_cap, "Put the small bucket last (DDP_SET_LAST_BUCKET_CAP=1)");
  cmd->add_flag("--json", o->json, "Print JSON instead of a table");
  o->keys.quiet = true;  // no NCCL here: the shell's NCCL_* variables change no bucket
  cmd->callback([o] { run_buckets(*o); });
}

}  // namespace gradsync::apps
