// model_loader_test.cpp: one test per bad model file, each with its exact message.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "models/model.hpp"

namespace gradsync {
namespace {

// A small valid model; each test breaks one line of it.
const std::string kGood = R"(format: gradsync-model/2
name: tiny
defaults: {batch: 4, seq_len: 8}
input: {bytes: 8*T}
output: {elements: 10*T, loss: outside}
parameters:
  - {name: emb.weight, shape: [10, 4]}
  - {name: fc.weight, shape: [10, 4]}
  - {name: fc.bias, shape: [10]}
layers:
  - {name: emb, kind: embedding, params: [emb.weight], num: 10, dim: 4, tokens: T}
  - {name: fc, kind: linear, params: [fc.weight, fc.bias], in: 4, out: 10, tokens: T}
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return text.replace(pos, from.size(), to);
}

std::string error_of(const std::string& text) {
  try {
    parse_model(text, "bad.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ModelLoader, GoodFileLoads) {
  const Model m = parse_model(kGood, "good.yaml");
  EXPECT_EQ(m.total_params(), 90);
  ASSERT_EQ(m.layers.size(), 2u);
  EXPECT_EQ(m.layers[1].params, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(m.layers[1].dim("tokens", 8), 8);
  EXPECT_EQ(m.layers[0].dim("tokens", 16), 16);
}

TEST(ModelLoader, SizesThatDoNotFitOrGoNegative) {
  // Element counts and byte totals are checked, never wrapped.
  EXPECT_EQ(error_of(replace(kGood, "shape: [10, 4]}", "shape: [4294967296, 4294967296]}")),
            "bad.yaml:7: parameters[0] \"emb.weight\": parameter emb.weight elements: 4294967296 x 4294967296 does "
            "not fit in 64 bits");
  EXPECT_EQ(error_of(replace(kGood, "shape: [10, 4]}", "shape: [9223372036854775807]}")),
            "bad.yaml:7: parameters[0] \"emb.weight\": parameter emb.weight bytes: 9223372036854775807 x 4 does not "
            "fit in 64 bits");
  EXPECT_NE(error_of(replace(replace(kGood, "shape: [10, 4]}", "shape: [1152921504606846976]}"), "shape: [10]}",
                             "shape: [1152921504606846976]}"))
                .find("the parameters' bytes"),
            std::string::npos);
  // A key twice in one mapping: both lines named, never the later one silently.
  EXPECT_EQ(error_of(replace(kGood, "name: tiny", "name: tiny\nname: other")),
            "bad.yaml:3: document: key \"name\" appears twice in one mapping (lines 2 and 3); keep one");
  EXPECT_EQ(error_of(replace(kGood, "name: tiny", "name: \"\"")),
            "bad.yaml:2: model file: name \"\" must be 1 to 200 printable characters (gpt2, my-resnet)");
  // The bad name quoted with its quotes and control characters escaped, as JSON writes them.
  EXPECT_EQ(error_of(replace(kGood, "name: tiny", "name: \"ti\\\"ny\\t<x>\"")),
            "bad.yaml:2: model file: name \"ti\\\"ny\\t<x>\" must be 1 to 200 printable characters (gpt2, my-resnet)");
  // A size negative at the default T is refused at load, at its own line (the input's and the
  // output's) or the defaults' (the T it was checked at); at another T, when that T is asked for.
  EXPECT_EQ(error_of(replace(kGood, "elements: 10*T,", "elements: 10*T-100,")),
            "bad.yaml:5: output: elements \"10*T-100\" is -20 at T=8; it must be >= 0");
  EXPECT_EQ(error_of(replace(kGood, "elements: 10*T,", "elements: 0,")),
            "bad.yaml:5: output: elements is 0 at the default T with loss: outside; expected the output's elements "
            "per sample");
  const Model m = parse_model(replace(kGood, "elements: 10*T,", "elements: 10*T-50,"), "t.yaml");
  EXPECT_NO_THROW(m.check_sizes(8, 4));
  EXPECT_THROW(m.check_sizes(4, 4), ConfigError);
}

TEST(ModelLoader, UnknownKind) {
  EXPECT_EQ(
      error_of(replace(kGood, "kind: linear", "kind: lienar")),
      "bad.yaml:12: layers[1] \"fc\": unknown kind \"lienar\"; expected one of linear, conv2d, embedding, layernorm, "
      "rmsnorm, batchnorm, attention, activation, softmax, dropout, pooling, elementwise, loss, ops");
}

TEST(ModelLoader, UndeclaredParameter) {
  EXPECT_EQ(error_of(replace(kGood, "params: [fc.weight, fc.bias]", "params: [fc.weight, fc.b]")),
            "bad.yaml:12: layers[1] \"fc\": parameter \"fc.b\" is not declared under parameters");
}

TEST(ModelLoader, ZeroDimension) {
  EXPECT_EQ(error_of(replace(kGood, "shape: [10]", "shape: [0]")),
            "bad.yaml:9: parameters[2] \"fc.bias\": shape [0]: dimension 1 is 0; every dimension must be > 0");
}

TEST(ModelLoader, NegativeDimension) {
  EXPECT_EQ(error_of(replace(kGood, "shape: [10, 4]}\n  - {name: fc.weight", "shape: [10, -4]}\n  - {name: fc.weight")),
            "bad.yaml:7: parameters[0] \"emb.weight\": shape [10, -4]: dimension 2 is -4; every dimension must be > 0");
}

TEST(ModelLoader, DuplicateParameterName) {
  EXPECT_EQ(error_of(replace(kGood, "name: fc.bias", "name: fc.weight")),
            "bad.yaml:9: parameters[2] \"fc.weight\": duplicate parameter name \"fc.weight\" (first at parameters[1])");
}

TEST(ModelLoader, DuplicateLayerName) {
  EXPECT_EQ(error_of(replace(kGood, "{name: fc, kind", "{name: emb, kind")),
            "bad.yaml:12: layers[1] \"emb\": duplicate layer name \"emb\"");
}

TEST(ModelLoader, WrongType) {
  EXPECT_EQ(error_of(replace(kGood, "batch: 4", "batch: four")),
            "bad.yaml:3: defaults: field \"batch\" is \"four\"; expected a positive integer");
  EXPECT_EQ(
      error_of(replace(kGood, "shape: [10]", "shape: ten")),
      "bad.yaml:9: parameters[2] \"fc.bias\": shape is \"ten\"; expected a list of dimensions such as [768, 3072]");
  EXPECT_EQ(
      error_of(replace(kGood, "{name: fc.bias, shape: [10]}", "{name: fc.bias, shape: [10], requires_grad: maybe}")),
      "bad.yaml:9: parameters[2] \"fc.bias\": field \"requires_grad\" is \"maybe\"; expected true or false");
  // A quoted number is a YAML string, whatever it spells.
  EXPECT_EQ(error_of(replace(kGood, "batch: 4", "batch: \"4\"")),
            "bad.yaml:3: defaults: field \"batch\" is the quoted string \"4\"; expected a positive integer, unquoted");
  EXPECT_EQ(error_of(replace(kGood, "shape: [10]", "shape: [\"10\"]")),
            "bad.yaml:9: parameters[2] \"fc.bias\": shape [\"10\"]: dimension 1 is the quoted string \"10\"; expected "
            "an integer, unquoted");
}

TEST(ModelLoader, MissingField) {
  EXPECT_EQ(error_of(replace(kGood, ", in: 4, out: 10", ", in: 4")),
            "bad.yaml:12: layers[1] \"fc\": missing field \"out\" (kind linear)");
  EXPECT_EQ(error_of(replace(kGood, "{name: fc.bias, shape: [10]}", "{name: fc.bias}")),
            "bad.yaml:9: parameters[2] \"fc.bias\": missing field \"shape\"");
}

TEST(ModelLoader, UnknownField) {
  EXPECT_EQ(error_of(replace(kGood, "{name: fc.bias, shape: [10]}", "{name: fc.bias, shap: [10]}")),
            "bad.yaml:9: parameters[2] \"fc.bias\": unknown field \"shap\"; expected one of name, shape, dtype, "
            "requires_grad, sparse_grad");
  EXPECT_EQ(error_of(replace(kGood, "in: 4, out: 10", "in: 4, out: 10, kernel: 3")),
            "bad.yaml:12: layers[1] \"fc\": unknown field \"kernel\" for kind linear; expected in, out, tokens");
}

TEST(ModelLoader, UnknownDtype) {
  EXPECT_EQ(error_of(replace(kGood, "{name: fc.bias, shape: [10]}", "{name: fc.bias, shape: [10], dtype: float33}")),
            "bad.yaml:9: parameters[2] \"fc.bias\": dtype \"float33\" is unknown; expected float32, float16, bfloat16, "
            "float64, int64, int32, int8, uint8 or bool");
}

// A buffer registered only under math attention (nanoGPT's causal mask) says so; nothing else does.
TEST(ModelLoader, ABufferOnlyUnderMathAttention) {
  const std::string with = replace(kGood, "layers:\n",
                                   "buffers:\n  - {name: mask, shape: [8, 8], attention: math}\n"
                                   "  - {name: ids, shape: [8], dtype: int64}\nlayers:\n");
  const Model m = parse_model(with, "good.yaml");
  ASSERT_EQ(m.buffers.size(), 2u);
  EXPECT_TRUE(m.buffers[0].math_attention_only);
  EXPECT_FALSE(m.buffers[1].math_attention_only);
  EXPECT_EQ(m.buffer_bytes(), 8 * 8 * 4 + 8 * 8);
  Model dropped = m;
  dropped.buffers[0].registered = false;  // as resolve_basics leaves it under flash attention
  EXPECT_EQ(dropped.buffer_bytes(), 8 * 8);
  EXPECT_EQ(error_of(replace(with, "attention: math", "attention: flash")),
            "bad.yaml:11: buffers[0] \"mask\": field \"attention\" \"flash\": expected math (a buffer that exists "
            "only under math attention)");
}

// An integer tensor cannot require gradients in PyTorch; a frozen one (requires_grad: false) loads.
TEST(ModelLoader, AnIntegerParameterThatTrainsIsRefused) {
  EXPECT_EQ(error_of(replace(kGood, "{name: fc.bias, shape: [10]}", "{name: fc.bias, shape: [10], dtype: int64}")),
            "bad.yaml:9: parameters[2] \"fc.bias\": dtype int64 cannot require gradients (PyTorch: only floating "
            "point and complex tensors can); expected requires_grad: false, or a floating-point dtype");
  const Model m = parse_model(replace(kGood, "{name: fc.bias, shape: [10]}",
                                      "{name: fc.bias, shape: [10], dtype: int64, requires_grad: false}"),
                              "frozen.yaml");
  EXPECT_FALSE(m.parameters[2].requires_grad);
}

// A layer costed from its kind moves batch x size elements: a size whose bytes at the batch pass
// 64 bits is refused, naming the layer and field, as an op's count is.
TEST(ModelLoader, AKindLayersSizeThatOverflowsAtTheBatchIsRefused) {
  const std::string huge = replace(kGood, "out: 10, tokens: T}", "out: 10, tokens: 576460752303423488}");  // 2^59
  try {
    (void)parse_model(huge, "bad.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("layer fc tokens \"576460752303423488\" is 576460752303423488: batch x "
                                         "tokens x 8 bytes does not fit in 64 bits"),
              std::string::npos)
        << e.what();
  }
}

TEST(ModelLoader, SequenceLengthWithoutDefault) {
  EXPECT_EQ(error_of(replace(kGood, "defaults: {batch: 4, seq_len: 8}", "defaults: {batch: 4}")),
            "bad.yaml:4: input: \"8*T\" uses T but defaults has no seq_len");
}

TEST(ModelLoader, UnusedParameterMustBeDeclared) {
  const std::string text = replace(kGood, "  - {name: fc.bias, shape: [10]}\n",
                                   "  - {name: fc.bias, shape: [10]}\n  - {name: extra, shape: [3]}\n");
  EXPECT_EQ(error_of(text),
            "bad.yaml:10: parameters[3] \"extra\": no layer uses this parameter; list it under unused_parameters if "
            "forward never uses it");
  const Model m = parse_model(replace(text, "layers:\n", "unused_parameters: [extra]\nlayers:\n"), "ok.yaml");
  EXPECT_EQ(m.unused_parameters, (std::vector<std::size_t>{3}));
  // Listed twice, or listed while a layer uses it: forward either uses a parameter or never does.
  EXPECT_EQ(error_of(replace(text, "layers:\n", "unused_parameters: [extra, extra]\nlayers:\n")),
            "bad.yaml:11: unused_parameters[1] \"extra\": listed twice; expected each parameter once");
  EXPECT_EQ(error_of(replace(text, "layers:\n", "unused_parameters: [extra, fc.weight]\nlayers:\n")),
            "bad.yaml:11: unused_parameters[1] \"fc.weight\": layer \"fc\" uses it; a parameter forward uses has a "
            "gradient, so list here only those no layer uses");
}

// YAML is text: a control byte is named where it stands, written as \xNN (yaml-cpp read a NUL as an
// escape and named the wrong line).
TEST(ModelLoader, AControlByteIsNamedWhereItStands) {
  EXPECT_EQ(error_of(replace(kGood, "name: tiny", std::string("name: ti\0ny", 11))),
            "bad.yaml:2:9: a control byte \\x00; expected YAML text (a binary file?)");
  EXPECT_EQ(error_of("\x7f"
                     "ELF\x02"),
            "bad.yaml:1:1: a control byte \\x7f; expected YAML text (a binary file?)");
  EXPECT_EQ(error_of(replace(kGood, "name: tiny", "name:\ttiny")).find("control byte"),
            std::string::npos);  // a tab is text
  // Text in another encoding than UTF-8 (Latin-1's e-acute) is named where it stands too.
  EXPECT_EQ(error_of(replace(kGood, "name: tiny", "name: caf\xe9")),
            "bad.yaml:2:10: byte \\xe9 is not UTF-8; expected YAML text in UTF-8 (a file saved as Latin-1 or "
            "Windows-1252?)");
  // A name with a bidirectional control would turn every table's line around.
  EXPECT_EQ(error_of(replace(kGood, "name: tiny", "name: \"ti\\u202eny\"")),
            "bad.yaml:2: model file: name \"ti\\u202eny\" must be 1 to 200 printable characters (gpt2, my-resnet)");
}

TEST(ModelLoader, SyntaxError) {
  EXPECT_EQ(error_of(replace(kGood, "name: tiny", "name: [tiny")).substr(0, 22), "bad.yaml:3: syntax err");
}

TEST(ModelLoader, BadExpression) {
  EXPECT_EQ(error_of(replace(kGood, "tokens: T}\n  - {name: fc", "tokens: 2*S}\n  - {name: fc")),
            "bad.yaml:11: layers[0] \"emb\": field \"tokens\": expression \"2*S\": unexpected 'S' at character 3; "
            "expected an integer, T or (");
}

TEST(ModelLoader, WrongFormatVersion) {
  EXPECT_EQ(error_of(replace(kGood, "gradsync-model/2", "gradsync-model/9")),
            "bad.yaml:1: model file: format \"gradsync-model/9\" is not supported; expected gradsync-model/2");
  EXPECT_EQ(error_of(replace(kGood, "gradsync-model/2", "gradsync-model/1")),
            "bad.yaml:1: model file: format gradsync-model/1 (layers only) is no longer read; gradsync reads "
            "gradsync-model/2, whose layers list the aten ops of one forward: export the model again with "
            "tools/export_model.py (models/README.md)");
}

// A format 2 file with ops: the embedding's gather and the linear's product, in batch B.
const std::string kOps = R"(format: gradsync-model/2
name: tiny
defaults: {batch: 4, seq_len: 8}
input: {bytes: 8*T, dtypes: [int64]}
output: {elements: 10*T, loss: outside}
parameters:
  - {name: emb.weight, shape: [10, 4]}
  - {name: fc.weight, shape: [10, 4]}
  - {name: fc.bias, shape: [10]}
layers:
  - {name: emb, kind: embedding, params: [emb.weight], num: 10, dim: 4, tokens: T,
     ops: [{op: embedding, in: [[p0, 40, 0], [x0, B*T, 8]], out: [[B*4*T, 0]]}], saved: [[x0, B*T, 8, 0]]}
  - {name: fc, kind: linear, params: [fc.weight, fc.bias], in: 4, out: 10, tokens: T,
     ops: [{op: addmm, in: [[p2, 10, 0], [o0, B*4*T, 0], [p1, 40, 0]], out: [[B*10*T, 0]], flops: B*80*T,
            gemm: [1, B*T, 10, 4]}], saved: [[o0, B*4*T, 0, 1]]}
)";

TEST(ModelLoader, OpsLoadWithTheirReferencesAndSizes) {
  const Model m = parse_model(kOps, "ops.yaml");
  ASSERT_EQ(m.ops.size(), 2u);
  EXPECT_EQ(m.layers[1].first_op, 1u);
  EXPECT_EQ(m.layers[1].op_count, 1u);
  const Op& mm = m.ops[1];
  EXPECT_EQ(mm.in[1].ref, (OpRef{OpRef::Kind::kOp, 0, 0}));
  EXPECT_EQ(mm.in[2].ref, (OpRef{OpRef::Kind::kParameter, 1, 0}));
  EXPECT_EQ(mm.flops.eval(3, 8), 3 * 80 * 8);
  EXPECT_EQ((*mm.gemm)[1].eval(3, 8), 24);
  EXPECT_EQ((*mm.gemm)[2].eval(3, 8), 10);  // a weight's size does not grow with the batch
  EXPECT_EQ(m.layers[0].saved.at(0).bytes, 8);
  EXPECT_EQ(m.input_dtypes, (std::vector<DType>{DType::kInt64}));
}

TEST(ModelLoader, BadOpsNameTheLayerOpAndValue) {
  EXPECT_EQ(error_of(replace(kOps, "[o0, B*4*T, 0], [p1", "[o5, B*4*T, 0], [p1")),
            "bad.yaml:14: layers[1] \"fc\" ops[0] addmm: reference \"o5\": op 5 is not an earlier op (this is op 1)");
  EXPECT_EQ(error_of(replace(kOps, "[p0, 40, 0]", "[q0, 40, 0]")),
            "bad.yaml:12: layers[0] \"emb\" ops[0] embedding: reference \"q0\": expected o<op>[.<output>], "
            "p<parameter>, b<buffer>, x<input> or c");
  EXPECT_EQ(error_of(replace(kOps, "[p0, 40, 0]", "[p9, 40, 0]")),
            "bad.yaml:12: layers[0] \"emb\" ops[0] embedding: reference \"p9\": the model has 3 parameters");
  EXPECT_EQ(error_of(replace(kOps, "out: [[B*4*T, 0]]", "out: [[4*B*T, 0]]")),
            "bad.yaml:12: layers[0] \"emb\" ops[0] embedding: elements: expression \"4*B*T\": B may only open it, as "
            "B*768*T (per sample, times the batch)");
  EXPECT_EQ(error_of(replace(kOps, ",\n            gemm: [1, B*T, 10, 4]", "")),
            "bad.yaml:14: layers[1] \"fc\" ops[0] addmm: a matrix product needs gemm: [batch, m, n, k]");
  // An expression's error quotes it whole, B* and all, and counts its characters from there.
  EXPECT_EQ(error_of(replace(kOps, "flops: B*80*T", "flops: B**80*T")),
            "bad.yaml:14: layers[1] \"fc\" ops[0] addmm: flops: expression \"B**80*T\": unexpected '*' at character "
            "3; expected an integer, T or (");
  // A shape names what the op is: a misspelt product (or convolution) is not costed as an
  // elementwise op without a word.
  EXPECT_EQ(error_of(replace(kOps, "{op: addmm,", "{op: addmn,")),
            "bad.yaml:15: layers[1] \"fc\" ops[0] addmn: gemm: on op \"addmn\"; expected a matrix product (addbmm, "
            "addmm, baddbmm, bmm, linear, matmul, mm)");
  // A size negative at the defaults is named at its own line, as written (it was the defaults' line).
  EXPECT_EQ(error_of(replace(kOps, "saved: [[x0, B*T, 8, 0]]", "saved: [[x0, B*(T-100), 8, 0]]")),
            "bad.yaml:12: layers[0] \"emb\": saved elements \"B*(T-100)\" is -92 a sample at the defaults (B=4, T=8); "
            "expected a size >= 0");
  // A convolution without its shape would lose its FLOPs; a name that is no aten name is refused.
  EXPECT_EQ(
      error_of(replace(replace(kOps, "{op: addmm,", "{op: convolution,"), ",\n            gemm: [1, B*T, 10, 4]", "")),
      "bad.yaml:14: layers[1] \"fc\" ops[0] convolution: a convolution needs conv: [in, height, width, out, "
      "kernel h, kernel w, stride, padding, groups] (and its flops)");
  EXPECT_EQ(error_of(replace(kOps, "{op: embedding,", "{op: \"relu; rm -rf\",")),
            "bad.yaml:12: layers[0] \"emb\" ops[0]: op \"relu; rm -rf\": expected an aten op name (letters, digits "
            "and '_', as torch.ops.aten names it)");
  EXPECT_EQ(error_of(replace(kOps, "[x0, B*T, 8]]", "[x0, B*T, 3]]")),
            "bad.yaml:12: layers[0] \"emb\" ops[0] embedding: bytes per element 3: expected 0 (floating point) or 1, "
            "2, 4, 8");
  EXPECT_EQ(error_of(replace(kOps, "kind: embedding, params: [emb.weight], num: 10, dim: 4, tokens: T,",
                             "kind: ops, params: [emb.weight],")),
            "no error");  // a run of functional ops: costed by its ops alone
  EXPECT_EQ(error_of(replace(kGood, "kind: linear, params: [fc.weight, fc.bias], in: 4, out: 10, tokens: T",
                             "kind: ops, params: [fc.weight, fc.bias]")),
            "bad.yaml:12: layers[1] \"fc\": a layer of kind ops needs its ops: [...]");
  // T in an op's size without a default seq_len: the location is said once.
  std::string fixed_t = kOps;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"defaults: {batch: 4, seq_len: 8}", "defaults: {batch: 4}"},
           {"bytes: 8*T", "bytes: 64"},
           {"elements: 10*T", "elements: 80"},
           {"tokens: T,\n     ops: [{op: embedding", "tokens: 8,\n     ops: [{op: embedding"},
           {"[x0, B*T, 8]]", "[x0, B*8, 8]]"},
           {"out: [[B*4*T, 0]]}], saved: [[x0, B*T, 8, 0]]", "out: [[B*32, 0]]}], saved: [[x0, B*8, 8, 0]]"}})
    fixed_t = replace(fixed_t, from, to);
  EXPECT_EQ(error_of(fixed_t),
            "bad.yaml:14: layers[1] \"fc\" ops[0] addmm: elements \"B*4*T\" uses T but defaults has no seq_len");
}

