// published_training.hpp: gradsync against published single-GPU training throughput
// (validation/published/training_steps.yaml, compiled in): each case's model, GPU, batch,
// precision and execution mode predicted from the model's ops (models/op_cost.hpp), in this
// process (no SimGrid: one GPU, no communication).
//
//   for (const TrainingCase& c : read_training_cases(builtin_training_text(), "training_steps.yaml"))
//     predict_training(c).error()     // predicted / published - 1
#pragma once

#include <string>

#include <string_view>
#include <vector>
#include "models/compute_cost.hpp"

namespace gradsync::sim {

struct TrainingCase {
  std::string id, split, source;
  std::string model, gpu, precision, optimizer, attention;
  bool compile = false;
  bool channels_last = false;
  bool master_weights = false;  // mixed_precision: master-weights (apex amp O2 and the like)
  // optimizer_impl: single-tensor (PyTorch before 2.0, or foreach=False: a Python loop over the
  // parameters, zero_grad filling zeros), fused, or foreach (the default; unset).
  OptimizerImpl optimizer_impl = OptimizerImpl::kForEach;
  long batch = 1;
  long seq_len = 0;  // 0: not a sequence model (or the model's)
  long grad_accum = 1;
  // clip_grad_norm: the loop calls torch.nn.utils.clip_grad_norm_ before every optimizer step (the
  // Hugging Face Trainer's max_grad_norm 1.0), as PyTorch 1.10 and later run it (no host read).
  bool clip_grad_norm = false;
  // input: where each batch starts when the timed region copies it (input: pageable, the source's
  // x.to('cuda') inside the timing); device (unset) when the batch is already there or not timed.
  InputLocation input = InputLocation::kDevice;
  std::string metric;  // samples_per_s, tokens_per_s, step_s, ms_per_3_iterations
  // published: what is compared: the steady rate where the case has one (steady:, from the
  // source's own step timestamps after the first), else the source's figure (metric:).
  double published = 0;
  double figure = 0;  // the source's figure as written (metric:)
  bool steady = false;
  std::string unsupported;  // why gradsync cannot predict it (then listed, not scored)
  int line = 0;
};

// read_training_cases: the cases of a table; ConfigError naming origin:line and the field.
std::vector<TrainingCase> read_training_cases(std::string_view text, const std::string& origin);

// builtin_training_text: validation/published/training_steps.yaml as compiled in.
std::string_view builtin_training_text();

struct TrainingPrediction {
  double published = 0;
  double predicted = 0;
  double step_s = 0;  // one optimizer step, predicted
  std::string cls;    // "conv net" or "transformer"
  double error() const { return predicted / published - 1; }
};

// predict_training: one case, in its metric. ConfigError for a model, GPU or precision gradsync
// does not know.
TrainingPrediction predict_training(const TrainingCase& c);

}  // namespace gradsync::sim
