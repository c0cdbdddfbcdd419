// model_loader.cpp: parse and validate model files (see model.hpp and models/README.md for the
// format); the built-in zoo and loading by name or path are model_zoo.cpp.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <sstream>
#include <unordered_map>

#include "core/checked.hpp"
#include "core/embedded_file.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/json_text.hpp"
#include "core/text.hpp"
#include "core/yaml_reader.hpp"
#include "models/buffer_loader.hpp"
#include "models/measured_loader.hpp"
#include "models/model.hpp"
#include "models/op_loader.hpp"

namespace gradsync {

namespace {

// KindSchema lists a layer kind's dims: required ones, and optional ones with their defaults.
struct KindSchema {
  LayerKind kind;
  std::string_view name;
  std::vector<std::string_view> required;
  std::vector<std::pair<std::string_view, std::int64_t>> optional;  // default -1: see fill_defaults
};

const std::vector<KindSchema>& schemas() {
  static const std::vector<KindSchema> kSchemas{
      {LayerKind::kLinear, "linear", {"in", "out"}, {{"tokens", 1}}},
      {LayerKind::kConv2d,
       "conv2d",
       {"in", "out", "kernel", "height", "width"},
       {{"stride", 1}, {"padding", 0}, {"groups", 1}}},
      {LayerKind::kEmbedding, "embedding", {"num", "dim", "tokens"}, {}},
      {LayerKind::kLayerNorm, "layernorm", {"elements"}, {}},
      {LayerKind::kRMSNorm, "rmsnorm", {"elements"}, {}},
      {LayerKind::kBatchNorm, "batchnorm", {"elements", "channels"}, {}},
      {LayerKind::kAttention, "attention", {"heads", "head_dim", "q_len"}, {{"kv_len", -1}, {"kv_heads", -1}}},
      {LayerKind::kActivation, "activation", {"elements"}, {}},
      {LayerKind::kSoftmax, "softmax", {"elements"}, {}},
      {LayerKind::kDropout, "dropout", {"elements"}, {}},
      {LayerKind::kPooling, "pooling", {"in_elements", "out_elements"}, {}},
      {LayerKind::kElementwise, "elementwise", {"elements"}, {}},
      {LayerKind::kLoss, "loss", {"elements"}, {}},
      {LayerKind::kOps, "ops", {}, {}},
  };
  return kSchemas;
}

std::string kind_list() {
  std::vector<std::string_view> names;
  for (const auto& s : schemas()) names.push_back(s.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// read_expr reads an integer or an expression in T ("768*T+768").
SeqExpr read_expr(const YamlReader& r, const YAML::Node& n, const std::string& where, const char* key) {
  if (!n.IsScalar()) r.fail(n, where, fmt::format("field \"{}\" must be an integer or an expression in T", key));
  try {
    return SeqExpr::parse(n.as<std::string>());
  } catch (const ConfigError& e) {
    r.fail(n, where, fmt::format("field \"{}\": {}", key, e.what()));
  }
}

std::string entry(const char* list, std::size_t i, const std::string& name) { return list_entry(list, i, name); }

// check_dims_against_params: a layer costed by its dims (no ops) must describe the parameters it
// lists: a linear layer's weight holds in x out elements and its bias out, a convolution's weight
// out x in/groups x kernel^2, an embedding's table num x dim (checked at the default T).
void check_dims_against_params(const YamlReader& r, const YAML::Node& l, const std::string& where, const Layer& layer,
                               const Model& m, std::int64_t t) {
  if (layer.params.empty()) return;
  const auto dim = [&](const char* k) { return layer.dims.at(k).eval(t); };
  std::vector<std::pair<std::string, std::int64_t>> expected;  // what each listed parameter must hold
  switch (layer.kind) {
    case LayerKind::kLinear:
      expected = {{fmt::format("in x out = {} x {}", dim("in"), dim("out")),
                   gradsync::checked_mul(dim("in"), dim("out"), where + " in x out")},
                  {fmt::format("out = {}", dim("out")), dim("out")}};
      break;
    case LayerKind::kConv2d: {
      const std::int64_t per_group = dim("in") / dim("groups");
      expected = {{fmt::format("out x in/groups x kernel^2 = {} x {} x {}^2", dim("out"), per_group, dim("kernel")),
                   checked_product(std::vector<std::int64_t>{dim("out"), per_group, dim("kernel"), dim("kernel")},
                                   where + " weight elements")},
                  {fmt::format("out = {}", dim("out")), dim("out")}};
      break;
    }
    case LayerKind::kEmbedding:
      expected = {{fmt::format("num x dim = {} x {}", dim("num"), dim("dim")),
                   gradsync::checked_mul(dim("num"), dim("dim"), where + " num x dim")}};
      break;
    default:
      return;
  }
  if (layer.params.size() > expected.size()) {
    r.fail(l["params"], where,
           fmt::format("params: a {} layer without ops lists at most {} parameters (weight{}), not {}",
                       layer_kind_name(layer.kind), expected.size(), expected.size() > 1 ? ", bias" : "",
                       layer.params.size()));
  }
  for (std::size_t i = 0; i < layer.params.size(); ++i) {
    const Parameter& p = m.parameters[layer.params[i]];
    if (p.numel() != expected[i].second) {
      r.fail(l["params"], where,
             fmt::format("parameter \"{}\" has shape [{}] ({} elements), but the layer's {} gives {}", p.name,
                         fmt::join(p.shape, ", "), p.numel(), expected[i].first, expected[i].second));
    }
  }
}

}  // namespace

std::string_view layer_kind_name(LayerKind k) {
  for (const auto& s : schemas()) {
    if (s.kind == k) return s.name;
  }
  return "?";
}

static Model parse_model_unchecked(std::string_view text, const std::string& origin);

// Every error of the file's content is a DataError (exit 1), whoever named the file.
Model parse_model(std::string_view text, const std::string& origin) {
  return as_data_error([&] { return parse_model_unchecked(text, origin); });
}

static Model parse_model_unchecked(std::string_view text, const std::string& origin) {
  const YamlReader r(origin);
  const YAML::Node root = r.load(text);
  if (!root.IsMap()) r.fail(root, "model file", "expected a mapping with name, parameters, layers, ...");
  r.only_keys(root, "model file",
              {"format", "name", "description", "source", "defaults", "input", "output", "parameters", "buffers",
               "unused_parameters", "layers", "measured"});
  const YAML::Node format = r.required(root, "model file", "format");
  const std::string format_text = r.string(format, "model file", "format");
  if (format_text == "gradsync-model/1") {
    r.fail(format, "model file",
           "format gradsync-model/1 (layers only) is no longer read; gradsync reads gradsync-model/2, whose layers "
           "list the aten ops of one forward: export the model again with tools/export_model.py (models/README.md)");
  }
  if (format_text != "gradsync-model/2") {
    r.fail(format, "model file", fmt::format("format \"{}\" is not supported; expected gradsync-model/2", format_text));
  }

  Model m;
  m.origin = origin;
  m.name = r.string(r.required(root, "model file", "name"), "model file", "name");
  // The name is printed in every table and file; it must be something a person can read.
  if (m.name.empty() || m.name.size() > 200 ||
      std::any_of(m.name.begin(), m.name.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }) ||
      has_bidi_control(m.name)) {
    r.fail(root["name"], "model file",
           fmt::format("name {} must be 1 to 200 printable characters (gpt2, my-resnet)",
                       json_text(nlohmann::json(m.name))));  // quoted, its tabs and quotes escaped
  }
  if (root["description"]) m.description = r.string(root["description"], "model file", "description");
  if (root["source"]) m.source = r.string(root["source"], "model file", "source");

  const YAML::Node defaults = r.required(root, "model file", "defaults");
  r.only_keys(defaults, "defaults", {"batch", "seq_len"});
  m.default_batch = r.positive_int(r.required(defaults, "defaults", "batch"), "defaults", "batch");
  if (defaults["seq_len"]) m.default_seq_len = r.positive_int(defaults["seq_len"], "defaults", "seq_len");

  const YAML::Node input = r.required(root, "model file", "input");
  r.only_keys(input, "input", {"what", "bytes", "dtypes"});
  if (input["what"]) m.input_what = r.string(input["what"], "input", "what");
  if (const YAML::Node dt = input["dtypes"]) {
    if (!dt.IsSequence()) r.fail(dt, "input", "dtypes: expected a list of PyTorch dtype names, one per input");
    for (const auto& d : dt) m.input_dtypes.push_back(r.dtype(d, "input dtypes"));
  }
  m.input_bytes = read_expr(r, r.required(input, "input", "bytes"), "input", "bytes");
  const YAML::Node output = r.required(root, "model file", "output");
  r.only_keys(output, "output", {"what", "elements", "loss"});
  if (output["what"]) m.output_what = r.string(output["what"], "output", "what");
  m.output_elements = read_expr(r, r.required(output, "output", "elements"), "output", "elements");
  if (output["loss"]) {
    const std::string loss = r.string(output["loss"], "output", "loss");
    if (loss != "inside" && loss != "outside") {
      r.fail(output["loss"], "output", fmt::format("loss \"{}\" must be inside or outside", loss));
    }
    m.loss_inside = loss == "inside";
  }
  const bool sequence = m.default_seq_len.has_value();
  auto check_t = [&](const SeqExpr& e, const YAML::Node& at, const std::string& where) {
    if (e.depends_on_t() && !sequence) {
      r.fail(at, where, fmt::format("\"{}\" uses T but defaults has no seq_len", e.to_string()));
    }
  };
  check_t(m.input_bytes, input["bytes"], "input");
  check_t(m.output_elements, output["elements"], "output");
  // Sizes at the default T, where they are written (check_sizes below checks the rest).
  const auto non_negative = [&](const SeqExpr& e, const YAML::Node& at, const std::string& where, const char* key) {
    const std::int64_t t = m.seq_len(std::nullopt);
    std::int64_t v = 0;
    try {
      v = e.eval(t);
    } catch (const ConfigError& ex) {
      r.fail(at, where, fmt::format("{}: {}", key, ex.what()));
    }
    if (v < 0) r.fail(at, where, fmt::format("{} \"{}\" is {} at T={}; it must be >= 0", key, e.to_string(), v, t));
  };
  non_negative(m.input_bytes, input["bytes"], "input", "bytes");
  non_negative(m.output_elements, output["elements"], "output", "elements");
  // A model whose loss is computed outside returns what the loss reads (one that returns its loss
  // alone may give 0).
  if (!m.loss_inside && m.output_elements.eval(m.seq_len(std::nullopt)) == 0)
    r.fail(output["elements"], "output",
           "elements is 0 at the default T with loss: outside; expected the output's elements per sample (a "
           "forward that returns its loss is loss: inside: tools/export_model.py's loss_inside=True)");

  // Parameters, in registration order.
  std::unordered_map<std::string, std::size_t> param_index;
  // `parameters:` with nothing under it (YAML's null) is the empty list, refused below as such, at
  // the key's line (a null value's mark is the next token's). Node::reset rebinds a node; `=`
  // would write into the one it refers to.
  const bool none = root["parameters"] && root["parameters"].IsNull();
  YAML::Node params, params_key;
  for (const auto& kv : root)
    if (kv.first.IsScalar() && kv.first.Scalar() == "parameters") params_key.reset(kv.first);
  if (none) {
    params.reset(params_key);
  } else {
    params.reset(r.required(root, "model file", "parameters"));
    if (!params.IsSequence()) r.fail(params, "parameters", "expected a list of {name, shape, ...}");
  }
  for (std::size_t i = 0; !none && i < params.size(); ++i) {
    const YAML::Node p = params[i];
    std::string where = entry("parameters", i, "");
    if (!p.IsMap()) r.fail(p, where, "expected a mapping {name, shape, dtype, requires_grad, sparse_grad}");
    Parameter param;
    param.name = r.string(r.required(p, where, "name"), where, "name");
    where = entry("parameters", i, param.name);
    r.only_keys(p, where, {"name", "shape", "dtype", "requires_grad", "sparse_grad"});
    param.shape = r.shape(r.required(p, where, "shape"), where);
    if (p["dtype"]) param.dtype = r.dtype(p["dtype"], where);
    if (p["requires_grad"]) param.requires_grad = r.boolean(p["requires_grad"], where, "requires_grad");
    if (p["sparse_grad"]) param.sparse_grad = r.boolean(p["sparse_grad"], where, "sparse_grad");
    // PyTorch: "Only Tensors of floating point and complex dtype can require gradients".
    const bool floating = param.dtype == DType::kFloat32 || param.dtype == DType::kFloat16 ||
                          param.dtype == DType::kBFloat16 || param.dtype == DType::kFloat64;
    if (param.requires_grad && !floating) {
      r.fail(p["dtype"], where,
             fmt::format("dtype {} cannot require gradients (PyTorch: only floating point and complex tensors "
                         "can); expected requires_grad: false, or a floating-point dtype",
                         dtype_name(param.dtype)));
    }
    if (!param_index.emplace(param.name, i).second) {
      r.fail(p["name"], where,
             fmt::format("duplicate parameter name \"{}\" (first at parameters[{}])", param.name,
                         param_index[param.name]));
    }
    try {
      (void)param.bytes();  // elements and bytes fit in 64 bits
    } catch (const ConfigError& e) {
      r.fail(p["shape"], where, e.what());
    }
    m.parameters.push_back(std::move(param));
  }
  try {
    (void)m.total_params();
    (void)m.parameter_bytes();
  } catch (const ConfigError& e) {
    r.fail(params, "parameters", e.what());
  }
  // Nothing to train: loss.backward() raises ("element 0 of tensors does not require grad and does
  // not have a grad_fn"), and DistributedDataParallel refuses the module (distributed.py: "is not
  // needed when a module doesn't have any parameter that requires a gradient").
  if (std::none_of(m.parameters.begin(), m.parameters.end(), [](const Parameter& p) { return p.requires_grad; })) {
    r.fail(params_key, "parameters",
           m.parameters.empty()
               ? std::string("none: a model without parameters has nothing to train (PyTorch: loss.backward() "
                             "raises, and DistributedDataParallel refuses a module without a parameter that "
                             "requires a gradient); expected at least one parameter")
               : fmt::format("all {} have requires_grad: false: nothing to train (PyTorch: loss.backward() raises, "
                             "and DistributedDataParallel refuses a module without a parameter that requires a "
                             "gradient); expected at least one trainable parameter",
                             m.parameters.size()));
  }

  if (const YAML::Node bufs = root["buffers"]) read_buffers(r, bufs, m);

  auto lookup_param = [&](const YAML::Node& n, const std::string& where) {
    const std::string name = r.string(n, where, "params");
    const auto it = param_index.find(name);
    if (it == param_index.end()) {
      r.fail(n, where, fmt::format("parameter \"{}\" is not declared under parameters", name));
    }
    return it->second;
  };

  if (const YAML::Node unused = root["unused_parameters"]) {
    if (!unused.IsSequence()) r.fail(unused, "unused_parameters", "expected a list of parameter names");
    for (const auto& u : unused) m.unused_parameters.push_back(lookup_param(u, "unused_parameters"));
  }

  // Layers, in forward order.
  const YAML::Node layers = r.required(root, "model file", "layers");
  if (!layers.IsSequence() || layers.size() == 0) r.fail(layers, "layers", "expected a non-empty list of layers");
  std::set<std::string> layer_names;
  const OpFileReader op_reader(r, m);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const YAML::Node l = layers[i];
    std::string where = entry("layers", i, "");
    if (!l.IsMap()) r.fail(l, where, "expected a mapping {name, kind, params, ...}");
    Layer layer;
    layer.name = r.string(r.required(l, where, "name"), where, "name");
    where = entry("layers", i, layer.name);
    if (!layer_names.insert(layer.name).second)
      r.fail(l["name"], where, fmt::format("duplicate layer name \"{}\"", layer.name));
    const YAML::Node kind = r.required(l, where, "kind");
    const std::string kind_text = r.string(kind, where, "kind");
    const auto schema =
        std::find_if(schemas().begin(), schemas().end(), [&](const KindSchema& s) { return s.name == kind_text; });
    if (schema == schemas().end()) {
      r.fail(kind, where, fmt::format("unknown kind \"{}\"; expected one of {}", kind_text, kind_list()));
    }
    layer.kind = schema->kind;
    if (const YAML::Node ps = l["params"]) {
      if (!ps.IsSequence()) r.fail(ps, where, "params must be a list of parameter names");
      for (const auto& p : ps) layer.params.push_back(lookup_param(p, where));
    }
    if (l["ops"]) {
      op_reader.read_layer(l, where, layer);
    } else if (l["saved"]) {
      r.fail(l["saved"], where, "saved: only a layer with ops lists saved tensors");
    }
    if (layer.kind == LayerKind::kOps && layer.op_count == 0) {
      r.fail(l, where, "a layer of kind ops needs its ops: [...]");
    }
    for (const auto& kv : l) {
      const std::string key = kv.first.as<std::string>();
      if (key == "name" || key == "kind" || key == "params" || key == "ops" || key == "saved") continue;
      if (key == "op") {
        layer.op = r.string(kv.second, where, "op");
        continue;
      }
      if (key == "views") {  // read with the ops (op_loader.cpp)
        if (layer.op_count == 0) r.fail(kv.second, where, "views: only a layer with ops lists its view calls");
        continue;
      }
      if (key == "causal" && layer.kind == LayerKind::kAttention) {
        layer.causal = r.boolean(kv.second, where, "causal");
        continue;
      }
      const bool known =
          std::find(schema->required.begin(), schema->required.end(), key) != schema->required.end() ||
          std::any_of(schema->optional.begin(), schema->optional.end(), [&](const auto& o) { return o.first == key; });
      if (!known) {
        std::vector<std::string_view> fields(schema->required.begin(), schema->required.end());
        for (const auto& o : schema->optional) fields.push_back(o.first);
        r.fail(kv.first, where,
               fmt::format("unknown field \"{}\" for kind {}; expected {}", key, kind_text, fmt::join(fields, ", ")));
      }
      SeqExpr e = read_expr(r, kv.second, where, key.c_str());
      check_t(e, kv.second, where);
      layer.dims.emplace(key, std::move(e));
    }
    // With ops the kind's fields are a summary (the ops are costed); without, they are required.
    const bool costed_by_ops = layer.op_count > 0;
    for (const auto& req : schema->required) {
      if (!layer.dims.contains(req) && !costed_by_ops) {
        r.fail(l, where, fmt::format("missing field \"{}\" (kind {})", req, kind_text));
      }
    }
    for (const auto& [opt, def] : schema->optional) {
      if (layer.dims.contains(opt) || costed_by_ops) continue;
      // -1 defaults copy another dim: kv_len = q_len, kv_heads = heads.
      if (def >= 0)
        layer.dims.emplace(std::string(opt), SeqExpr(def));
      else if (opt == "kv_len")
        layer.dims.emplace("kv_len", layer.dims.at("q_len"));
      else if (opt == "kv_heads")
        layer.dims.emplace("kv_heads", layer.dims.at("heads"));
    }
    // Values the cost model divides by or multiplies with must be positive at the default T.
    const std::int64_t t = m.seq_len(std::nullopt);
    for (const auto& [k, e] : layer.dims) {
      const bool may_be_zero = k == "padding";
      const std::int64_t v = e.eval(t);
      if (v < 0 || (v == 0 && !may_be_zero)) {
        r.fail(l[k], where, fmt::format("field \"{}\" is {} at T={}; it must be > 0", k, v, t));
      }
    }
    if (!costed_by_ops) check_dims_against_params(r, l, where, layer, m, t);
    m.layers.push_back(std::move(layer));
  }

