// report.hpp: one scenario's result record and everything written from it.
//
// A Report is what `compare`, `simulate` (and, later, `bench`) produce: the scenario as given,
// the `#` lines that describe it, and one StrategyResult per strategy. Each writer turns the same
// record into one output (Google Benchmark's reporters are the model):
//
//   Report rep{"compare", "simulated", scenario_json, header_lines, {dp, ddp}};
//   print_summary(rep, std::cout);                 // nccl-tests-style table
//   const auto written = write_outputs("gradsync-out", rep);
//   // summary.csv iterations.csv events.csv result.json trace-dp.json trace-ddp.json report.html
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/advice.hpp"
#include "core/result.hpp"
#include "core/trace_ranks.hpp"
#include "reports/validation.hpp"

namespace gradsync::reports {

// Confidence: how far gradsync has been from published measurements in the class of a strategy's
// step (sim/confidence.hpp). part "step": the step's own class; where that has no case, "compute"
// (single-GPU steps of the model's kind) and "communication" (nccl-tests on the interconnect).
struct Confidence {
  std::string strategy;  // "dp", "ddp"
  std::string part;      // "step", "compute", "communication"
  std::string cls;       // "DDP, NVLink node, conv net"
  int cases = 0;         // 0: no published case in the class
  int points = 0;
  double median_abs_error = 0;
  double worst_abs_error = 0;
  int faster = 0;  // of `points`, those predicted faster than measured
  std::string worst_case;
};

// TraceOptions, traced_ranks, slowest_ranks: core/trace_ranks.hpp.
using ::gradsync::TraceOptions;

struct Report {
  std::string command;              // "compare", "simulate", "bench"
  std::string mode = "simulated";   // or "real"
  nlohmann::ordered_json scenario;  // the resolved scenario: every key with its value, as result.json holds them
  // requested: the keys whose request differs from the resolved value, with what was asked
  // ("default" for a key left unset): core/scenario_keys.hpp's requested_json.
  nlohmann::ordered_json requested = nlohmann::ordered_json::object();
  std::vector<std::string> header;  // `#` lines describing the scenario, for the table and HTML
  std::vector<StrategyResult> strategies;
  std::vector<ValidationRow> validation;  // `validate`: measured against simulated (else empty)
  std::optional<Advice> advice;           // `compare`, `advise`: the changes simulated (core/advice.hpp)
  std::vector<Confidence> confidence;     // simulated runs: per strategy, its class's published errors
  TraceOptions trace;                     // which ranks the trace and events.csv hold, and the format
};

// print_summary: the table (one row per strategy), a note per skipped strategy and, with both
// strategies, DDP's speed-up over DP.
void print_summary(const Report& r, std::ostream& out);

// oom_text: "<strategy> does not fit GPU<i>'s memory: needs X GiB of Y GiB" for the first GPU a
// strategy overflows (the most-loaded one); empty when it fits or was skipped.
std::string oom_text(const StrategyResult& r);

// print_confidence: the "how sure" lines, one per strategy (nothing without confidence rows).
void print_confidence(const Report& r, std::ostream& out);
// confidence_json: result.json's "confidence".
nlohmann::ordered_json confidence_json(const std::vector<Confidence>& cs);

// ExplainRow: one phase of one strategy in one iteration (`--explain`).
struct ExplainRow {
  std::string strategy;
  std::string phase;                   // "forward", "dp:scatter", "allreduce buckets", ...
  std::string where;                   // "GPU0 -> GPUs 1-7 (peer copies)"
  double gpu0_in = 0, gpu0_out = 0;    // payload bytes
  double other_in = 0, other_out = 0;  // payload bytes per other GPU
  double time_s = 0;                   // union of the phase's intervals on every GPU
};

// explain: the phases of `iteration` (0: the last), in the order they start.
std::vector<ExplainRow> explain(const StrategyResult& r, int iteration = 0);
void print_explain(const Report& r, std::ostream& out);

// bytes_text: 12.3 GB, 4.5 MB, 12.0 kB, 7 B (decimal units, as nccl-tests).
std::string bytes_text(double bytes);

// write_outputs writes summary.csv, iterations.csv, events.csv, result.json, one
// trace-<strategy>.json per strategy, report.html and (validate) validation.csv into `dir` (created if missing),
// each to a temporary name renamed into place. Returns the paths written, in that order.
std::vector<std::string> write_outputs(const std::string& dir, const Report& r);

// result_document: result.json's content.
nlohmann::ordered_json result_document(const Report& r);

}  // namespace gradsync::reports
