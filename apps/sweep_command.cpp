// sweep_command.cpp: `gradsync sweep`: a grid of scenarios (and strategies), each point simulated
// in its own process, several at once, every finished point saved at once so that a killed sweep
// resumes where it stopped; under mpirun/srun the points are shared among the ranks.
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "apps/cli.hpp"
#include "apps/scenario_args.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "reports/csv.hpp"
#include "reports/html.hpp"
#include "reports/table.hpp"
#include "sim/simulate.hpp"

namespace gradsync::apps {
namespace {

using json = nlohmann::ordered_json;
using reports::CsvRow;
using sim::Scenario;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Vary: one --vary key=v1,v2,... (key spelled as the scenario file spells it).
struct Vary {
  std::string key;
  std::vector<std::string> values;
};

const std::vector<std::string> kVaryKeys = {"gpus",          "topology",   "model",     "batch_per_gpu", "seq_len",
                                            "bucket_cap_mb", "grad_accum", "precision", "comm_hook",     "strategy"};

std::string known_keys() {
  std::string out;
  for (const auto& k : kVaryKeys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

Vary parse_vary(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw UsageError(fmt::format("--vary \"{}\": expected key=v1,v2,... (keys: {})", text, known_keys()));
  }
  Vary v;
  v.key = text.substr(0, eq);
  std::replace(v.key.begin(), v.key.end(), '-', '_');
  if (std::find(kVaryKeys.begin(), kVaryKeys.end(), v.key) == kVaryKeys.end()) {
    throw UsageError(
        fmt::format("--vary \"{}\": unknown key \"{}\"; expected one of {}", text, text.substr(0, eq), known_keys()));
  }
  std::stringstream values(text.substr(eq + 1));
  std::string item;
  std::set<std::string> seen;
  while (std::getline(values, item, ',')) {
    if (item.empty()) throw UsageError(fmt::format("--vary \"{}\": an empty value", text));
    if (!seen.insert(item).second) throw UsageError(fmt::format("--vary \"{}\": \"{}\" given twice", text, item));
    v.values.push_back(item);
  }
  if (text.back() == ',') throw UsageError(fmt::format("--vary \"{}\": an empty value", text));
  return v;
}

std::int64_t positive_int(const Vary& v, const std::string& text) {
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || end != text.data() + text.size() || out < 1) {
    throw UsageError(fmt::format("--vary {}: value \"{}\" is not an integer >= 1", v.key, text));
  }
  return out;
}

// apply sets one key of a scenario (strategy is not a scenario key: returned apart).
void apply(const Vary& v, const std::string& value, Scenario& s, Strategy& strategy) {
  const std::string& k = v.key;
  if (k == "gpus") {
    s.gpus = static_cast<int>(positive_int(v, value));
  } else if (k == "batch_per_gpu") {
    s.batch_per_gpu = positive_int(v, value);
  } else if (k == "seq_len") {
    s.seq_len = positive_int(v, value);
  } else if (k == "grad_accum") {
    s.grad_accum = static_cast<int>(positive_int(v, value));
  } else if (k == "bucket_cap_mb") {
    double mb = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), mb);
    if (ec != std::errc() || end != value.data() + value.size() || !(mb > 0)) {
      throw UsageError(fmt::format("--vary bucket_cap_mb: value \"{}\" is not a number > 0", value));
    }
    s.bucket_cap_mb = mb;
  } else if (k == "topology") {
    s.topology = value;
  } else if (k == "model") {
    s.model = value;
  } else if (k == "precision") {
    s.precision = value;
  } else if (k == "comm_hook") {
    s.comm_hook = value;
  } else if (k == "strategy") {
    const auto st = parse_strategy(value);
    if (!st) throw UsageError(fmt::format("--vary strategy: value \"{}\" is not dp or ddp", value));
    strategy = *st;
  }
}

// Point: one scenario and strategy of the grid.
struct Point {
  int index = 0;
  Scenario scenario;
  Strategy strategy = Strategy::kDDP;
  std::string label;  // "gpus=8 bucket_cap_mb=25 ddp"
  CsvRow key;         // its summary.csv cells that identify it (scenario keys and strategy)
};

