// validation.hpp: measured against simulated, phase by phase and iteration by iteration
// (`gradsync validate`): the table, validation.csv and the report's section.
//
//   const auto rows = validation_rows(measured, simulated);   // same scenario and strategy
//   rows[0].phase == "step", rows[0].error == (simulated - measured) / measured
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gradsync::reports {

struct ValidationRow {
  std::string strategy;  // "ddp", "dp"
  std::string scope;     // "steady" (mean of the steady iterations) or "iteration N"
  std::string phase;     // "step", "compute", "communication", "exposed", "fwd", "bwd", "allreduce", ...
  double measured_s = 0;
  double simulated_s = 0;
  double error = 0;  // (simulated - measured) / measured; 0 when both are 0
};

// validation_phase: the phase an event belongs to: "dp:scatter" for DataParallel's phases, else the
// name up to its first ':' ("fwd", "bwd", "allreduce", "copy_in", "optimizer").
std::string validation_phase(const std::string& event_name);

// validation_rows: step, compute, communication and exposed communication, then each phase's
// time per steady iteration on rank 0 (the sum of its events' durations), then every
// iteration's time.
std::vector<ValidationRow> validation_rows(const StrategyResult& measured, const StrategyResult& simulated);

// validation_csv: the rows as CSV (header: strategy,scope,phase,measured_s,simulated_s,error).
std::string validation_csv(const std::vector<ValidationRow>& rows);

// print_validation: the rows as a table (times in ms, error in %).
void print_validation(const std::vector<ValidationRow>& rows, std::ostream& out);

}  // namespace gradsync::reports
