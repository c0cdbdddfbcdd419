// published_training.cpp: reading the published single-GPU training table and predicting its
// cases (see published_training.hpp).
#include "sim/published_training.hpp"

#include <fmt/format.h>

#include <set>

#include "core/error.hpp"
#include "core/yaml_reader.hpp"
#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "models/op_cost.hpp"
#include "models/scenario_basics.hpp"
#include "sim/published_table.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync::sim {

std::string_view builtin_training_text() { return builtin_table_text("training_steps.yaml"); }

std::vector<TrainingCase> read_training_cases(std::string_view text, const std::string& origin) {
  const YamlReader r(origin);
  const YAML::Node cases = table_cases(r, r.load(text), "published training", "gradsync-published-training/1");
  std::vector<TrainingCase> out;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const YAML::Node n = cases[i];
    const CaseHeader h =
        case_header(r, n, i, {"id",        "split",        "source",         "source_note",   "model",
                              "gpu",       "batch",        "seq_len",        "precision",     "mode",
                              "attention", "optimizer",    "optimizer_impl", "channels_last", "mixed_precision",
                              "metric",    "quote",        "grad_accum",     "input",         "unsupported",
                              "steady",    "steady_quote", "clip_grad_norm"},
                    ids);
    const std::string& at = h.at;
    TrainingCase c;
    c.line = h.line;
    c.id = h.id;
    c.split = h.split;
    c.source = h.source;
    c.model = r.string(r.required(n, at, "model"), at, "model");
    c.gpu = r.string(r.required(n, at, "gpu"), at, "gpu");
    c.batch = static_cast<long>(r.positive_int(r.required(n, at, "batch"), at, "batch"));
    if (n["seq_len"] && !n["seq_len"].IsNull())
      c.seq_len = static_cast<long>(r.positive_int(n["seq_len"], at, "seq_len"));
    if (n["grad_accum"]) c.grad_accum = static_cast<long>(r.positive_int(n["grad_accum"], at, "grad_accum"));
    c.precision = r.string(r.required(n, at, "precision"), at, "precision");
    const std::string mode = r.string(r.required(n, at, "mode"), at, "mode");
    if (mode != "eager" && mode != "compile")
      r.fail(n["mode"], at, fmt::format("mode \"{}\": expected eager or compile", mode));
    c.compile = mode == "compile";
    c.attention = r.string(r.required(n, at, "attention"), at, "attention");
    if (c.attention == "n/a" || c.attention == "unknown") c.attention = "math";
    c.optimizer = r.string(r.required(n, at, "optimizer"), at, "optimizer");
    if (c.optimizer == "unknown") c.optimizer = "adamw";
    if (n["channels_last"] && n["channels_last"].Scalar() != "unknown") {
      c.channels_last = r.boolean(n["channels_last"], at, "channels_last");
    }
    if (n["mixed_precision"]) {
      const std::string mp = r.string(n["mixed_precision"], at, "mixed_precision");
      if (mp != "autocast" && mp != "master-weights")
        r.fail(n["mixed_precision"], at,
               fmt::format("mixed_precision \"{}\": expected autocast or master-weights", mp));
      c.master_weights = mp == "master-weights";
    }
    const YAML::Node metric = r.required(n, at, "metric");
    if (!metric.IsMap() || metric.size() != 1) r.fail(metric, at, "metric: expected one {name: value}");
    c.metric = metric.begin()->first.as<std::string>();
    static const std::set<std::string> kMetrics = {"samples_per_s", "tokens_per_s", "step_s", "ms_per_3_iterations"};
    if (!kMetrics.count(c.metric)) {
      r.fail(metric, at,
             fmt::format("metric \"{}\": expected samples_per_s, tokens_per_s, step_s or "
                         "ms_per_3_iterations",
                         c.metric));
    }
    c.published = r.positive_number(metric.begin()->second, at, "metric");
    c.figure = c.published;
    if (n["steady"]) {
      // The rate between two of the log's own step timestamps after the first: what is compared.
      const YAML::Node steady = n["steady"];
      if (!steady.IsMap() || steady.size() != 1 || steady.begin()->first.as<std::string>() != c.metric)
        r.fail(steady, at, fmt::format("steady: expected one {{{}: value}}, in the metric's unit", c.metric));
      c.published = r.positive_number(steady.begin()->second, at, "steady");
      c.steady = true;
      r.string(r.required(n, at, "steady_quote"), at, "steady_quote");
    } else if (n["steady_quote"]) {
      r.fail(n["steady_quote"], at, "steady_quote without steady: expected both or neither");
    }
    if (n["optimizer_impl"]) {
      const std::string impl = r.string(n["optimizer_impl"], at, "optimizer_impl");
      // The scenario key's names (--optimizer-impl): for-loop is torch.optim's per-parameter loop.
      if (impl != "for-loop" && impl != "foreach" && impl != "fused" && impl != "apex") {
        r.fail(n["optimizer_impl"], at,
               fmt::format("optimizer_impl \"{}\": expected for-loop, foreach, fused or apex", impl));
      }
      c.optimizer_impl = impl == "for-loop"                  ? OptimizerImpl::kSingleTensor
                         : impl == "fused" || impl == "apex" ? OptimizerImpl::kFused
                                                             : OptimizerImpl::kForEach;
    }
    if (n["input"]) {
      const std::string input = r.string(n["input"], at, "input");
      if (input != "device" && input != "pinned" && input != "pageable")
        r.fail(n["input"], at, fmt::format("input \"{}\": expected device, pinned or pageable", input));
      c.input = input == "pageable" ? InputLocation::kPageable
                : input == "pinned" ? InputLocation::kPinned
                                    : InputLocation::kDevice;
    }
    if (n["clip_grad_norm"]) c.clip_grad_norm = r.boolean(n["clip_grad_norm"], at, "clip_grad_norm");
    if (n["unsupported"]) c.unsupported = r.string(n["unsupported"], at, "unsupported");
    out.push_back(std::move(c));
  }
  return out;
}