// A file's own defaults are bounded as the flags are, and a sequence model's default length by its
// learned position table, as --seq-len is (nanoGPT asserts on a longer sequence).
TEST(ModelLoader, DefaultsAreBoundedAsTheFlagsAre) {
  const std::string gpt2 = model_text("gpt2");
  ASSERT_NE(gpt2.find("  seq_len: 1024\n"), std::string::npos);
  try {
    (void)parse_model(replace(gpt2, "  seq_len: 1024\n", "  seq_len: 2048\n"), "g.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(": defaults: seq_len 2048: the position table transformer.wpe.weight is "
                                         "[1024, 768]; expected at most 1024 positions"),
              std::string::npos)
        << e.what();
  }
  try {
    (void)parse_model(replace(gpt2, "  seq_len: 1024\n", "  seq_len: 99999999999999\n"), "g.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(": defaults: seq_len 99999999999999: expected at most 16777216, as "
                                         "--seq-len takes"),
              std::string::npos)
        << e.what();
  }
  // A shorter default (an imported trace's T) does not bound a run's T: the table's rows do.
  const Model short_default = parse_model(replace(gpt2, "  seq_len: 1024\n", "  seq_len: 64\n"), "g.yaml");
  EXPECT_NO_THROW(short_default.check_seq_len(128));
  EXPECT_NO_THROW(short_default.check_seq_len(1024));
  try {
    short_default.check_seq_len(1025);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "model gpt2 has 1024 positions (transformer.wpe.weight is [1024, 768])");
  }
}

