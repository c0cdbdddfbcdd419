// ops.hpp: the aten operations of a model's forward, as format 2 model files record them
// (tools/export_model.py, models/README.md "Operations").
//
//   {op: addmm, in: [[p3, 2304], [o4, B*768*T], [p2, 1769472]], out: [[B*2304*T, 0]],
//    flops: B*3538944*T, gemm: [1, B*T, 2304, 768]}
//
// Every size is an expression in T (the sequence length) and, when it grows with the batch, B
// ("B*768*T" is 768 T elements per sample). An input names what produced it: an op (o12, or
// o12.1 for its second output), a parameter (p3), a buffer (b0), a model input (x0) or a
// constant (c).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/seq_expr.hpp"

namespace gradsync {

// BatchExpr: a size that grows with the batch ("B*768*T": 768 T per sample) or does not ("768").
struct BatchExpr {
  SeqExpr e;
  bool per_sample = false;
  // eval: the size for `batch` samples of sequence length t.
  std::int64_t eval(std::int64_t batch, std::int64_t t) const;
  std::string to_string() const;
  // parse reads "N", "768*T", "B*768*T", "B*(768*T+768)"; ConfigError naming the text.
  static BatchExpr parse(std::string_view text);
};

// OpRef: what produced an op's input.
struct OpRef {
  enum class Kind { kOp, kParameter, kBuffer, kInput, kConstant };
  Kind kind = Kind::kConstant;
  std::size_t index = 0;  // op, parameter, buffer or input index
  int output = 0;         // an op's output
  // parse reads "o12", "o12.1", "p3", "b0", "x0", "c"; nullopt otherwise.
  static std::optional<OpRef> parse(std::string_view text);
  std::string to_string() const;
  bool operator==(const OpRef&) const = default;
};

// A tensor an op reads or writes: elements, and bytes per element for integer and boolean ones
// (0: floating point, whose size follows the run's precision).
struct OpInput {
  OpRef ref;
  BatchExpr elements;
  int bytes = 0;
};
struct OpOutput {
  BatchExpr elements;
  int bytes = 0;
};

// AttentionCore: the first product of an attention core: heads (x batch), query and key lengths,
// head dimension, and whether a causal mask is applied.
struct AttentionCore {
  BatchExpr heads;
  SeqExpr q_len, kv_len, head_dim;
  bool causal = false;
};

// Op: one aten operation of the forward, one kernel in eager PyTorch.
struct Op {
  std::string name;  // aten name: addmm, native_layer_norm, _softmax, native_dropout, ...
  std::vector<OpInput> in;
  std::vector<OpOutput> out;
  BatchExpr flops;                               // matrix products and convolutions
  std::optional<std::array<BatchExpr, 4>> gemm;  // batch, m, n, k of mm, addmm, bmm, baddbmm
  // conv: in channels, height, width, out channels, kernel h, w, stride, padding, groups.
  std::optional<std::array<std::int64_t, 9>> conv;
  int attn = -1;  // the attention core this op belongs to (-1: none)
  std::optional<AttentionCore> attention;
};

// SavedTensor: a tensor autograd keeps for backward (once, however many ops save it), and the op
// that saves it.
struct SavedTensor {
  OpRef ref;
  BatchExpr elements;
  int bytes = 0;
  std::size_t saver = 0;
};

}  // namespace gradsync
