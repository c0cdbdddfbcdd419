// sweep.cpp: the grid checked and resolved, equal simulations shared, children run several at
// once, rows saved as they finish, ranks under mpirun/srun, and the outputs through reporters.
#include "sweep/sweep.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "core/comm_hook.hpp"
#include "core/error.hpp"
#include "core/folder_lock.hpp"
#include "core/json_text.hpp"
#include "core/output_folder.hpp"
#include "core/scenario_grid.hpp"
#include "core/scenario_keys.hpp"
#include "sim/simulate.hpp"
#include "sweep/reporters.hpp"
#include "sweep/resume_checks.hpp"
#include "sweep/world.hpp"

namespace gradsync::sweep {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Point: a grid point, resolved, with the cells that identify its summary.csv row.
struct Point {
  GridPoint grid;
  json resolved;   // scenario_json of the resolved scenario
  json requested;  // requested_json: keys whose request differs from the resolved value
  std::string identity;
  CsvRow key;         // point, scenario keys, mode, strategy
  std::string error;  // why the point cannot run (its scenario does not resolve); recorded as failed
};

// failed_row: the summary.csv row of a point that failed with `error`.
CsvRow failed_row(const Point& p, const std::string& error) {
  StrategyResult r;
  r.strategy = p.grid.strategy;
  r.failed = error;
  return reports::summary_row(p.grid.index, "simulated", p.resolved, r);
}

// Group: points that share one simulation, in point order.
struct Group {
  std::vector<const Point*> members;
};

// Progress: a bar redrawn in place on a terminal, a plain line per simulation otherwise.
class Progress {
 public:
  Progress(std::ostream& out, int total, int done_before)
      : out_(out), total_(total), done_(done_before), before_(done_before) {
    tty_ = &out == &std::cerr && ::isatty(STDERR_FILENO) != 0;
  }
  void done(const Group& g, double seconds) {
    done_ += static_cast<int>(g.members.size());
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const int ran = done_ - before_;
    const double eta = ran > 0 ? elapsed / ran * (total_ - done_) : 0.0;
    const Point& p = *g.members.front();
    // The points that shared the simulation named by their indices: "and 1 alike" after a label
    // read as "points 0 and 1" where the other was point 2 (a new user's report).
    std::vector<int> others;
    for (std::size_t i = 1; i < g.members.size(); ++i) others.push_back(g.members[i]->grid.index);
    const std::string what = others.empty() ? fmt::format("point {}: {}", p.grid.index, p.grid.label)
                                            : fmt::format("point {}: {}, with point{} {} alike", p.grid.index,
                                                          p.grid.label, others.size() == 1 ? "" : "s",
                                                          fmt::join(others, " "));
    if (tty_) {
      constexpr int kWidth = 30;
      const int filled = total_ > 0 ? kWidth * done_ / total_ : kWidth;
      out_ << fmt::format("\r\x1b[K[{}{}] {}/{}  elapsed {}  ETA {}  ({}, {:.1f} s)", std::string(filled, '#'),
                          std::string(kWidth - filled, '.'), done_, total_, clock(elapsed), clock(eta), what, seconds)
           << std::flush;
      if (done_ == total_) out_ << '\n';
    } else {
      out_ << fmt::format("sweep: {}/{} done ({}, {:.1f} s); elapsed {}, ETA {}\n", done_, total_, what, seconds,
                          clock(elapsed), clock(eta));
    }
  }
  void interrupted() {
    if (tty_ && done_ != total_) out_ << '\n';
  }
  int finished() const { return done_; }
  int total() const { return total_; }

