// chrome_trace.hpp: a strategy's trace in the Chrome trace event format (JSON object form),
// which Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// One process per rank ("GPU <k>"), one thread per stream (compute, comm, copy, host), so
// compute that overlaps communication shows on separate tracks. Each event is a complete event
// ("ph": "X") with "ts" and "dur" in microseconds; "args" carry bytes, bucket, iteration, peer.
//
//   write_file_atomic("trace-ddp.json", chrome_trace(ddp, "gpt2 on dgx-a100, ddp"));
#pragma once

#include <string>

#include "core/result.hpp"

namespace gradsync::reports {

std::string chrome_trace(const StrategyResult& r, const std::string& title);

}  // namespace gradsync::reports
