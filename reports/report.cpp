// report.cpp: the stdout table, --explain, result.json and write_outputs.
#include "reports/report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <future>
#include <map>
#include <set>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/version.hpp"
#include "reports/chrome_trace.hpp"
#include "reports/csv.hpp"
#include "reports/html.hpp"
#include "reports/table.hpp"

namespace gradsync::reports {
namespace {

using json = nlohmann::ordered_json;

std::string ms(double s) { return fmt::format("{:.3f}", s * 1e3); }

// algorithms_of: the algorithms NCCL ran for one phase's calls, as "ring" or "ring/tree".
std::string algorithms_of(const StrategyResult& r, const std::string& phase) {
  std::vector<std::string> seen;
  for (const CollectiveCall& c : r.collectives)
    if (phase_of(c.name) == phase && !c.algorithm.empty() &&
        std::find(seen.begin(), seen.end(), c.algorithm) == seen.end())
      seen.push_back(c.algorithm);
  return seen.empty() ? "ring/tree" : fmt::format("{}", fmt::join(seen, "/"));
}

std::string where_of(const StrategyResult& r, const std::string& phase) {
  const Strategy s = r.strategy;
  const int gpus = r.gpus, replicas = r.replicas;
  const std::string via = r.transports.empty() ? "" : " via " + r.transports;
  // Through host memory both ways (every DDP ring; a DP chain's middle GPUs), before Ada/Hopper.
  const std::string duplex =
      r.shm_duplex_Bps > 0
          ? fmt::format("; host memory both ways: at most {:.1f} GB/s each way per GPU", r.shm_duplex_Bps / 1e9)
          : "";
  const std::string others = replicas > 2 ? fmt::format("GPUs 1-{}", replicas - 1) : "GPU 1";
  if (phase == "host work")
    return s == Strategy::kDP ? "the process's host threads, one at a time (GIL): module copies, threads, Python"
                              : "each rank's host thread, under the GIL";
  if (phase == "collective calls")
    return s == Strategy::kDP ? "the process's host thread: CUDA calls issuing each collective"
                              : "each rank's host thread: CUDA calls issuing each collective";
  if (s == Strategy::kDP) {
    if (phase == "h2d:input") return "host -> GPU0";
    if (phase == "dp:scatter") return "GPU0 -> " + others + " (peer copies)";
    if (phase == "dp:replicate") return "GPU0 -> " + others + " (broadcast" + via + duplex + ")";
    if (phase == "dp:gather") return others + " -> GPU0 (peer copies)";
    if (phase == "dp:scatter_grad") return "GPU0 -> " + others + " (peer copies)";
    if (phase == "dp:reduce") return others + " -> GPU0 (reduce" + via + duplex + ")";
    if (phase == "optimizer" || phase == "loss" || phase == "dp:gather_local" || phase == "dp:loss_mean" ||
        phase == "grad scaler" || phase == "clip_grad_norm" || phase == "dp:accumulate_grad")
      return "GPU0 only";
    return replicas == 1 ? std::string("GPU0 only") : fmt::format("GPUs 0-{}", replicas - 1);
  }
  if (phase == "h2d:input") return gpus == 1 ? "host -> GPU 0" : "host -> every GPU";
  if (phase == "allreduce buckets") {
    if (gpus == 1) return "one GPU: nothing crosses a link";
    // NVLS goes through the NVSwitch's multicast and reduction, not the ring's transports
    // (NCCL_P2P_DISABLE leaves it on NVLink while the ring's hops turn to SHM).
    const std::string algorithms = algorithms_of(r, phase);
    if (algorithms == "nvls")
      return fmt::format("nvls over {} GPUs via NVLink SHARP (NVSwitch multicast and reduction), overlapping backward",
                         gpus);
    return fmt::format("{} over {} GPUs{}{}, overlapping backward", algorithms, gpus, via, duplex);
  }
  if (phase == "comm hook collectives") {
    if (gpus == 1) return "one GPU: nothing crosses a link";
    return fmt::format("{} over {} GPUs{}{}: the comm hook's calls, overlapping backward", algorithms_of(r, phase),
                       gpus, via, duplex);
  }
  if (phase == "comm hook kernels") return "every GPU: the comm hook's kernels (compute and comm streams)";
  if (phase.rfind("broadcast", 0) == 0)
    return gpus == 1 ? std::string("rank 0 only: nothing to send") : fmt::format("rank 0 -> all {} GPUs", gpus);
  if (phase == "overlap slowdown") return "every GPU: compute beside NCCL's kernels (SMs and DRAM shared)";
  // A collective's wait for its last rank, on the comm stream: hidden where backward runs beside
  // it (the exposed column says what reached the step), not a straggler's cost by itself.
  if (phase == "waiting for peers") return "comm stream: waiting for the last rank (hidden beside backward)";
  return gpus == 1 ? std::string("GPU 0") : fmt::format("every GPU (0-{})", gpus - 1);
}

}  // namespace

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

std::string oom_text(const StrategyResult& r) {
  if (!r.skipped.empty()) return "";
  const GpuResult* worst = nullptr;
  for (const GpuResult& g : r.per_gpu)
    if (g.oom &&
        (worst == nullptr || g.peak_memory_bytes - g.capacity_bytes > worst->peak_memory_bytes - worst->capacity_bytes))
      worst = &g;
  if (worst == nullptr) return "";
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  const double need = worst->peak_memory_bytes / kGiB, have = worst->capacity_bytes / kGiB;
  // As many decimals as it takes for the need to read above what the GPU has (2 usually; a
  // need just past it, 80.001 of 80.00 GiB, takes more), and the bytes when even 6 do not part them.
  int digits = 2;
  while (digits < 6 && fmt::format("{:.{}f}", need, digits) == fmt::format("{:.{}f}", have, digits)) ++digits;
  const std::string over =
      fmt::format("{:.{}f}", need, digits) == fmt::format("{:.{}f}", have, digits)
          ? fmt::format(" ({} bytes over)",
                        static_cast<long long>(std::ceil(worst->peak_memory_bytes - worst->capacity_bytes)))
          : "";
  return fmt::format("{} does not fit GPU{}'s memory: it needs {:.{}f} GiB of {:.{}f} GiB{}",
                     strategy_label(r.strategy), worst->rank, need, digits, have, digits, over);
}

void print_summary(const Report& rep, std::ostream& out) {
  Table t({{"strategy", "", true},
           {"iter1", "ms"},
           {"steady", "ms"},
           {"compute", "ms"},
           {"comm", "ms"},
           {"exposed", "ms"},
           {"overlap", "%"},
           {"samples/s", "1/s"},
           {"tokens/s", "1/s"},
           {"gpu0_in", "B/iter"},
           {"gpu0_out", "B/iter"},
           {"peak_mem", "GPU0"},
           {"oom", ""}});
  std::vector<std::string> notes;
  const auto& rs = rep.strategies;
  for (const StrategyResult& r : rs) {
    const std::string label(strategy_label(r.strategy));
    if (!r.skipped.empty()) {
      t.add_row({label, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"});
      notes.push_back(fmt::format("{}: not {}: {}", label, rep.mode == "real" ? "run" : "simulated", r.skipped));
      continue;
    }
    const GpuResult& g0 = r.per_gpu.front();
    bool oom = false;
    for (const auto& g : r.per_gpu) oom = oom || g.oom;
    t.add_row({label, ms(r.iteration_1_time_s), ms(r.steady_iteration_time_s), ms(r.compute_s), ms(r.communication_s),
               ms(r.exposed_communication_s), fmt::format("{:.1f}", 100 * r.overlap),
               // A run that does not fit has no throughput (as sweep's table says it); its times are
               // what it would take if it fit (summary.csv and result.json keep them all).
               oom ? "-" : fmt::format("{:.1f}", r.samples_per_s),
               r.tokens_per_sample > 0 && !oom ? fmt::format("{:.0f}", r.tokens_per_s) : "-", bytes_text(g0.bytes_in),
               bytes_text(g0.bytes_out), fmt::format("{:.2f} GiB", g0.peak_memory_bytes / (1024.0 * 1024 * 1024)),
               oom ? "OOM" : "ok"});
  }
  t.print(out, rep.header);
  for (const auto& n : notes) out << "# " << n << '\n';
  for (const StrategyResult& r : rs) {
    if (r.fidelity.simulated_ranks > 0 && r.fidelity.simulated_ranks < r.gpus)
      out << fmt::format(
          "# {}: {} of {} ranks simulated, one for each place on a machine: the machines are alike, every rank in a "
          "place computes and copies alike and ends each collective with the others (solved over all {} ranks and "
          "every link)\n",
          strategy_label(r.strategy), r.fidelity.simulated_ranks, r.gpus, r.gpus);
    if (r.fidelity.aggregate_calls == 0) continue;
    out << fmt::format(
        "# {} fidelity: aggregate for {} of {} collective calls (one flow per rank, channel and phase); bound: the "
        "steady iteration within {:.0f}% of step fidelity (single collectives: rings equal where uncontended, others "
        "can differ more); --fidelity step for every flow\n",
        strategy_label(r.strategy), r.fidelity.aggregate_calls, r.fidelity.calls, 100 * r.fidelity.bound);
  }
  // A strategy that does not fit the GPU's memory has no speed to compare: say which GPU it
  // overflows, by how much, and which strategy (if any) runs.
  std::vector<std::string> over;
  for (const StrategyResult& r : rs) {
    if (!r.skipped.empty()) continue;
    if (const std::string o = oom_text(r); !o.empty()) over.push_back(o);
  }
  for (const std::string& o : over)
    out << "# " << o << ": no samples/s is shown; its times are what it would take if it fit\n";
  if (!over.empty()) return;
  if (rs.size() == 2 && rs[0].skipped.empty() && rs[1].skipped.empty()) {
    const double speedup = rs[0].steady_iteration_time_s / rs[1].steady_iteration_time_s;
    out << fmt::format("# DDP is {:.2f}x {} than DP per steady iteration ({} ms against {} ms).\n",
                       speedup >= 1 ? speedup : 1 / speedup, speedup >= 1 ? "faster" : "slower",
                       ms(rs[1].steady_iteration_time_s), ms(rs[0].steady_iteration_time_s));
  }
}

void print_confidence(const Report& rep, std::ostream& out) {
  auto measured = [](const Confidence& c) {
    const bool points = c.part == "communication";
    const int n = points ? c.points : c.cases;
    // Which way the errors go: a class predicted faster than measured in most of its points is
    // one whose times are likely short (and its speed-ups over other classes likely large).
    const std::string every = n == 1 ? "" : " in every one";
    const std::string way = c.faster == 0   ? "slower than measured" + every
                            : c.faster == n ? "faster than measured" + every
                                            : fmt::format("faster than measured in {} of {}", c.faster, n);
    if (n == 1)
      return fmt::format("{:.1f}% (|error| of the one published {} of class \"{}\", {}; predicted {})",
                         100 * c.median_abs_error, points ? "nccl-tests point" : "step", c.cls, c.worst_case, way);
    return fmt::format("{:.1f}% (median |error|; worst {:.1f}%, {}) over {} published {} of class \"{}\"; predicted {}",
                       100 * c.median_abs_error, 100 * c.worst_abs_error, c.worst_case, n,
                       points ? "nccl-tests points" : "steps", c.cls, way);
  };
  // spread: " +/- ", or, where every published case erred one way, which way the real time goes
  // (error = predicted / published - 1, so "short of the real time by x%" is exact for the median):
  // a new user read +/- as an error that could go either way.
  const auto spread = [](const Confidence& c, const char* lead) {
    const int n = c.part == "communication" ? c.points : c.cases;
    if (n > 1 && c.faster == n) return std::string(lead) + "likely short of the real time by ";
    if (n > 1 && c.faster == 0) return std::string(lead) + "likely over the real time by ";
    return std::string(" +/- ");
  };
  for (const StrategyResult& r : rep.strategies) {
    const std::string label(strategy_label(r.strategy));
    std::vector<const Confidence*> mine;
    for (const Confidence& c : rep.confidence)
      if (c.strategy == label) mine.push_back(&c);
    if (mine.empty()) continue;
    const Confidence& step = *mine.front();
    if (!oom_text(r).empty()) {
      out << fmt::format("# how sure: {}: does not fit the GPU's memory, so no time to be sure of\n", label);
      continue;
    }
    if (step.cases > 0) {
      out << fmt::format("# how sure: {} {} ms{}{}\n", label, ms(r.steady_iteration_time_s), spread(step, ", "),
                         measured(step));
      continue;
    }
    const bool calibrated = step.cls.ends_with(", calibrated");
    const bool imported = step.cls.ends_with("measured step");
    out << fmt::format("# how sure: {}: no published step of class \"{}\" in gradsync's validation tables{}\n", label,
                       step.cls,
                       calibrated ? " (they hold the models' predictions; this run's times are the calibration's "
                                    "measurements: `gradsync validate` runs the scenario for real beside them)"
                       : imported ? (mine.size() > 1 ? " (its compute is the imported trace's measured step, not a "
                                                       "prediction); its parts:"
                                                     : " (its compute is the imported trace's measured step, not a "
                                                       "prediction)")
                       : mine.size() > 1 ? "; its parts:"
                                         : "");
    for (std::size_t i = 1; i < mine.size(); ++i) {
      const Confidence& c = *mine[i];
      out << (c.cases > 0 ? fmt::format("#   {}{}{}\n", c.part, spread(c, ": "), measured(c))
                          : fmt::format("#   {}: no published case of class \"{}\"\n", c.part, c.cls));
    }
  }
}

json confidence_json(const std::vector<Confidence>& cs) {
  json a = json::array();
  for (const Confidence& c : cs) {
    json j{{"strategy", c.strategy}, {"part", c.part}, {"class", c.cls}, {"cases", c.cases}, {"points", c.points}};
    if (c.cases > 0) {
      j["median_abs_error_frac"] = c.median_abs_error;
      j["worst_abs_error_frac"] = c.worst_abs_error;
      j["worst_case"] = c.worst_case;
      j["predicted_faster_points"] = c.faster;
    }
    a.push_back(j);
  }
  return a;
}

std::vector<ExplainRow> explain(const StrategyResult& r, int iteration) {
  std::vector<ExplainRow> rows;
  if (!r.skipped.empty()) return rows;
  if (iteration == 0 && !r.iterations.empty()) iteration = r.iterations.back().iteration;
  // Phases in the order they first start; time = union of the phase's intervals.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::pair<double, double>>> spans;
  std::map<std::string, double> first;
  for (const TraceEvent& e : r.trace.events) {
    // Host events are phases where they cost time: issuing collectives, and work under the GIL.
    if (e.iteration != iteration ||
        (e.stream == Stream::kHost && e.name.rfind("call:", 0) != 0 && e.name.rfind("host:", 0) != 0))
      continue;
    const std::string p = phase_of(e.name);
    if (!spans.count(p)) {
      order.push_back(p);
      first[p] = e.start_s;
    }
    first[p] = std::min(first[p], e.start_s);
    spans[p].emplace_back(e.start_s, e.end_s);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) { return first[a] < first[b]; });
  const double others = std::max(1, r.gpus - 1);
  for (const std::string& p : order) {
    ExplainRow row;
    row.strategy = std::string(strategy_label(r.strategy));
    row.phase = p;
    row.where = where_of(r, p);
    for (const auto& [name, tr] : r.traffic) {
      if (phase_of(name) != p) continue;
      row.gpu0_in += tr.in[0];
      row.gpu0_out += tr.out[0];
      for (std::size_t g = 1; g < tr.in.size(); ++g) {
        row.other_in += tr.in[g];
        row.other_out += tr.out[g];
      }
    }
    row.other_in /= others;
    row.other_out /= others;
    row.time_s = union_length(spans[p]);
    rows.push_back(std::move(row));
  }
  return rows;
}

void print_explain(const Report& rep, std::ostream& out) {
  Table t({{"strategy", "", true},
           {"phase", "", true},
           {"where", "", true},
           {"gpu0_in", "bytes"},
           {"gpu0_out", "bytes"},
           {"other_in", "bytes/GPU"},
           {"other_out", "bytes/GPU"},
           {"time", "ms"}});
  int iteration = 0;
  for (const StrategyResult& r : rep.strategies) {
    if (!r.iterations.empty()) iteration = r.iterations.back().iteration;
    for (const ExplainRow& row : explain(r)) {
      t.add_row({row.strategy, row.phase, row.where, bytes_text(row.gpu0_in), bytes_text(row.gpu0_out),
                 bytes_text(row.other_in), bytes_text(row.other_out), ms(row.time_s)});
    }
  }
  t.print(out, {fmt::format("--explain: iteration {}, phase by phase; time = how long any GPU works on the phase (a "
                            "union of intervals; under DDP phases overlap); bytes are payload moved by the phase",
                            iteration)});
}

json result_document(const Report& rep) {
  json j;
  j["schema_version"] = 2;
  j["gradsync_version"] = std::string(kVersion);
  j["mode"] = rep.mode;
  j["command"] = rep.command;
  j["scenario"] = rep.scenario;
  j["requested"] = rep.requested;
  auto& arr = j["strategies"] = json::array();
  for (const StrategyResult& r : rep.strategies) arr.push_back(result_json(r, false));
  if (!rep.confidence.empty()) j["confidence"] = confidence_json(rep.confidence);
  if (rep.advice) j["advice"] = advice_json(*rep.advice);
  if (!rep.validation.empty()) {
    auto& v = j["validation"] = json::array();
    for (const ValidationRow& row : rep.validation) {
      v.push_back({{"strategy", row.strategy},
                   {"scope", row.scope},
                   {"phase", row.phase},
                   {"measured_s", row.measured_s},
                   {"simulated_s", row.simulated_s},
                   {"error", row.error}});
    }
  }
  return j;
}

std::vector<std::string> write_outputs(const std::string& dir, const Report& rep) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw RuntimeError(fmt::format("--out {}: cannot create the folder: {}", dir, ec.message()));
  const std::filesystem::path base(dir);
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const std::string& text) {
    const std::string path = (base / name).string();
    write_file_atomic(path, text);
    written.push_back(path);
  };

