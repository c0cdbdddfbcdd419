// real_command.cpp: `gradsync bench` (a scenario run for real), `gradsync calibrate` (measured
// collectives, copies and compute into calibration.yaml) and `gradsync validate` (real against
// simulated with that calibration, phase by phase).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include <sched.h>
#include <unistd.h>

#include "apps/cli.hpp"
#include "apps/published.hpp"
#include "apps/scenario_args.hpp"
#include "core/atomic_file.hpp"
#include "core/calibration.hpp"
#include "core/error.hpp"
#include "core/scenario_keys.hpp"
#include "models/scenario_basics.hpp"
#include "real/run.hpp"
#include "reports/csv.hpp"
#include "reports/report.hpp"
#include "reports/table.hpp"
#include "reports/validation.hpp"
#include "sim/simulate.hpp"

namespace gradsync::apps {
namespace {

using json = nlohmann::ordered_json;

// LaunchArgs: the flags that say how ranks start and what runs them.
void add_launch_options(CLI::App* cmd, real::RealOptions& o) {
  cmd->add_option("--launch", o.launch,
                  "auto (mpirun/srun when they started this process, else local), local (one process drives "
                  "--world-size devices; CPU ranks are threads) or mpi");
  // At most 1,024 ranks in one process (CPU ranks are threads, GPU ranks one per device): a
  // hundred thousand threads of training steps is a typo, not a run.
  cmd->add_option("--world-size", o.world_size,
                  "Ranks with --launch local, at most 1024 (default: every GPU, or 1 CPU rank)")
      ->check(kPositiveInteger)
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return text.size() > 4 || std::stoi(text) > 1024
                       ? fmt::format("value \"{}\" is above 1024 ranks in one process", text)
                       : std::string();
          },
          ""));
  cmd->add_option("--init-method", o.init_method,
                  "file:///PATH: ranks started by another launcher (RANK, WORLD_SIZE, LOCAL_RANK set as torchrun "
                  "does) meet through this file (GPU backend)");
  cmd->add_option("--timeout", o.timeout_s,
                  "Seconds a collective may take before the watchdog aborts the run (default 600, as PyTorch's NCCL "
                  "process group)")
      ->check(kPositiveSeconds);
  cmd->add_option("--backend", o.backend, "auto (GPU when built and one is visible, else CPU), gpu or cpu");
}

struct BenchArgs {
  ScenarioArgs scenario;
  real::RealOptions launch;
  std::string strategy;
  std::string out = "gradsync-bench";
  bool explain = false;
};

// real_scenario: the scenario flags as bench reads them: no topology (the machine is what it is).
Scenario real_scenario(const ScenarioArgs& a, const char* command) {
  if (a.given.at("topology")->count() > 0) {
    throw UsageError(fmt::format(
        "--topology: {} runs on this machine; a topology is for simulate, compare and sweep (validate takes one "
        "for its simulated side)",
        command));
  }
  Scenario s = scenario_of(a);
  if (!a.file.empty() && s.topology != Scenario{}.topology && std::string(command) == "bench") {
    const int line = file_line_of(a, "topology").value_or(0);
    throw ConfigError(fmt::format("{}{}: topology \"{}\": bench runs on this machine; remove the key", a.file,
                                  line > 0 ? fmt::format(":{}", line) : std::string(), s.topology));
  }
  // The GPUs' spread is a prediction's: bench measures the GPUs as they are, and validate simulates
  // with a calibration of them. Refused where it was given (the flag, or the file's line), and left
  // out of what a real run records (run_bench).
  if (s.gpu_spread_pct != Scenario{}.gpu_spread_pct) {
    const std::string why = fmt::format(
        "gpu_spread_pct {}: {} {}; the spread is for simulate, compare and sweep", s.gpu_spread_pct, command,
        std::string(command) == "bench" ? "measures the GPUs as they are"
                                        : "simulates with a calibration, the measured GPUs' own times");
    if (const auto flag = a.given.find("gpu_spread_pct"); flag != a.given.end() && flag->second->count() > 0)
      throw UsageError(fmt::format("--gpu-spread-pct{}", why.substr(std::string_view("gpu_spread_pct").size())));
    const int line = file_line_of(a, "gpu_spread_pct").value_or(0);
    throw ConfigError(fmt::format("{}{}: {}", a.file, line > 0 ? fmt::format(":{}", line) : std::string(), why));
  }
  return s;
}

