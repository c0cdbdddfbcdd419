// chrome_trace.cpp: the Chrome trace event format.
#include "reports/chrome_trace.hpp"
#include "core/json_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

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
  for (const TraceEvent& e : r.trace.events) {
    if (!kept(e.rank)) continue;
    json args = {{"iteration", e.iteration}};
    if (e.bytes > 0) args["bytes"] = e.bytes;
    if (e.bucket >= 0) args["bucket"] = e.bucket;
    if (e.peer >= 0) args["peer"] = e.peer;
    put({{"name", e.name},
         {"cat", std::string(stream_name(e.stream))},
         {"ph", "X"},
         {"ts", e.start_s * 1e6},
         {"dur", e.duration_s() * 1e6},
         {"pid", e.rank},
         {"tid", static_cast<int>(e.stream)},
         {"args", std::move(args)}});
  }
  sink("]}\n");
}

std::string chrome_trace(const StrategyResult& r, const std::string& title) {
  std::string out;
  write_chrome_trace(r, title, {}, [&](std::string_view s) { out += s; });
  return out;
}

}  // namespace gradsync::reports
