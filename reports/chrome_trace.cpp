// chrome_trace.cpp: the Chrome trace event format.
#include "reports/chrome_trace.hpp"
#include "core/json_text.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>
#include <set>
#include <string_view>
#include <unordered_map>

namespace gradsync::reports {

using json = nlohmann::ordered_json;

void write_chrome_trace(const StrategyResult& r, const std::string& title, const std::vector<int>& only,
                        const TextSink& sink) {
  auto kept = [&](int rank) { return only.empty() || std::binary_search(only.begin(), only.end(), rank); };
  // The document as json_text writes it whole ({"displayTimeUnit":...,"otherData":...,
  // "traceEvents":[...]}), one event at a time.
  json head;
  head["displayTimeUnit"] = "ms";
  head["otherData"] = {{"title", title}, {"strategy", std::string(strategy_label(r.strategy))}};
  std::string text = json_text(head);
  text.pop_back();  // the closing brace: the events follow
  sink(text + ",\"traceEvents\":[");
  bool first = true;
  auto put = [&](const json& ev) {
    if (!first) sink(",");
    sink(json_text(ev));
    first = false;
  };
  std::set<int> ranks;
  for (const TraceEvent& e : r.trace.events)
    if (kept(e.rank)) ranks.insert(e.rank);
  constexpr Stream kStreams[] = {Stream::kCompute, Stream::kComm, Stream::kCopy, Stream::kHost};
  for (int rank : ranks) {
    put({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", fmt::format("GPU {}", rank)}}}});
    put({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank}, {"args", {{"sort_index", rank}}}});
    for (Stream s : kStreams) {
      const int tid = static_cast<int>(s);
      put({{"name", "thread_name"},
           {"ph", "M"},
           {"pid", rank},
           {"tid", tid},
           {"args", {{"name", std::string(stream_name(s))}}}});
      put({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", rank}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
    }
  }
  // Events are written as text directly (json_text of an object per event cost more than the
  // simulation at 1,024 GPUs); names, which come from model files, are escaped once each.
  std::unordered_map<std::string_view, std::string> quoted;
  std::string line;
  for (const TraceEvent& e : r.trace.events) {
    if (!kept(e.rank)) continue;
    auto q = quoted.find(e.name);
    if (q == quoted.end()) q = quoted.emplace(e.name, json_text(json(e.name))).first;
    line.clear();
    if (!first) line += ',';
    first = false;
    fmt::format_to(std::back_inserter(line),
                   FMT_COMPILE(R"({{"name":{},"cat":"{}","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{{"iteration":{})"),
                   q->second, stream_name(e.stream), e.start_s * 1e6, e.duration_s() * 1e6, e.rank,
                   static_cast<int>(e.stream), e.iteration);
    if (e.bytes > 0) fmt::format_to(std::back_inserter(line), FMT_COMPILE(R"(,"bytes":{})"), e.bytes);
    if (e.bucket >= 0) fmt::format_to(std::back_inserter(line), FMT_COMPILE(R"(,"bucket":{})"), e.bucket);
    if (e.peer >= 0) fmt::format_to(std::back_inserter(line), FMT_COMPILE(R"(,"peer":{})"), e.peer);
    line += "}}";
    sink(line);
  }
  sink("]}\n");
}

std::string chrome_trace(const StrategyResult& r, const std::string& title) {
  std::string out;
  write_chrome_trace(r, title, {}, [&](std::string_view s) { out += s; });
  return out;
}

}  // namespace gradsync::reports
