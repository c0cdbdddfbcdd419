// confidence.hpp: how sure a simulated step time is: the class of cases it belongs to, and how far
// gradsync has been from published measurements in that class (validation/published/
// confidence.csv, written by `gradsync validate --published --confidence` from the shipped tables
// and compiled in).
//
//   step_class(s, Strategy::kDDP)        // "DDP, NVLink node, transformer"
//   const auto c = class_confidence("DDP, NVLink node, conv net");
//   c->cases, c->median_abs_error, c->worst_abs_error   // 10, 0.099, 0.158
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/scenario.hpp"
#include "core/strategy.hpp"

namespace gradsync::sim {

// step_class: the validation class of a scenario's step time: "one GPU, <kind>" on one GPU, else
// "<DP|DDP>, <interconnect>, <kind>". The interconnect is how the GPUs' NCCL rings move within a
// node: "NVLink node" (NVLink or NVSwitch paths), "PCIe node", or "multi-node" when the ranks span
// hosts; the kind is "transformer" (the model has attention, a ViT too) or "conv net" (it has
// convolutions and no attention; model_kind, models/op_cost.hpp). A calibrated
// scenario (measured times replace the models) is "<one GPU|DP|DDP>, calibrated", a class the
// tables never hold.
std::string step_class(const Scenario& s, Strategy strategy);

// StepClasses: a step's class and the classes of its parts: its compute as a single-GPU step of
// the same kind ("one GPU, transformer"), its collectives on the same interconnect ("NCCL
// collectives, NVLink node"; empty on one GPU).
struct StepClasses {
  std::string step;
  std::string compute;
  std::string communication;
};
StepClasses step_classes(const Scenario& s, Strategy strategy);

// ClassConfidence: one row of confidence.csv: the published measurements of a class, both splits.
// Step classes (step_class) hold step times and throughputs of the training and DDP tables;
// "NCCL collectives, <interconnect>" classes the scored nccl-tests points (16 MiB and up).
struct ClassConfidence {
  std::string cls;
  int cases = 0;                // published cases (runs)
  int points = 0;               // measurements: a step each, or a size of an nccl-tests run
  double median_abs_error = 0;  // median of |predicted / published - 1| over the points
  double worst_abs_error = 0;
  int faster = 0;          // points predicted faster than measured (more throughput, less time)
  std::string worst_case;  // the id of the case with the worst error
};

// class_confidence: the compiled-in row of `cls`; nullopt when no published case is in it.
std::optional<ClassConfidence> class_confidence(std::string_view cls);

// ClassError: one published case's error, with its class.
struct ClassError {
  std::string cls;
  std::string id;
  double error = 0;     // predicted / published - 1 (a time or a rate)
  bool faster = false;  // predicted faster than measured: a rate above it, or a time below it
};

// predicted_faster: whether an error (predicted / published - 1) of `metric` is a prediction faster
// than the measurement: a rate ("samples_per_s", "tokens_per_s", busbw) above it, a time ("step_s",
// "ms_per_3_iterations") below it.
bool predicted_faster(std::string_view metric, double error);

// confidence_csv: the table of every class in `errors` (sorted by class), as confidence.csv holds it.
std::string confidence_csv(std::vector<ClassError> errors);

}  // namespace gradsync::sim
