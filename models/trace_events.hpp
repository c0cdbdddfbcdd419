// trace_events.hpp: a Chrome trace read event by event (nlohmann's SAX interface), so that a
// trace of hundreds of megabytes is never held whole as a JSON document: each element of the event
// list (the object's "traceEvents", or the legacy exporter's bare list) is built alone and handed
// to the caller, then dropped.
//
//   const TraceShape shape = read_trace_events(text, [&](const json& e, std::size_t i) { ... });
//
// Syntax errors throw nlohmann's json::parse_error (with its byte), a number beyond a double's
// range json::out_of_range, as json::parse would; a key given twice in one object that is read (an
// event, deviceProperties, the top level) TraceDuplicateKey, where json::parse keeps the last.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gradsync {

// TraceShape: what the document is besides its events.
struct TraceShape {
  bool root_object = false;                         // {"traceEvents": [...], ...}; false: a list (or another value)
  bool root_array = false;                          // the legacy exporter's bare list of events
  bool event_list = false;                          // root_object: "traceEvents" is a list
  std::optional<nlohmann::json> device_properties;  // root_object: "deviceProperties", as written
  std::size_t events = 0;                           // elements of the event list, whatever they are
};

// TraceDuplicateKey: an object of the trace names `key` twice (JSON leaves which one counts open).
// `event`: the index of the event in the list holding it; none at the top level or in
// deviceProperties (`where` names which).
struct TraceDuplicateKey : std::runtime_error {
  TraceDuplicateKey(std::string k, std::optional<std::size_t> e, std::string w)
      : std::runtime_error("a key given twice"), key(std::move(k)), event(e), where(std::move(w)) {}
  std::string key;
  std::optional<std::size_t> event;
  std::string where;
};

// read_trace_events: calls on_event(element, index) for each element of the event list, in order.
TraceShape read_trace_events(std::string_view text,
                             const std::function<void(const nlohmann::json&, std::size_t)>& on_event);

}  // namespace gradsync