TrainingPrediction predict_training(const TrainingCase& c) {
  Model m = load_model(c.model);
  ComputeContext ctx;
  ctx.gpu = &gpu_spec(c.gpu);
  ctx.precision = parse_precision(c.precision);
  if (c.master_weights) half_model(m, ctx.precision);
  ctx.batch = c.batch;
  ctx.seq_len = m.seq_len(c.seq_len > 0 ? std::optional<std::int64_t>(c.seq_len) : std::nullopt);
  ctx.mode = execution_mode(c.compile, c.attention);
  ctx.mode.channels_last = c.channels_last;
  ctx.mode.master_weights = c.master_weights;
  ctx.input = c.input;
  // A single-tensor run is a PyTorch before 2.0, whose zero_grad fills zeros (so that backward
  // adds into the gradients) and whose Adam updates its first moment with mul_ and add_.
  ctx.zero_grad_fill = c.optimizer_impl == OptimizerImpl::kSingleTensor;
  ctx.grads_defined = ctx.zero_grad_fill;
  ctx.lerp_moments = c.optimizer_impl != OptimizerImpl::kSingleTensor;
  ctx.optimizer_impl = c.optimizer_impl;
  // A for-loop optimizer is a PyTorch before 2.0, whose clip_grad_norm_ loops over the gradients too.
  ctx.foreach = c.optimizer_impl != OptimizerImpl::kSingleTensor;
  // fp16 autocast with an optimizer runs under GradScaler (scenario key grad_scaler's auto).
  ctx.grad_scaler = ctx.precision == Precision::kFP16 && !c.master_weights && c.optimizer != "none";
  const ModelCost cost = model_cost(m, ctx);
  // Micro-steps after the first add into the gradients the first left, whatever zero_grad did.
  ComputeContext later_ctx = ctx;
  later_ctx.grads_defined = true;
  const ModelCost later = c.grad_accum > 1 ? model_cost(m, later_ctx) : cost;
  const KernelCost opt = optimizer_cost(m, parse_optimizer(c.optimizer), c.optimizer_impl, ctx);
  TrainingPrediction p;
  // clip_grad_norm_ as PyTorch 1.10 and later run it: the host does not read the norm.
  const ClipStep clip = clip_step(m, ctx, false);
  p.step_s = single_gpu_step_s(cost, opt, c.grad_accum, &later, c.clip_grad_norm ? &clip : nullptr);
  const double samples = static_cast<double>(c.batch * c.grad_accum);
  if (c.metric == "samples_per_s") p.predicted = samples / p.step_s;
  if (c.metric == "tokens_per_s") p.predicted = samples * static_cast<double>(ctx.seq_len) / p.step_s;
  if (c.metric == "step_s") p.predicted = p.step_s;
  if (c.metric == "ms_per_3_iterations") p.predicted = 3e3 * p.step_s;
  p.published = c.published;
  p.cls = model_kind(m);
  return p;
}

}  // namespace gradsync::sim
