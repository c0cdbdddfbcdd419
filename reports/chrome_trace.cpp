// chrome_trace.cpp: the Chrome trace event format.
#include "reports/chrome_trace.hpp"
#include "core/json_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>

namespace gradsync::reports {

using json = nlohmann::ordered_json;

std::string chrome_trace(const StrategyResult& r, const std::string& title) {
  json events = json::array();
  std::set<int> ranks;
  for (const TraceEvent& e : r.trace.events) ranks.insert(e.rank);
  constexpr Stream kStreams[] = {Stream::kCompute, Stream::kComm, Stream::kCopy, Stream::kHost};
  for (int rank : ranks) {
    events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", fmt::format("GPU {}", rank)}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank}, {"args", {{"sort_index", rank}}}});
    for (Stream s : kStreams) {
      const int tid = static_cast<int>(s);
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", rank},
                        {"tid", tid},
                        {"args", {{"name", std::string(stream_name(s))}}}});
      events.push_back(
          {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", rank}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
    }
  }
  for (const TraceEvent& e : r.trace.events) {
    json args = {{"iteration", e.iteration}};
    if (e.bytes > 0) args["bytes"] = e.bytes;
    if (e.bucket >= 0) args["bucket"] = e.bucket;
    if (e.peer >= 0) args["peer"] = e.peer;
    events.push_back({{"name", e.name},
                      {"cat", std::string(stream_name(e.stream))},
                      {"ph", "X"},
                      {"ts", e.start_s * 1e6},
                      {"dur", e.duration_s() * 1e6},
                      {"pid", e.rank},
                      {"tid", static_cast<int>(e.stream)},
                      {"args", std::move(args)}});
  }
  json doc;
  doc["displayTimeUnit"] = "ms";
  doc["otherData"] = {{"title", title}, {"strategy", std::string(strategy_label(r.strategy))}};
  doc["traceEvents"] = std::move(events);
  return json_text(doc) + "\n";
}

}  // namespace gradsync::reports
