// measured_loader.cpp: the `measured:` section of a model file (models/measured_loader.hpp).
#include "models/measured_loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gradsync {
namespace {

// kMaxMeasuredGradAccum: the most micro-steps per optimizer step a measured section may give, as the
// scenario key grad_accum takes (2^16).
constexpr std::int64_t kMaxMeasuredGradAccum = std::int64_t{1} << 16;

}  // namespace

// read_measured_section: the section that `models import-trace` writes: the step's phases and
// each layer's share, the layers named in the model's order.
void read_measured_section(const YamlReader& r, const YAML::Node& node, Model& m) {
  if (!node.IsMap()) r.fail(node, "measured", "expected a mapping (written by gradsync models import-trace)");
  r.only_keys(node, "measured",
              {"trace", "device", "precision", "optimizer", "grad_accum", "batch", "seq_len", "steps",
               "optimizer_steps", "step_s", "forward_s", "backward_s", "optimizer_s", "other_s", "layers"});
  MeasuredStep ms;
  ms.trace = r.string(r.required(node, "measured", "trace"), "measured", "trace");
  ms.device = r.string(r.required(node, "measured", "device"), "measured", "device");
  if (node["precision"]) {
    const std::string p = r.string(node["precision"], "measured", "precision");
    try {
      ms.precision = parse_precision(p);
    } catch (const ConfigError& e) {
      r.fail(node["precision"], "measured", e.what());
    }
  }
  if (node["optimizer"]) {
    // What the trace stepped, as --optimizer names it (the default of the model's runs).
    const std::string o = r.string(node["optimizer"], "measured", "optimizer");
    if (o != "sgd" && o != "sgd-momentum" && o != "adam" && o != "adamw")
      r.fail(node["optimizer"], "measured",
             fmt::format("optimizer \"{}\": expected sgd, sgd-momentum, adam or adamw (the torch.optim class the "
                         "trace stepped)",
                         o));
    ms.optimizer = o;
  }
  if (node["grad_accum"]) {
    const std::int64_t g = r.positive_int(node["grad_accum"], "measured", "grad_accum");
    if (g > kMaxMeasuredGradAccum)
      r.fail(node["grad_accum"], "measured",
             fmt::format("grad_accum {}: expected micro-steps per optimizer step from 1 to {}, as --grad-accum takes "
                         "them",
                         g, kMaxMeasuredGradAccum));
    ms.grad_accum = static_cast<int>(g);
  }
  ms.batch = r.positive_int(r.required(node, "measured", "batch"), "measured", "batch");
  if (node["seq_len"]) {
    if (!m.default_seq_len) r.fail(node["seq_len"], "measured", "seq_len given, but the model has no sequence length");
    ms.seq_len = r.positive_int(node["seq_len"], "measured", "seq_len");
  }
  ms.steps = static_cast<int>(
      std::min<std::int64_t>(r.positive_int(r.required(node, "measured", "steps"), "measured", "steps"), 1 << 30));
  ms.step_s = r.positive_number(r.required(node, "measured", "step_s"), "measured", "step_s");
  ms.forward_s = r.non_negative_number(r.required(node, "measured", "forward_s"), "measured", "forward_s");
  ms.backward_s = r.non_negative_number(r.required(node, "measured", "backward_s"), "measured", "backward_s");
  ms.optimizer_s = r.non_negative_number(r.required(node, "measured", "optimizer_s"), "measured", "optimizer_s");
  // Written only where fewer steps than all hold an optimizer step (gradient accumulation).
  ms.optimizer_steps = ms.optimizer_s > 0 ? ms.steps : 0;
  if (node["optimizer_steps"]) {
    const std::int64_t k = r.positive_int(node["optimizer_steps"], "measured", "optimizer_steps");
    if (k > ms.steps)
      r.fail(node["optimizer_steps"], "measured",
             fmt::format("optimizer_steps {}: expected at most steps ({}), the steps that hold an optimizer step", k,
                         ms.steps));
    ms.optimizer_steps = static_cast<int>(k);
  }
  ms.other_s = r.non_negative_number(r.required(node, "measured", "other_s"), "measured", "other_s");
  const double parts = ms.forward_s + ms.backward_s + ms.optimizer_s + ms.other_s;
  if (std::abs(parts - ms.step_s) > 1e-3 * ms.step_s + 1e-9) {
    r.fail(node, "measured",
           fmt::format("forward_s + backward_s + optimizer_s + other_s is {:.6g} s, but step_s is {:.6g} s; they "
                       "must agree",
                       parts, ms.step_s));
  }
  const YAML::Node layers = r.required(node, "measured", "layers");
  if (!layers.IsSequence() || layers.size() != m.layers.size()) {
    r.fail(layers, "measured",
           fmt::format("layers: expected a list of {} entries {{name, forward_s, backward_s}}, one per layer in the "
                       "model's order",
                       m.layers.size()));
  }
  double fwd = 0, bwd = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const YAML::Node l = layers[i];
    const std::string where = fmt::format("measured layers[{}] \"{}\"", i, m.layers[i].name);
    if (!l.IsMap()) r.fail(l, where, "expected a mapping {name, forward_s, backward_s}");
    r.only_keys(l, where, {"name", "forward_s", "backward_s"});
    const std::string name = r.string(r.required(l, where, "name"), where, "name");
    if (name != m.layers[i].name) {
      r.fail(l["name"], where,
             fmt::format("name \"{}\" is not layer {} of the model, \"{}\"", name, i, m.layers[i].name));
    }
    m.layers[i].measured_forward_s = r.non_negative_number(r.required(l, where, "forward_s"), where, "forward_s");
    m.layers[i].measured_backward_s = r.non_negative_number(r.required(l, where, "backward_s"), where, "backward_s");
    fwd += m.layers[i].measured_forward_s;
    bwd += m.layers[i].measured_backward_s;
  }
  if (std::abs(fwd - ms.forward_s) > 1e-3 * ms.step_s + 1e-9 ||
      std::abs(bwd - ms.backward_s) > 1e-3 * ms.step_s + 1e-9) {
    r.fail(layers, "measured",
           fmt::format("the layers' times add up to forward {:.6g} s and backward {:.6g} s, not the step's "
                       "forward_s {:.6g} s and backward_s {:.6g} s",
                       fwd, bwd, ms.forward_s, ms.backward_s));
  }
  m.measured = std::move(ms);
}

}  // namespace gradsync
