// step_model.cpp: parameter sizes and the gradient-ready order.
#include "core/step_model.hpp"

namespace gradsync {

std::int64_t ParamInfo::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::vector<std::size_t> StepModel::trainable() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i].requires_grad) out.push_back(i);
  return out;
}

Bytes StepModel::gradient_bytes() const {
  Bytes total = 0;
  for (std::size_t i : trainable()) total += params[i].bytes();
  return total;
}

Bytes StepModel::parameter_bytes() const {
  Bytes total = 0;
  for (const ParamInfo& p : params) total += p.bytes();
  return total;
}

Bytes StepModel::buffer_bytes() const {
  Bytes total = 0;
  for (const BufferInfo& b : buffers) total += b.bytes();
  return total;
}

bool StepModel::has_loss_layer() const {
  for (const LayerInfo& l : layers)
    if (l.loss) return true;
  return false;
}

std::vector<int> ready_layer(const StepModel& m) {
  std::vector<int> layer(m.params.size(), -1);
  // The earliest forward use runs backward last, so it is the one that completes the gradient.
  for (int l = static_cast<int>(m.layers.size()) - 1; l >= 0; --l)
    for (std::size_t p : m.layers[static_cast<std::size_t>(l)].grad_order)
      if (m.params[p].requires_grad && !m.params[p].unused) layer[p] = l;
  return layer;
}

std::vector<std::size_t> ready_order(const StepModel& m) {
  const std::vector<int> layer = ready_layer(m);
  std::vector<std::size_t> order;
  std::vector<bool> seen(m.params.size(), false);
  for (int l = static_cast<int>(m.layers.size()) - 1; l >= 0; --l) {
    for (std::size_t p : m.layers[static_cast<std::size_t>(l)].grad_order) {
      if (layer[p] != l || seen[p]) continue;
      seen[p] = true;
      order.push_back(p);
    }
  }
  return order;
}

}  // namespace gradsync
