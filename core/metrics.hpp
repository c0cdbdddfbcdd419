// metrics.hpp: what a step's trace means, computed the same way for every engine.
//
// Definitions (DESIGN.md, Outputs): compute time is the time the compute stream is busy;
// communication time is the time a comm or copy stream is busy; overlap is the time both are
// busy divided by the communication time; exposed communication is communication not hidden
// behind compute. All are unions of intervals on one rank within one iteration, so two kernels
// that run back to back count once for the time they cover.
//
//   const std::vector<IterationMetrics> its = iteration_metrics(trace, /*rank=*/0);
//   its[1].exposed_communication_s
#pragma once

#include <utility>
#include <vector>

#include "core/trace.hpp"

namespace gradsync {

// IterationMetrics: one rank's view of one training step.
struct IterationMetrics {
  int iteration = 0;
  double start_s = 0;
  double end_s = 0;
  double time_s = 0;
  double compute_s = 0;
  double communication_s = 0;
  double overlap_s = 0;  // compute and communication both busy
  double exposed_communication_s = 0;
  double overlap = 0;  // overlap_s / communication_s (0 without communication)
};

// iteration_metrics returns one entry per "iteration:N" event of `rank`, in iteration order.
std::vector<IterationMetrics> iteration_metrics(const Trace& trace, int rank);

// Interval arithmetic used above, exposed for tests: the measure of a union of [start, end)
// intervals, and the measure of the intersection of two unions.
double union_length(std::vector<std::pair<double, double>> intervals);
double intersection_length(std::vector<std::pair<double, double>> a, std::vector<std::pair<double, double>> b);

}  // namespace gradsync
