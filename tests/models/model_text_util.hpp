// model_text_util.hpp: the small model files the model loader tests break one line at a time.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "models/model.hpp"

namespace gradsync::test {

// A small valid model; each test breaks one line of it.
inline const std::string kGood = R"(format: gradsync-model/2
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

inline std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return text.replace(pos, from.size(), to);
}

inline std::string error_of(const std::string& text) {
  try {
    parse_model(text, "bad.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

// A format 2 file with ops: the embedding's gather and the linear's product, in batch B.
inline const std::string kOps = R"(format: gradsync-model/2
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

}  // namespace gradsync::test
