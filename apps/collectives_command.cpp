// collectives_command.cpp: `gradsync collectives`, the simulated counterpart of nccl-tests: time,
// algbw and busbw per size, and the algorithm and protocol NCCL's model picked.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "apps/cli.hpp"
#include "apps/scenario_args.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/nccl_release.hpp"
#include "core/scenario_keys.hpp"
#include "core/text.hpp"
#include "reports/table.hpp"
#include "sim/nccl_info.hpp"
#include "sim/nccl_model.hpp"
#include "sim/simulate.hpp"
#include "topologies/topology.hpp"

namespace gradsync::apps {
namespace {

using sim::Scenario;

struct CollectivesArgs {
  sim::CollectiveSweep sweep;
  ScenarioArgs knobs;  // NCCL's knobs: --algo, --proto, --nccl NAME=VALUE
  std::string op = "allreduce";
  std::string min_bytes = "8";
  std::string max_bytes = "1GiB";
  std::string step_bytes = "1M";
  std::string datatype = "float";
  // nccl-tests' -n, -w, -c: taken so that its command lines run; a simulated size has one time.
  std::string iters, warmup_iters, check;
  double reduced_max = 0;  // nccl-tests' "Reducing maxBytes to N due to memory limitation"
  bool json = false;
  bool fidelity_given = false;  // --fidelity on the command line
  bool gpus_given = false;      // -g / --gpus on the command line
};

// kStepFidelityNoteGpus: above this many GPUs collectives notes how long step fidelity can take.
constexpr int kStepFidelityNoteGpus = 64;

// whole_number: nccl-tests reads -f, -n, -w and -c with strtol; gradsync takes digits only, at
// most 9 of them (a value strtol and an int both hold).
bool whole_number(const std::string& text) {
  return !text.empty() && text.size() <= 9 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// data_check: whether nccl-tests checks results (-c, default 1), which takes a third buffer.
bool data_check(const CollectivesArgs& a) { return a.check.empty() || std::stol(a.check) != 0; }

// kWholeNumberText: nccl-tests' -n, -w and -c take whole numbers (strtol).
const CLI::Validator kWholeNumberText(
    [](std::string& text) -> std::string {
      if (whole_number(text)) return {};
      return fmt::format("value \"{}\" must be a whole number, as nccl-tests reads it", text);
    },
    "N");

// kNcclTestsTypes: nccl-tests' -d names (src/common.cu test_typenames) and element sizes.
struct TestType {
  const char* name;
  int bytes;
};
constexpr TestType kNcclTestsTypes[] = {{"int8", 1},   {"uint8", 1},    {"int32", 4},  {"uint32", 4},
                                        {"int64", 8},  {"uint64", 8},   {"half", 2},   {"float", 4},
                                        {"double", 8}, {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1}};
// nccl-tests' other spellings (ncclstringtotype): char, int, float16, float32, float64.
const TestType& test_type(const std::string& text) {
  const std::string t = ascii_lower(text);
  const std::string name = t == "char"      ? "int8"
                           : t == "int"     ? "int32"
                           : t == "float16" ? "half"
                           : t == "float32" ? "float"
                           : t == "float64" ? "double"
                                            : t;
  for (const TestType& tt : kNcclTestsTypes)
    if (name == tt.name) return tt;
  std::vector<std::string> names;
  for (const TestType& tt : kNcclTestsTypes) names.emplace_back(tt.name);
  throw UsageError(
      fmt::format("--datatype \"{}\": expected one of {} (nccl-tests' names; 'all' runs every type "
                  "in nccl-tests: give one here)",
                  text, fmt::join(names, ", ")));
}

// check_datatype: a type the release or the GPUs cannot run is refused, as NCCL refuses it:
// ncclBfloat16 came with NCCL 2.10, ncclFloat8e4m3/e5m2 with 2.24 (src/nccl.h.in), and FP8 needs
// compute capability 9.0 (enqueue.cc: "FP8 reduction support begins with sm90 capable devices",
// ncclInvalidArgument; for every collective through 2.27, for reductions only from 2.28).
void check_datatype(const TestType& type, NcclRelease nccl, int min_sm, Collective c) {
  const std::string name = type.name;
  if (name == "bfloat16" && !nccl.at_least(2, 10))
    throw UsageError(
        fmt::format("--datatype bfloat16: NCCL {} has no ncclBfloat16 (it came with NCCL 2.10); give "
                    "--nccl-version 2.10 or later",
                    nccl.text()));
  if (name != "f8e4m3" && name != "f8e5m2") return;
  if (!nccl.at_least(2, 24))
    throw UsageError(
        fmt::format("--datatype {}: NCCL {} has no FP8 types (ncclFloat8e4m3 and ncclFloat8e5m2 came "
                    "with NCCL 2.24); give --nccl-version 2.24 or later",
                    name, nccl.text()));
  const bool reduces = c == Collective::kAllreduce || c == Collective::kReduce || c == Collective::kReduceScatter;
  if (min_sm > 0 && min_sm < 90 && (reduces || !nccl.at_least(2, 28)))
    throw UsageError(fmt::format(
        "--datatype {}: NCCL refuses FP8 {}s on GPUs of compute capability {}.{} (\"FP8 reduction support begins "
        "with sm90 capable devices\", ncclInvalidArgument{}); Hopper or later runs them",
        name, collective_name(c), min_sm / 10, min_sm % 10,
        reduces ? "" : fmt::format(", for every collective before NCCL 2.28; NCCL {} here", nccl.text())));
}

Collective parse_op(const std::string& op) {
  if (const auto c = parse_collective(op)) return *c;
  throw UsageError(fmt::format("--op \"{}\": expected allreduce, broadcast, reduce, allgather or reducescatter", op));
}

void run_collectives(CollectivesArgs a) {
  const Scenario knobs = scenario_of(a.knobs);
  try {
    a.sweep.nccl = sim::nccl_settings(knobs);
  } catch (const DataError&) {
    throw;
  } catch (const ConfigError& e) {
    throw UsageError(e.what());  // knobs that contradict each other: the command line, as compare has it
  }
  a.sweep.op = parse_op(a.op);
  a.sweep.min_bytes = parse_nccl_tests_size_flag("--min-bytes", a.min_bytes);
  a.sweep.max_bytes = parse_nccl_tests_size_flag("--max-bytes", a.max_bytes);
  a.sweep.step_bytes = parse_nccl_tests_size_flag("--step-bytes", a.step_bytes);
  const TestType& type = test_type(a.datatype);
  a.sweep.element_bytes = type.bytes;
  if (a.sweep.max_bytes < a.sweep.min_bytes) {
    throw UsageError(fmt::format("--max-bytes {} is below --min-bytes {}", a.max_bytes, a.min_bytes));
  }
  {
    const Topology topo = load_topology(a.sweep.topology);
    const int n = a.sweep.gpus > 0 ? a.sweep.gpus : static_cast<int>(topo.gpu_count());
    if (n > static_cast<int>(topo.gpu_count())) {
      throw UsageError(fmt::format("--gpus {}: topology {} has {} GPU{}; expected 2..{}", n, a.sweep.topology,
                                   topo.gpu_count(), topo.gpu_count() == 1 ? "" : "s", topo.gpu_count()));
    }
    if (a.sweep.gpus_per_thread > n || n % a.sweep.gpus_per_thread != 0) {
      throw UsageError(fmt::format(
          "--gpus-per-thread {}: expected a whole number from 1 to {} that divides the {} GPUs (nccl-tests' -g in "
          "one process: each thread drives that many)",
          a.sweep.gpus_per_thread, n, n));
    }
    if (n == 1) {
      // NCCL's collectives of one rank move nothing (enqueue.cc: in place they return, out of
      // place they copy the buffer on the GPU): no time to compare with a network's.
      const int most = topo.gpu_count();
      throw UsageError(fmt::format(
          "--gpus 1: a collective of one rank communicates nothing (NCCL returns in place, or copies the buffer on "
          "the GPU out of place); {}",
          most < 2    ? fmt::format("{} has one GPU", a.sweep.topology)
          : most == 2 ? fmt::format("give -g 2 ({} has 2 GPUs)", a.sweep.topology)
                      : fmt::format("give -g 2 to {} ({} has {} GPUs)", most, a.sweep.topology, most)));
    }
    // nccl-tests' memory rule (src/common.cu run()): of the smallest GPU memory it keeps 1 GiB per
    // 16 GiB (at most 4 GiB) and 1 GiB more, and splits the rest among the send, receive and (with
    // the data check, its default -c 1) expected buffers; a larger maxBytes is reduced to that,
    // and minBytes with it, as nccl-tests prints it.
    int min_sm = 0;
    for (int r = 0; r < n; ++r)
      if (const GpuSpec* g = topo.vertex(topo.gpu(r)).gpu; g != nullptr && (min_sm == 0 || g->sm_version < min_sm))
        min_sm = g->sm_version;
    check_datatype(type, a.sweep.nccl.transport.nccl, min_sm, a.sweep.op);
    // The switch adds 16-bit floats, floats, doubles and 32- and 64-bit integers only (device.h
    // ncclNvlsSupported): an int8, uint8 or FP8 reduction runs without NVLS and NVLSTree (enqueue.cc
    // nvlsSupport), as an allgather does not need it to.
    const std::string tname = type.name;
    const bool reduces = a.sweep.op == Collective::kAllreduce || a.sweep.op == Collective::kReduce ||
                         a.sweep.op == Collective::kReduceScatter;
    if (reduces && (tname == "int8" || tname == "uint8" || tname == "f8e4m3" || tname == "f8e5m2")) {
      a.sweep.nccl.request.nvls = false;
      a.sweep.nccl.request.nvls_tree = false;
    }
    double smallest = 0;
    for (int r = 0; r < n; ++r) {
      const GpuSpec* g = topo.vertex(topo.gpu(r)).gpu;
      if (g != nullptr && g->memory_bytes > 0 && (smallest == 0 || g->memory_bytes < smallest))
        smallest = static_cast<double>(g->memory_bytes);
    }
    if (smallest > 0) {
      constexpr double kGiB = 1024.0 * 1024 * 1024;
      const double reserve = std::min(std::ceil(smallest / (16 * kGiB)) * kGiB, 4 * kGiB);
      const double most = std::floor((smallest - reserve - kGiB) / (data_check(a) ? 3 : 2));
      if (a.sweep.max_bytes > most) {
        a.sweep.max_bytes = most;
        a.sweep.min_bytes = std::min(a.sweep.min_bytes, most);
        a.reduced_max = most;
      }
    }
  }
  std::vector<sim::CollectivePoint> pts;
  sim::NcclInfo info;
  try {
    pts = sim::simulate_collectives(a.sweep);
    info = sim::nccl_info(load_topology(a.sweep.topology), a.sweep.gpus, a.sweep.nccl, a.sweep.op);
  } catch (const DataError&) {
    throw;
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
  const int n = a.sweep.gpus;
  const bool shares = a.sweep.op == Collective::kAllgather || a.sweep.op == Collective::kReduceScatter;
  if (a.json) {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["topology"] = a.sweep.topology;
    j["gpus"] = n;
    if (a.sweep.gpus_per_thread > 1) j["gpus_per_thread"] = a.sweep.gpus_per_thread;
    j["op"] = a.op;
    const NcclRelease linked = resolve_nccl_release(knobs.nccl_version, knobs.pytorch_version);
    j["nccl_model"] = std::string(sim::nccl_model_version(linked));
    j["nccl_version"] = linked.text();
    j["nccl"] = sim::nccl_info_json(info);
    auto& rows = j["rows"] = nlohmann::ordered_json::array();
    for (const auto& p : pts) {
      rows.push_back({{"bytes", whole_json(p.bytes)},
                      {"count", whole_json(std::floor(p.bytes / type.bytes / (shares ? n : 1)))},
                      {"type", type.name},
                      {"time_us", p.time_s * 1e6},
                      {"algbw_GBps", p.algbw_GBps},
                      {"busbw_GBps", p.busbw_GBps},
                      {"algorithm", p.ran ? nlohmann::ordered_json(sim::algorithm_name(p.choice.algorithm)) : nullptr},
                      {"protocol", p.ran ? nlohmann::ordered_json(sim::protocol_name(p.choice.protocol)) : nullptr}});
      if (a.sweep.gpus_per_thread > 1) rows.back()["host_bound"] = p.host_bound;
    }
    std::cout << json_text(j, 2) << '\n';
    return;
  }
  reports::Table t({{"size", "(B)"},
                    {"count", "(elements)"},
                    {"type", "", true},
                    {"time", "(us)"},
                    {"algbw", "(GB/s)"},
                    {"busbw", "(GB/s)"},
                    {"algo", "", true},
                    {"proto", "", true}});
  // nccl-tests prints the count each rank passes to NCCL (its paramCount): for allgather and
  // reducescatter a rank's share, size / element / ranks; else size / element.
  for (const auto& p : pts) {
    const double count = std::floor(p.bytes / type.bytes / (shares ? n : 1));
    t.add_row({fmt::format("{:.0f}", p.bytes), fmt::format("{:.0f}", count), type.name,
               fmt::format("{:.2f}", p.time_s * 1e6), fmt::format("{:.2f}", p.algbw_GBps),
               fmt::format("{:.2f}", p.busbw_GBps),
               p.ran ? std::string(sim::algorithm_name(p.choice.algorithm)) : std::string("none"),
               p.ran ? std::string(sim::protocol_name(p.choice.protocol)) : std::string("none")});
  }
  double sum = 0;
  for (const auto& p : pts) sum += p.busbw_GBps;
  std::vector<std::string> header{
      fmt::format("gradsync collectives: simulated {} on {}, {} GPUs (nccl-tests definitions: algbw = "
                  "size / time, busbw = algbw x {:.4f})",
                  a.op, a.sweep.topology, n, sim::bus_factor(a.sweep.op, n)),
      fmt::format("{}{}; one collective per size, ranks aligned before each", nccl_release_text(knobs),
                  nccl_knobs_text(knobs))};
  for (std::string& line : sim::nccl_info_lines(info)) header.push_back(std::move(line));
  std::vector<std::string> taken;
  if (!a.iters.empty()) taken.push_back("-n " + a.iters);
  if (!a.warmup_iters.empty()) taken.push_back("-w " + a.warmup_iters);
  if (!a.check.empty()) taken.push_back("-c " + a.check);
  if (!taken.empty()) {
    header.push_back(
        fmt::format("{}: taken as nccl-tests takes {}, changing nothing here: a simulated size has one "
                    "time (no iterations to average, no warm-up, no data to check)",
                    fmt::join(taken, ", "), taken.size() == 1 ? "it" : "them"));
  }
  if (a.gpus_given && a.sweep.gpus_per_thread == 1) {
    // nccl-tests' -g N alone is one process driving N GPUs; here -g picks the GPUs, one process
    // each (as mpirun -np N ... -g 1). Said, since the small sizes differ (kGroupLaunchPerGpuS).
    header.push_back(fmt::format(
        "-g {}: {} GPUs, one process each (mpirun -np {} all_reduce_perf -g 1); nccl-tests' -g {} in one process "
        "launches the GPUs' kernels from one thread: add --gpus-per-thread {}",
        n, n, n, n, n));
  }
  if (a.sweep.gpus_per_thread > 1) {
    const auto bound = std::count_if(pts.begin(), pts.end(), [](const sim::CollectivePoint& p) { return p.host_bound; });
    header.push_back(fmt::format(
        "--gpus-per-thread {}: one thread launches the kernels of {} GPUs in turn (NCCL's group.cc doLaunches), "
        "{:.1f} us per GPU, so a call takes at least {:.1f} us; the host set the time of {} of {} sizes",
        a.sweep.gpus_per_thread, a.sweep.gpus_per_thread, sim::kGroupLaunchPerGpuS * 1e6,
        a.sweep.gpus_per_thread * sim::kGroupLaunchPerGpuS * 1e6, bound, pts.size()));
  }
  if (type.bytes != 4 || std::string(type.name) != "float") {
    header.push_back(
        fmt::format("-d {}: {}-byte elements (count and alignment as nccl-tests'); the time is that of "
                    "the bytes, whatever the type",
                    type.name, type.bytes));
  }
  // A size nccl-tests runs smaller (not a whole number of floats, or for allgather and
  // reducescatter of 16 bytes per rank) is said once, with the first size it changed; a size of 0
  // launches nothing (NCCL returns from a call of count 0).
  for (double b : sim::requested_sizes(a.sweep)) {
    const double runs = sim::nccl_tests_bytes(a.sweep.op, b, n, type.bytes);
    if (runs == b) continue;
    header.push_back(fmt::format(
        "sizes run as nccl-tests runs them: a whole number of {}-byte elements ({}){} (a requested {:.0f} B runs as "
        "{:.0f} B{})",
        type.bytes, type.name,
        shares
            ? fmt::format(", each rank's share a whole number of 16 bytes ({}'s size is all {} ranks' shares)", a.op, n)
            : "",
        b, runs, runs > 0 ? "" : ": NCCL launches nothing for a count of 0, and nccl-tests prints the row"));
    break;
  }
  if (a.reduced_max > 0) {
    header.push_back(
        fmt::format("Reducing maxBytes to {:.0f} due to memory limitation (as nccl-tests: its send, "
                    "receive{} buffers in the smallest GPU's memory, less its reserve)",
                    a.reduced_max, data_check(a) ? ", expected" : ""));
  }
  t.print(std::cout, header);
  std::cout << fmt::format("# Avg bus bandwidth    : {:.3f}\n",
                           pts.empty() ? 0.0 : sum / static_cast<double>(pts.size()));
}

}  // namespace

void register_collectives_command(CLI::App& app) {
  auto co = std::make_shared<CollectivesArgs>();
  CLI::App* coll = app.add_subcommand("collectives", "Simulated nccl-tests: time, algbw and busbw per size");
  coll->add_option("--topology", co->sweep.topology, "Built-in cluster or topology file")->required();
  CLI::Option* gpus =
      coll->add_option("-g,--gpus,--ngpus", co->sweep.gpus,
                       "Use the first N GPUs, one process each (default all; nccl-tests' -g N in one process is "
                       "-g N --gpus-per-thread N)")
          ->check(kPositiveInteger);
  coll->add_option("--gpus-per-thread", co->sweep.gpus_per_thread,
                   "GPUs one thread drives, as nccl-tests' -g N run in one process (all_reduce_perf -g 8): its "
                   "calls launch each GPU's kernel in turn, at least N x 5.5 us each; it must divide the GPUs and "
                   "fit in one node (default 1: one process per GPU, as mpirun -np N all_reduce_perf -g 1)")
      ->check(kPositiveInteger);
  coll->add_option("--op", co->op, "allreduce, broadcast, reduce, allgather or reducescatter (default allreduce)")
      ->transform(kAnyCase);
  coll->add_option("-b,--min-bytes,--minbytes", co->min_bytes,
                   "Smallest size (default 8; 64KiB, or nccl-tests' 128M: K, M, G are powers of 1024)");
  coll->add_option("-e,--max-bytes,--maxbytes", co->max_bytes, "Largest size (default 1GiB; as -b)");
  coll->add_option("-f,--step-factor,--stepfactor", co->sweep.step_factor,
                   "Size multiplier between rows, a whole number (default 2; nccl-tests' -f, whose 1 steps by -i)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            // nccl-tests reads the factor with strtol: a whole number (its 1.5 is 1: linear steps).
            if (whole_number(text) && std::stol(text) >= 1) return {};
            return fmt::format(
                "value \"{}\" must be a whole number from 1 to 999999999, as nccl-tests reads it (1: steps of "
                "--step-bytes)",
                text);
          },
          "FACTOR"));
  coll->add_option("-i,--step-bytes,--stepbytes", co->step_bytes,
                   "With --step-factor 1: bytes added between rows (default 1M; nccl-tests' -i)");
  coll->add_option("-d,--datatype", co->datatype,
                   "Element type, nccl-tests' -d: int8, uint8, int32, uint32, int64, uint64, half, float, double, "
                   "bfloat16, f8e4m3, f8e5m2 (default float): sets count and alignment");
  coll->add_option("-n,--iters", co->iters, "nccl-tests' iterations: taken, and changes nothing (one time per size)")
      ->check(kWholeNumberText);
  coll->add_option("-w,--warmup_iters", co->warmup_iters, "nccl-tests' warm-up iterations: taken, changes nothing")
      ->check(kWholeNumberText);
  coll->add_option("-c,--check", co->check, "nccl-tests' data check: taken, changes nothing")->check(kWholeNumberText);
  add_scenario_options(coll, co->knobs, {"NCCL_ALGO", "NCCL_PROTO", "nccl", "nccl_version"});
  // collectives has no --pytorch-version: its auto is the newest PyTorch's bundled release.
  co->knobs.given.at("nccl_version")
      ->description(
          "The NCCL release the run links (2.21, or 2.21.5 as NCCL's tags name it), from 2.4 to 2.30: its default "
          "P2P level, its algorithms (NVLS from 2.17, NVLSTree from 2.18), protocols (LL128 from 2.5, on the GPUs "
          "each release enables it for) and data types (bfloat16 from 2.10, FP8 from 2.24); NCCL's tuning model "
          "2.27's before 2.28, then the release's (2.28, 2.29; 2.30 takes 2.29's) (default: auto, the release PyTorch "
          "2.11 bundles: 2.28)");
  CLI::Option* fidelity =
      coll->add_option("--fidelity", co->sweep.fidelity,
                       "step (every ring step and chunk a flow; default), aggregate (one flow per rank, channel and "
                       "phase) or auto")
          ->transform(kAnyCase);
  coll->add_flag("--json", co->json, "Print JSON instead of a table");
  coll->callback([co, fidelity, gpus] {
    co->fidelity_given = fidelity->count() > 0;
    co->gpus_given = gpus->count() > 0;
    CollectivesArgs a = *co;
    if (a.sweep.gpus == 0) {
      try {
        a.sweep.gpus = load_topology(a.sweep.topology).gpu_count();
      } catch (const DataError&) {
        throw;
      } catch (const ConfigError& e) {
        throw UsageError(e.what());
      }
    }
    // Step fidelity makes a flow of every ring step and chunk: past a few nodes a large size takes
    // minutes (1024 GPUs, 64 MiB: 8 minutes), with nothing printed until its row. Said before.
    if (!a.fidelity_given && a.sweep.gpus > kStepFidelityNoteGpus && a.sweep.fidelity == "step") {
      std::cerr << fmt::format(
          "note: {} GPUs at --fidelity step (the default: a flow for every ring step and chunk): each large size "
          "can take minutes; --fidelity aggregate (one flow per rank, channel and phase) gives a ring's "
          "uncontended time in seconds\n",
          a.sweep.gpus);
    }
    run_collectives(a);
  });
}

}  // namespace gradsync::apps
