// html.hpp: report.html, one self-contained page that works offline.
//
// The page inlines Vega, Vega-Lite and Vega-Embed (pinned in reports/html/package-lock.json,
// fetched from npm at build time and compiled into gradsync), the page's own script and style
// (reports/html/report.js, report.css) and the report's data as JSON. A Content-Security-Policy
// forbids every request, so nothing is fetched when it opens. User-given text reaches the page
// only as escaped HTML or as JSON read by the script and shown with textContent.
//
//   write_file_atomic("gradsync-out/report.html", html_report(report));
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "core/trace_ranks.hpp"
#include "reports/csv.hpp"
#include "reports/report.hpp"

namespace gradsync::reports {

// html_report: the page for one scenario (compare, simulate, bench).
std::string html_report(const Report& r);

// timeline_ranks: the GPUs whose lanes the report's timeline draws: every GPU up to 8; past that,
// node 0's (the first 8 when nodes differ), the slowest of each phase and those asked for
// (--trace-ranks LIST), then the first GPU of each other node while fewer than 32 are drawn.
std::vector<int> timeline_ranks(const StrategyResult& r, int per_node, const TraceOptions& o);

// SweepTable: a sweep's definition and its summary.csv rows, for html_sweep_report.
struct SweepTable {
  std::vector<std::string> header_lines;  // what the sweep varied, over which base scenario
  std::vector<std::string> varied;        // the scenario keys varied, in --vary order
  CsvRow columns;
  std::vector<CsvRow> rows;
};

// html_sweep_report: the page for a sweep: throughput and scaling efficiency against GPU count,
// step time against bucket size, step time per point, and the table of every point.
std::string html_sweep_report(const SweepTable& t);

// html_escape: & < > " ' as character references.
std::string html_escape(std::string_view text);

// script_json: JSON that is safe inside a <script> element (<, >, & and U+2028/9 escaped).
std::string script_json(const nlohmann::ordered_json& j);

}  // namespace gradsync::reports