// A GEMM whose multiply-adds (batch x m x n x k) do not fit in 64 bits is refused when the run's
// sizes are known, as every size is; each dimension alone fit.
TEST(ModelLoader, AGemmBeyond64BitsIsRefusedAtTheRunsSizes) {
  // The loader checks the file's own default sizes (B=4, T=8) as it reads it.
  try {
    (void)parse_model(replace(kOps, "gemm: [1, B*T, 10, 4]", "gemm: [1, B*T, 4000000000, 4000000000]"), "g.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "g.yaml:15: layers[1] \"fc\" ops[0] addmm: gemm [1, 32, 4000000000, 4000000000] at the defaults (B=4, "
              "T=8): its multiply-adds do not fit in 64 bits");
  }
  // An expression that overflows at the defaults is named at its line by what it sizes, as written.
  try {
    (void)parse_model(replace(kOps, "flops: B*80*T", "flops: B*800000000000000000*T"), "g.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "g.yaml:14: layers[1] \"fc\" ops[0] addmm: flops \"B*800000000000000000*T\" at the defaults (B=4, T=8): "
              "expression B*800000000000000000*T at B=4, T=8: 6400000000000000000 x 4 does not fit in 64 bits");
  }
  const Model m = parse_model(replace(replace(kOps, "gemm: [1, B*T, 10, 4]", "gemm: [1, B*T, 100000000, 100000000]"),
                                      "flops: B*80*T", "flops: B*20000000000000000*T"),
                              "g.yaml");
  // flops and the GEMM's shape must say the same product: forward is costed from one, backward
  // from the other. Named at the op's flops line (it was the defaults' line until 2026-12-01).
  try {
    (void)parse_model(replace(kOps, "gemm: [1, B*T, 10, 4]", "gemm: [1, B*T, 10000, 40000]"), "g.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "g.yaml:14: layers[1] \"fc\" ops[0] addmm: flops 2560 at the defaults (B=4, T=8), but its gemm [1, 32, "
              "10000, 40000] makes 2 x 12800000000 = 25600000000; expected the two to agree (a product's FLOPs are "
              "twice its multiply-adds)");
  }
  // A file whose flops and gemm agree at the defaults' T only loads, and check_sizes refuses it
  // at a T where they part.
  const Model apart = parse_model(replace(kOps, "flops: B*80*T", "flops: B*10*T*T"), "g.yaml");
  EXPECT_NO_THROW(apart.check_sizes(8, 64));
  EXPECT_THROW(apart.check_sizes(16, 4), ConfigError);
  EXPECT_NO_THROW(m.check_sizes(8, 4));
  EXPECT_THROW(m.check_sizes(8, 1 << 20), ConfigError);  // a batch that takes it past 64 bits
  // A product without its flops would run in no time: named at the op, not read as 0.
  try {
    (void)parse_model(replace(kOps, "flops: B*80*T,", ""), "g.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("ops[0] addmm: missing field \"flops\" on op \"addmm\""), std::string::npos)
        << e.what();
  }
}