std::vector<Strategy> strategies_for(const std::string& flag, const real::Runtime& rt) {
  if (flag == "dp") return {Strategy::kDP};
  if (flag == "ddp") return {Strategy::kDDP};
  // Default: both in one process; only DDP when a launcher started one process per rank.
  if (rt.processes() > 1) return {Strategy::kDDP};
  return {Strategy::kDP, Strategy::kDDP};
}

std::vector<std::string> real_header(const Scenario& s, const StrategyResult& r, const real::Runtime& rt,
                                     const std::string& what, const std::vector<Strategy>& ran) {
  std::vector<std::string> h;
  const std::int64_t per_gpu = r.gpus > 0 ? r.global_batch / s.grad_accum / r.gpus : 0;
  h.push_back(fmt::format("gradsync {}: {} on host {}, {} x {}, batch {}/rank (global {}{}){}, {}, {}", what, s.model,
                          rt.host(), r.gpus, r.gpu, per_gpu, r.global_batch,
                          s.grad_accum > 1 ? fmt::format(" over {} micro-steps", s.grad_accum) : "",
                          r.tokens_per_sample > 0 ? fmt::format(", seq_len {}", r.tokens_per_sample) : "", r.precision,
                          optimizer_text(s, r.precision)));
  h.push_back(fmt::format(
      "DDP: bucket_cap_mb {}, first bucket {} MiB, comm hook {}, broadcast_buffers {}{}{}{}{}; backend {}, launcher "
      "{} ({} process{})",
      value_text(key_value(s, scenario_key("bucket_cap_mb"))),
      value_text(key_value(s, scenario_key("first_bucket_mb"))), s.comm_hook, s.broadcast_buffers,
      s.find_unused_parameters ? ", find_unused_parameters" : "", s.static_graph ? ", static_graph" : "",
      s.gradient_as_bucket_view ? ", gradient_as_bucket_view" : "",
      s.allreduce_after_backward ? ", allreduce_after_backward" : "", rt.backend(), rt.launcher(), rt.processes(),
      rt.processes() == 1 ? "" : "es"));
  // Whose times these are, for the strategies that ran.
  const bool dp = std::find(ran.begin(), ran.end(), Strategy::kDP) != ran.end();
  const bool ddp = std::find(ran.begin(), ran.end(), Strategy::kDDP) != ran.end();
  std::vector<std::string> whose;
  if (ddp) whose.push_back("DDP times on rank 0");
  if (dp) whose.push_back("DP times of the whole process");
  h.push_back(fmt::format("measured {} iteration{}; steady = mean of iterations {}..{}{}{}", s.iterations,
                          s.iterations == 1 ? "" : "s", s.warmup + 1, s.iterations, whose.empty() ? "" : "; ",
                          fmt::join(whose, ", ")));
  return h;
}

// note_shared_cores: on the CPU backend each rank runs a compute and a comm thread (and DP's
// replicas theirs); more of them than this host has cores take turns on the cores, so a step's time
// measures that sharing too, which a simulated GPU never has. Cores: those this process may run on
// (its affinity, as taskset or a container's cpuset leaves them). Said once, by the root.
void note_shared_cores(const real::Runtime& rt) {
  if (!rt.root() || rt.backend() != "cpu") return;
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cores = ::sched_getaffinity(0, sizeof set, &set) == 0
                        ? CPU_COUNT(&set)
                        : static_cast<int>(std::thread::hardware_concurrency());
  const int here = rt.launcher() == "local" ? rt.local()
                   : rt.hosts() > 0         ? (rt.world() + rt.hosts() - 1) / rt.hosts()
                                            : 1;
  if (cores <= 0 || 2 * here <= cores) return;
  // Fewer cores than the host has: the launcher pinned the rank (Open MPI binds each rank to one
  // core by default), so its two threads share that core whatever the host has.
  const int online = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (online > cores) {
    std::cerr << fmt::format(
        "note: this rank may run on {} of this host's {} cores (the launcher pinned it: mpirun binds each rank to "
        "a core by default); its compute and comm threads take turns there and the times include that sharing: "
        "mpirun --bind-to none lets the ranks use every core\n",
        cores, online);
    return;
  }
  std::cerr << fmt::format(
      "note: {} CPU rank{} on this host's {} core{}: each rank runs a compute and a comm thread, so they take turns "
      "on the cores and the times include that sharing; with at most {} per host each has two\n",
      here, here == 1 ? "" : "s", cores, cores == 1 ? "" : "s", std::max(1, cores / 2));
}

