// op_test_util.hpp: helpers of the op-level cost tests (op_cost_test.cpp, conv_cost_test.cpp, op_backward_test.cpp).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync::test {

// context: an eager context on `gpu` in `p` at `batch` (sequence length t; 0: the model's).
inline ComputeContext context(const char* gpu, Precision p, std::int64_t batch, std::int64_t t = 0) {
  ComputeContext ctx;
  ctx.gpu = &gpu_spec(gpu);
  ctx.precision = p;
  ctx.batch = batch;
  if (t > 0) ctx.seq_len = t;
  return ctx;
}

// layer_cost: the cost of model m's layer `name` in c; std::out_of_range if there is none.
inline const LayerCost& layer_cost(const Model& m, const ModelCost& c, const std::string& name) {
  for (std::size_t i = 0; i < m.layers.size(); ++i)
    if (m.layers[i].name == name) return c.layers.at(i);
  throw std::out_of_range(name);
}

// one_op_per_layer: every op its own layer ("transformer.h.0.attn.fn/_softmax/6"), each keeping
// the tensors its op saves.
inline Model one_op_per_layer(Model m) {
  std::vector<Layer> one;
  for (const Layer& l : m.layers)
    for (std::size_t i = l.first_op; i < l.first_op + l.op_count; ++i) {
      Layer x = l;
      x.name = l.name + "/" + m.ops[i].name + "/" + std::to_string(i - l.first_op);
      x.first_op = i;
      x.op_count = 1;
      x.saved.clear();
      for (const SavedTensor& st : l.saved)
        if (st.saver == i) x.saved.push_back(st);
      one.push_back(x);
    }
  m.layers = one;
  return m;
}

}  // namespace gradsync::test
