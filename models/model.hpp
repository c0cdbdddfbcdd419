// model.hpp: a model as gradsync needs it: parameters in registration order, buffers, layers in
// forward order with the parameters each uses and the shapes the cost model needs, and the
// per-sample input and output. The file format is documented in models/README.md.
//
//   const Model m = load_model("gpt2");          // a zoo name, or a path to a .yaml/.json file
//   m.total_params() == 124439808;
//   m.parameters[0].name == "transformer.wte.weight";
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "core/units.hpp"
#include "models/ops.hpp"
#include "models/seq_expr.hpp"

namespace gradsync {

// Parameter is one entry of model.parameters(): a tied parameter appears once.
struct Parameter {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::kFloat32;
  bool requires_grad = true;
  // sparse_grad: expects a sparse gradient (nn.Embedding(sparse=True)); DDP buckets it alone.
  bool sparse_grad = false;

  // numel and bytes: ConfigError when they do not fit in 64 bits (the loader checks every one).
  std::int64_t numel() const;
  Bytes bytes() const;
};

// Buffer is one entry of model.named_buffers() (BatchNorm statistics, position ids, ...).
struct Buffer {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::kFloat32;
  // math_attention_only: registered only where the model runs its own (math) attention: nanoGPT's
  // causal mask (`if not self.flash: self.register_buffer("bias", ...)`), absent when it calls
  // F.scaled_dot_product_attention. `registered` is false once the scenario's attention drops it
  // (resolve_basics): DDP broadcasts, DP replicates and memory holds only registered buffers.
  bool math_attention_only = false;
  bool registered = true;

  std::int64_t numel() const;
  Bytes bytes() const;
};

// LayerKind is what a layer computes; it decides which dims it has and how it is costed.
enum class LayerKind {
  kLinear,       // in, out, tokens
  kConv2d,       // in, out, kernel, stride, padding, groups, height, width (input)
  kEmbedding,    // num, dim, tokens
  kLayerNorm,    // elements
  kRMSNorm,      // elements
  kBatchNorm,    // elements, channels
  kAttention,    // heads, head_dim, q_len, kv_len, kv_heads; causal
  kActivation,   // elements; op
  kSoftmax,      // elements
  kDropout,      // elements
  kPooling,      // in_elements, out_elements
  kElementwise,  // elements; op
  kLoss,         // elements (the logits); format 2: a run of ops that computes a loss
  kOps,          // format 2: a run of functional ops (no module of its own); costed by its ops
};

// layer_kind_name is the file spelling: "linear", "conv2d", ...
std::string_view layer_kind_name(LayerKind k);

// Layer is one call of a module in forward order. Every dim of its kind is present (defaults
// filled in at load time) and may depend on the sequence length T.
struct Layer {
  std::string name;
  LayerKind kind = LayerKind::kElementwise;
  // params indexes Model::parameters, in the module's registration order (weight, bias).
  std::vector<std::size_t> params;
  std::map<std::string, SeqExpr, std::less<>> dims;
  std::string op;  // activation/elementwise operation ("gelu", "add"); may be empty
  bool causal = false;
  // Format 2: the layer's ops are Model::ops[first_op, first_op + op_count), and the tensors
  // autograd keeps for its backward. A layer without ops is costed by its kind's rule.
  std::size_t first_op = 0;
  std::size_t op_count = 0;
  std::vector<SavedTensor> saved;
  // Format 2: the view calls (view, transpose, t, expand, slice, split, ...) the layer's forward
  // makes, which launch no kernel but cost the host its time in an eager step; grad_views of them
  // view a tensor that requires grad, so each adds a backward node (ViewBackward0, ...) whose
  // call the engine makes in backward. The model file's views: [views, grad_views].
  int views = 0;
  int grad_views = 0;
  // With Model::measured: this layer's share of the measured forward and backward, in seconds.
  double measured_forward_s = 0;
  double measured_backward_s = 0;