reports::Report run_bench(const ScenarioArgs& a, const Scenario& s, const std::vector<Strategy>& strategies,
                          real::Runtime& rt, const std::string& what) {
  reports::Report rep;
  rep.command = what;
  rep.mode = "real";
  // Resolved for this machine; an error names the file's line or is the command line's, as simulate's.
  const Scenario resolved = resolve_located(a, [&] { return real::resolve_scenario(s, rt); });
  note_shared_cores(rt);  // once the scenario is known to run
  rep.scenario = scenario_json(resolved);
  rep.requested = requested_json(s, resolved);
  rep.scenario["topology"] = fmt::format("host {}", rt.host());  // this machine, not a topology
  rep.requested.erase("topology");
  rep.scenario["gpu_spread_pct"] = nullptr;  // the GPUs as they are: no simulated spread
  rep.requested.erase("gpu_spread_pct");
  for (Strategy st : strategies) rep.strategies.push_back(real::bench(s, st, rt, what));
  if (rt.root()) rep.header = real_header(resolved, rep.strategies.front(), rt, what, strategies);
  return rep;
}

// open_out: the root's output folder (every check of --out, its staging folder made). Its failure
// is shared with every process before any waits in a collective for a root that has left: the root
// says why and exits as it would alone; the others end without a word (as for a parse error, so
// that the job's status is the root's). False on the others when the root failed.
bool open_out(std::optional<OutputFolder>& out, const std::string& path, const real::Runtime& rt) {
  std::string failure;
  std::exception_ptr error;
  if (rt.root()) {
    try {
      out.emplace(path);
    } catch (const Error& e) {
      failure = e.what();
      error = std::current_exception();
    }
  }
  const std::string shared = rt.processes() > 1 ? rt.broadcast(failure.empty() ? "ok" : failure) : "ok";
  if (error) std::rethrow_exception(error);
  return shared == "ok";
}

void bench_command(const BenchArgs& a) {
  const Scenario s = same_on_every_rank([&] { return real_scenario(a.scenario, "bench"); });
  if (!s.calibration.empty()) throw UsageError("--calibration: bench measures; a calibration is for simulate");
  // How the simulator cuts collectives into flows: bench runs NCCL's or MPI's own.
  if (s.fidelity != "auto") {
    throw UsageError(
        fmt::format("--fidelity {}: bench measures real collectives; the flow fidelity is for simulate "
                    "and validate",
                    s.fidelity));
  }
  real::Runtime rt(a.launch);
  std::optional<OutputFolder> out;  // the root writes the outputs
  if (!open_out(out, a.out, rt)) return;
  const reports::Report rep = run_bench(a.scenario, s, strategies_for(a.strategy, rt), rt, "bench");
  if (!rt.root()) return;
  finish_run(rep, *out, a.explain);
}

struct CalibrateArgs {
  real::RealOptions launch;
  real::CalibrateOptions sweep;
  std::string min_bytes = "8";
  std::string max_bytes = "1GiB";
  std::string out = "calibration.yaml";
};

// check_writable_file: `path` can be written (its folder exists and takes files, and it is not a
// folder), checked before minutes of measuring rather than after.
void check_writable_file(const char* flag, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec))
    throw UsageError(fmt::format("{} {}: is a folder; expected a file to write", flag, path));
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw UsageError(fmt::format("{} {}: {} is a file, not a folder", flag, path, dir.string()));
  if (!fs::is_directory(dir, ec))
    throw UsageError(fmt::format("{} {}: folder {} does not exist", flag, path, dir.string()));
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError(fmt::format("{} {}: folder {} is not writable", flag, path, dir.string()));
}

// check_replaceable_calibration: an existing file at `path` is replaced only if it is a calibration
// (gradsync's header comment, or the format's schema_version key at the top level); any other file
// (a scenario, a model) is the user's, and calibrate replaced it without a word until 2026-12-02.
void check_replaceable_calibration(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return;
  std::ifstream in(path);
  std::string line;
  bool ours = false;
  for (int i = 0; i < 20 && std::getline(in, line); ++i) {
    if (line.rfind("# gradsync calibration", 0) == 0 || line.rfind("schema_version:", 0) == 0) {
      ours = true;
      break;
    }
  }
  if (!ours) {
    throw UsageError(fmt::format(
        "--out {}: a file that is not a gradsync calibration (no schema_version line); calibrate replaces only "
        "calibrations: remove it or choose another --out",
        path));
  }
}

