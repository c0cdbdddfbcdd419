// published_command.cpp: `gradsync validate --published [FILE]`: every case of the published
// nccl-tests table simulated (each in its own process, --jobs at once) and compared, with a
// summary per validation class and split (sim/published.hpp); then the single-GPU training table
// (sim/published_training.hpp) and the multi-GPU DDP table (sim/published_ddp.hpp).
#include <poll.h>

#include <fmt/format.h>

#include <filesystem>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "apps/cli.hpp"
#include "apps/published.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/json_text.hpp"
#include "core/text.hpp"
#include "reports/csv.hpp"
#include "reports/table.hpp"
#include "sim/confidence.hpp"
#include "sim/published.hpp"
#include "sim/published_ddp.hpp"
#include "sim/published_training.hpp"
#include "sim/simulate.hpp"

namespace gradsync::apps {
namespace {

using sim::PublishedCase;
using sim::PublishedResult;

// kScoredFromBytes: the sizes the summary scores (issue "Fidelity I": busbw from 16 MiB up, where
// bandwidth, not latency, sets the time).
constexpr double kScoredFromBytes = 16.0 * 1024 * 1024;

std::string size_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return fmt::format("{:g}{}", b, units[u]);
}

// Score: |error| of every scored point of a group of cases.
struct Score {
  int cases = 0;
  std::vector<double> errors;
  void add(const PublishedResult& r) {
    ++cases;
    for (const sim::PublishedPoint& p : r.points)
      if (p.bytes >= kScoredFromBytes) errors.push_back(std::abs(p.error()));
  }
  double median() const {
    if (errors.empty()) return 0;
    std::vector<double> e = errors;
    std::sort(e.begin(), e.end());
    const std::size_t n = e.size();
    return n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
  }
  double worst() const { return errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end()); }
  double within(double bound) const {
    if (errors.empty()) return 0;
    return static_cast<double>(std::count_if(errors.begin(), errors.end(), [&](double e) { return e <= bound; })) /
           static_cast<double>(errors.size());
  }
};

}  // namespace

// run_training: the published single-GPU training cases, predicted from their models' ops.
void run_training(const PublishedArgs& a, std::ostream& out, std::string& csv, std::vector<sim::ClassError>& classes) {
  const std::string origin = "validation/published/training_steps.yaml";
  const std::vector<sim::TrainingCase> cases = sim::read_training_cases(sim::builtin_training_text(), origin);
  reports::Table t({{"case", "", true},
                    {"split", "", true},
                    {"class", "", true},
                    {"mode", "", true},
                    {"precision", "", true},
                    {"metric", "", true},
                    {"published", ""},
                    {"predicted", ""},
                    {"error", "%"}});
  std::map<std::pair<std::string, std::string>, std::vector<double>> errors;  // (class, split)
  int shown = 0;
  for (const sim::TrainingCase& c : cases) {
    if (!a.only.empty() && c.id != a.only) continue;
    if (!c.unsupported.empty()) continue;
    sim::TrainingPrediction p;
    try {
      p = sim::predict_training(c);
    } catch (const Error& e) {
      throw RuntimeError(fmt::format("{}:{}: case {}: {}", origin, c.line, c.id, e.what()));
    }
    ++shown;
    const std::string mode =
        fmt::format("{}, {}{}{}", c.compile ? "compile" : "eager", c.attention,
                    c.channels_last ? ", channels_last" : "", c.master_weights ? ", 16-bit model" : "");
    t.add_row({c.id, c.split, p.cls, mode, c.precision, c.steady ? c.metric + ", steady" : c.metric,
               fmt::format("{:.4g}", p.published), fmt::format("{:.4g}", p.predicted),
               fmt::format("{:+.1f}", 100 * p.error())});
    errors[{p.cls, c.split}].push_back(std::abs(p.error()));
    errors[{"all", c.split}].push_back(std::abs(p.error()));
    classes.push_back({"one GPU, " + p.cls, c.id, p.error(), sim::predicted_faster(c.metric, p.error())});
    csv += reports::csv_line({"training", c.id, c.split, p.cls, c.model, c.metric, reports::number(p.published),
                              reports::number(p.predicted), reports::number(p.error()), "true", mode, c.precision});
  }
  if (shown == 0) return;
  out << "#\n";
  t.print(out, {fmt::format("published single-GPU training ({}): predicted from the model's ops for the run's GPU, "
                            "batch, precision and execution mode; error = predicted / published - 1; steady: the "
                            "rate between the source log's own step timestamps after the first, not its figure "
                            "over the whole run",
                            origin)});
  reports::Table s({{"class", "", true},
                    {"split", "", true},
                    {"cases", ""},
                    {"median", "|err| %"},
                    {"worst", "|err| %"},
                    {"<=15%", "cases %"}});
  for (auto& [key, e] : errors) {
    std::sort(e.begin(), e.end());
    const std::size_t n = e.size();
    const double median = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
    const double within =
        static_cast<double>(std::count_if(e.begin(), e.end(), [](double x) { return x <= 0.15; })) / n;
    s.add_row({key.first, key.second, std::to_string(n), fmt::format("{:.1f}", 100 * median),
               fmt::format("{:.1f}", 100 * e.back()), fmt::format("{:.0f}", 100 * within)});
  }
  out << "#\n";
  s.print(out, {"Summary of the training cases; hold-out cases were set aside when collected"});
}

