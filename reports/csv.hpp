// csv.hpp: summary.csv, iterations.csv and events.csv (columns in reports/README.md), and the
// RFC 4180 quoting and parsing they use. Numbers are written in their shortest exact form, so
// the same result gives the same bytes and reading a cell back gives the same double.
//
//   std::string text = csv_line(summary_header());
//   text += csv_line(summary_row(0, "simulated", scenario, ddp));
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gradsync::reports {

using CsvRow = std::vector<std::string>;

// csv_line: the cells joined by commas, each quoted when it holds a comma, quote or newline,
// ending in "\n".
std::string csv_line(const CsvRow& cells);

// parse_csv: the rows of a CSV text (quoted cells, "" for a quote inside one). ConfigError naming
// `path` and the line for an unterminated quote.
std::vector<CsvRow> parse_csv(std::string_view text, const std::string& path);

// number: shortest text that reads back as the same double ("0.1", "1e-07", "12").
std::string number(double v);

// ColumnType: what a column's cells hold. A reader types a whole column alike, so an integer
// column stays integer where a cell is empty (not applicable, or a strategy that did not run).
// kBooleanOrText: true and false as booleans, other words (a choice's "auto") as text.
enum class ColumnType { kInteger, kNumber, kText, kBoolean, kBooleanOrText };

// CsvColumn: a column of summary.csv, its name and type.
struct CsvColumn {
  std::string name;
  ColumnType type = ColumnType::kText;
};

// summary.csv: one row per (scenario, strategy). The columns are "point", the scenario keys in
// the table's order (core/scenario_keys.hpp; their resolved values), then the results.
// scaling_efficiency_frac is filled by fill_scaling_efficiency once every row is known.
const std::vector<CsvColumn>& summary_columns();
CsvRow summary_header();
// summary_row: `scenario` is the resolved scenario as scenario_json writes it.
CsvRow summary_row(int point, const std::string& mode, const nlohmann::ordered_json& scenario, const StrategyResult& r);
// kSummaryKeyColumns: the leading cells that identify a row: point, the scenario keys, mode and
// strategy.
std::size_t summary_key_columns();

// typed_cell: a cell as JSON, by its column's type: null when empty.
nlohmann::ordered_json typed_cell(const CsvColumn& c, const std::string& cell);

// fill_scaling_efficiency once every row is known.
CsvRow summary_header(const nlohmann::ordered_json& scenario);
CsvRow summary_row(int point, const std::string& mode, const nlohmann::ordered_json& scenario, const StrategyResult& r);

// fill_scaling_efficiency sets each row's scaling_efficiency_frac: its samples/s per GPU over that
// of the row with the fewest GPUs among rows equal in every other scenario key and the strategy;
// empty where that group has a single GPU count or the row did not run.
void fill_scaling_efficiency(const CsvRow& header, std::vector<CsvRow>& rows);

// iterations.csv and events.csv: a header and one row per iteration / trace event of each
// strategy.
std::string iterations_csv(const std::vector<StrategyResult>& rs);
std::string events_csv(const std::vector<StrategyResult>& rs);
// write_events_csv streams the same for ranks[i] of rs[i] (sorted; empty: every rank), a row at a
// time, into `sink`.
void write_events_csv(const std::vector<StrategyResult>& rs, const std::vector<std::vector<int>>& ranks,
                      const std::function<void(std::string_view)>& sink);

}  // namespace gradsync::reports
