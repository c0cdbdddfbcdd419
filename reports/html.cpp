// html.cpp: report.html: the data as JSON, the page's script and style, the chart libraries.
#include "reports/html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <span>

#include "core/embedded_file.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/markup.hpp"
#include "core/version.hpp"

namespace gradsync::detail {
std::span<const EmbeddedFile> html_vendor_files();  // vega, vega-lite, vega-embed (npm)
std::span<const EmbeddedFile> html_page_files();    // reports/html/report.js, report_sweep.js, report.css
}  // namespace gradsync::detail

namespace gradsync::reports {
namespace {

using json = nlohmann::ordered_json;

constexpr int kTimelineRanks = 8;
constexpr std::size_t kTimelineLanesMax = 32;

std::string_view embedded(std::span<const EmbeddedFile> files, std::string_view suffix) {
  for (const EmbeddedFile& f : files) {
    if (f.path.size() >= suffix.size() && f.path.substr(f.path.size() - suffix.size()) == suffix) return f.text;
  }
  throw RuntimeError(fmt::format("report.html: {} was not compiled into gradsync", suffix));
}

// A script's text without its source-map comment (nothing to fetch) and safe inside <script>.
std::string inline_script(std::string_view js) {
  std::string s(js);
  const auto map = s.rfind("//# sourceMappingURL=");
  if (map != std::string::npos) s.erase(map);
  if (s.find("</script") != std::string::npos)
    throw RuntimeError("report.html: an inlined script contains \"</script\"");
  return s;
}

// kind_of: the colour of an event in the timeline.
std::string kind_of(const TraceEvent& e) {
  const std::string& n = e.name;
  if (n.rfind("fwd:", 0) == 0) return "forward";
  if (n.rfind("bwd:", 0) == 0) return "backward";
  if (n == "optimizer") return "optimizer";
  if (n.rfind("allreduce:", 0) == 0) return "allreduce";
  if (e.stream == Stream::kComm) return "collective";
  if (e.stream == Stream::kHost) return n.rfind("call:", 0) == 0 ? "collective call" : "host work";
  if (n.rfind("copy_in:", 0) == 0 || n.rfind("copy_out:", 0) == 0) return "bucket copy";
  if (e.stream == Stream::kCopy) return "copy";
  return "other compute";
}

// timeline: the last iteration's events of `ranks` in columns (rank, lane, name, kind, start_ms,
// end_ms, bytes, bucket: -1 for none), with lanes, names and kinds as indices into lists that hold
// each once, and times to the nanosecond: at 1,024 GPUs one object per event made 3.8 of the
// report's 4.5 MB. report.js turns it back into one object per event.
json timeline(const StrategyResult& r, const std::vector<int>& ranks) {
  json t;
  t["lanes"] = {"compute", "comm", "host"};
  t["names"] = json::array();
  t["kinds"] = json::array();
  for (const char* column : {"rank", "lane", "name", "kind", "start_ms", "end_ms", "bytes", "bucket"})
    t[column] = json::array();
  if (r.iterations.empty()) return t;
  const IterationMetrics& last = r.iterations.back();
  std::map<std::string, int> names, kinds;
  const auto index = [&t](std::map<std::string, int>& seen, const char* list, const std::string& v) {
    const auto [it, added] = seen.try_emplace(v, static_cast<int>(seen.size()));
    if (added) t[list].push_back(v);
    return it->second;
  };
  const auto ms = [](double s) { return std::round(s * 1e9) / 1e6; };  // to the nanosecond
  for (const TraceEvent& e : r.trace.events) {
    const bool host_work =
        e.stream == Stream::kHost && (e.name.rfind("call:", 0) == 0 || e.name.rfind("host:", 0) == 0);
    if (e.iteration != last.iteration || (e.stream == Stream::kHost && !host_work) ||
        !std::binary_search(ranks.begin(), ranks.end(), e.rank))
      continue;
    t["rank"].push_back(e.rank);
    t["lane"].push_back(e.stream == Stream::kCompute ? 0 : e.stream == Stream::kHost ? 2 : 1);
    t["name"].push_back(index(names, "names", e.name));
    t["kind"].push_back(index(kinds, "kinds", kind_of(e)));
    t["start_ms"].push_back(ms(e.start_s - last.start_s));
    t["end_ms"].push_back(ms(e.end_s - last.start_s));
    t["bytes"].push_back(e.bytes);
    t["bucket"].push_back(e.bucket);
  }
  return t;
}

json strategy_data(const StrategyResult& r, int per_node, const TraceOptions& trace) {
  json j;
  j["strategy"] = std::string(strategy_label(r.strategy));
  j["skipped"] = r.skipped;
  if (!r.skipped.empty()) return j;
  j["gpus"] = r.gpus;
  j["replicas"] = r.replicas;
  j["gpu"] = r.gpu;
  j["precision"] = r.precision;
  j["global_batch"] = r.global_batch;
  j["iteration"] = r.iterations.empty() ? 0 : r.iterations.back().iteration;
  j["iteration_1_ms"] = r.iteration_1_time_s * 1e3;
  j["steady_ms"] = r.steady_iteration_time_s * 1e3;
  j["compute_ms"] = r.compute_s * 1e3;
  j["communication_ms"] = r.communication_s * 1e3;
  j["exposed_ms"] = r.exposed_communication_s * 1e3;
  j["other_ms"] = std::max(0.0, r.steady_iteration_time_s - r.compute_s - r.exposed_communication_s) * 1e3;
  j["overlap"] = r.overlap;
  j["samples_per_s"] = r.samples_per_s;
  j["tokens_per_s"] = r.tokens_per_sample > 0 ? json(r.tokens_per_s) : json(nullptr);
  auto& gpus = j["per_gpu"] = json::array();
  for (const GpuResult& g : r.per_gpu) {
    gpus.push_back({{"gpu", g.rank},
                    {"bytes_in", bytes_json(g.bytes_in)},
                    {"bytes_out", bytes_json(g.bytes_out)},
                    {"peak_memory_bytes", bytes_json(g.peak_memory_bytes)},
                    {"capacity_bytes", bytes_json(g.capacity_bytes)},
                    {"oom", g.oom}});
  }
  auto& links = j["links"] = json::array();
  for (const LinkLoad& l : r.links) {
    links.push_back({{"link", l.name},
                     {"utilisation", l.utilisation},
                     {"peak_utilisation", l.peak_utilisation},
                     {"peak_event", l.peak_event},
                     {"bytes", bytes_json(l.bytes)},
                     {"bandwidth_Bps", l.bandwidth_Bps}});
  }
  auto& ex = j["explain"] = json::array();
  for (const ExplainRow& row : explain(r)) {
    ex.push_back({{"phase", row.phase},
                  {"where", row.where},
                  {"gpu0_in", bytes_text(row.gpu0_in)},
                  {"gpu0_out", bytes_text(row.gpu0_out)},
                  {"other_in", bytes_text(row.other_in)},
                  {"other_out", bytes_text(row.other_out)},
                  {"time_ms", row.time_s * 1e3}});
  }
  const std::vector<int> ranks = timeline_ranks(r, per_node, trace);
  j["timeline"] = timeline(r, ranks);
  j["timeline_ranks"] = ranks;
  return j;
}

std::string page(const std::string& title, const json& data) {
  const auto vendor = detail::html_vendor_files();
  const auto own = detail::html_page_files();
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // No request of any kind: everything the page needs is in it (Vega compiles expressions with
  // Function, hence unsafe-eval).
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline' "
      "'unsafe-eval'; style-src 'unsafe-inline'; img-src data:\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<meta name=\"generator\" content=\"gradsync {}\">\n", kVersion);
  out += "<title>" + html_escape(title) + "</title>\n";
  out += "<style>\n" + std::string(embedded(own, "report.css")) + "</style>\n";
  // First script: record every error, console error, refused request and alert, for the
  // browser test (and for anyone who opens the page's console).
  out +=
      "<script>window.gradsyncProblems=[];window.addEventListener('error',function(e){gradsyncProblems.push("
      "'error: '+e.message)});window.addEventListener('unhandledrejection',function(e){gradsyncProblems.push("
      "'unhandled rejection: '+e.reason)});document.addEventListener('securitypolicyviolation',function(e){"
      "gradsyncProblems.push('blocked request: '+e.blockedURI)});(function(){var ce=console.error;console.error="
      "function(){gradsyncProblems.push('console.error: '+Array.prototype.join.call(arguments,' '));ce.apply("
      "console,arguments)}})();window.alert=function(m){gradsyncProblems.push('alert: '+m)};</script>\n";
  for (const char* lib : {"vega.min.js", "vega-lite.min.js", "vega-embed.min.js"}) {
    out += "<script>" + inline_script(embedded(vendor, lib)) + "</script>\n";
  }
  out += "</head>\n<body>\n";
  out += "<header><h1>" + html_escape(title) + "</h1></header>\n<main id=\"report\"></main>\n";
  out += "<pre id=\"gradsync-selftest\" hidden></pre>\n";
  out += "<script type=\"application/json\" id=\"gradsync-data\">" + script_json(data) + "</script>\n";
  // report.js and report_sweep.js are one function's body: its helpers serve both pages.
  out += "<script>(function () {\n'use strict';\n" + inline_script(embedded(own, "report.js")) +
         inline_script(embedded(own, "report_sweep.js")) + "})();</script>\n";
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace

// timeline_ranks: the GPUs whose lanes the timeline draws: every GPU up to kTimelineRanks; past
// that, node 0's (the first kTimelineRanks when nodes differ), the slowest of each phase and those
// asked for (--trace-ranks LIST), then the first GPU of each other node while fewer than
// kTimelineLanesMax GPUs are drawn (the trace file holds the rest).
std::vector<int> timeline_ranks(const StrategyResult& r, int per_node, const TraceOptions& o) {
  std::set<int> kept;
  if (r.gpus <= kTimelineRanks) {  // every GPU, whatever node it is on (two nodes of 2 GPUs: all 4)
    for (int g = 0; g < r.gpus; ++g) kept.insert(g);
    return {kept.begin(), kept.end()};
  }
  const int node0 = per_node > 0 ? per_node : kTimelineRanks;
  for (int g = 0; g < r.gpus && g < node0; ++g) kept.insert(g);
  for (int g : slowest_ranks(r)) kept.insert(g);
  for (int g : o.extra)
    if (g >= 0 && g < r.gpus) kept.insert(g);
  for (int g = node0; per_node > 0 && g < r.gpus && kept.size() < kTimelineLanesMax; g += per_node) kept.insert(g);
  return {kept.begin(), kept.end()};
}

std::string html_escape(std::string_view text) { return markup_escape(text); }

std::string script_json(const json& j) {
  const std::string text = json_text(j);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string html_report(const Report& r) {
  json data;
  data["kind"] = "scenario";
  data["command"] = r.command;
  data["mode"] = r.mode;
  data["header"] = r.header;
  data["scenario"] = r.scenario;
  data["requested"] = r.requested;
  auto& st = data["strategies"] = json::array();
  // A real run's scenario may leave nproc_per_node unresolved (null).
  const auto n = r.scenario.find("nproc_per_node");
  const int per_node = n != r.scenario.end() && n->is_number_integer() ? n->get<int>() : 0;
  for (const StrategyResult& s : r.strategies) st.push_back(strategy_data(s, per_node, r.trace));
  if (!r.confidence.empty()) data["confidence"] = confidence_json(r.confidence);
  if (r.advice) data["advice"] = advice_json(*r.advice);
  if (!r.validation.empty()) data["validation"] = result_document(r)["validation"];
  const std::string title = fmt::format("gradsync {}: {} on {}", r.command, r.scenario.value("model", std::string("?")),
                                        r.scenario.value("topology", std::string("?")));
  return page(title, data);
}

std::string html_sweep_report(const SweepTable& t) {
  json data;
  data["kind"] = "sweep";
  data["header"] = t.header_lines;
  data["varied"] = t.varied;
  data["columns"] = t.columns;
  data["rows"] = t.rows;
  return page(fmt::format("gradsync sweep: {} points", t.rows.size()), data);
}

}  // namespace gradsync::reports