void calibrate_command(const CalibrateArgs& a) {
  check_writable_file("--out", a.out);
  check_replaceable_calibration(a.out);
  real::CalibrateOptions o = a.sweep;
  o.min_bytes = parse_nccl_tests_size_flag("--min-bytes", a.min_bytes);
  o.max_bytes = parse_nccl_tests_size_flag("--max-bytes", a.max_bytes);
  real::Runtime rt(a.launch);
  const real::CalibrationRun run = real::calibrate(o, rt);
  if (!rt.root()) return;
  write_file_atomic(a.out, calibration_yaml(run.calibration));
  const Calibration& c = run.calibration;
  reports::Table t(
      {{"what", "", true}, {"size", "(B|FLOP)"}, {"time", "(us)"}, {"algbw", "(GB/s|GFLOP/s)"}, {"busbw", "(GB/s)"}});
  for (const auto& r : run.rows) {
    // busbw is a collective's over two or more ranks; copies, compute and memory rows have none.
    t.add_row({r.what, fmt::format("{:.0f}", r.size), fmt::format("{:.2f}", r.time_s * 1e6),
               fmt::format("{:.2f}", r.algbw_GBps),
               r.busbw_GBps > 0 ? fmt::format("{:.2f}", r.busbw_GBps) : std::string("-")});
  }
  t.print(std::cout, {fmt::format("gradsync calibrate: {} backend on host {}: {} ({}), {} rank{} over {}; GEMMs in {}",
                                  c.backend, c.host, c.device, c.library, c.ranks, c.ranks == 1 ? "" : "s",
                                  c.collectives.empty() ? "-" : c.collectives.front().link_class, c.precision),
                      "nccl-tests definitions: algbw = size / time, busbw = algbw x bus factor; compute rows: "
                      "algbw = achieved GFLOP/s (memory: GB/s)"});
  std::cout << fmt::format("# kernel launch (host time to issue): {:.2f} us\n# wrote {}\n", c.launch_s * 1e6, a.out);
  // Collective sizes are whole float32 elements (allgather's and reduce-scatter's a multiple of
  // 4 x ranks): a --min-bytes or --max-bytes between them is rounded down, and said.
  for (const CollectiveTable& ct : c.collectives) {
    if (ct.collective != Collective::kAllreduce || ct.table.points.empty()) continue;
    const double first = ct.table.points.front().first, last = ct.table.points.back().first;
    if (first != o.min_bytes || last != o.max_bytes) {
      // Whole elements: rounded down, but never below one (--min-bytes 3 runs 4 B).
      std::vector<std::string> said;
      for (const auto& [flag, asked, runs] :
           {std::tuple{"--min-bytes", o.min_bytes, first}, std::tuple{"--max-bytes", o.max_bytes, last}})
        if (asked != runs)
          said.push_back(
              fmt::format("{} {:.0f} rounded {} to {:.0f} B", flag, asked, runs > asked ? "up" : "down", runs));
      std::cerr << fmt::format(
          "note: allreduce sizes run {:.0f} to {:.0f} B: {}, whole float32 elements (4 B; allgather and "
          "reduce-scatter 4 B x ranks)\n",
          first, last, fmt::join(said, " and "));
    }
  }
  // One rank (no launcher): its collectives cross no link, and a simulation of N GPUs finds no
  // table for N ranks; said now rather than when validate refuses the file.
  if (c.ranks == 1) {
    std::cerr << "note: one rank: the collective tables time calls that cross no link, so this calibration serves "
                 "one-GPU scenarios only (a scenario of N GPUs needs allreduce measured over N ranks: mpirun -np N "
                 "gradsync calibrate)\n";
  }
}

struct ValidateArgs {
  BenchArgs bench;
  CLI::Option* published = nullptr;
  PublishedArgs published_args;
  std::vector<CLI::Option*> run_only;        // running a scenario: --out, --strategy, the launch options
  std::vector<CLI::Option*> published_only;  // --case, --csv, --confidence, --jobs
};

