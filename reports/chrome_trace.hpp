// chrome_trace.hpp: a strategy's trace in the Chrome trace event format (JSON object form),
// which Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// One process per rank ("GPU <k>"), one thread per stream (compute, comm, copy, host), so
// compute that overlaps communication shows on separate tracks. Each event is a complete event
// ("ph": "X") with "ts" and "dur" in microseconds; "args" carry bytes, bucket, iteration, peer.
//
//   write_file_atomic("trace-ddp.json", chrome_trace(ddp, "gpt2 on dgx-a100, ddp"));
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gradsync::reports {

// TextSink: where a streamed writer puts its text, piece by piece (AtomicFileWriter::write).
using TextSink = std::function<void(std::string_view)>;

// write_chrome_trace streams the trace of `ranks` (sorted; empty: every rank) into `sink`, one
// event at a time; chrome_trace is the same for every rank, as one string.
void write_chrome_trace(const StrategyResult& r, const std::string& title, const std::vector<int>& ranks,
                        const TextSink& sink);
std::string chrome_trace(const StrategyResult& r, const std::string& title);

}  // namespace gradsync::reports
