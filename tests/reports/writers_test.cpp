// writers_test.cpp: the CSV, Chrome trace, JSON and HTML writers on a hand-made result record.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include "core/trace_ranks.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/scenario.hpp"
#include "reports/chrome_trace.hpp"
#include "reports/csv.hpp"
#include "reports/html.hpp"
#include "reports/report.hpp"
#include "writers_test_util.hpp"

namespace gradsync::reports {
namespace {

using json = nlohmann::ordered_json;
using test::event;

// Two ranks of DDP, one iteration: backward on compute overlapping a bucket's allreduce on comm.
StrategyResult ddp_result() {
  StrategyResult r;
  r.strategy = Strategy::kDDP;
  r.gpus = r.replicas = 2;
  r.global_batch = 8;
  r.precision = "bf16";
  r.gpu = "a100-sxm4-80gb";
  r.warmup = 0;
  for (int rank = 0; rank < 2; ++rank) {
    r.trace.add(event(rank, Stream::kHost, "iteration:1", 0.0, 0.010));
    r.trace.add(event(rank, Stream::kCompute, "fwd:fc, \"quoted\"", 0.0, 0.004));
    r.trace.add(event(rank, Stream::kCompute, "bwd:fc", 0.004, 0.008));
    r.trace.add(event(rank, Stream::kComm, "allreduce:bucket0", 0.006, 0.009, 4096, 0));
    r.per_gpu.push_back({rank, 4096, 4096, 2e9, 80e9, false});
  }
  IterationMetrics m;
  m.iteration = 1;
  m.end_s = m.time_s = 0.010;
  m.compute_s = 0.008;
  m.communication_s = 0.003;
  m.overlap_s = 0.002;
  m.exposed_communication_s = 0.001;
  m.overlap = 2.0 / 3;
  r.iterations.push_back(m);
  r.iteration_1_time_s = r.steady_iteration_time_s = 0.010;
  r.compute_s = 0.008;
  r.communication_s = 0.003;
  r.exposed_communication_s = 0.001;
  r.overlap = 2.0 / 3;
  r.samples_per_s = 800;
  r.links.push_back({"nvlink0_UP", 300e9, 4096, 4096 / (300e9 * 0.010), 4096 / (300e9 * 0.002), "allreduce:bucket0"});
  r.traffic["allreduce:bucket0"] = {{4096, 4096}, {4096, 4096}};
  return r;
}

Report report(std::string model = "gpt2") {
  Report rep;
  rep.command = "compare";
  Scenario s;
  s.model = std::move(model);
  s.gpus = 2;
  rep.scenario = scenario_json(s);
  rep.header = {"a test scenario"};
  rep.strategies.push_back(ddp_result());
  return rep;
}

// --explain's rows: a collective's wait for its last rank is its own phase, on the comm stream and
// hidden beside backward (its time is not the exposed column's).
// A comm hook's steps are phases of their own, not "other": its collectives (PowerSGD's P and Q,
// the quantize hook's allgathers) and its kernels (compress, PowerSGD's products).
TEST(Explain, CommHookStepsAreTheirOwnPhases) {
  EXPECT_EQ(phase_of("allreduce:bucket3"), "allreduce buckets");
  EXPECT_EQ(phase_of("allreduce_p:bucket3"), "comm hook collectives");
  EXPECT_EQ(phase_of("allgather_qparams:bucket12"), "comm hook collectives");
  EXPECT_EQ(phase_of("compress:bucket0"), "comm hook kernels");
  EXPECT_EQ(phase_of("powersgd:compute_q:bucket2"), "comm hook kernels");
  EXPECT_EQ(phase_of("div:bucket2"), "bucket copies");  // the Reducer's own division
  EXPECT_EQ(phase_of("slowdown:allreduce_p:bucket3"), "overlap slowdown");
  EXPECT_EQ(phase_of("compress:bucketx"), "other");
  StrategyResult r = ddp_result();
  r.trace.add(event(0, Stream::kComm, "allreduce_q:bucket0", 0.005, 0.007));
  r.trace.add(event(0, Stream::kCompute, "powersgd:compute_p:bucket0", 0.004, 0.005));
  int shown = 0;
  for (const ExplainRow& row : explain(r)) {
    if (row.phase == "comm hook collectives") {
      ++shown;
      EXPECT_NE(row.where.find("the comm hook's calls"), std::string::npos) << row.where;
      EXPECT_NEAR(row.time_s, 0.002, 1e-12);
    }
    if (row.phase == "comm hook kernels") {
      ++shown;
      EXPECT_NEAR(row.time_s, 0.001, 1e-12);
    }
    EXPECT_NE(row.phase, "other");
  }
  EXPECT_EQ(shown, 2);
}

TEST(Explain, WaitingForPeersIsTheCommStreamsHiddenWait) {
  StrategyResult r = ddp_result();
  r.trace.add(event(0, Stream::kComm, "wait:allreduce:bucket0", 0.005, 0.006));
  bool shown = false;
  for (const ExplainRow& row : explain(r)) {
    if (row.phase != "waiting for peers") continue;
    shown = true;
    EXPECT_EQ(row.where, "comm stream: waiting for the last rank (hidden beside backward)");
    EXPECT_NEAR(row.time_s, 0.001, 1e-12);
  }
  EXPECT_TRUE(shown);
}

// One GPU: the rows name GPU 0, not "every GPU (0-0)" or "all 1 GPUs".
TEST(Explain, OneGpusRowsNameGpuZero) {
  StrategyResult r = ddp_result();
  r.gpus = r.replicas = 1;
  r.trace = {};
  r.trace.add(event(0, Stream::kCompute, "bwd:fc", 0.004, 0.008));
  r.trace.add(event(0, Stream::kComm, "allreduce:bucket0", 0.006, 0.009, 4096, 0));
  std::map<std::string, std::string> where;
  for (const ExplainRow& row : explain(r)) where[row.phase] = row.where;
  EXPECT_EQ(where["backward"], "GPU 0");
  EXPECT_EQ(where["allreduce buckets"], "one GPU: nothing crosses a link");
}

// NVLS reduces in the NVSwitch: its row names NVLink SHARP, not the ring's transports (which
// NCCL_P2P_DISABLE turns to SHM while NVLS stays on NVLink); a ring names the ring's.
TEST(Explain, NvlsBucketsGoThroughTheSwitchNotTheRingsTransports) {
  StrategyResult r = ddp_result();
  r.gpus = r.replicas = 8;
  r.transports = "SHM/direct/direct over PHB";
  r.trace.add(event(0, Stream::kComm, "allreduce:bucket0", 0.006, 0.009, 4096, 0));
  CollectiveCall call;
  call.name = "allreduce:bucket0";
  call.algorithm = "nvls";
  r.collectives = {call};
  std::map<std::string, std::string> where;
  for (const ExplainRow& row : explain(r)) where[row.phase] = row.where;
  EXPECT_EQ(where["allreduce buckets"],
            "nvls over 8 GPUs via NVLink SHARP (NVSwitch multicast and reduction), overlapping backward");
  r.collectives[0].algorithm = "ring";
  for (const ExplainRow& row : explain(r)) where[row.phase] = row.where;
  EXPECT_EQ(where["allreduce buckets"], "ring over 8 GPUs via SHM/direct/direct over PHB, overlapping backward");
}

TEST(Csv, QuotesWhatNeedsQuotingAndReadsItBack) {
  const CsvRow row{"plain", "with,comma", "with \"quote\"", "two\nlines", ""};
  const std::string line = csv_line(row);
  EXPECT_EQ(line, "plain,\"with,comma\",\"with \"\"quote\"\"\",\"two\nlines\",\n");
  const auto rows = parse_csv(line + csv_line({"a", "b"}), "x.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], row);
  EXPECT_EQ(rows[1], (CsvRow{"a", "b"}));
}

TEST(Csv, AnUnterminatedQuoteNamesTheFileAndLine) {
  try {
    parse_csv("a,b\nc,\"d\n", "summary.csv");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("summary.csv:2"), std::string::npos) << e.what();
  }
}

TEST(Csv, NumbersReadBackExactly) {
  for (double v : {0.1, 1.0 / 3, 1e-7, 12.0, 0.16620510639899336, 85899345920.0}) {
    EXPECT_EQ(std::stod(number(v)), v) << number(v);
  }
  EXPECT_EQ(number(12.0), "12");
}

// Every column once: a scenario key and a result column of the same name (global_batch, until
// 2026-12-02) made pandas read the second as global_batch.1 and csv.DictReader keep one.
TEST(Csv, EveryColumnNameIsUnique) {
  const CsvRow header = summary_header();
  std::set<std::string> seen;
  for (const std::string& name : header) EXPECT_TRUE(seen.insert(name).second) << name << " twice";
  EXPECT_EQ(std::count(header.begin(), header.end(), "global_batch"), 1);
}

TEST(Csv, ScalingEfficiencyIsThroughputPerGpuAgainstTheFewestGpus) {
  const CsvRow header = summary_header();
  // row: point i of a run of `gpus` GPUs at `rate` samples/s, its scenario as scenario_json writes it.
  auto row = [](int i, const Scenario& s, double rate) {
    StrategyResult r;
    r.gpus = s.gpus;
    r.samples_per_s = rate;
    r.per_gpu.resize(static_cast<std::size_t>(r.gpus));
    return summary_row(i, "simulated", scenario_json(s), r);
  };
  auto scenario = [](const std::string& model, int gpus) {
    Scenario s;
    s.model = model;
    s.gpus = gpus;
    return s;
  };
  std::vector<CsvRow> rows;
  const int gpus[] = {1, 2, 4};
  const double samples[] = {100, 180, 320};
  for (int i = 0; i < 3; ++i) rows.push_back(row(i, scenario("m", gpus[i]), samples[i]));
  // Another model: its own group, a single GPU count, no efficiency.
  rows.push_back(row(3, scenario("n", 8), 1));
  fill_scaling_efficiency(header, rows);
  const auto col =
      static_cast<std::size_t>(std::find(header.begin(), header.end(), "scaling_efficiency_frac") - header.begin());
  EXPECT_DOUBLE_EQ(std::stod(rows[0][col]), 1.0);
  EXPECT_DOUBLE_EQ(std::stod(rows[1][col]), 0.9);
  EXPECT_DOUBLE_EQ(std::stod(rows[2][col]), 0.8);
  EXPECT_EQ(rows[3][col], "");
  // At a fixed global batch (strong scaling: each GPU's batch shrinks as GPUs are added) the points
  // differ in batch_per_gpu too, and are compared all the same; points that differ in both
  // batch_per_gpu and global_batch are no series.
  auto strong = [&](int count, std::int64_t global) {
    Scenario s = scenario("m", count);
    s.global_batch = global;
    s.batch_per_gpu = global / count;
    return s;
  };
  std::vector<CsvRow> fixed;
  const double rates[] = {100, 150, 200};
  for (int i = 0; i < 3; ++i) fixed.push_back(row(i, strong(gpus[i], i == 2 ? 768 : 256), rates[i]));
  fill_scaling_efficiency(header, fixed);
  EXPECT_DOUBLE_EQ(std::stod(fixed[0][col]), 1.0);
  EXPECT_DOUBLE_EQ(std::stod(fixed[1][col]), 0.75);
  EXPECT_EQ(fixed[2][col], "");  // another global batch and another per-GPU batch
}

TEST(Csv, EventsAndIterationsHaveOneRowEach) {
  const StrategyResult r = ddp_result();
  const auto events = parse_csv(events_csv({r}), "events.csv");
  ASSERT_EQ(events.size(), r.trace.events.size() + 1);
  EXPECT_EQ(events[0][3], "name");
  EXPECT_EQ(events[2][3], "fwd:fc, \"quoted\"");  // quoted and read back whole
  EXPECT_EQ(events[4][5], "0");                   // the allreduce's bucket
  // Every row as csv_line writes its cells: numbers as number() and fmt::format("{}") give them.
  for (std::size_t i = 0; i < r.trace.events.size(); ++i) {
    const TraceEvent& e = r.trace.events[i];
    const CsvRow& row = events[i + 1];
    ASSERT_EQ(row.size(), 11u) << i;
    EXPECT_EQ(row[1], fmt::format("{}", e.rank)) << i;
    EXPECT_EQ(row[4], fmt::format("{}", e.iteration)) << i;
    EXPECT_EQ(row[5], e.bucket >= 0 ? fmt::format("{}", e.bucket) : "") << i;
    EXPECT_EQ(row[6], e.peer >= 0 ? fmt::format("{}", e.peer) : "") << i;
    EXPECT_EQ(row[7], number(e.start_s)) << i;
    EXPECT_EQ(row[8], number(e.end_s)) << i;
    EXPECT_EQ(row[9], number(e.duration_s())) << i;
    EXPECT_EQ(row[10], fmt::format("{}", e.bytes)) << i;
  }
  const auto its = parse_csv(iterations_csv({r}), "iterations.csv");
  ASSERT_EQ(its.size(), 2u);
  EXPECT_EQ(its[1][0], "ddp");
  EXPECT_EQ(its[1][2], "true");  // steady: after warmup 0
}

TEST(ChromeTrace, EventsInMicrosecondsOnePidPerRankOneTidPerStream) {
  const StrategyResult r = ddp_result();
  const json doc = json::parse(chrome_trace(r, "t"));
  ASSERT_TRUE(doc.contains("traceEvents"));
  int complete = 0;
  std::map<std::pair<int, int>, std::string> thread_names;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      thread_names[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"].get<std::string>();
    }
    if (e["ph"] != "X") continue;
    ++complete;
    if (e["name"] == "allreduce:bucket0" && e["pid"] == 1) {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 6000.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 3000.0);
      EXPECT_EQ(e["args"]["bytes"], 4096);
      EXPECT_EQ(e["args"]["bucket"], 0);
      EXPECT_EQ(thread_names.at({1, e["tid"].get<int>()}), "comm");
    }
    if (e["name"] == "bwd:fc") {
      EXPECT_EQ(thread_names.at({e["pid"].get<int>(), e["tid"].get<int>()}), "compute");
    }
  }
  EXPECT_EQ(complete, static_cast<int>(r.trace.events.size()));
}