  const CsvRow header = summary_header();
  std::vector<CsvRow> rows;
  for (const StrategyResult& r : rep.strategies) rows.push_back(summary_row(0, rep.mode, rep.scenario, r));
  fill_scaling_efficiency(header, rows);
  std::string summary = csv_line(header);
  for (const CsvRow& row : rows) summary += csv_line(row);
  put("summary.csv", summary);
  put("iterations.csv", iterations_csv(rep.strategies));
  // The trace and events.csv hold the traced ranks only, each streamed to its file.
  const auto n = rep.scenario.find("nproc_per_node");
  const int per_node = n != rep.scenario.end() && n->is_number_integer() ? n->get<int>() : 0;
  std::vector<std::vector<int>> ranks;
  for (const StrategyResult& r : rep.strategies) ranks.push_back(traced_ranks(r, per_node, rep.trace));
  // The traces are written (formatted and compressed) on a thread of their own beside events.csv
  // and result.json: each file by one thread, in the same order as alone.
  const std::string title = rep.header.empty() ? rep.command : rep.header.front();
  std::vector<std::string> traces;
  for (const StrategyResult& r : rep.strategies) {
    if (!r.skipped.empty()) continue;
    const std::string label(strategy_label(r.strategy));
    traces.push_back((base / fmt::format("trace-{}.json{}", label, rep.trace.gzip ? ".gz" : "")).string());
  }
  std::future<void> traced = std::async(std::launch::async, [&] {
    std::size_t t = 0;
    for (std::size_t i = 0; i < rep.strategies.size(); ++i) {
      const StrategyResult& r = rep.strategies[i];
      if (!r.skipped.empty()) continue;
      AtomicFileWriter w(traces[t++], rep.trace.gzip);
      write_chrome_trace(r, fmt::format("{} ({})", title, strategy_label(r.strategy)), ranks[i],
                         [&](std::string_view s) { w.write(s); });
      w.commit();
    }
  });
  {
    const std::string path = (base / (rep.trace.gzip ? "events.csv.gz" : "events.csv")).string();
    AtomicFileWriter w(path, rep.trace.gzip);
    write_events_csv(rep.strategies, ranks, [&](std::string_view s) { w.write(s); });
    w.commit();
    written.push_back(path);
  }
  put("result.json", json_text(result_document(rep), 2) + "\n");
  traced.get();
  written.insert(written.end(), traces.begin(), traces.end());
  put("report.html", html_report(rep));
  if (!rep.validation.empty()) put("validation.csv", validation_csv(rep.validation));
  return written;
}

}  // namespace gradsync::reports
