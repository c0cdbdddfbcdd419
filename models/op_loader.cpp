// op_loader.cpp: the op-level parts of format 2 model files: sizes in T and B, references, and
// a layer's `ops` and `saved` lists (see ops.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <set>
#include <vector>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "models/model.hpp"
#include "models/op_loader.hpp"

namespace gradsync {
namespace {

std::optional<std::size_t> number(std::string_view s) {
  std::size_t v = 0;
  if (s.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::int64_t BatchExpr::eval(std::int64_t batch, std::int64_t t) const {
  const std::int64_t v = e.eval(t);
  if (!per_sample) return v;
  return checked_mul(v, batch, fmt::format("expression {} at B={}, T={}", to_string(), batch, t));
}

std::string BatchExpr::to_string() const {
  const std::string inner = e.to_string();
  if (!per_sample) return inner;
  const bool compound = inner.find_first_of("+-", 1) != std::string::npos;
  return compound ? fmt::format("B*({})", inner) : "B*" + inner;
}

BatchExpr BatchExpr::parse(std::string_view text) {
  BatchExpr b;
  if (text.size() >= 2 && text[0] == 'B' && text[1] == '*') {
    b.per_sample = true;
    text.remove_prefix(2);
  } else if (text.find('B') != std::string_view::npos) {
    throw ConfigError(
        fmt::format("expression \"{}\": B may only open it, as B*768*T (per sample, times the batch)", text));
  }
  try {
    b.e = SeqExpr::parse(text);
  } catch (const ConfigError& e) {
    if (!b.per_sample) throw;
    // The error as the file has it: "B*" and positions counted from the expression's start.
    const std::string what = e.what();
    const std::string quoted = fmt::format("expression \"{}\": ", text);
    if (what.rfind(quoted, 0) != 0) throw;
    std::string rest = what.substr(quoted.size());
    const std::string at = " at character ";
    if (const auto p = rest.find(at); p != std::string::npos) {
      std::size_t digits = p + at.size(), n = 0;
      while (digits + n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits + n]))) ++n;
      if (n > 0) rest.replace(digits, n, std::to_string(std::stoul(rest.substr(digits, n)) + 2));
    }
    throw ConfigError(fmt::format("expression \"B*{}\": {}", text, rest));
  }
  return b;
}

std::optional<OpRef> OpRef::parse(std::string_view text) {
  OpRef r;
  if (text == "c") return r;
  if (text.size() < 2) return std::nullopt;
  std::string_view rest = text.substr(1);
  switch (text[0]) {
    case 'o': {
      r.kind = Kind::kOp;
      const auto dot = rest.find('.');
      const auto i = number(rest.substr(0, dot));
      if (!i) return std::nullopt;
      r.index = *i;
      if (dot != std::string_view::npos) {
        const auto k = number(rest.substr(dot + 1));
        if (!k || *k == 0 || *k > 16) return std::nullopt;
        r.output = static_cast<int>(*k);
      }
      return r;
    }
    case 'p':
      r.kind = Kind::kParameter;
      break;
    case 'b':
      r.kind = Kind::kBuffer;
      break;
    case 'x':
      r.kind = Kind::kInput;
      break;
    default:
      return std::nullopt;
  }
  const auto i = number(rest);
  if (!i) return std::nullopt;
  r.index = *i;
  return r;
}

std::string OpRef::to_string() const {
  switch (kind) {
    case Kind::kOp:
      return output == 0 ? fmt::format("o{}", index) : fmt::format("o{}.{}", index, output);
    case Kind::kParameter:
      return fmt::format("p{}", index);
    case Kind::kBuffer:
      return fmt::format("b{}", index);
    case Kind::kInput:
      return fmt::format("x{}", index);
    case Kind::kConstant:
      return "c";
  }
  return "c";
}

OpFileReader::OpFileReader(const YamlReader& r, Model& m) : r_(r), m_(m) {}

BatchExpr OpFileReader::size(const YAML::Node& n, const std::string& where, const char* key) const {
  if (!n || !n.IsScalar()) r_.fail(n, where, fmt::format("{}: expected a size such as 768*T or B*768*T", key));
  BatchExpr b;
  try {
    b = BatchExpr::parse(n.as<std::string>());
  } catch (const ConfigError& e) {
    r_.fail(n, where, fmt::format("{}: {}", key, e.what()));
  }
  if (b.e.depends_on_t() && !m_.default_seq_len) {
    r_.fail(n, where, fmt::format("{} \"{}\" uses T but defaults has no seq_len", key, b.to_string()));
  }
  // The defaults must run (Model::check_sizes checks every size there again, and at each run's):
  // a size negative or past 64 bits there is named here, at its own line, as written.
  const std::int64_t batch = m_.default_batch, t = m_.seq_len(std::nullopt);
  // Defaults past what the flags take are refused at the defaults' line once the file is read.
  if (batch > kMaxModelDefault || t > kMaxModelDefault) return b;
  const std::string at_defaults = m_.default_seq_len ? fmt::format("B={}, T={}", batch, t) : fmt::format("B={}", batch);
  std::int64_t v = 0;
  std::string overflow;
  try {
    v = b.e.eval(t);
    (void)b.eval(batch, t);
  } catch (const ConfigError& e) {
    overflow = e.what();
  }
  if (!overflow.empty())
    r_.fail(n, where,
            fmt::format("{} \"{}\" at the defaults ({}): {}", key, n.as<std::string>(), at_defaults, overflow));
  if (v < 0) {
    r_.fail(n, where,
            fmt::format("{} \"{}\" is {} {}at the defaults ({}); expected a size >= 0", key, n.as<std::string>(), v,
                        b.per_sample ? "a sample " : "", at_defaults));
  }
  return b;
}

OpRef OpFileReader::ref(const YAML::Node& n, const std::string& where, std::size_t op_index) const {
  const std::string text = r_.string(n, where, "reference");
  const auto ref = OpRef::parse(text);
  if (!ref) {
    r_.fail(n, where,
            fmt::format("reference \"{}\": expected o<op>[.<output>], p<parameter>, b<buffer>, x<input> or c", text));
  }
  const auto bad = [&](const std::string& what) { r_.fail(n, where, fmt::format("reference \"{}\": {}", text, what)); };
  switch (ref->kind) {
    case OpRef::Kind::kOp:
      if (ref->index >= op_index) bad(fmt::format("op {} is not an earlier op (this is op {})", ref->index, op_index));
      if (static_cast<std::size_t>(ref->output) >= m_.ops[ref->index].out.size()) {
        bad(fmt::format("op {} ({}) has {} output(s)", ref->index, m_.ops[ref->index].name,
                        m_.ops[ref->index].out.size()));
      }
      break;
    case OpRef::Kind::kParameter:
      if (ref->index >= m_.parameters.size()) bad(fmt::format("the model has {} parameters", m_.parameters.size()));
      break;
    case OpRef::Kind::kBuffer:
      if (ref->index >= m_.buffers.size()) bad(fmt::format("the model has {} buffers", m_.buffers.size()));
      break;
    case OpRef::Kind::kInput:
      if (ref->index >= m_.input_dtypes.size()) {
        bad(fmt::format("the model has {} inputs (input.dtypes)", m_.input_dtypes.size()));
      }
      break;
    case OpRef::Kind::kConstant:
      break;
  }
  return *ref;
}

void OpFileReader::check_parameter_input(const OpInput& in, const YAML::Node& n, const std::string& where) const {
  if (in.ref.kind != OpRef::Kind::kParameter) return;
  // An op reads a parameter through views: whole, a slice of it, or broadcast over the batch and
  // the sequence (ViT's class token expanded to B x 768). For one sample of one position it reads
  // at most the parameter; more means the file's sizes and its parameter shapes disagree.
  const Parameter& p = m_.parameters[in.ref.index];
  const std::int64_t one = in.elements.eval(1, 1);
  if (one > p.numel()) {
    r_.fail(n, where,
            fmt::format("elements {} of parameter {} ({}): expected at most {}, the element count of its shape "
                        "[{}] (a view reads it whole, a slice of it, or broadcasts it over B and T)",
                        in.elements.to_string(), in.ref.to_string(), p.name, p.numel(), fmt::join(p.shape, ", ")));
  }
}

void OpFileReader::check_conv_weight(const Op& op, const YAML::Node& in, const std::string& where) const {
  // aten::convolution(input, weight, bias, ...) reads its weight whole: out x in/groups x kernel h x
  // kernel w elements, and the parameter (nn.Conv2d's weight, or another convolution's) holds exactly
  // that many.
  if (!op.conv || op.in.size() < 2 || op.in[1].ref.kind != OpRef::Kind::kParameter) return;
  const auto& c = *op.conv;
  const std::vector<std::int64_t> shape{c[3], c[0] / c[8], c[4], c[5]};
  const std::int64_t need = checked_product(shape, where + " conv weight elements");
  const Parameter& p = m_.parameters[op.in[1].ref.index];
  const std::int64_t reads = op.in[1].elements.eval(1, 1);
  // Element counts, not the layout: a transposed convolution keeps its weight as in x out/groups,
  // and a 1-D or 3-D one in its own rank (the file writes each as the 2-D convolution it costs).
  if (reads != need || p.numel() != need) {
    r_.fail(in[1], where,
            fmt::format("weight {} ({}) has shape [{}] ({} elements) and the op reads {}; a convolution of in {}, out "
                        "{}, groups {}, kernel {}x{} has a weight of {} elements (nn.Conv2d's shape [{}])",
                        op.in[1].ref.to_string(), p.name, fmt::join(p.shape, ", "), p.numel(), reads, c[0], c[3], c[8],
                        c[4], c[5], need, fmt::join(shape, ", ")));
  }
}

int OpFileReader::bytes(const YAML::Node& n, const std::string& where) const {
  const std::int64_t b = r_.non_negative_int(n, where, "bytes per element");
  if (b != 0 && b != 1 && b != 2 && b != 4 && b != 8) {
    r_.fail(n, where, fmt::format("bytes per element {}: expected 0 (floating point) or 1, 2, 4, 8", b));
  }
  return static_cast<int>(b);
}

void OpFileReader::check_gemm_flops(const Op& op, const YAML::Node& flops_node, const YAML::Node& gemm_node,
                                    const std::string& where) const {
  // Forward is costed from flops and backward from the GEMM's shape: they must say the same product
  // (2 FLOPs per multiply-add). Checked here at the defaults, so that the error names the op's own
  // line; Model::check_sizes checks every size, this one included, at the sizes a run asks for.
  const std::int64_t b = m_.default_batch, t = m_.seq_len(std::nullopt);
  std::vector<std::int64_t> dims;
  std::int64_t macs = 1, flops = 0;
  try {
    for (const BatchExpr& g : *op.gemm) {
      dims.push_back(g.eval(b, t));
      if (dims.back() < 0) return;  // named by size() already
      if (__builtin_mul_overflow(macs, dims.back(), &macs)) {
        macs = -1;
        break;
      }
    }
    flops = op.flops.eval(b, t);
  } catch (const ConfigError&) {
    return;  // a size that does not evaluate: check_sizes names it
  }
  if (macs < 0) {
    r_.fail(gemm_node, where,
            fmt::format("gemm [{}] at the defaults (B={}{}): its multiply-adds do not fit in 64 bits",
                        fmt::join(dims, ", "), b, m_.default_seq_len ? fmt::format(", T={}", t) : std::string()));
  }
  if (macs > std::numeric_limits<std::int64_t>::max() / 2 || flops == 2 * macs) return;
  r_.fail(flops_node, where,
          fmt::format("flops {} at the defaults (B={}{}), but its gemm [{}] makes 2 x {} = {}; expected the two "
                      "to agree (a product's FLOPs are twice its multiply-adds)",
                      flops, b, m_.default_seq_len ? fmt::format(", T={}", t) : std::string(), fmt::join(dims, ", "),
                      macs, 2 * macs));
}

void OpFileReader::read_layer(const YAML::Node& l, const std::string& where, Layer& layer) const {
  layer.first_op = m_.ops.size();
  const YAML::Node ops = l["ops"];
  if (!ops.IsSequence()) r_.fail(ops, where, "ops: expected a list of {op, in, out, ...}");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const YAML::Node o = ops[i];
    const std::size_t index = m_.ops.size();
    std::string at = fmt::format("{} ops[{}]", where, i);
    if (!o.IsMap()) r_.fail(o, at, "expected a mapping {op, in, out, ...}");
    r_.only_keys(o, at, {"op", "in", "out", "flops", "gemm", "conv", "attn", "attention"});
    Op op;
    op.name = r_.string(r_.required(o, at, "op"), at, "op");
    // An aten name (what the exporter records, torch.ops.aten's): letters, digits and '_', an
    // overload after a dot. Another name a tool wrote is costed by its bytes as any unlisted aten
    // op; one that is no name at all is refused here.
    const bool aten_name = !op.name.empty() &&
                           (std::isalpha(static_cast<unsigned char>(op.name.front())) != 0 || op.name.front() == '_') &&
                           std::all_of(op.name.begin(), op.name.end(), [](char ch) {
                             return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_' || ch == '.';
                           });
    if (!aten_name) {
      r_.fail(o["op"], at,
              fmt::format("op \"{}\": expected an aten op name (letters, digits and '_', as torch.ops.aten names it)",
                          op.name));
    }
    at = fmt::format("{} ops[{}] {}", where, i, op.name);
    const YAML::Node in = r_.required(o, at, "in");
    if (!in.IsSequence()) r_.fail(in, at, "in: expected a list of [reference, elements, bytes per element]");
    for (const auto& x : in) {
      if (!x.IsSequence() || x.size() != 3)
        r_.fail(x, at, "in: each input is [reference, elements, bytes per element]");
      op.in.push_back({ref(x[0], at, index), size(x[1], at, "elements"), bytes(x[2], at)});
      check_parameter_input(op.in.back(), x[1], at);
    }
    const YAML::Node out = r_.required(o, at, "out");
    if (!out.IsSequence() || out.size() == 0) r_.fail(out, at, "out: expected a list of [elements, bytes per element]");
    for (const auto& x : out) {
      if (!x.IsSequence() || x.size() != 2) r_.fail(x, at, "out: each output is [elements, bytes per element]");
      op.out.push_back({size(x[0], at, "elements"), bytes(x[1], at)});
    }
    if (o["flops"]) op.flops = size(o["flops"], at, "flops");
    if (const YAML::Node g = o["gemm"]) {
      if (!g.IsSequence() || g.size() != 4) r_.fail(g, at, "gemm: expected [batch, m, n, k]");
      op.gemm = std::array<BatchExpr, 4>{size(g[0], at, "gemm"), size(g[1], at, "gemm"), size(g[2], at, "gemm"),
                                         size(g[3], at, "gemm")};
    }
    if (op.gemm && o["flops"]) check_gemm_flops(op, o["flops"], o["gemm"], at);
    if (const YAML::Node c = o["conv"]) {
      if (!c.IsSequence() || c.size() != 9) {
        r_.fail(c, at, "conv: expected [in, height, width, out, kernel h, kernel w, stride, padding, groups]");
      }
      std::array<std::int64_t, 9> v{};
      for (std::size_t k = 0; k < 9; ++k) v[k] = r_.non_negative_int(c[k], at, "conv");
      if (v[0] == 0 || v[3] == 0 || v[4] == 0 || v[5] == 0 || v[6] == 0 || v[8] == 0) {
        r_.fail(c, at, "conv: channels, kernel, stride and groups must be > 0");
      }
      if (v[0] % v[8] != 0 || v[3] % v[8] != 0) {
        r_.fail(c, at,
                fmt::format("conv: in {} and out {} channels must both be multiples of groups {} (nn.Conv2d's rule)",
                            v[0], v[3], v[8]));
      }
      op.conv = v;
      check_conv_weight(op, in, at);
    }
    if (o["attn"]) op.attn = static_cast<int>(r_.non_negative_int(o["attn"], at, "attn"));
    if (const YAML::Node a = o["attention"]) {
      if (!a.IsSequence() || a.size() != 5)
        r_.fail(a, at, "attention: expected [heads, q_len, kv_len, head_dim, causal]");
      AttentionCore core;
      core.heads = size(a[0], at, "attention heads");
      core.q_len = size(a[1], at, "attention q_len").e;
      core.kv_len = size(a[2], at, "attention kv_len").e;
      core.head_dim = size(a[3], at, "attention head_dim").e;
      core.causal = r_.boolean(a[4], at, "causal");
      if (op.attn < 0) r_.fail(a, at, "attention: the op must belong to a core (attn: N)");
      op.attention = core;
    }
    if ((op.name == "mm" || op.name == "addmm" || op.name == "bmm" || op.name == "baddbmm") && !op.gemm) {
      r_.fail(o, at, "a matrix product needs gemm: [batch, m, n, k]");
    }
    // A shape says what the op is: its name must agree, or the backward and saved-tensor rules
    // kept by name (op_backward.cpp) would take a misspelt convolution for an elementwise op.
    static const std::set<std::string, std::less<>> kProducts{"mm",     "addmm",  "bmm",   "baddbmm",
                                                              "addbmm", "matmul", "linear"};
    static const std::set<std::string, std::less<>> kConvolutions{"convolution", "_convolution", "cudnn_convolution",
                                                                  "conv1d",      "conv2d",       "conv3d"};
    // A product or convolution is costed from its flops: one without them would run in no time.
    if ((op.gemm || op.conv) && !o["flops"])
      r_.fail(o, at,
              fmt::format("missing field \"flops\" on op \"{}\"; expected its FLOPs (a {}'s: twice its "
                          "multiply-adds)",
                          op.name, op.gemm ? "gemm" : "convolution"));
    if (op.gemm && !kProducts.contains(op.name))
      r_.fail(o["gemm"], at,
              fmt::format("gemm: on op \"{}\"; expected a matrix product ({})", op.name, fmt::join(kProducts, ", ")));
    if (kConvolutions.contains(op.name) && !op.conv) {
      r_.fail(o, at,
              "a convolution needs conv: [in, height, width, out, kernel h, kernel w, stride, padding, groups] "
              "(and its flops)");
    }
    if (op.conv && !kConvolutions.contains(op.name))
      r_.fail(o["conv"], at,
              fmt::format("conv: on op \"{}\"; expected a convolution ({})", op.name, fmt::join(kConvolutions, ", ")));
    m_.ops.push_back(std::move(op));
  }
  layer.op_count = m_.ops.size() - layer.first_op;
  if (const YAML::Node v = l["views"]) {
    if (!v.IsSequence() || v.size() != 2)
      r_.fail(v, where, "views: expected [view calls, of them on a tensor that requires grad]");
    const std::int64_t calls = r_.non_negative_int(v[0], where, "views");
    const std::int64_t grad = r_.non_negative_int(v[1], where, "views");
    constexpr std::int64_t kMaxViews = 1'000'000;
    if (calls > kMaxViews)
      r_.fail(v[0], where, fmt::format("views: {} view calls; expected at most {}", calls, kMaxViews));
    if (grad > calls)
      r_.fail(v[1], where,
              fmt::format("views: {} on a tensor that requires grad of {} view calls; expected at most {}", grad, calls,
                          calls));
    layer.views = static_cast<int>(calls);
    layer.grad_views = static_cast<int>(grad);
  }
  if (const YAML::Node saved = l["saved"]) {
    if (!saved.IsSequence()) r_.fail(saved, where, "saved: expected a list of [reference, elements, bytes, saver op]");
    for (const auto& s : saved) {
      if (!s.IsSequence() || s.size() != 4) r_.fail(s, where, "saved: each is [reference, elements, bytes, saver op]");
      SavedTensor t;
      t.ref = ref(s[0], where, m_.ops.size());
      t.elements = size(s[1], where, "saved elements");
      t.bytes = bytes(s[2], where);
      t.saver = static_cast<std::size_t>(r_.non_negative_int(s[3], where, "saver op"));
      if (t.saver >= m_.ops.size()) r_.fail(s[3], where, fmt::format("saver op {} does not exist", t.saver));
      layer.saved.push_back(t);
    }
  }
}

}  // namespace gradsync