TEST(Html, UserTextIsEscapedEverywhere) {
  const std::string evil = "<script>alert(1)</script>";
  const std::string page = html_report(report(evil));
  EXPECT_EQ(page.find(evil), std::string::npos);
  EXPECT_EQ(page.find("alert(1)</script"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);  // the title, as text
  EXPECT_NE(page.find("\\u003cscript\\u003ealert(1)"), std::string::npos);           // the data, as JSON
  EXPECT_EQ(html_escape("a&b<c>\"d'"), "a&amp;b&lt;c&gt;&quot;d&#39;");
}

TEST(Html, SelfContainedAndRequestsNothing) {
  const std::string page = html_report(report());
  EXPECT_NE(page.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_NE(page.find("vegaEmbed"), std::string::npos);  // the libraries are inlined
  for (const char* remote : {"src=\"http", "href=\"http", "sourceMappingURL", "cdn.jsdelivr"}) {
    EXPECT_EQ(page.find(remote), std::string::npos) << remote;
  }
  EXPECT_EQ(page, html_report(report()));  // deterministic
}

// A strategy not simulated (DataParallel across hosts) has no times: result.json says null, not a
// step of 0 s, and reads back as the record it was.
TEST(ResultJson, ASkippedStrategyHasNullTimes) {
  StrategyResult r = ddp_result();
  r.skipped = "DataParallel runs in one process on one host";
  const auto j = result_json(r, false);
  for (const char* key : {"iteration_1_time_s", "steady_iteration_time_s", "compute_s", "communication_s",
                          "exposed_communication_s", "overlap", "samples_per_s", "tokens_per_s"})
    EXPECT_TRUE(j.at(key).is_null()) << key;
  EXPECT_EQ(j.at("skipped"), r.skipped);
  EXPECT_GT(result_json(ddp_result(), false).at("steady_iteration_time_s").get<double>(), 0);
  const StrategyResult back = result_from_bytes(result_bytes(r, false));
  EXPECT_EQ(back.skipped, r.skipped);
  EXPECT_EQ(json_text(result_json(back, false)), json_text(j));
}

// A model without a sequence (a conv net) has no tokens: result.json says null and the CSV leaves
// the cells empty, where it said samples per second under tokens_per_s before; a sequence model
// of one token still counts it.
TEST(ResultJson, AnImageModelHasNoTokens) {
  StrategyResult r = ddp_result();
  r.tokens_per_sample = 0;
  r.tokens_per_s = 0;
  const auto j = result_json(r, false);
  EXPECT_TRUE(j.at("tokens_per_sample").is_null());
  EXPECT_TRUE(j.at("tokens_per_s").is_null());
  EXPECT_EQ(result_from_bytes(result_bytes(r, false)).tokens_per_sample, 0);
  const CsvRow header = summary_header();
  const CsvRow row = summary_row(0, "simulated", report("resnet50").scenario, r);
  const auto column = [&](const char* name) {
    return row.at(static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin()));
  };
  EXPECT_EQ(column("tokens_per_sample"), "");
  EXPECT_EQ(column("tokens_per_s"), "");
  EXPECT_EQ(column("samples_per_s"), "800");
  r.tokens_per_sample = 1;
  r.tokens_per_s = 800;
  const CsvRow one = summary_row(0, "simulated", report().scenario, r);
  EXPECT_EQ(one.at(static_cast<std::size_t>(std::find(header.begin(), header.end(), "tokens_per_s") - header.begin())),
            "800");
  EXPECT_EQ(result_json(r, false).at("tokens_per_sample"), 1);
  // A point that failed ran no replica: its counts are blank, not 0 replicas of a global batch of 0
  // at 1 token a sample (a sweep's failed rows had those, a new user's report).
  StrategyResult failed;
  failed.strategy = Strategy::kDDP;
  failed.failed = "DDP raises at iteration 2";
  const CsvRow f = summary_row(0, "simulated", report().scenario, failed);
  const auto cell = [&](const char* name) {
    return f.at(static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin()));
  };
  EXPECT_EQ(cell("status"), "failed");
  EXPECT_EQ(cell("replicas"), "");
  EXPECT_EQ(cell("global_batch"), "");
  EXPECT_EQ(cell("tokens_per_sample"), "");
}

