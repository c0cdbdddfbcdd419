// trace_test_util.hpp: what the import-trace tests share: the refusal a call makes, and an import
// into the zoo's ResNet-18.
#pragma once

#include <string>

#include "core/error.hpp"
#include "models/trace_import.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync::test {

// error_of: the message of the ConfigError (DataError included) that `f` throws, or "accepted".
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

// resnet18_import: importing into the zoo's ResNet-18 (62 trainable parameter tensors) at batch
// 16, split by a V100's roofline in fp32.
inline TraceImport resnet18_import() {
  TraceImport opts;
  opts.model = "resnet18";
  opts.batch = 16;
  opts.split.gpu = &gpu_spec("v100");
  opts.split.precision = Precision::kFP32;
  return opts;
}

}  // namespace gradsync::test