// run_ddp: the published multi-GPU cases, each scenario simulated with its strategy (DDP unless said).
void run_ddp(const PublishedArgs& a, std::ostream& out, std::string& csv, std::vector<sim::ClassError>& classes) {
  const std::string origin = "validation/published/ddp_steps.yaml";
  std::vector<sim::DdpCase> cases = sim::read_ddp_cases(sim::builtin_ddp_text(), origin);
  if (!a.only.empty()) {
    // One case, and the case it is relative to.
    std::vector<sim::DdpCase> kept;
    for (const sim::DdpCase& c : cases) {
      bool base = false;
      for (const sim::DdpCase& o : cases) base = base || (o.id == a.only && o.relative_to == c.id);
      if (c.id == a.only || base) kept.push_back(c);
    }
    cases = std::move(kept);
  }
  if (cases.empty()) return;
  const std::vector<sim::DdpPrediction> ps = sim::predict_ddp_cases(cases, origin);
  reports::Table t({{"case", "", true},
                    {"split", "", true},
                    {"strategy", "", true},
                    {"gpus", ""},
                    {"metric", "", true},
                    {"published", ""},
                    {"predicted", ""},
                    {"error", "% or pts"}});
  std::map<std::pair<std::string, std::string>, std::vector<double>> errors;  // (kind, split)
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const sim::DdpCase& c = cases[i];
    const sim::DdpPrediction& p = ps[i];
    const std::string err = p.points ? fmt::format("{:+.2f} pts", p.error()) : fmt::format("{:+.1f}", 100 * p.error());
    t.add_row({c.id, c.split, std::string(strategy_label(c.strategy)),
               c.scenario.gpus > 0 ? std::to_string(c.scenario.gpus) : "all", c.metric,
               fmt::format("{:.4g}", p.published), fmt::format("{:.4g}", p.predicted), err});
    if (!p.points) classes.push_back({p.step_class, c.id, p.error(), sim::predicted_faster(c.metric, p.error())});
    errors[{p.points ? "change (pts)" : "time (%)", c.split}].push_back(
        std::abs(p.points ? p.error() : 100 * p.error()));
    csv += reports::csv_line({"ddp", c.id, c.split, p.points ? "change" : "time", c.scenario.model, c.metric,
                              reports::number(p.published), reports::number(p.predicted), reports::number(p.error()),
                              "true", p.topology, reports::number(p.step_s)});
  }
  out << "#\n";
  t.print(out, {fmt::format("published multi-GPU steps ({}): each scenario simulated with its strategy; error = "
                            "predicted / published - 1, or predicted - published in percentage points for a change "
                            "in %",
                            origin)});
  reports::Table s({{"kind", "", true}, {"split", "", true}, {"cases", ""}, {"median", "|err|"}, {"worst", "|err|"}});
  for (auto& [key, e] : errors) {
    std::sort(e.begin(), e.end());
    const std::size_t n = e.size();
    const double median = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
    s.add_row(
        {key.first, key.second, std::to_string(n), fmt::format("{:.2f}", median), fmt::format("{:.2f}", e.back())});
  }
  out << "#\n";
  s.print(out, {"Summary of the multi-GPU cases (time: |error| in %; change: |error| in percentage points)"});
}