void validate_command(const ValidateArgs& va) {
  if (va.published->count() > 0) {
    for (const auto& [key, option] : va.bench.scenario.given)
      if (option->count() > 0) {
        const ScenarioKey* k = find_scenario_key(key);  // the flag as given: --gpu-spread-pct, not its key
        throw UsageError(fmt::format("{}: --published validates against published measurements, not a scenario",
                                     k != nullptr && !k->flag.empty() ? std::string(k->flag) : "--" + key));
      }
    for (const CLI::Option* o : va.run_only)
      if (o->count() > 0)
        throw UsageError(
            fmt::format("{}: --published prints its tables (--csv FILE and --confidence FILE write them); {} is for "
                        "running a scenario with --calibration",
                        o->get_name(), o->get_name()));
    run_published(va.published_args, std::cout);
    return;
  }
  for (const CLI::Option* o : va.published_only)
    if (o->count() > 0) throw UsageError(fmt::format("{}: only with --published", o->get_name()));
  const BenchArgs& a = va.bench;
  Scenario s = scenario_of(a.scenario);
  if (s.calibration.empty())
    throw UsageError("--calibration FILE: validate simulates with a calibration (write one with gradsync calibrate)");
  const Calibration cal = read_calibration(s.calibration);  // a bad file fails before anything runs
  // Without --precision the run takes the calibration's (the CPU backend's is always fp32).
  if (s.precision.empty()) s.precision = cal.precision;
  if (s.precision != cal.precision)
    throw ConfigError(fmt::format(
        "calibration {}: its GEMMs were timed in {} (hardware.precision), the scenario runs {}; {}", s.calibration,
        cal.precision, s.precision,
        cal.backend == "cpu"
            ? fmt::format("the CPU backend computes in fp32 only: give --precision {}", cal.precision)
            : fmt::format("calibrate with --precision {}, or give --precision {}", s.precision, cal.precision)));
  real::Runtime rt(a.launch);
  if (rt.world() > 1 && !cal.collective_time(Collective::kAllreduce, rt.world(), 1.0)) {
    int measured = 0;
    for (const CollectiveTable& t : cal.collectives)
      if (t.collective == Collective::kAllreduce) measured = t.ranks;
    throw on_every_rank(ConfigError(fmt::format(
        "calibration {}: {}, this run has {}; calibrate on as many ranks, launched as this run is ({})", s.calibration,
        measured == 0 ? std::string("holds no allreduce measurement")
                      : fmt::format("allreduce was measured on {} rank{}", measured, measured == 1 ? "" : "s"),
        rt.world(),
        rt.launch() == real::Launch::kMpi
            ? fmt::format("{} -np {} gradsync calibrate", rt.launcher() == "srun" ? "srun" : "mpirun", rt.world())
            : fmt::format("gradsync calibrate --launch local --world-size {}", rt.world()))));
  }
  // A calibration of another machine simulates that machine, not this run's: said, not refused
  // (two hosts of one cluster share hardware under different names).
  if (rt.root() && cal.backend != rt.backend()) {
    std::cerr << fmt::format(
        "note: calibration {} was measured with the {} backend; this run uses the {} backend: the simulation times "
        "the calibration's\n",
        s.calibration, cal.backend, rt.backend());
  }
  if (rt.root() && !cal.host.empty() && cal.host != rt.host()) {
    std::cerr << fmt::format(
        "note: calibration {} was measured on host {} ({}); this run is on host {}: the simulation times that "
        "machine\n",
        s.calibration, cal.host, cal.device, rt.host());
  }
  const std::vector<Strategy> strategies = strategies_for(a.strategy, rt);
  Scenario measured = s;
  measured.calibration.clear();
  std::optional<OutputFolder> out;
  if (!open_out(out, a.out, rt)) return;
  reports::Report rep = run_bench(a.scenario, measured, strategies, rt, "validate");
  if (!rt.root()) return;
  Scenario simulated = s;
  simulated.gpus = rt.world();
  note_uncalibrated(simulated, strategies);
  for (std::size_t i = 0; i < strategies.size(); ++i) {
    const StrategyResult sim_result = sim::simulate_isolated(simulated, strategies[i]);
    const auto rows = reports::validation_rows(rep.strategies[i], sim_result);
    rep.validation.insert(rep.validation.end(), rows.begin(), rows.end());
  }
  rep.header.push_back(fmt::format("simulated on {} with calibration {}", simulated.topology, s.calibration));
  // The calibration the simulated side used, recorded as simulate records it (result.json, CSV).
  rep.scenario["calibration"] = s.calibration;
  finish_run(rep, *out, false);
}