// views: [view calls, of them on a tensor that requires grad] (tools/op_trace.py).
TEST(ModelLoader, ViewCallsLoadAndBadCountsNameTheLayer) {
  const std::string with =
      replace(kOps, "tokens: T,\n     ops: [{op: addmm", "tokens: T, views: [3, 2],\n     ops: [{op: addmm");
  const Model m = parse_model(with, "views.yaml");
  EXPECT_EQ(m.layers[0].views, 0);
  EXPECT_EQ(m.layers[1].views, 3);
  EXPECT_EQ(m.layers[1].grad_views, 2);
  EXPECT_EQ(
      error_of(replace(with, "views: [3, 2]", "views: [2, 3]")),
      "bad.yaml:13: layers[1] \"fc\": views: 3 on a tensor that requires grad of 2 view calls; expected at most 2");
  EXPECT_EQ(error_of(replace(with, "views: [3, 2]", "views: [3]")),
            "bad.yaml:13: layers[1] \"fc\": views: expected [view calls, of them on a tensor that requires grad]");
  EXPECT_EQ(error_of(replace(with, "views: [3, 2]", "views: [-1, 0]")),
            "bad.yaml:13: layers[1] \"fc\": field \"views\" is -1; it must be >= 0");
  EXPECT_EQ(error_of(replace(with, "views: [3, 2]", "views: [2000000, 0]")),
            "bad.yaml:13: layers[1] \"fc\": views: 2000000 view calls; expected at most 1000000");
  EXPECT_EQ(error_of(replace(kGood, "tokens: T}\n  - {name: fc", "tokens: T, views: [1, 1]}\n  - {name: fc")),
            "bad.yaml:11: layers[0] \"emb\": views: only a layer with ops lists its view calls");
}