void run_published(const PublishedArgs& a, std::ostream& out) {
  // The files written at the end must have a folder to go to before the minute of simulations.
  for (const auto& [flag, file] : {std::pair{"--csv", &a.csv}, std::pair{"--confidence", &a.confidence}}) {
    if (file->empty()) continue;
    const std::filesystem::path path(*file);
    const std::filesystem::path dir = path.parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
      throw UsageError(fmt::format("{} {}: the folder {} does not exist", flag, *file, dir.string()));
    if (std::filesystem::is_directory(path, ec))
      throw UsageError(fmt::format("{} {}: a folder; expected a file to write", flag, *file));
  }
  if (!a.confidence.empty() && !a.only.empty()) {
    throw UsageError(
        fmt::format("--confidence {}: every case decides it; give it without --case {}", a.confidence, a.only));
  }
  std::string origin = "validation/published/nccl_tests.yaml (built in)";
  std::string text(sim::builtin_published_text());
  if (!a.file.empty()) {
    text = read_input_file(a.file, "published table");
    origin = a.file;
  }
  const std::vector<PublishedCase> cases =
      sim::read_published(text, a.file.empty() ? std::string("validation/published/nccl_tests.yaml") : a.file);
  std::vector<const PublishedCase*> todo;
  for (const PublishedCase& c : cases)
    if (c.unsupported.empty() && (a.only.empty() || c.id == a.only)) todo.push_back(&c);
  if (!a.only.empty() && todo.empty()) {
    bool training = false;
    for (const sim::TrainingCase& c : sim::read_training_cases(sim::builtin_training_text(), "training_steps.yaml"))
      training = training || c.id == a.only;
    for (const sim::DdpCase& c : sim::read_ddp_cases(sim::builtin_ddp_text(), "ddp_steps.yaml"))
      training = training || c.id == a.only;
    if (!training) {
      throw UsageError(fmt::format("--case {}: no simulated case of that id in {}, the training table or the DDP table",
                                   a.only, origin));
    }
  }

  // Each case in its own process (one SimGrid engine per process), --jobs at once.
  std::map<const PublishedCase*, PublishedResult> results;
  struct Running {
    const PublishedCase* c;
    std::unique_ptr<sim::ChildProcess> child;
  };
  std::vector<Running> running;
  std::size_t next = 0;
  while (next < todo.size() || !running.empty()) {
    while (static_cast<int>(running.size()) < a.jobs && next < todo.size()) {
      const PublishedCase* c = todo[next++];
      running.push_back({c, std::make_unique<sim::ChildProcess>(
                                [c] { return json_text(sim::published_json(sim::simulate_published(*c))); },
                                fmt::format("the simulation of case {}", c->id))});
    }
    std::vector<pollfd> fds;
    for (const Running& r : running) fds.push_back({r.child->fd(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      throw RuntimeError(fmt::format("validate: poll: {}", std::strerror(errno)));
    }
    for (std::size_t i = running.size(); i-- > 0;) {
      if (fds[i].revents == 0 || !running[i].child->read_some()) continue;
      Running r = std::move(running[i]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      try {
        results[r.c] = sim::published_from_json(nlohmann::ordered_json::parse(r.child->finish()));
      } catch (const Error& e) {
        throw RuntimeError(fmt::format("{}:{}: case {}: {}", origin, r.c->line, r.c->id, e.what()));
      }
    }
  }

  reports::Table t({{"case", "", true},
                    {"split", "", true},
                    {"class", "", true},
                    {"coll", "", true},
                    {"size", "", true},
                    {"published", "GB/s"},
                    {"simulated", "GB/s"},
                    {"error", "%"},
                    {"algo", "", true},
                    {"proto", "", true}});
  // One CSV for both tables: nccl-tests rows (quantity: the size in bytes, values: busbw GB/s,
  // details: algorithm and protocol) and training rows (quantity: the metric, details: execution mode
  // and precision).
  std::string csv = reports::csv_line({"table", "case", "split", "class", "what", "quantity", "published", "simulated",
                                       "error_frac", "scored", "detail", "detail2"});
  std::map<std::pair<std::string, std::string>, Score> scores;  // (class, split)
  std::vector<sim::ClassError> classes;                         // --confidence: every scored point and step by class
  for (const PublishedCase* c : todo) {
    const PublishedResult& r = results.at(c);
    if (c->excluded.empty()) {
      scores[{r.cls, c->split}].add(r);
      scores[{"all", c->split}].add(r);
    }
    for (const sim::PublishedPoint& p : r.points) {
      const bool scored = p.bytes >= kScoredFromBytes && c->excluded.empty();
      t.add_row({c->id, c->split + (c->excluded.empty() ? "" : " (excluded)"), r.cls,
                 std::string(collective_name(c->collective)), size_text(p.bytes),
                 fmt::format("{:.2f}", p.published_GBps), fmt::format("{:.2f}", p.simulated_GBps),
                 fmt::format("{:+.1f}{}", 100 * p.error(), scored ? "" : " *"), p.algorithm, p.protocol});
      csv += reports::csv_line({"nccl-tests", c->id, c->split, r.cls, std::string(collective_name(c->collective)),
                                fmt::format("{:.0f}", p.bytes), reports::number(p.published_GBps),
                                reports::number(p.simulated_GBps), reports::number(p.error()),
                                scored ? "true" : "false", p.algorithm, p.protocol});
      if (scored)
        classes.push_back({"NCCL collectives, " + (r.cls == "PCIe" ? std::string("PCIe node") : r.cls), c->id,
                           p.error(), sim::predicted_faster("busbw", p.error())});
    }
  }
  // --case: the one case asked for, and nothing of the table's others (their notes included); a
  // case of the training or DDP table prints no nccl-tests table at all.
  const bool nccl_table = a.only.empty() || !todo.empty();
  if (nccl_table)
    t.print(out, {fmt::format("gradsync validate --published: {} of {}; busbw as nccl-tests prints it (GB/s); "
                              "error = simulated / published - 1",
                              a.only.empty() ? counted(static_cast<long long>(cases.size()), "case")
                                             : fmt::format("case {}", a.only),
                              origin),
                  "* not scored: below 16 MiB (latency-bound) or an excluded case"});

  reports::Table s({{"class", "", true},
                    {"split", "", true},
                    {"cases", ""},
                    {"points", ""},
                    {"median", "|err| %"},
                    {"worst", "|err| %"},
                    {"<=10%", "points %"},
                    {"<=15%", "points %"}});
  for (const auto& [key, sc] : scores) {
    s.add_row({key.first, key.second, std::to_string(sc.cases), std::to_string(sc.errors.size()),
               fmt::format("{:.1f}", 100 * sc.median()), fmt::format("{:.1f}", 100 * sc.worst()),
               fmt::format("{:.0f}", 100 * sc.within(0.10)), fmt::format("{:.0f}", 100 * sc.within(0.15))});
  }
  if (nccl_table) {
    out << "#\n";
    s.print(out, {"Summary: every scored point (16 MiB and up) of every case not excluded; the hold-out cases were set "
                  "aside when the table was collected, before any was simulated"});
  }
  for (const PublishedCase& c : cases) {
    if (!a.only.empty() && c.id != a.only) continue;
    if (!c.unsupported.empty()) out << fmt::format("# not simulated: {}: {}\n", c.id, c.unsupported);
    if (!c.excluded.empty()) out << fmt::format("# excluded from the summary: {}: {}\n", c.id, c.excluded);
  }
  for (const PublishedCase* c : todo) {
    const PublishedResult& r = results.at(c);
    if (!r.ignored_env.empty())
      out << fmt::format("# {}: not modelled, ignored: {}\n", c->id, fmt::join(r.ignored_env, " "));
  }
  run_training(a, out, csv, classes);
  run_ddp(a, out, csv, classes);
  if (!a.csv.empty()) {
    write_file_atomic(a.csv, csv);
    out << fmt::format("# wrote {}\n", a.csv);
  }
  if (!a.confidence.empty()) {
    write_file_atomic(a.confidence, sim::confidence_csv(classes));
    out << fmt::format("# wrote {}\n", a.confidence);
  }
}

}  // namespace gradsync::apps