// expand: the grid in --vary order, the last key changing fastest; both strategies unless
// strategy is varied.
std::vector<Point> expand(const Scenario& base, std::vector<Vary> vary) {
  const bool strategies_given =
      std::any_of(vary.begin(), vary.end(), [](const Vary& v) { return v.key == "strategy"; });
  if (!strategies_given) vary.push_back({"strategy", {"dp", "ddp"}});
  std::vector<Point> points;
  std::vector<std::size_t> at(vary.size(), 0);
  for (;;) {
    Point p;
    p.index = static_cast<int>(points.size());
    p.scenario = base;
    std::string label;
    for (std::size_t i = 0; i < vary.size(); ++i) {
      const std::string& value = vary[i].values[at[i]];
      apply(vary[i], value, p.scenario, p.strategy);
      label += (label.empty() ? "" : " ") + (vary[i].key == "strategy" ? value : vary[i].key + "=" + value);
    }
    p.label = label;
    points.push_back(std::move(p));
    std::size_t i = vary.size();
    while (i > 0 && ++at[i - 1] == vary[i - 1].values.size()) at[--i] = 0;
    if (i == 0) break;
  }
  return points;
}

// World: this process's place under mpirun (OpenMPI, PMI) or srun; rank 0 of 1 otherwise.
struct World {
  int rank = 0;
  int size = 1;
};

World world_from_environment() {
  const std::pair<const char*, const char*> vars[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMI_RANK", "PMI_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& [rank_var, size_var] : vars) {
    const char* r = std::getenv(rank_var);
    const char* n = std::getenv(size_var);
    if (!r || !n) continue;
    World w;
    try {
      w.rank = std::stoi(r);
      w.size = std::stoi(n);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("{}=\"{}\", {}=\"{}\": expected integers", rank_var, r, size_var, n));
    }
    if (w.size < 1 || w.rank < 0 || w.rank >= w.size) {
      throw UsageError(fmt::format("{}={} and {}={}: expected 0 <= rank < size", rank_var, r, size_var, n));
    }
    return w;
  }
  return {};
}

struct SweepArgs {
  ScenarioArgs scenario;
  std::vector<std::string> vary;
  int jobs = 1;
  bool resume = false;
  std::string out = "gradsync-sweep";
  double timeout_s = 600;
};

// Progress: a bar redrawn in place on a terminal, a plain line per point otherwise (stderr).
class Progress {
 public:
  Progress(int total, int done_before) : total_(total), done_(done_before), before_(done_before) {
    tty_ = ::isatty(STDERR_FILENO) != 0;
  }
  void point_done(const Point& p, double seconds) {
    ++done_;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const int ran = done_ - before_;
    const double eta = ran > 0 ? elapsed / ran * (total_ - done_) : 0.0;
    if (tty_) {
      constexpr int kWidth = 30;
      const int filled = total_ > 0 ? kWidth * done_ / total_ : kWidth;
      std::cerr << fmt::format("\r\x1b[K[{}{}] {}/{}  elapsed {}  ETA {}  ({}, {:.1f} s)", std::string(filled, '#'),
                               std::string(kWidth - filled, '.'), done_, total_, clock(elapsed), clock(eta), p.label,
                               seconds)
                << std::flush;
      if (done_ == total_) std::cerr << '\n';
    } else {
      std::cerr << fmt::format("sweep: {}/{} done (point {}: {}, {:.1f} s); elapsed {}, ETA {}\n", done_, total_,
                               p.index, p.label, seconds, clock(elapsed), clock(eta));
    }
  }
  void interrupted() {
    if (tty_ && done_ != total_) std::cerr << '\n';
  }

 private:
  static std::string clock(double s) {
    const auto t = static_cast<long>(s + 0.5);
    return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                     : fmt::format("{}:{:02}", t / 60, t % 60);
  }
  int total_, done_, before_;
  bool tty_ = false;
  Clock::time_point start_ = Clock::now();
};

// Rows: finished points by index, with the file they are saved in.
class Rows {
 public:
  Rows(std::string path, CsvRow header) : path_(std::move(path)), header_(std::move(header)) {}
  const CsvRow& header() const { return header_; }
  const std::map<int, CsvRow>& rows() const { return rows_; }
  bool has(int point) const { return rows_.count(point) > 0; }