 private:
  static std::string clock(double s) {
    const auto t = static_cast<long>(s + 0.5);
    return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                     : fmt::format("{}:{:02}", t / 60, t % 60);
  }
  std::ostream& out_;
  int total_, done_, before_;
  bool tty_ = false;
  Clock::time_point start_ = Clock::now();
};

SweepRecord record_of(const Point& p, CsvRow row) {
  SweepRecord r;
  r.point = p.grid.index;
  r.label = p.grid.label;
  r.requested = p.requested;
  r.row = std::move(row);
  return r;
}

// with_results: the row of `p` with the result cells of `done` (a point of the same simulation).
CsvRow with_results(const Point& p, const CsvRow& done) {
  CsvRow row = p.key;
  row.insert(row.end(), done.begin() + static_cast<std::ptrdiff_t>(p.key.size()), done.end());
  return row;
}

// run_groups simulates `todo` with up to `jobs` children at once, saving each finished point.
void run_groups(const std::vector<const Group*>& todo, int jobs, SweepCsvReporter& csv, Progress& progress) {
  struct Running {
    const Group* group;
    std::unique_ptr<sim::IsolatedSimulation> child;
    Clock::time_point start;
  };
  std::vector<Running> running;
  std::size_t next = 0;
  while (next < todo.size() || !running.empty()) {
    while (static_cast<int>(running.size()) < jobs && next < todo.size()) {
      const Group* g = todo[next++];
      const Point& first = *g->members.front();
      running.push_back({g, std::make_unique<sim::IsolatedSimulation>(first.grid.scenario, first.grid.strategy, false),
                         Clock::now()});
    }
    std::vector<pollfd> fds;
    for (const Running& r : running) fds.push_back({r.child->fd(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      throw RuntimeError(fmt::format("sweep: poll: {}", std::strerror(errno)));
    }
    // A child that the same Ctrl-C ended is not a failed point: nothing more is recorded.
    if (interrupt_signal() != 0) throw Interrupted("", interrupt_signal());
    for (std::size_t i = running.size(); i-- > 0;) {
      if (fds[i].revents == 0 || !running[i].child->read_some()) continue;
      Running r = std::move(running[i]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      const Point& first = *r.group->members.front();
      StrategyResult result;
      try {
        result = r.child->finish();
      } catch (const Error& e) {
        // One failing point does not stop the sweep: it is recorded, the others run.
        result.strategy = first.grid.strategy;
        result.failed = e.what();
      }
      for (const Point* p : r.group->members)
        csv.add(record_of(*p, reports::summary_row(p->grid.index, "simulated", p->resolved, result)));
      progress.done(*r.group, std::chrono::duration<double>(Clock::now() - r.start).count());
    }
  }
}

std::string part_path(const fs::path& dir, int rank, int size) {
  return (dir / "parts" / fmt::format("rank{}-of-{}.csv", rank, size)).string();
}

// wait_for_parts: rank 0 waits until every other rank's part holds all of its points, or until
// no part has changed for `timeout_s` (a rank died: an error naming it).
void wait_for_parts(const fs::path& dir, const World& w, const std::vector<Group>& groups,
                    const std::vector<CsvRow>& keys, SweepCsvReporter& all, double timeout_s) {
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
        all.load(path, keys);
      }
      bool complete = true;
      for (std::size_t g = 0; g < groups.size() && complete; ++g) {
        if (static_cast<int>(g % static_cast<std::size_t>(w.size)) != r) continue;
        for (const Point* p : groups[g].members) complete = complete && all.has(p->grid.index);
      }
      if (!complete) missing.push_back(r);
    }
    if (missing.empty()) return;
    if (std::chrono::duration<double>(Clock::now() - last_change).count() > timeout_s) {
      throw RuntimeError(
          fmt::format("sweep: rank{} {} finished no point for {:.0f} s (--timeout); its points are missing from {}; "
                      "rerun with --resume",
                      missing.size() > 1 ? "s" : "", fmt::join(missing, ", "), timeout_s, (dir / "parts").string()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

std::string simulation_identity(const Scenario& resolved, Strategy strategy) {
  json id;
  id["strategy"] = std::string(strategy_label(strategy));
  for (const ScenarioKey& k : scenario_table())
    if (k.reach == KeyReach::kEvery || strategy == Strategy::kDDP) id[std::string(k.name)] = key_value(resolved, k);
  // One GPU is its own slowest: how unalike GPUs run cannot change its step (models/gpu_spread.hpp).
  if (resolved.gpus == 1) id.erase("gpu_spread_pct");
  return json_text(id);
}

SweepStats run_sweep(const SweepOptions& o) {
  const World w = world_from_environment();
  if (o.vary.empty()) {
    throw UsageError("sweep: give at least one --vary KEY=V1,V2,... (keys: " + vary_key_names() + ")");
  }
  std::vector<Vary> vary;
  for (const std::string& text : o.vary) vary.push_back(parse_vary(text));
  std::vector<GridPoint> grid = expand_grid(o.base, vary);
  if (o.model_defaults)
    for (GridPoint& g : grid) o.model_defaults(g.scenario);
  const bool warmup_varied = std::any_of(vary.begin(), vary.end(), [](const Vary& v) { return v.key == "warmup"; });
  if (o.warmup_from_iterations && !warmup_varied) {
    for (GridPoint& g : grid) g.scenario.warmup = std::clamp(g.scenario.iterations - 1, 0, Scenario{}.warmup);
  }

  // Every point checked and resolved before any runs: a point that cannot run (16 GPUs on an
  // 8-GPU topology in a grid of both) is said now and recorded as failed; the others run. When no
  // point can run, the sweep is a usage error.
  std::vector<Point> points;
  points.reserve(grid.size());
  int invalid = 0;
  for (const GridPoint& g : grid) {
    Point p;
    p.grid = g;
    try {
      const Scenario resolved = sim::resolve_scenario(g.scenario, g.strategy == Strategy::kDDP);
      p.resolved = scenario_json(resolved);
      p.requested = requested_json(g.scenario, resolved);
      p.identity = simulation_identity(resolved, g.strategy);
    } catch (const ConfigError& e) {
      ++invalid;
      p.error = e.what();
      p.resolved = scenario_json(g.scenario);
      p.requested = json::object();
      p.identity = fmt::format("failed point {}", g.index);  // its own group, never run
    }
    StrategyResult none;
    none.strategy = g.strategy;
    const CsvRow cells = reports::summary_row(g.index, "simulated", p.resolved, none);
    p.key.assign(cells.begin(), cells.begin() + static_cast<std::ptrdiff_t>(reports::summary_key_columns()));
    points.push_back(std::move(p));
  }
  const auto located = [&o](const std::string& error) { return o.locate ? o.locate(error) : error; };
  if (invalid == static_cast<int>(points.size())) {
    const Point& p = points.front();
    // The scenario file's value (the error located at its line) is the file's fault (exit 1, as
    // compare has it); otherwise the command line's (exit 2).
    const std::string where = located(p.error);
    const std::string message =
        fmt::format("sweep: no point can run; point {} ({}): {}", p.grid.index, p.grid.label, where);
    if (where != p.error) throw ConfigError(message);
    throw UsageError(message);
  }
  if (w.rank == 0) {
    for (const Point& p : points)
      if (!p.error.empty())
        *o.progress << fmt::format("sweep: point {} ({}) cannot run: {}\n", p.grid.index, p.grid.label,
                                   located(p.error));
    // PowerSGD compresses only from start_powerSGD_iter (PowerSGDState's default 1000): a DDP point
    // whose iterations end before it runs the hook's plain allreduce, as simulate says of one run.
    std::vector<std::string> plain;
    int start = 0;
    for (const Point& p : points) {
      if (!p.error.empty() || p.grid.strategy != Strategy::kDDP) continue;
      const CommHook hook = parse_comm_hook(p.grid.scenario.comm_hook);
      if (powersgd_never_compresses(hook, p.grid.scenario.iterations)) {
        plain.push_back(std::to_string(p.grid.index));
        start = hook.powersgd_start_iter;
      }
    }
    if (!plain.empty()) {
      *o.progress << fmt::format(
          "note: point{} {}: PowerSGD compresses from iteration {} (start_powerSGD_iter; PowerSGDState's default is "
          "1000), after the simulated iterations: {} its plain allreduce; comm_hook powersgd:start_iter=2 simulates "
          "its steady state\n",
          plain.size() == 1 ? "" : "s", fmt::join(plain, ", "), start + 1, plain.size() == 1 ? "it runs" : "they run");
    }
  }
  std::vector<CsvRow> keys;
  for (const Point& p : points) keys.push_back(p.key);
  std::vector<Group> groups;
  {
    std::map<std::string, std::size_t> by_identity;
    for (const Point& p : points) {
      const auto [it, fresh] = by_identity.emplace(p.identity, groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].members.push_back(&p);
    }
  }

  // Where the sweep works: a folder beside --out (".NAME.gradsync-sweep"), its points saved there
  // as they finish and the whole swapped into --out once the outputs are written, so that an
  // interrupted or killed sweep leaves --out as it was and a finished one leaves it complete. A new
  // sweep starts that folder empty (an interrupted sweep's points there are dropped); --resume
  // continues it, or, where there is none, the sweep in --out itself (one that finished, or one of
  // a gradsync that worked in --out). Under mpirun the ranks share the folder without talking, so
  // they do not clear it.
  std::string out_path = o.out;
  while (out_path.size() > 1 && out_path.back() == '/') out_path.pop_back();
  const fs::path target(out_path);
  const fs::path work = (target.parent_path().empty() ? fs::path(".") : target.parent_path()) /
                        fmt::format(".{}.gradsync-sweep", target.filename().string());
  // One sweep at a time per --out (core/folder_lock.hpp): a second one would empty the first's work
  // folder under it. Under mpirun the ranks share the folder, and none locks it.
  std::optional<FolderLock> lock;
  if (w.size == 1) lock.emplace(out_path);
  std::error_code ec;
  const bool work_exists = fs::exists(work, ec);
  const bool in_place = o.resume && !work_exists && fs::exists(target, ec);
  if (!in_place) check_replaceable_folder(out_path);
  const fs::path dir = in_place ? target : work;
  if (!in_place && (!o.resume || !work_exists) && w.size == 1) start_fresh_folder(work.string(), o.out);
  fs::create_directories(w.size > 1 ? dir / "parts" : dir, ec);
  if (ec) {
    throw RuntimeError(fmt::format("--out {}: cannot create {}: {}", o.out,
                                   dir == target ? std::string("the folder") : "its working folder " + dir.string(),
                                   ec.message()));
  }
  const std::string summary = (dir / "summary.csv").string();
  SweepCsvReporter csv(w.size > 1 ? part_path(dir, w.rank, w.size) : summary);
  std::vector<std::string> files;
  for (const Point& p : points)
    for (const std::string* f : {&p.grid.scenario.model, &p.grid.scenario.topology, &p.grid.scenario.calibration})
      files.push_back(*f);
  const json inputs = input_digests(files);
  if (o.resume) {
    check_resumable(dir, dir.string());
    check_inputs(dir, inputs);
    csv.load(summary, keys);
    if (w.size > 1) csv.load(part_path(dir, w.rank, w.size), keys);
    if (o.retry_failed) csv.drop_failed();  // failed points run again only when asked
  }

  SweepStats stats;
  stats.points = static_cast<int>(points.size());
  std::vector<const Group*> todo;
  int mine = 0, done_before = 0, cannot_run = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (static_cast<int>(g % static_cast<std::size_t>(w.size)) != w.rank) continue;
    const Group& group = groups[g];
    mine += static_cast<int>(group.members.size());
    const CsvRow* done = nullptr;
    for (const Point* p : group.members)
      if (!done) done = csv.row(p->grid.index);
    if (!done && !group.members.front()->error.empty()) {
      const Point& p = *group.members.front();
      csv.insert(p.grid.index, failed_row(p, p.error));  // cannot run: recorded, never simulated
      ++done_before;
      ++cannot_run;
      continue;
    }
    if (!done) {
      todo.push_back(&group);
      stats.shared += static_cast<int>(group.members.size()) - 1;
      continue;
    }
    const CsvRow result = *done;  // a copy: add() below replaces rows
    for (const Point* p : group.members) {
      ++done_before;
      if (csv.has(p->grid.index)) {
        ++stats.resumed;
      } else {
        ++stats.shared;
        csv.insert(p->grid.index, with_results(*p, result));
      }
    }
  }
  stats.simulations = static_cast<int>(todo.size());
  if (w.rank == 0) {
    const int copied = done_before - stats.resumed - cannot_run;
    const std::size_t sims = groups.size() - static_cast<std::size_t>(invalid);
    *o.progress << fmt::format(
        "sweep: {} points{}, {} simulation{}{}{}{}{}, {} job{} per rank, into {}/\n", points.size(),
        invalid > 0 ? fmt::format(" ({} cannot run)", invalid) : "", sims, sims == 1 ? "" : "s",
        sims + static_cast<std::size_t>(invalid) < points.size()
            ? " (points that differ only in keys a strategy ignores share one)"
            : "",
        stats.resumed > 0 ? fmt::format(", {} already done (--resume)", stats.resumed) : "",
        copied > 0 ? fmt::format(", {} filled from a finished point of the same simulation", copied) : "",
        w.size > 1 ? fmt::format(", {} ranks", w.size) : "", o.jobs, o.jobs > 1 ? "s" : "", o.out);
  }
  Progress progress(*o.progress, mine, done_before);
  csv.save();
  try {
    const SignalGuard guard;
    run_groups(todo, o.jobs, csv, progress);
  } catch (const Interrupted& e) {
    progress.interrupted();
    const int left = progress.total() - progress.finished();
    throw Interrupted(
        fmt::format("sweep interrupted ({}) with {} of {} point{} done{}; the finished ones are saved in {}/{}; the "
                    "same command with --resume simulates the other {}",
                    e.signal() == SIGINT ? "SIGINT: Ctrl-C" : "SIGTERM", progress.finished(), progress.total(),
                    progress.total() == 1 ? "" : "s", w.size > 1 ? fmt::format(" on rank {}", w.rank) : "",
                    dir.string(), in_place ? "" : fmt::format(", --out {} is left as it was", o.out), left),
        e.signal());
  }
  if (w.rank != 0) return stats;  // rank 0 writes the outputs

  SweepCsvReporter all(summary);
  for (const auto& [i, row] : csv.rows()) all.insert(i, row);
  if (w.size > 1) wait_for_parts(dir, w, groups, keys, all, o.timeout_s);
  all.save();

  // The other outputs from the final rows (a resumed sweep has no more than those).
  std::vector<CsvRow> rows = reports::parse_csv(all.text(), summary);
  rows.erase(rows.begin());
  {
    const CsvRow header = reports::summary_header();
    const auto col = [&](const char* name) {
      return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    for (const CsvRow& row : rows) {
      if (row[col("status")] != "failed") continue;
      if (stats.failed++ == 0) {
        const Point& p = points[static_cast<std::size_t>(std::stoi(row[0]))];
        stats.first_failure = fmt::format("point {} ({}): {}", p.grid.index, p.grid.label, row[col("error")]);
      }
    }
  }
  SweepContext ctx;
  ctx.vary_args = o.vary;
  for (const Vary& v : vary) {
    ctx.varied.push_back(v.key);
    ctx.vary_values.push_back(v.values);
  }
  ctx.base = scenario_json(o.base);
  ctx.points = static_cast<int>(points.size());
  ctx.inputs = inputs;
  SweepJsonReporter json_out((dir / "result.json").string());
  SweepHtmlReporter html((dir / "report.html").string());
  SweepTableReporter table(*o.table, o.out);
  for (SweepReporter* r : std::initializer_list<SweepReporter*>{&json_out, &html, &table}) {
    r->begin(ctx);
    for (const CsvRow& row : rows) r->add(record_of(points[static_cast<std::size_t>(std::stoi(row[0]))], row));
    r->finish();
  }
  if (!in_place) {
    if (const std::string left = swap_into_place(dir.string(), out_path); !left.empty())
      *o.progress << "note: " << left << '\n';
  }
  return stats;
}

}  // namespace gradsync::sweep
