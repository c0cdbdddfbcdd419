// op_tables.hpp: the aten op names the op costing (op_coster.hpp) sorts by: autocast's lists, ops
// without a gradient, indexed reads, reductions, layout copies. Internal.
#pragma once

#include <set>
#include <string_view>

namespace gradsync::op_detail {

// PyTorch's CUDA autocast lists (torch/csrc/autograd/autocast_mode.cpp, PyTorch 1.13-2.x; the
// recorded aten names of the ops it casts): products and convolutions run in the lower precision,
// these in float32 (softmax, log_softmax, layer_norm, the losses, sum, exp, pow, ...).
inline const std::set<std::string_view> kLowerPrecision = {"mm",          "addmm",        "bmm",    "baddbmm", "addbmm",
                                                           "convolution", "_convolution", "matmul", "linear"};
inline const std::set<std::string_view> kFloat32 = {"_softmax",
                                                    "_log_softmax",
                                                    "native_layer_norm",
                                                    "native_group_norm",
                                                    "nll_loss_forward",
                                                    "nll_loss2d_forward",
                                                    "exp",
                                                    "expm1",
                                                    "log",
                                                    "log1p",
                                                    "log2",
                                                    "log10",
                                                    "pow",
                                                    "rsqrt",
                                                    "reciprocal",
                                                    "sum",
                                                    "prod",
                                                    "cumsum",
                                                    "cumprod",
                                                    "logsumexp",
                                                    "mse_loss",
                                                    "l1_loss",
                                                    "smooth_l1_loss",
                                                    "huber_loss",
                                                    "binary_cross_entropy_with_logits",
                                                    "kl_div",
                                                    "softplus",
                                                    "acos",
                                                    "asin",
                                                    "cosh",
                                                    "sinh",
                                                    "tan",
                                                    "erfinv",
                                                    "norm",
                                                    "linalg_vector_norm"};
// Ops without a gradient (comparisons, factories, random fills, buffer updates).
inline const std::set<std::string_view> kNoGrad = {
    "eq",     "ne",        "lt",         "le",        "gt",          "ge",         "argmax",  "argmin",
    "arange", "zeros",     "ones",       "full",      "fill_",       "zero_",      "randint", "rand",
    "randn",  "ones_like", "zeros_like", "full_like", "logical_not", "bitwise_not"};
// Ops that read only the rows they index: a gather from a table, a loss's target entries.
inline const std::set<std::string_view> kIndexed = {"embedding", "index_select", "gather", "nll_loss_forward",
                                                    "nll_loss2d_forward"};
// Reductions: a fused region needs a kernel pass for each.
inline const std::set<std::string_view> kReductions = {"_softmax",
                                                       "_log_softmax",
                                                       "native_layer_norm",
                                                       "native_group_norm",
                                                       "native_batch_norm",
                                                       "sum",
                                                       "mean",
                                                       "nll_loss_forward",
                                                       "amax",
                                                       "max",
                                                       "logsumexp",
                                                       "var_mean",
                                                       "var",
                                                       "cumsum"};
// Layout copies (clone, contiguous): the gradient passes through them, copied back to the view's
// layout in backward when the copy was strided (op_backward.cpp).
inline const std::set<std::string_view> kPassThrough = {"clone", "alias", "contiguous"};

// Ops whose backward reads their input (derivatives.yaml: gelu_backward(grad, self),
// silu_backward(grad, self), pow's grad * exponent * self^(exponent - 1), ...).
inline const std::set<std::string_view> kReadsInput = {"gelu",      "silu",        "mish",       "pow", "log",
                                                       "log1p",     "sin",         "cos",        "erf", "softplus",
                                                       "hardswish", "hardsigmoid", "leaky_relu", "abs", "elu"};
// Ops whose backward reads their result (derivatives.yaml: threshold_backward(grad, result, 0) for
// relu, tanh_backward(grad, result), rsqrt's -0.5 * grad * result^3, _log_softmax_backward_data
// (grad, result); _softmax has a rule of its own).
inline const std::set<std::string_view> kReadsResult = {"relu", "relu_", "tanh",       "sigmoid",     "exp",
                                                        "sqrt", "rsqrt", "reciprocal", "_log_softmax"};

}  // namespace gradsync::op_detail