  // load adds the rows of a summary.csv written by this sweep; a row of another sweep is an error.
  void load(const std::string& path, const std::vector<Point>& points) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return;
    std::stringstream text;
    text << in.rdbuf();
    const std::vector<CsvRow> rows = reports::parse_csv(text.str(), path);
    if (rows.empty()) return;
    if (rows.front() != header_) {
      throw ConfigError(
          fmt::format("{}: its columns are not those of this gradsync's summary.csv; start over "
                      "without --resume or with another --out",
                      path));
    }
    for (std::size_t i = 1; i < rows.size(); ++i) {
      const CsvRow& row = rows[i];
      const std::string where = fmt::format("{}:{}", path, i + 1);
      if (row.size() != header_.size()) {
        throw ConfigError(fmt::format("{}: {} cells, expected {}", where, row.size(), header_.size()));
      }
      int index = -1;
      const auto [end, ec] = std::from_chars(row[0].data(), row[0].data() + row[0].size(), index);
      if (ec != std::errc() || end != row[0].data() + row[0].size() || index < 0 ||
          index >= static_cast<int>(points.size())) {
        throw ConfigError(
            fmt::format("{}: point \"{}\" is not one of this sweep's {} points", where, row[0], points.size()));
      }
      const CsvRow& key = points[static_cast<std::size_t>(index)].key;
      if (!std::equal(key.begin(), key.end(), row.begin())) {
        throw ConfigError(fmt::format(
            "{}: point {} was another scenario ({}) than this sweep's ({}); start over "
            "without --resume or with another --out",
            where, index, fmt::join(CsvRow(row.begin(), row.begin() + key.size()), ","), fmt::join(key, ",")));
      }
      rows_[index] = row;
    }
  }

  void add(int point, CsvRow row) { rows_[point] = std::move(row); }

  // text: the header and every row in point order, scaling efficiency filled.
  std::string text() const {
    std::vector<CsvRow> rows;
    for (const auto& [i, row] : rows_) rows.push_back(row);
    reports::fill_scaling_efficiency(header_, rows);
    std::string out = reports::csv_line(header_);
    for (const CsvRow& row : rows) out += reports::csv_line(row);
    return out;
  }
  void save() const { write_file_atomic(path_, text()); }

 private:
  std::string path_;
  CsvRow header_;
  std::map<int, CsvRow> rows_;
};