// add_bench_options: the scenario flags, less in --help those the command refuses (`hidden`): still
// parsed, so that giving one says why it is refused rather than that it is unknown.
void add_bench_options(CLI::App* cmd, BenchArgs& a, const char* default_out, const std::vector<std::string>& hidden) {
  add_scenario_options(cmd, a.scenario);
  for (const std::string& key : hidden) a.scenario.given.at(key)->group("");
  add_launch_options(cmd, a.launch);
  cmd->add_option("--strategy", a.strategy, "dp or ddp (default: both in one process, DDP under mpirun/srun)")
      ->transform(CLI::IsMember({"dp", "ddp"}, CLI::ignore_case));
  cmd->add_option("--out", a.out, fmt::format("Output folder (default {})", default_out));
  a.out = default_out;
}

}  // namespace

void register_real_commands(CLI::App& app) {
  auto ba = std::make_shared<BenchArgs>();
  CLI::App* bench = app.add_subcommand(
      "bench", "Run a scenario for real (GPUs with NCCL, or CPUs with MPI) and write the same outputs, mode real");
  add_bench_options(bench, *ba, "gradsync-bench", {"topology", "calibration", "fidelity", "gpu_spread_pct"});
  bench->add_flag("--explain", ba->explain, "Also print the phases, as simulate --explain");
  bench->callback([ba] { bench_command(*ba); });

  auto ca = std::make_shared<CalibrateArgs>();
  CLI::App* cal =
      app.add_subcommand("calibrate", "Measure collectives, copies, compute and launch overhead into calibration.yaml");
  add_launch_options(cal, ca->launch);
  cal->add_option("--min-bytes", ca->min_bytes, "Smallest collective/copy size (default 8)");
  cal->add_option("--max-bytes", ca->max_bytes,
                  "Largest collective/copy size, measured even where the steps skip it (default 1GiB)");
  cal->add_option("--step-factor", ca->sweep.step_factor, "Size multiplier between rows (default 4)")
      ->check(finite_in("a size multiplier", 1.01, 1e6));
  cal->add_option(
         "--max-flops", ca->sweep.max_flops,
         "Largest GEMM in FLOPs, measured even where the x4 steps from 1e6 skip it (default 1e12 GPU, 2e10 CPU)")
      ->check(finite_in("FLOPs", 1e6, 1e18));
  cal->add_option("--repeats", ca->sweep.repeats, "Timed runs per size after a warm-up (default 5)")
      ->check(kPositiveInteger);
  cal->add_option("--precision", ca->sweep.precision,
                  "Data type of the timed GEMMs (matmul, conv, attention): fp32, tf32, bf16 or fp16; a calibration "
                  "serves scenarios of its precision (default: bf16 where the GPU has it, else fp16; fp32 on CPUs)");
  cal->add_option("--out", ca->out, "Where to write the calibration (default calibration.yaml)");
  cal->callback([ca] { calibrate_command(*ca); });

  auto va = std::make_shared<ValidateArgs>();
  CLI::App* val = app.add_subcommand(
      "validate", "Run a scenario for real and simulated with --calibration; measured vs simulated per phase");
  add_bench_options(val, va->bench, "gradsync-validate", {"gpu_spread_pct"});
  for (CLI::Option* o : val->get_options()) {
    bool scenario = false;
    for (const auto& [key, option] : va->bench.scenario.given) scenario = scenario || option == o;
    if (!scenario && o->get_name() != "--help") va->run_only.push_back(o);
  }
  va->published =
      val->add_option("--published", va->published_args.file,
                      "Simulate every case of a table of published nccl-tests measurements (FILE, or "
                      "the one built in: validation/published/nccl_tests.yaml) and compare busbw; then the built-in "
                      "single-GPU training and multi-GPU DDP tables (validation/published/)")
          ->expected(0, 1)
          ->type_name("[FILE]");
  va->published_only = {
      val->add_option("--case", va->published_args.only, "With --published: only the case of this id"),
      val->add_option("--csv", va->published_args.csv, "With --published: write every point as CSV to this file")
          ->check(kNonEmptyFile),
      val->add_option("--confidence", va->published_args.confidence,
                      "With --published: write each validation class's median and worst step-time error of the "
                      "training and DDP tables as CSV to this file (what validation/published/confidence.csv ships)")
          ->check(kNonEmptyFile),
      val->add_option("--jobs", va->published_args.jobs, "With --published: cases simulated at once (default 1)")
          ->check(kPositiveInteger)};
  val->callback([va] { validate_command(*va); });
}

}  // namespace gradsync::apps
