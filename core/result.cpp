// result.cpp: the result record to and from JSON.
#include "core/result.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/json_text.hpp"

namespace gradsync {

using json = nlohmann::ordered_json;

json result_json(const StrategyResult& r, bool full, bool events) {
  json j;
  j["strategy"] = std::string(strategy_label(r.strategy));
  if (!r.skipped.empty()) j["skipped"] = r.skipped;
  j["gpus_used"] = r.gpus;
  j["replicas"] = r.replicas;
  j["global_batch"] = r.global_batch;
  // A model without a sequence (images) has no tokens: null, as its tokens_per_s.
  j["tokens_per_sample"] = r.tokens_per_sample > 0 ? json(r.tokens_per_sample) : json(nullptr);
  j["precision"] = r.precision;
  j["gpu"] = r.gpu;
  j["warmup"] = r.warmup;
  // A strategy not simulated (skipped) has no times: null, not a step of 0 s.
  const auto timed = [&](double v) { return r.skipped.empty() ? json(v) : json(nullptr); };
  j["iteration_1_time_s"] = timed(r.iteration_1_time_s);
  j["steady_iteration_time_s"] = timed(r.steady_iteration_time_s);
  j["compute_s"] = timed(r.compute_s);
  j["communication_s"] = timed(r.communication_s);
  j["exposed_communication_s"] = timed(r.exposed_communication_s);
  j["overlap"] = timed(r.overlap);
  j["samples_per_s"] = timed(r.samples_per_s);
  j["tokens_per_s"] = r.tokens_per_sample > 0 ? timed(r.tokens_per_s) : json(nullptr);
  auto& gpus = j["gpus"] = json::array();
  for (const GpuResult& g : r.per_gpu) {
    gpus.push_back({{"rank", g.rank},
                    {"bytes_in", bytes_json(g.bytes_in)},
                    {"bytes_out", bytes_json(g.bytes_out)},
                    {"peak_memory_bytes", bytes_json(g.peak_memory_bytes)},
                    {"capacity_bytes", bytes_json(g.capacity_bytes)},
                    {"oom", g.oom}});
  }
  auto& links = j["links"] = json::array();
  for (const LinkLoad& l : r.links) {
    links.push_back({{"name", l.name},
                     {"bandwidth_Bps", l.bandwidth_Bps},
                     {"bytes", bytes_json(l.bytes)},
                     {"utilisation", l.utilisation},
                     {"peak_utilisation", l.peak_utilisation},
                     {"peak_event", l.peak_event}});
  }
  if (!r.fidelity.mode.empty()) {
    j["fidelity"] = {{"mode", r.fidelity.mode},
                     {"aggregate_calls", r.fidelity.aggregate_calls},
                     {"calls", r.fidelity.calls},
                     {"bound", r.fidelity.bound},
                     {"simulated_ranks", r.fidelity.simulated_ranks}};
  }
  if (!r.transports.empty()) j["transports"] = r.transports;
  if (r.shm_duplex_Bps > 0) j["shm_duplex_GBps"] = r.shm_duplex_Bps / 1e9;
  auto& its = j["iterations"] = json::array();
  for (const IterationMetrics& m : r.iterations) {
    its.push_back({{"iteration", m.iteration},
                   {"start_s", m.start_s},
                   {"end_s", m.end_s},
                   {"time_s", m.time_s},
                   {"compute_s", m.compute_s},
                   {"communication_s", m.communication_s},
                   {"overlap_s", m.overlap_s},
                   {"exposed_communication_s", m.exposed_communication_s},
                   {"overlap", m.overlap}});
  }
  if (!full) return j;
  auto& cols = j["collectives"] = json::array();
  for (const CollectiveCall& c : r.collectives) {
    cols.push_back({{"name", c.name},
                    {"collective", collective_name(c.collective)},
                    {"bytes", c.bytes},
                    {"members", c.members},
                    {"algorithm", c.algorithm},
                    {"protocol", c.protocol},
                    {"predicted_s", c.predicted_s},
                    {"bus_bw_Bps", c.bus_bw_Bps},
                    {"start_s", c.start_s},
                    {"end_s", c.end_s},
                    {"iteration", c.iteration},
                    {"fidelity", c.fidelity}});
  }
  auto& traffic = j["traffic"] = json::object();
  for (const auto& [name, t] : r.traffic) traffic[name] = {{"out", t.out}, {"in", t.in}};
  if (!events) return j;
  auto& list = j["events"] = json::array();
  for (const TraceEvent& e : r.trace.events) {
    list.push_back(json::array(
        {e.rank, static_cast<int>(e.stream), e.name, e.start_s, e.end_s, e.bytes, e.bucket, e.iteration, e.peer}));
  }
  return j;
}

namespace {

StrategyResult read_result(const json& j) {
  StrategyResult r;
  r.strategy = j.at("strategy") == "dp" ? Strategy::kDP : Strategy::kDDP;
  if (j.contains("skipped")) r.skipped = j.at("skipped").get<std::string>();
  r.gpus = j.at("gpus_used").get<int>();
  r.replicas = j.at("replicas").get<int>();
  r.global_batch = j.at("global_batch").get<std::int64_t>();
  r.tokens_per_sample = j.at("tokens_per_sample").is_null() ? 0 : j.at("tokens_per_sample").get<std::int64_t>();
  r.precision = j.at("precision").get<std::string>();
  r.gpu = j.at("gpu").get<std::string>();
  r.warmup = j.at("warmup").get<int>();
  // null: a skipped strategy's times (result_json).
  const auto timed = [&](const char* key) { return j.at(key).is_null() ? 0.0 : j.at(key).get<double>(); };
  r.iteration_1_time_s = timed("iteration_1_time_s");
  r.steady_iteration_time_s = timed("steady_iteration_time_s");
  r.compute_s = timed("compute_s");
  r.communication_s = timed("communication_s");
  r.exposed_communication_s = timed("exposed_communication_s");
  r.overlap = timed("overlap");
  r.samples_per_s = timed("samples_per_s");
  r.tokens_per_s = timed("tokens_per_s");
  for (const auto& g : j.at("gpus")) {
    r.per_gpu.push_back({g.at("rank").get<int>(), g.at("bytes_in").get<double>(), g.at("bytes_out").get<double>(),
                         g.at("peak_memory_bytes").get<double>(), g.at("capacity_bytes").get<double>(),
                         g.at("oom").get<bool>()});
  }
  for (const auto& l : j.at("links")) {
    r.links.push_back({l.at("name").get<std::string>(), l.at("bandwidth_Bps").get<double>(),
                       l.at("bytes").get<double>(), l.at("utilisation").get<double>(),
                       l.at("peak_utilisation").get<double>(), l.at("peak_event").get<std::string>()});
  }
  if (j.contains("fidelity")) {
    const auto& f = j.at("fidelity");
    r.fidelity.mode = f.at("mode").get<std::string>();
    r.fidelity.aggregate_calls = f.at("aggregate_calls").get<int>();
    r.fidelity.calls = f.at("calls").get<int>();
    r.fidelity.bound = f.at("bound").get<double>();
    r.fidelity.simulated_ranks = f.at("simulated_ranks").get<int>();
  }
  if (j.contains("transports")) r.transports = j.at("transports").get<std::string>();
  if (j.contains("shm_duplex_GBps")) r.shm_duplex_Bps = j.at("shm_duplex_GBps").get<double>() * 1e9;
  for (const auto& m : j.at("iterations")) {
    IterationMetrics im;
    im.iteration = m.at("iteration").get<int>();
    im.start_s = m.at("start_s").get<double>();
    im.end_s = m.at("end_s").get<double>();
    im.time_s = m.at("time_s").get<double>();
    im.compute_s = m.at("compute_s").get<double>();
    im.communication_s = m.at("communication_s").get<double>();
    im.overlap_s = m.at("overlap_s").get<double>();
    im.exposed_communication_s = m.at("exposed_communication_s").get<double>();
    im.overlap = m.at("overlap").get<double>();
    r.iterations.push_back(im);
  }
  if (!j.contains("collectives")) return r;
  for (const auto& c : j.at("collectives")) {
    CollectiveCall cr;
    cr.name = c.at("name").get<std::string>();
    const std::string coll = c.at("collective").get<std::string>();
    const auto parsed = parse_collective(coll);
    if (!parsed) throw RuntimeError(fmt::format("result: unknown collective \"{}\"", coll));
    cr.collective = *parsed;
    cr.bytes = c.at("bytes").get<Bytes>();
    cr.members = c.at("members").get<int>();
    cr.algorithm = c.at("algorithm").get<std::string>();
    cr.protocol = c.at("protocol").get<std::string>();
    cr.predicted_s = c.at("predicted_s").get<double>();
    cr.bus_bw_Bps = c.at("bus_bw_Bps").get<double>();
    cr.start_s = c.at("start_s").get<double>();
    cr.end_s = c.at("end_s").get<double>();
    cr.iteration = c.at("iteration").get<int>();
    if (c.contains("fidelity")) cr.fidelity = c.at("fidelity").get<std::string>();
    r.collectives.push_back(cr);
  }
  for (const auto& [name, t] : j.at("traffic").items()) {
    r.traffic[name] = {t.at("out").get<std::vector<double>>(), t.at("in").get<std::vector<double>>()};
  }
  if (!j.contains("events")) return r;
  for (const auto& e : j.at("events")) {
    TraceEvent ev;
    ev.rank = e.at(0).get<int>();
    ev.stream = static_cast<Stream>(e.at(1).get<int>());
    ev.name = e.at(2).get<std::string>();
    ev.start_s = e.at(3).get<double>();
    ev.end_s = e.at(4).get<double>();
    ev.bytes = e.at(5).get<Bytes>();
    ev.bucket = e.at(6).get<int>();
    ev.iteration = e.at(7).get<int>();
    ev.peer = e.at(8).get<int>();
    r.trace.add(ev);
  }
  return r;
}

}  // namespace

StrategyResult result_from_json(const json& j) {
  try {
    return read_result(j);
  } catch (const json::exception& e) {
    throw RuntimeError(fmt::format("result: not a gradsync result record: {}", e.what()));
  }
}

namespace {

double steady_mean(const std::vector<IterationMetrics>& its, std::size_t from, double IterationMetrics::*f) {
  double sum = 0;
  for (std::size_t i = from; i < its.size(); ++i) sum += its[i].*f;
  return its.size() > from ? sum / static_cast<double>(its.size() - from) : 0.0;
}

}  // namespace

void summarize(StrategyResult& out, int warmup) {
  if (out.strategy == Strategy::kDP) {
    Trace process = out.trace;
    for (TraceEvent& e : process.events) e.rank = 0;  // every GPU's iteration events are equal
    out.iterations = iteration_metrics(process, 0);
  } else {
    out.iterations = iteration_metrics(out.trace, 0);
  }
  if (out.iterations.empty()) throw RuntimeError("the run recorded no iteration");
  const auto from = static_cast<std::size_t>(warmup);
  out.warmup = warmup;
  out.iteration_1_time_s = out.iterations.front().time_s;
  out.steady_iteration_time_s = steady_mean(out.iterations, from, &IterationMetrics::time_s);
  out.compute_s = steady_mean(out.iterations, from, &IterationMetrics::compute_s);
  out.communication_s = steady_mean(out.iterations, from, &IterationMetrics::communication_s);
  out.exposed_communication_s = steady_mean(out.iterations, from, &IterationMetrics::exposed_communication_s);
  out.overlap = out.communication_s > 0
                    ? steady_mean(out.iterations, from, &IterationMetrics::overlap_s) / out.communication_s
                    : 0.0;
  out.samples_per_s = static_cast<double>(out.global_batch) / out.steady_iteration_time_s;
  out.tokens_per_s = out.samples_per_s * static_cast<double>(out.tokens_per_sample);
}

}  // namespace gradsync
