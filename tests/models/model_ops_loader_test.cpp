// model_ops_loader_test.cpp: format 2's recorded ops as the loader reads them (models/op_loader.cpp):
// references, sizes in B and T, products' and convolutions' shapes, view calls, and each bad value
// named at its line.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "core/error.hpp"
#include "model_text_util.hpp"
#include "models/model.hpp"

namespace gradsync {
namespace {

using test::error_of;
using test::kGood;
using test::kOps;
using test::replace;

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

// A convolution reads its whole weight: a parameter that does not hold out x in/groups x kh x kw
// elements (a larger one too, which a slicing op could read part of) is refused at the op, with
// the shape nn.Conv2d gives it; so are channels that groups does not divide. (Element counts: a
// transposed or 1-D/3-D convolution's weight has its own layout; tools/export_model's test.)
TEST(ModelLoader, AConvolutionsWeightMustHoldItsElements) {
  const std::string r18 = model_text("resnet18");
  ASSERT_NE(r18.find("{name: conv1.weight, shape: [64, 3, 7, 7]}"), std::string::npos);
  EXPECT_NO_THROW((void)parse_model(r18, "r18.yaml"));
  for (const char* bad : {"[64, 3, 7, 8]", "[64, 3, 7, 99999999999]", "[64, 6, 7, 7]"}) {
    try {
      (void)parse_model(replace(r18, "{name: conv1.weight, shape: [64, 3, 7, 7]}",
                                std::string("{name: conv1.weight, shape: ") + bad + "}"),
                        "r18.yaml");
      ADD_FAILURE() << bad << ": no error";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("r18.yaml:"), std::string::npos) << what;
      EXPECT_NE(what.find("\"conv1\" ops[0] convolution: weight p0 (conv1.weight) has shape "), std::string::npos)
          << what;
      EXPECT_NE(what.find("a convolution of in 3, out 64, groups 1, kernel 7x7 has a weight of 9408 elements "
                          "(nn.Conv2d's shape [64, 3, 7, 7])"),
                std::string::npos)
          << what;
    }
  }
  const std::string grouped =
      replace(r18, "conv: [3, 224, 224, 64, 7, 7, 2, 3, 1]", "conv: [3, 224, 224, 64, 7, 7, 2, 3, 2]");
  ASSERT_NE(grouped, r18);
  try {
    (void)parse_model(grouped, "r18.yaml");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("conv: in 3 and out 64 channels must both be multiples of groups 2"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gradsync
