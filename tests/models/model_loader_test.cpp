// model_loader_test.cpp: one test per bad model file, each with its exact message.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "model_text_util.hpp"
#include "models/model.hpp"

namespace gradsync {
namespace {

using test::error_of;
using test::kGood;
using test::replace;

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
            "per sample (a forward that returns its loss is loss: inside: tools/export_model.py's loss_inside=True)");
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

// A model with nothing to train is refused at its parameters' line, as PyTorch refuses to train it
// (loss.backward() raises; DDP refuses the module). Until 2026-12-02 an all-frozen model ran DDP
// with 0 buckets, and `parameters:` with nothing under it (the exporter's, for a parameter-free
// model) said the field was missing.
TEST(ModelLoader, AModelWithNothingToTrainIsRefused) {
  std::string frozen = kGood;
  for (const char* name : {"emb.weight, shape: [10, 4]", "fc.weight, shape: [10, 4]", "fc.bias, shape: [10]"})
    frozen = replace(frozen, std::string(name) + "}", std::string(name) + ", requires_grad: false}");
  EXPECT_EQ(error_of(frozen),
            "bad.yaml:6: parameters: all 3 have requires_grad: false: nothing to train (PyTorch: "
            "loss.backward() raises, and DistributedDataParallel refuses a module without a "
            "parameter that requires a gradient); expected at least one trainable parameter");
  const std::string none =
      "format: gradsync-model/2\nname: none\ndefaults: {batch: 4}\ninput: {bytes: 8}\n"
      "output: {elements: 2, loss: outside}\nparameters:\nlayers:\n"
      "  - {name: act, kind: activation, op: relu, elements: 2}\n";
  const std::string want =
      "bad.yaml:6: parameters: none: a model without parameters has nothing to train (PyTorch: loss.backward() "
      "raises, and DistributedDataParallel refuses a module without a parameter that requires a gradient); "
      "expected at least one parameter";
  EXPECT_EQ(error_of(none), want);
  EXPECT_EQ(error_of(replace(none, "parameters:\n", "parameters: []\n")), want);
  EXPECT_EQ(error_of(replace(none, "parameters:\n", "parameters: 3\n")),
            "bad.yaml:6: parameters: expected a list of {name, shape, ...}");
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
  // At the line and column where yaml-cpp finds the list unclosed (it counts from 0; the message
  // from 1, as editors do).
  EXPECT_EQ(error_of(replace(kGood, "name: tiny", "name: [tiny")).substr(0, 26), "bad.yaml:3:9: syntax error");
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
