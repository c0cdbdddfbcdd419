// step_model.hpp: a model as the strategy code sees it: parameters with their sizes and how
// their gradients are produced, buffers, and layers in forward order. models/ builds it from a
// model file (to_step_model); tests build small ones by hand.
//
//   StepModel m;
//   m.params = {{"fc.weight", {10, 4}}, {"fc.bias", {10}}};
//   m.layers = {{"fc", {1, 0}}};   // backward of fc produces bias's gradient, then weight's
//   ready_order(m) == {1, 0}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/units.hpp"

namespace gradsync {

// ParamInfo is one entry of model.parameters() (a tied parameter appears once).
struct ParamInfo {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::kFloat32;
  bool requires_grad = true;
  bool sparse_grad = false;  // expects a sparse gradient: DDP buckets it alone
  bool unused = false;       // forward never uses it: it gets no gradient

  std::int64_t numel() const;
  Bytes bytes() const { return static_cast<Bytes>(numel()) * dtype_bytes(dtype); }
};

// BufferInfo is one entry of model.named_buffers().
struct BufferInfo {
  std::string name;
  std::int64_t numel = 0;
  DType dtype = DType::kFloat32;
  Bytes bytes() const { return static_cast<Bytes>(numel) * dtype_bytes(dtype); }
};

// LayerInfo is one module call in forward order. grad_order lists the parameters the call uses
// (indexes into StepModel::params) in the order its backward produces their gradients: Linear
// bias before weight; LayerNorm, BatchNorm and Conv weight before bias (SEMANTICS.md §2).
struct LayerInfo {
  std::string name;
  std::vector<std::size_t> grad_order;
  bool loss = false;  // the loss computation (DataParallel runs it on GPU0 unless inside forward)
};

// StepModel: what a training step needs to know about the model.
struct StepModel {
  std::string name;
  std::vector<ParamInfo> params;
  std::vector<BufferInfo> buffers;
  std::vector<LayerInfo> layers;
  double input_bytes_per_sample = 0;   // what DataParallel scatters
  double output_bytes_per_sample = 0;  // what DataParallel gathers (the logits)
  bool loss_inside = false;            // forward returns the loss (computed on every replica)
  int modules = 0;                     // nn.Module objects DataParallel copies per replica

  // trainable lists the parameters that require a gradient: DDP's parameter list.
  std::vector<std::size_t> trainable() const;
  Bytes gradient_bytes() const;  // sum over trainable parameters
  Bytes parameter_bytes() const;
  Bytes buffer_bytes() const;
  // has_loss_layer: whether a layer computes the loss.
  bool has_loss_layer() const;
  // measured: the compute times are a measured step's (models import-trace), whose forward and
  // backward already hold the loss.
  bool measured = false;
  // adds_loss: whether the driver adds implicit_loss: no layer computes it and nothing measured it.
  bool adds_loss() const { return !measured && !has_loss_layer(); }
};

// ready_order is the order in which the trainable, used parameters' gradients become ready in
// backward: layers in reverse forward order, inside a layer in grad_order, and a parameter used
// by several layers (a tied embedding) only after its earliest use has run backward.
std::vector<std::size_t> ready_order(const StepModel& m);

// ready_layer[p] is the layer whose backward makes parameter p's gradient ready (its earliest
// use), or -1 for a parameter without gradient.
std::vector<int> ready_layer(const StepModel& m);

}  // namespace gradsync