// Byte counts are whole numbers and are written as JSON integers ("4096", not "4096.0"), which
// readers decoding into u64 or int64 need; a fraction stays a number.
TEST(ResultJson, ByteCountsAreIntegers) {
  const auto j = result_json(ddp_result(), false);
  for (const char* key : {"bytes_in", "bytes_out", "peak_memory_bytes", "capacity_bytes"})
    EXPECT_TRUE(j.at("gpus").at(0).at(key).is_number_integer()) << key;
  EXPECT_TRUE(j.at("links").at(0).at("bytes").is_number_integer());
  // A share of a tensor split over GPUs is a fraction of a byte in the engine; the file writes the
  // count rounded as summary.csv does (DataParallel's scatter over 3 GPUs: 206962722.67 -> 206962723).
  StrategyResult split = ddp_result();
  split.per_gpu.at(0).bytes_in = 206962722.6666667;
  split.per_gpu.at(0).bytes_out = 256816800.00000006;
  const auto k = result_json(split, false);
  EXPECT_EQ(json_text(k.at("gpus").at(0).at("bytes_in")), "206962723");
  EXPECT_EQ(json_text(k.at("gpus").at(0).at("bytes_out")), "256816800");
  EXPECT_EQ(json_text(whole_json(4096.0)), "4096");
  EXPECT_EQ(json_text(whole_json(0.5)), "0.5");
  EXPECT_EQ(json_text(whole_json(1e300)), "1e+300");
}

