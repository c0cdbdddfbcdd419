// trace_model_text.cpp: the model file carrying a measured step (trace_import.hpp): the exported
// model's text with a `measured:` section, each layer's share from the roofline.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "core/error.hpp"
#include "models/trace_import.hpp"

namespace gradsync {
namespace {

using json = nlohmann::json;

}  // namespace

std::string imported_model_text(MeasuredStep ms, const TraceImport& opts) {
  const Model m = load_model(opts.model);
  if (m.measured) {
    throw ConfigError(
        fmt::format("model {} already carries a measured step (from {}); import into the model it was "
                    "made from",
                    opts.model, m.measured->trace));
  }
  ms.batch = opts.batch;
  ComputeContext ctx = opts.split;
  ctx.batch = opts.batch;
  if (m.default_seq_len) {
    ms.seq_len = m.seq_len(opts.seq_len > 0 ? std::optional<std::int64_t>(opts.seq_len) : std::nullopt);
    ctx.seq_len = *ms.seq_len;
  }
  m.check_sizes(ctx.seq_len, ctx.batch);
  const ModelCost cost = model_cost(m, ctx);
  auto q = [](const std::string& s) { return json(s).dump(); };
  auto num = [](double v) { return fmt::format("{:.12f}", v); };  // ps; YAML 1.1 readers take it as a float
  std::string out = model_text(opts.model);
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += fmt::format(
      "\n# The step measured in {}, written by gradsync models import-trace: means over {} ProfilerStep#N{}; each\n"
      "# layer's share of forward and backward is its share of the roofline's time on {} in {}.\n",
      q(ms.trace), ms.steps,
      ms.optimizer_steps > 0 && ms.optimizer_steps < ms.steps
          ? fmt::format(" (the optimizer's over the {} that step it)", ms.optimizer_steps)
          : "",
      ctx.gpu->key, precision_name(ctx.precision));
  out += "measured:\n";
  out += fmt::format("  trace: {}\n  device: {}\n  precision: {}\n", q(ms.trace), q(ms.device),
                     precision_name(ctx.precision));
  // The optimizer and the micro-steps per optimizer step: the defaults of the model's runs.
  if (!ms.optimizer.empty()) out += fmt::format("  optimizer: {}\n", ms.optimizer);
  if (ms.grad_accum > 1) out += fmt::format("  grad_accum: {}\n", ms.grad_accum);
  out += fmt::format("  batch: {}\n", ms.batch);
  if (ms.seq_len) out += fmt::format("  seq_len: {}\n", *ms.seq_len);
  out += fmt::format("  steps: {}\n", ms.steps);
  if (ms.optimizer_steps > 0 && ms.optimizer_steps < ms.steps)
    out += fmt::format("  optimizer_steps: {}\n", ms.optimizer_steps);
  out += fmt::format("  step_s: {}\n  forward_s: {}\n  backward_s: {}\n  optimizer_s: {}\n  other_s: {}\n",
                     num(ms.step_s), num(ms.forward_s), num(ms.backward_s), num(ms.optimizer_s), num(ms.other_s));
  out += "  layers:\n";
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    const auto share = [](double part, double whole, std::size_t count) {
      return whole > 0 ? part / whole : 1.0 / static_cast<double>(count);
    };
    out += fmt::format("    - {{name: {}, forward_s: {}, backward_s: {}}}\n", q(m.layers[i].name),
                       num(ms.forward_s * share(cost.layers[i].forward.time_s, cost.forward_s, m.layers.size())),
                       num(ms.backward_s * share(cost.layers[i].backward.time_s, cost.backward_s, m.layers.size())));
  }
  return out;
}

}  // namespace gradsync
