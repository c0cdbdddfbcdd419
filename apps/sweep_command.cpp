// sweep_command.cpp: `gradsync sweep`: the flags of sweep/sweep.hpp, which does the work.
#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apps/cli.hpp"
#include "apps/scenario_args.hpp"
#include "core/error.hpp"
#include "core/pytorch_version.hpp"
#include "core/scenario_grid.hpp"
#include "core/scenario_keys.hpp"
#include "sweep/sweep.hpp"

namespace gradsync::apps {
namespace {

struct SweepArgs {
  ScenarioArgs scenario;
  sweep::SweepOptions options;
};

}  // namespace

void register_sweep_command(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "A grid of scenarios: --vary KEY=VALUES (repeatable), each simulation in its own process, resumable; points "
      "that only differ in keys a strategy ignores share one simulation");
  add_scenario_options(cmd, a->scenario);
  sweep::SweepOptions& o = a->options;
  cmd->add_option("--vary", o.vary,
                  fmt::format("KEY=V1,V2,... with ranges for numbers: A..B (every integer), A:B:xF (times F), A:B:S "
                              "(plus S); values read as the key's flag reads them (25MiB); repeat for a grid. KEY: {}. "
                              "At least one is required; strategy=dp,ddp is added unless strategy is varied",
                              vary_key_names()))
      ->required();
  cmd->add_option("--jobs", o.jobs, "Simulations at once (default 1)")->check(kPositiveInteger);
  cmd->add_flag("--resume", o.resume,
                "Keep the points an interrupted sweep saved (in .OUT.gradsync-sweep beside OUT, or OUT's own "
                "summary.csv), failed ones too, and run only the others");
  cmd->add_flag("--retry-failed", o.retry_failed, "With --resume: run the points recorded as failed again");
  cmd->add_option("--out", o.out, "Output folder: summary.csv, result.json, report.html (default gradsync-sweep)");
  cmd->add_option("--timeout", o.timeout_s,
                  "Under mpirun/srun: seconds rank 0 waits for a rank that finishes no point (default 600)")
      ->check(kPositiveSeconds);
  cmd->callback([a] {
    sweep::SweepOptions run = a->options;
    // Each point's model decides its own defaults (--vary model=...): not the base's.
    run.base = scenario_of(a->scenario, false);
    run.model_defaults = [a](Scenario& point) {
      std::vector<std::string> varied;
      for (const std::string& text : a->options.vary) varied.push_back(parse_vary(text).key);
      apply_model_defaults(point, a->scenario, varied);
    };
    {
      const auto flag = a->scenario.given.find("warmup");
      run.warmup_from_iterations = (flag == a->scenario.given.end() || flag->second->count() == 0) &&
                                   !file_line_of(a->scenario, "warmup").has_value();
    }
    run.locate = [a](std::string_view error) {
      std::vector<std::string> varied;
      for (const std::string& text : a->options.vary) varied.push_back(parse_vary(text).key);
      return file_key_error(a->scenario, error, varied);
    };
    if (run.retry_failed && !run.resume) throw UsageError("--retry-failed: give it with --resume");
    // A key both varied and set by a flag: the flag would be dropped without a word.
    for (const std::string& text : a->options.vary) {
      const std::string key = parse_vary(text).key;
      if (const auto f = a->scenario.given.find(key); f != a->scenario.given.end() && f->second->count() > 0) {
        throw UsageError(
            fmt::format("{} and --vary {} both set {}; give one of them (--vary lists every value the "
                        "sweep takes)",
                        f->second->get_name(), key, key));
      }
      for (const std::string& item : a->scenario.nccl) {
        if (item.substr(0, item.find('=')) == key)
          throw UsageError(fmt::format("--nccl {} and --vary {} both set {}; give one of them", item, key, key));
      }
      // The scenario file's value would be dropped the same way: said at its line.
      if (const std::optional<int> line = file_line_of(a->scenario, key)) {
        throw UsageError(
            fmt::format("{}:{}: {} is set here and by --vary {}; give one of them (--vary lists every "
                        "value the sweep takes)",
                        a->scenario.file, *line, key, key));
      }
    }
    // DDP's settings under DataParallel points: as compare says it, said once.
    bool dp_points = true;
    for (const std::string& text : a->options.vary) {
      const Vary v = parse_vary(text);
      if (v.key != "strategy") continue;
      dp_points = std::any_of(v.values.begin(), v.values.end(), [](const auto& value) { return value == "dp"; });
    }
    if (const std::vector<std::string> ddp_only = ddp_only_settings(run.base, true); dp_points && !ddp_only.empty()) {
      std::cerr << fmt::format("note: {} {} to DDP only: the sweep's dp points run without {}\n",
                               fmt::join(ddp_only, ", "), ddp_only.size() == 1 ? "applies" : "apply",
                               ddp_only.size() == 1 ? "it" : "them");
    }
    // bucket_cap_mb varied with the first bucket left to PyTorch: from 2.3 an explicit cap caps the
    // first bucket too (core/pytorch_version.hpp first_bucket_follows_cap), which the table's
    // bucket_cap_mb column alone does not show.
    {
      bool cap_varied = false, first_varied = false, follows = false;
      for (const std::string& text : a->options.vary) {
        const Vary v = parse_vary(text);
        cap_varied = cap_varied || v.key == "bucket_cap_mb";
        first_varied = first_varied || v.key == "first_bucket_mb";
        if (v.key == "pytorch_version")
          for (const auto& value : v.values)
            follows = follows || first_bucket_follows_cap(parse_pytorch_version(value.get<std::string>()));
      }
      follows = follows || first_bucket_follows_cap(parse_pytorch_version(run.base.pytorch_version));
      if (cap_varied && follows && !first_varied && !run.base.first_bucket_mb)
        std::cerr << "note: --vary bucket_cap_mb: from PyTorch 2.3 an explicit bucket_cap_mb caps DDP's first bucket "
                     "too, so each point's first bucket is its bucket_cap_mb, not 1 MiB (set first_bucket_mb to "
                     "hold it)\n";
    }
    if (dp_points) {
      for (const std::string& text : a->options.vary) {
        const Vary v = parse_vary(text);
        // A DDP knob varied: DataParallel's points across it are one simulation, alike.
        if (const ScenarioKey* k = find_scenario_key(v.key); k != nullptr && k->reach == KeyReach::kDdp)
          std::cerr << fmt::format("note: --vary {}: a DDP setting; the sweep's dp points are alike across it\n",
                                   v.key);
      }
      // torch.compile under DataParallel: its replica threads run eager (compare's header says so).
      bool compiled = run.base.compile;
      for (const std::string& text : a->options.vary) {
        const Vary v = parse_vary(text);
        if (v.key == "compile")
          compiled = std::any_of(v.values.begin(), v.values.end(), [](const auto& value) { return value == true; });
      }
      if (compiled)
        std::cerr << "note: compile true: the sweep's dp points on more than one GPU run eager, as DataParallel does "
                     "(torch.compile does not compile through its replica threads, pytorch/pytorch#94636: \"for "
                     "multi-gpu it falls back to the non-compile speed\"); their rows keep compile true\n";
    }
    const sweep::SweepStats st = sweep::run_sweep(run);
    if (st.failed > 0) {
      throw RuntimeError(
          fmt::format("sweep: {} of {} points failed (status failed in {}/summary.csv, the others "
                      "ran); first: {}; --resume keeps what ran, and --retry-failed with it runs the failed points "
                      "again once their cause is fixed (a point the scenario cannot have, such as more GPUs than the "
                      "topology holds, fails again: leave it out of --vary)",
                      st.failed, st.points, run.out, st.first_failure));
    }
  });
}

}  // namespace gradsync::apps