// The child process's record (core/result.hpp): every event and field back as it was, the
// names shared, and a record cut short or not one an error that says so.
TEST(ResultBytes, RoundTripsEveryEventAndRefusesABadRecord) {
  StrategyResult r = ddp_result();
  r.trace.add(event(1, Stream::kCopy, "copy_in:bucket0", 0.0011, 0.0012, 1ULL << 40, 3, 2));
  r.trace.events.back().peer = 0;
  r.collectives.push_back(
      {"allreduce:bucket0", Collective::kAllreduce, 4096, 2, "ring", "LL", 1e-4, 3e9, 0.006, 0.009, 1, "step"});
  r.traffic["allreduce:bucket0"] = {{4096, 4096}, {4096, 4096}};
  const std::string bytes = result_bytes(r, true);
  const StrategyResult back = result_from_bytes(bytes);
  EXPECT_EQ(json_text(result_json(back, true)), json_text(result_json(r, true)));
  ASSERT_EQ(back.trace.events.size(), r.trace.events.size());
  for (std::size_t i = 0; i < r.trace.events.size(); ++i) {
    const TraceEvent &a = r.trace.events[i], &b = back.trace.events[i];
    EXPECT_EQ(std::tie(a.rank, a.stream, a.name, a.start_s, a.end_s, a.bytes, a.bucket, a.iteration, a.peer),
              std::tie(b.rank, b.stream, b.name, b.start_s, b.end_s, b.bytes, b.bucket, b.iteration, b.peer));
  }
  // Without `full`: the summary only.
  EXPECT_TRUE(result_from_bytes(result_bytes(r, false)).trace.events.empty());
  EXPECT_THROW(result_from_bytes(bytes.substr(0, bytes.size() - 1)), RuntimeError);
  EXPECT_THROW(result_from_bytes("GSR0" + bytes.substr(4)), RuntimeError);
  EXPECT_THROW(result_from_bytes(bytes.substr(0, 20)), RuntimeError);
}

TEST(Outputs, EveryFileWrittenAndNoTemporaryLeft) {
  const auto dir = std::filesystem::temp_directory_path() / "gradsync-writers-test";
  std::filesystem::remove_all(dir);
  const auto written = write_outputs(dir.string(), report());
  std::vector<std::string> names;
  for (const auto& p : written) names.push_back(std::filesystem::path(p).filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"summary.csv", "iterations.csv", "events.csv", "result.json",
                                             "trace-ddp.json", "report.html"}));
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    (void)e;
  }
  EXPECT_EQ(files, 6);
  std::ifstream in(dir / "result.json");
  std::stringstream text;
  text << in.rdbuf();
  const json doc = json::parse(text.str());
  EXPECT_EQ(doc["schema_version"], 2);
  EXPECT_EQ(doc["strategies"][0]["strategy"], "ddp");
  EXPECT_EQ(result_from_json(doc["strategies"][0]).steady_iteration_time_s, 0.010);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gradsync::reports