  // dim evaluates one dim for sequence length t; std::out_of_range if the kind has no such dim.
  std::int64_t dim(std::string_view name, std::int64_t t) const;
};

// MeasuredStep: a single-device training step that torch.profiler measured, as `gradsync models
// import-trace` found it in a Kineto/Chrome trace (models/trace_import.hpp). Times are means over
// the trace's ProfilerStep#N (the optimizer's over those that step it); other_s is the rest of the
// step (zero_grad, data, the host's gaps between phases), so step_s = forward_s + backward_s +
// optimizer_s + other_s: one micro-step and one optimizer step.
struct MeasuredStep {
  std::string trace;   // the trace file it came from
  std::string device;  // "cpu" or the GPU's name in the trace
  std::int64_t batch = 0;
  std::optional<std::int64_t> seq_len;
  int steps = 0;  // ProfilerStep#N averaged
  // precision: what the step ran in (import-trace --precision); runs of the model default to it,
  // so that their memory is the measured run's. Unset in files written before 2026-12-01.
  std::optional<Precision> precision;
  // optimizer: the torch.optim class the trace stepped (Optimizer.step#<Class>.step) as
  // --optimizer names it: sgd, sgd-momentum, adam or adamw; runs of the model default to it, so
  // that their optimizer state is the measured run's. Empty: none found, a class gradsync does not
  // model, or a file written before 2026-12-01.
  std::string optimizer;
  // optimizer_steps: the steps holding an Optimizer.step (fewer than steps when prof.step() ran
  // after every micro-step of gradient accumulation); optimizer_s is the mean over those.
  // grad_accum: the micro-steps per optimizer step found so (1: every step, or not known); runs of
  // the model default to it.
  int optimizer_steps = 0;
  int grad_accum = 1;
  double step_s = 0;
  double forward_s = 0;
  double backward_s = 0;
  double optimizer_s = 0;
  double other_s = 0;
};

// kMaxModelDefault: the largest default batch or seq_len a model file may give, as --batch-per-gpu
// and --seq-len take (2^24).
inline constexpr std::int64_t kMaxModelDefault = std::int64_t{1} << 24;

// Model is a loaded, validated model file.
struct Model {
  std::string name;
  std::string description;
  std::string source;
  std::string origin;  // where it was loaded from: "models/zoo/gpt2.yaml" or the user's path

  std::int64_t default_batch = 1;
  std::optional<std::int64_t> default_seq_len;  // set for sequence models

  std::string input_what;
  SeqExpr input_bytes;  // per sample
  std::string output_what;
  SeqExpr output_elements;   // per sample; bytes follow the activation precision
  bool loss_inside = false;  // true: forward returns the loss too (computed on every replica)

  std::vector<Parameter> parameters;
  std::vector<Buffer> buffers;
  std::vector<Layer> layers;
  std::vector<std::size_t> unused_parameters;  // indexes into parameters
  // Format 2: every op of one forward, in order (layers index into it), and the model inputs'
  // dtypes (the forward's tensor arguments: token ids int64, images float32).
  std::vector<Op> ops;
  std::vector<DType> input_dtypes;
  // Set for a model imported with a measured step: its times replace the roofline's
  // (models/compute_cost.hpp: measured_cost).
  std::optional<MeasuredStep> measured;
  // unpadded_vocabulary: the vocabulary before pad_vocabulary widened the tables that hold it
  // (models/op_cost.hpp); 0 while they are as the file gives them.
  std::int64_t unpadded_vocabulary = 0;

  std::int64_t total_params() const;
  Bytes parameter_bytes() const;
  Bytes buffer_bytes() const;
  // seq_len_or_default returns t when the model has a sequence length, else 1 (ignored).
  std::int64_t seq_len(std::optional<std::int64_t> t) const;
  // check_seq_len throws ConfigError when `t` cannot run: the model has no sequence length, or
  // t exceeds the learned position embeddings (GPT-2 1024, BERT 512).
  void check_seq_len(std::int64_t t) const;
  // check_sizes throws ConfigError when a size of the file (input bytes, output elements, a
  // layer's dims, an op's tensors, FLOPs and GEMM shape, a saved tensor) is negative or does not
  // fit in 64 bits at sequence length t and batch `batch`: "4*T-60000" is fine at T=1024 only.
  void check_sizes(std::int64_t t, std::int64_t batch) const;
};

// parse_model reads a model file's text (YAML; JSON is YAML too). `origin` names it in errors.
// Throws ConfigError naming origin:line, the entry, the field, the bad value and what was expected.
Model parse_model(std::string_view text, const std::string& origin);

// load_model accepts a zoo name ("gpt2") or a path to a model file.
Model load_model(std::string_view name_or_path);

// model_text: the text load_model would parse for `name_or_path` (a zoo model's built-in file).
std::string model_text(std::string_view name_or_path);

// zoo_model_names lists the built-in models, sorted.
std::vector<std::string> zoo_model_names();

}  // namespace gradsync