TEST(ModelLoader, MissingFileAndUnknownName) {
  try {
    load_model("no/such/model.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "no/such/model.yaml: cannot read the model file: no such file");
  }
  // A device or a wrong file: one bounded read, one error, never bad_alloc.
  try {
    load_model("/dev/zero");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/dev/zero: cannot read the model file: it is larger than 256 MiB, the most a model "
              "file may hold (is it the right file?)");
  }
  try {
    load_model("models/zoo");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), "models/zoo: cannot read the model file: it is a directory");
  }
  EXPECT_THROW(load_model("gtp2"), ConfigError);
  // A name the system refuses as too long is not "no such file" (ENAMETOOLONG: NAME_MAX, 255 bytes
  // a part of a path on Linux; PATH_MAX, 4096, a whole path).
  const std::string part(300, 'a');
  try {
    load_model("/tmp/" + part + ".yaml");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), "/tmp/" + part +
                                         ".yaml: cannot read the model file: its name is too long (305 "
                                         "bytes in one part of the path; the system allows 255)");
  }
  std::string deep = "/tmp";
  while (deep.size() < 5000) deep += "/" + std::string(200, 'b');
  try {
    load_model(deep + ".yaml");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), deep + ".yaml: cannot read the model file: its path is too long (" +
                                         std::to_string(deep.size() + 5) + " bytes; the system allows 4095)");
  }
}

TEST(ModelLoader, JsonIsAccepted) {
  const std::string json = R"({"format": "gradsync-model/2", "name": "j", "defaults": {"batch": 2},
    "input": {"bytes": 16}, "output": {"elements": 4},
    "parameters": [{"name": "w", "shape": [4, 4]}],
    "layers": [{"name": "fc", "kind": "linear", "params": ["w"], "in": 4, "out": 4}]})";
  EXPECT_EQ(parse_model(json, "j.json").total_params(), 16);
}

}  // namespace
}  // namespace gradsync