// run_points simulates `todo` with up to `jobs` children at once, saving each finished point.
void run_points(const std::vector<const Point*>& todo, int jobs, Rows& rows, Progress& progress) {
  struct Running {
    const Point* point;
    std::unique_ptr<sim::IsolatedSimulation> child;
    Clock::time_point start;
  };
  std::vector<Running> running;
  std::size_t next = 0;
  while (next < todo.size() || !running.empty()) {
    while (static_cast<int>(running.size()) < jobs && next < todo.size()) {
      const Point* p = todo[next++];
      running.push_back({p, std::make_unique<sim::IsolatedSimulation>(p->scenario, p->strategy, false), Clock::now()});
    }
    std::vector<pollfd> fds;
    for (const Running& r : running) fds.push_back({r.child->fd(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      throw RuntimeError(fmt::format("sweep: poll: {}", std::strerror(errno)));
    }
    for (std::size_t i = running.size(); i-- > 0;) {
      if (fds[i].revents == 0 || !running[i].child->read_some()) continue;
      Running r = std::move(running[i]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      StrategyResult result;
      try {
        result = r.child->finish();
      } catch (const Error& e) {
        progress.interrupted();
        throw RuntimeError(fmt::format("sweep: point {} ({}): {}", r.point->index, r.point->label, e.what()));
      }
      rows.add(r.point->index,
               reports::summary_row(r.point->index, "simulated", sim::scenario_json(r.point->scenario), result));
      rows.save();
      progress.point_done(*r.point, std::chrono::duration<double>(Clock::now() - r.start).count());
    }
  }
}

std::string part_path(const fs::path& dir, int rank, int size) {
  return (dir / "parts" / fmt::format("rank{}-of-{}.csv", rank, size)).string();
}

// wait_for_parts: rank 0 waits until every other rank's part holds all of its points, or until
// no part has changed for `timeout_s` (a rank died: an error naming it).
void wait_for_parts(const fs::path& dir, const World& w, const std::vector<Point>& points, Rows& rows,
                    double timeout_s) {
  auto last_change = Clock::now();
  std::map<int, fs::file_time_type> seen;
  for (;;) {
    std::vector<int> missing;
    for (int r = 1; r < w.size; ++r) {
      const std::string path = part_path(dir, r, w.size);
      std::error_code ec;
      const auto t = fs::last_write_time(path, ec);
      if (!ec && (!seen.count(r) || seen[r] != t)) {
        seen[r] = t;
        last_change = Clock::now();
        rows.load(path, points);
      }
      for (const Point& p : points)
        if (p.index % w.size == r && !rows.has(p.index)) {
          missing.push_back(r);
          break;
        }
    }
    if (missing.empty()) return;
    if (std::chrono::duration<double>(Clock::now() - last_change).count() > timeout_s) {
      throw RuntimeError(
          fmt::format("sweep: rank{} {} finished no point for {:.0f} s (--timeout); its points are "
                      "missing from {}; rerun with --resume",
                      missing.size() > 1 ? "s" : "", fmt::join(missing, ", "), timeout_s, (dir / "parts").string()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

json typed(const std::string& cell) {
  if (cell.empty()) return nullptr;
  if (cell == "true") return true;
  if (cell == "false") return false;
  double v = 0;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (ec == std::errc() && end == cell.data() + cell.size()) {
    std::int64_t i = 0;
    const auto [iend, iec] = std::from_chars(cell.data(), cell.data() + cell.size(), i);
    if (iec == std::errc() && iend == cell.data() + cell.size()) return i;
    return v;
  }
  return cell;
}

void run_sweep(const SweepArgs& a) {
  const World w = world_from_environment();
  const Scenario base = scenario_of(a.scenario, false);
  std::vector<Vary> vary;
  std::set<std::string> keys;
  for (const std::string& text : a.vary) {
    vary.push_back(parse_vary(text));
    if (!keys.insert(vary.back().key).second) {
      throw UsageError(fmt::format("--vary {} given twice; list every value in one --vary", vary.back().key));
    }
  }
  if (vary.empty()) throw UsageError("sweep: give at least one --vary key=v1,v2,... (keys: " + known_keys() + ")");
  std::vector<Point> points = expand(base, vary);
  // Every point checked before any runs: a typo fails now, not an hour in.
  const CsvRow header = reports::summary_header(sim::scenario_json(base));
  // A point's identity in summary.csv: its index, scenario keys, mode and strategy (the first cells).
  const auto key_cells = static_cast<std::ptrdiff_t>(sim::scenario_keys().size() + 3);
  for (Point& p : points) {
    try {
      sim::check_scenario(p.scenario);
    } catch (const ConfigError& e) {
      throw UsageError(fmt::format("sweep: point {} ({}): {}", p.index, p.label, e.what()));
    }
    StrategyResult none;
    none.strategy = p.strategy;
    const CsvRow cells = reports::summary_row(p.index, "simulated", sim::scenario_json(p.scenario), none);
    p.key.assign(cells.begin(), cells.begin() + key_cells);
  }

  const fs::path dir(a.out);
  std::error_code ec;
  fs::create_directories(w.size > 1 ? dir / "parts" : dir, ec);
  if (ec) throw RuntimeError(fmt::format("--out {}: cannot create the folder: {}", a.out, ec.message()));
  const std::string summary = (dir / "summary.csv").string();
  Rows rows(w.size > 1 ? part_path(dir, w.rank, w.size) : summary, header);
  if (a.resume) {
    rows.load(summary, points);
    if (w.size > 1) rows.load(part_path(dir, w.rank, w.size), points);
  }
  std::vector<const Point*> todo;
  int mine = 0;
  for (const Point& p : points) {
    if (p.index % w.size != w.rank) continue;
    ++mine;
    if (!rows.has(p.index)) todo.push_back(&p);
  }
  const int done_before = mine - static_cast<int>(todo.size());
  if (w.rank == 0) {
    std::cerr << fmt::format("sweep: {} points{}{}, {} job{} per rank{}\n", points.size(),
                             done_before > 0 ? fmt::format(", {} already done (--resume)", done_before) : "",
                             w.size > 1 ? fmt::format(", {} ranks", w.size) : "", a.jobs, a.jobs > 1 ? "s" : "",
                             fmt::format(", into {}/", a.out));
  }
  Progress progress(mine, done_before);
  rows.save();
  run_points(todo, a.jobs, rows, progress);
  if (w.rank != 0) return;  // rank 0 writes the outputs

  Rows all(summary, header);
  for (const auto& [i, row] : rows.rows()) all.add(i, row);
  if (w.size > 1) wait_for_parts(dir, w, points, all, a.timeout_s);
  all.save();

  // result.json and report.html from the rows (a resumed sweep has no more than that).
  std::vector<CsvRow> final_rows = reports::parse_csv(all.text(), summary);
  final_rows.erase(final_rows.begin());
  json doc;
  doc["schema_version"] = 1;
  doc["gradsync_version"] = std::string(kVersion);
  doc["mode"] = "simulated";
  doc["command"] = "sweep";
  doc["base_scenario"] = sim::scenario_json(base);
  auto& jv = doc["vary"] = json::object();
  for (const Vary& v : vary) jv[v.key] = v.values;
  auto& jp = doc["points"] = json::array();
  for (const CsvRow& row : final_rows) {
    json o;
    for (std::size_t c = 0; c < header.size(); ++c) o[header[c]] = typed(row[c]);
    jp.push_back(std::move(o));
  }
  write_file_atomic((dir / "result.json").string(), doc.dump(2) + "\n");
  reports::SweepTable t;
  for (const Vary& v : vary) t.varied.push_back(v.key);
  t.columns = header;
  t.rows = final_rows;
  t.header_lines.push_back(fmt::format("gradsync sweep over {}", fmt::join(a.vary, " ")));
  std::vector<std::string> base_keys;
  const json defaults = sim::scenario_json(Scenario{});
  const json base_json = sim::scenario_json(base);
  for (const auto& [k, v] : base_json.items()) {
    if (k == "model" || k == "topology" || v != defaults.at(k))
      base_keys.push_back(fmt::format("{}={}", k, v.is_string() ? v.get<std::string>() : v.dump()));
  }
  t.header_lines.push_back(fmt::format("base scenario: {} (other keys at their defaults)", fmt::join(base_keys, " ")));
  write_file_atomic((dir / "report.html").string(), reports::html_sweep_report(t));

  // The table: one row per point.
  std::vector<reports::Column> cols{{"point", ""}};
  for (const Vary& v : vary)
    if (v.key != "strategy") cols.push_back({v.key, "", true});
  for (reports::Column c : std::vector<reports::Column>{{"strategy", "", true},
                                                        {"status", "", true},
                                                        {"gpus_used", ""},
                                                        {"steady", "ms"},
                                                        {"exposed", "ms"},
                                                        {"samples/s", "1/s"},
                                                        {"efficiency", "%"}})
    cols.push_back(c);
  reports::Table table(cols);
  auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  auto ms = [](const std::string& s) {
    return s.empty() ? std::string("-") : fmt::format("{:.3f}", std::stod(s) * 1e3);
  };
  for (const CsvRow& row : final_rows) {
    std::vector<std::string> cells{row[0]};
    for (const Vary& v : vary)
      if (v.key != "strategy") cells.push_back(row[col(v.key)]);
    const std::string& eff = row[col("scaling_efficiency")];
    const std::string& sps = row[col("samples_per_s")];
    for (const std::string& c : {row[col("strategy")], row[col("status")], row[col("gpus_used")],
                                 ms(row[col("steady_iteration_time_s")]), ms(row[col("exposed_communication_s")]),
                                 sps.empty() ? std::string("-") : fmt::format("{:.1f}", std::stod(sps)),
                                 eff.empty() ? std::string("-") : fmt::format("{:.1f}", 100 * std::stod(eff))})
      cells.push_back(c);
    table.add_row(cells);
  }
  table.print(std::cout, t.header_lines);
  std::cout << fmt::format("# wrote {}/summary.csv, result.json, report.html\n", a.out);
}

}  // namespace

void register_sweep_command(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "A grid of scenarios: --vary key=v1,v2 (repeatable), each point in its own process, resumable");
  add_scenario_options(cmd, a->scenario);
  cmd->add_option("--vary", a->vary,
                  "key=v1,v2,... over gpus, topology, model, batch_per_gpu, seq_len, bucket_cap_mb, grad_accum, "
                  "precision, comm_hook, strategy (default strategy=dp,ddp); repeat for a grid")
      ->required();
  cmd->add_option("--jobs", a->jobs, "Points simulated at once (default 1)")->check(kPositiveInteger);
  cmd->add_flag("--resume", a->resume, "Keep the points already in OUT/summary.csv and run only the others");
  cmd->add_option("--out", a->out, "Output folder: summary.csv, result.json, report.html (default gradsync-sweep)");
  cmd->add_option("--timeout", a->timeout_s,
                  "Under mpirun/srun: seconds rank 0 waits for a rank that finishes no point (default 600)")
      ->check(CLI::PositiveNumber);
  cmd->callback([a] { run_sweep(*a); });
}

}  // namespace gradsync::apps