  // Every parameter that trains must be used by some layer or declared unused, not both: forward
  // either uses it (a gradient, a bucket slot) or never does (find_unused_parameters's case).
  std::vector<bool> used(m.parameters.size(), false);
  for (const auto& l : m.layers)
    for (auto p : l.params) used[p] = true;
  if (const YAML::Node unused = root["unused_parameters"]) {
    std::vector<bool> listed(m.parameters.size(), false);
    for (std::size_t i = 0; i < m.unused_parameters.size(); ++i) {
      const std::size_t p = m.unused_parameters[i];
      const std::string where = fmt::format("unused_parameters[{}] \"{}\"", i, m.parameters[p].name);
      if (listed[p]) r.fail(unused[i], where, "listed twice; expected each parameter once");
      listed[p] = true;
      if (used[p]) {
        const auto by = std::find_if(m.layers.begin(), m.layers.end(), [&](const Layer& l) {
          return std::find(l.params.begin(), l.params.end(), p) != l.params.end();
        });
        r.fail(unused[i], where,
               fmt::format("layer \"{}\" uses it; a parameter forward uses has a gradient, so list here only "
                           "those no layer uses",
                           by->name));
      }
    }
  }
  for (auto u : m.unused_parameters) used[u] = true;
  for (std::size_t i = 0; i < used.size(); ++i) {
    if (!used[i] && m.parameters[i].requires_grad) {
      r.fail(params[i], entry("parameters", i, m.parameters[i].name),
             "no layer uses this parameter; list it under unused_parameters if forward never uses it");
    }
  }
  // The defaults within the flags' bounds (2^24) and a learned position table's rows (GPT-2's wpe,
  // BERT's position_embeddings), as --seq-len is: nanoGPT asserts on a longer sequence.
  if (m.default_batch > kMaxModelDefault)
    r.fail(defaults["batch"], "defaults",
           fmt::format("batch {}: expected at most {}, as --batch-per-gpu takes", m.default_batch, kMaxModelDefault));
  if (m.default_seq_len) {
    if (*m.default_seq_len > kMaxModelDefault)
      r.fail(defaults["seq_len"], "defaults",
             fmt::format("seq_len {}: expected at most {}, as --seq-len takes", *m.default_seq_len, kMaxModelDefault));
    for (const Parameter& p : m.parameters) {
      const bool positions =
          p.name.find("wpe") != std::string::npos || p.name.find("position_embeddings") != std::string::npos;
      if (positions && p.shape.size() == 2 && *m.default_seq_len > p.shape.front())
        r.fail(defaults["seq_len"], "defaults",
               fmt::format("seq_len {}: the position table {} is [{}, {}]; expected at most {} positions",
                           *m.default_seq_len, p.name, p.shape[0], p.shape[1], p.shape[0]));
    }
  }
  try {
    m.check_sizes(m.seq_len(std::nullopt), m.default_batch);  // the defaults must run
  } catch (const ConfigError& e) {
    // At the defaults' line (the sizes it was checked at); the message names the field.
    r.fail(defaults, "defaults", e.what());
  }
  if (const YAML::Node measured = root["measured"]) {
    read_measured_section(r, measured, m);
    // A measured model runs at the batch (and sequence length) it was measured at unless a run
    // asks for others: its defaults block is the model's it was imported into.
    m.default_batch = m.measured->batch;
    if (m.measured->seq_len) m.default_seq_len = m.measured->seq_len;
  }
  return m;
}

}  // namespace gradsync
