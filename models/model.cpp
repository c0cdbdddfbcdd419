// model.cpp: the Model's own sums and checks (parameter and buffer sizes, a layer's dims, the
// sequence length and every size at a given T and batch); parsing is model_loader.cpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/checked.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "models/model.hpp"

namespace gradsync {

std::int64_t Parameter::numel() const { return checked_product(shape, fmt::format("parameter {} elements", name)); }

std::int64_t Buffer::numel() const { return checked_product(shape, fmt::format("buffer {} elements", name)); }

Bytes Parameter::bytes() const {
  return static_cast<Bytes>(
      checked_mul(numel(), static_cast<std::int64_t>(dtype_bytes(dtype)), fmt::format("parameter {} bytes", name)));
}

Bytes Buffer::bytes() const {
  return static_cast<Bytes>(
      checked_mul(numel(), static_cast<std::int64_t>(dtype_bytes(dtype)), fmt::format("buffer {} bytes", name)));
}

std::int64_t Layer::dim(std::string_view dim_name, std::int64_t t) const {
  const auto it = dims.find(dim_name);
  if (it == dims.end()) {
    throw std::out_of_range(fmt::format("layer {} ({}) has no dim \"{}\"", name, layer_kind_name(kind), dim_name));
  }
  return it->second.eval(t);
}

std::int64_t Model::total_params() const {
  std::int64_t n = 0;
  for (const auto& p : parameters) n = checked_add(n, p.numel(), "the model's parameter count");
  return n;
}

Bytes Model::parameter_bytes() const {
  std::int64_t n = 0;
  for (const auto& p : parameters) n = checked_add(n, static_cast<std::int64_t>(p.bytes()), "the parameters' bytes");
  return static_cast<Bytes>(n);
}

Bytes Model::buffer_bytes() const {
  std::int64_t n = 0;
  for (const auto& b : buffers)
    if (b.registered) n = checked_add(n, static_cast<std::int64_t>(b.bytes()), "the buffers' bytes");
  return static_cast<Bytes>(n);
}

std::int64_t Model::seq_len(std::optional<std::int64_t> t) const {
  if (!default_seq_len) return 1;
  return t.value_or(*default_seq_len);
}

void Model::check_seq_len(std::int64_t t) const {
  if (!default_seq_len) throw ConfigError(fmt::format("model {} has no sequence length", name));
  // A learned position table (GPT-2's wpe, BERT's position_embeddings) bounds T by its rows, not by
  // the default T (an imported trace's, which may be shorter); rotary or no positions, nothing does.
  for (const auto& p : parameters) {
    if (p.name.find("wpe") == std::string::npos && p.name.find("position_embeddings") == std::string::npos) continue;
    if (p.shape.empty() || t <= p.shape.front()) return;
    std::string shape;
    for (std::size_t i = 0; i < p.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(p.shape[i]);
    throw ConfigError(fmt::format("model {} has {} positions ({} is [{}])", name, p.shape.front(), p.name, shape));
  }
}

void Model::check_sizes(std::int64_t t, std::int64_t batch) const {
  // The sizes checked at: T only for a sequence model.
  const std::string at_t = default_seq_len ? fmt::format(" at T={}", t) : std::string();
  const std::string at_tb = default_seq_len ? fmt::format(" at T={}, B={}", t, batch) : fmt::format(" at B={}", batch);
  const auto at = [&](const std::string& what, const SeqExpr& e, std::int64_t v) {
    if (v < 0) {
      throw ConfigError(fmt::format("model {}{}: {} \"{}\" is {}; every size must be >= 0 (from {})", name, at_t, what,
                                    e.to_string(), v, origin));
    }
  };
  // An expression that overflows at these sizes is named by what it sizes (op 3 linear flops), not
  // only by its text.
  const auto named = [&](const std::string& what, auto&& eval) {
    try {
      return eval();
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: {}", what, e.what()));
    }
  };
  const auto seq = [&](const std::string& what, const SeqExpr& e) {
    at(what, e, named(what, [&] { return e.eval(t); }));
  };
  const auto per_batch = [&](const std::string& what, const BatchExpr& e) {
    at(what, e.e, named(what, [&] { return e.eval(batch, t); }));
  };
  seq("input bytes", input_bytes);
  seq("output elements", output_elements);
  for (const Layer& l : layers) {
    for (const auto& [dim, e] : l.dims) {
      const std::string what = fmt::format("layer {} {}", l.name, dim);
      seq(what, e);
      // A layer costed from its kind moves batch x size elements of up to 8 bytes: inside 64 bits,
      // as every op's count is.
      std::int64_t bytes = 0;
      if (ops.empty() && (__builtin_mul_overflow(e.eval(t), batch, &bytes) ||
                          __builtin_mul_overflow(bytes, std::int64_t{8}, &bytes))) {
        throw ConfigError(
            fmt::format("model {}{}: {} \"{}\" is {}: batch x {} x 8 bytes does not fit in "
                        "64 bits (from {})",
                        name, at_tb, what, e.to_string(), e.eval(t), dim, origin));
      }
    }
    for (const SavedTensor& s : l.saved)
      per_batch(fmt::format("layer {} saved {}", l.name, s.ref.to_string()), s.elements);
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const std::string name_i = fmt::format("op {} {}", i, op.name);
    for (const OpInput& in : op.in) per_batch(name_i + " input " + in.ref.to_string(), in.elements);
    for (const OpOutput& out : op.out) per_batch(name_i + " output", out.elements);
    per_batch(name_i + " flops", op.flops);
    if (op.gemm) {
      // Each dimension as any size, and their product (the GEMM's multiply-adds, which its
      // backward's cost is taken from) inside 64 bits as every count is.
      std::vector<std::int64_t> dims;
      for (const BatchExpr& g : *op.gemm) {
        per_batch(name_i + " gemm", g);
        dims.push_back(named(name_i + " gemm", [&] { return g.eval(batch, t); }));
      }
      const std::int64_t macs = checked_product(
          dims, fmt::format("model {}{}: {} gemm [{}] (from {})", name, at_tb, name_i, fmt::join(dims, ", "), origin));
      // Forward is costed from flops and backward from the GEMM's shape: they must say the same
      // product (2 FLOPs per multiply-add), or an edit of one leaves the two passes disagreeing.
      const std::int64_t flops = op.flops.eval(batch, t);
      if (macs <= std::numeric_limits<std::int64_t>::max() / 2 && flops != 2 * macs) {
        throw ConfigError(
            fmt::format("model {}{}: {} flops {} but its gemm [{}] makes 2 x {} = {}; "
                        "expected the two to agree (a product's FLOPs are twice its multiply-adds)",
                        name, at_tb, name_i, flops, fmt::join(dims, ", "), macs, 2 * macs));
      }
    }
    if (op.attention) {
      per_batch(name_i + " heads", op.attention->heads);
      seq(name_i + " q_len", op.attention->q_len);
      seq(name_i + " kv_len", op.attention->kv_len);
      seq(name_i + " head_dim", op.attention->head_dim);
    }
  }
}

}  // namespace gradsync
