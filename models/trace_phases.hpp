// trace_phases.hpp: one profiler step of a torch.profiler trace split into the host spans of its
// forward, backward and optimizer (trace_import.cpp reads the trace; trace_phases.cpp holds the
// rules and the errors for steps that cannot be split so).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gradsync::trace {

// Event: one complete ("ph": "X") event, times in microseconds as the trace writes them.
struct Event {
  std::string name;
  std::string cat;
  double start = 0;
  double end = 0;
  std::optional<std::int64_t> correlation;  // args.correlation: a kernel and its launch share it
  std::string device;                       // GPU events: the device (args.device, else pid)
};

inline bool starts_with(std::string_view s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

using Span = std::pair<double, double>;

// Phases: the host spans of one step's forward, backward and optimizer.
struct Phases {
  Span forward;
  Span backward;
  std::vector<Span> optimizer;
};

// phases_of: `host` holds the step's host events (those starting within it, by start time).
Phases phases_of(std::span<const Event> host, const Event& step, const std::string& origin);

}  // namespace gradsync::trace
