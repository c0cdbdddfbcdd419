// csv.cpp: the CSV files and RFC 4180 quoting.
#include "reports/csv.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string_view>

#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/scenario_keys.hpp"

namespace gradsync::reports {

using json = nlohmann::ordered_json;

namespace {

using T = ColumnType;

// The result columns after the scenario keys (README.md of reports/ says what each holds).
const std::vector<CsvColumn> kResultColumns = {{"mode", T::kText},
                                               {"strategy", T::kText},
                                               {"status", T::kText},
                                               {"skipped_reason", T::kText},
                                               {"error", T::kText},
                                               {"replicas", T::kInteger},
                                               {"gpu", T::kText},
                                               {"run_precision", T::kText},
                                               {"tokens_per_sample", T::kInteger},
                                               {"iteration_1_time_s", T::kNumber},
                                               {"steady_iteration_time_s", T::kNumber},
                                               {"compute_s", T::kNumber},
                                               {"communication_s", T::kNumber},
                                               {"exposed_communication_s", T::kNumber},
                                               {"overlap_frac", T::kNumber},
                                               {"samples_per_s", T::kNumber},
                                               {"tokens_per_s", T::kNumber},
                                               {"gpu0_bytes_in", T::kInteger},
                                               {"gpu0_bytes_out", T::kInteger},
                                               {"max_bytes_in", T::kInteger},
                                               {"max_bytes_out", T::kInteger},
                                               {"peak_memory_bytes", T::kInteger},
                                               {"capacity_bytes", T::kInteger},
                                               {"oom", T::kBoolean},
                                               {"busiest_link", T::kText},
                                               {"busiest_link_utilisation_frac", T::kNumber},
                                               {"scaling_efficiency_frac", T::kNumber}};

// type_of: a key's column as result.json types its value (core/scenario.cpp scenario_json): a
// choice of auto|true|false a boolean once resolved (auto while not), a decimal key a number.
ColumnType type_of(const ScenarioKey& k) {
  if (k.decimal) return T::kNumber;
  switch (k.kind) {
    case KeyKind::kCount:
      return T::kInteger;
    case KeyKind::kSizeMiB:
      return T::kNumber;
    case KeyKind::kSwitch:
      return T::kBoolean;
    case KeyKind::kChoice:
      return std::find(k.choices.begin(), k.choices.end(), "auto") != k.choices.end() &&
                     std::find(k.choices.begin(), k.choices.end(), "true") != k.choices.end()
                 ? T::kBooleanOrText
                 : T::kText;
    default:
      return T::kText;
  }
}

}  // namespace

const std::vector<CsvColumn>& summary_columns() {
  static const std::vector<CsvColumn> columns = [] {
    std::vector<CsvColumn> c{{"point", T::kInteger}};
    for (const ScenarioKey& k : scenario_table()) c.push_back({std::string(k.name), type_of(k)});
    c.insert(c.end(), kResultColumns.begin(), kResultColumns.end());
    return c;
  }();
  return columns;
}

CsvRow summary_header() {
  CsvRow h;
  for (const CsvColumn& c : summary_columns()) h.push_back(c.name);
  return h;
}

std::size_t summary_key_columns() { return 1 + scenario_table().size() + 2; }

namespace {

// append_cell: one cell as csv_line writes it, quoted (quotes doubled) when it holds a comma, a
// quote or a line break. One pass over the cell (find_first_of calls memchr on the set for every
// character: 4% of a 1,024-GPU run's time went there, writing events.csv).
void append_cell(std::string& out, std::string_view c) {
  const bool plain =
      std::none_of(c.begin(), c.end(), [](char ch) { return ch == ',' || ch == '"' || ch == '\n' || ch == '\r'; });
  if (plain) {
    out += c;
    return;
  }
  out += '"';
  for (char ch : c) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
}

}  // namespace

std::string csv_line(const CsvRow& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) out += ',';
    append_cell(out, cells[i]);
  }
  out += '\n';
  return out;
}

std::vector<CsvRow> parse_csv(std::string_view text, const std::string& path) {
  std::vector<CsvRow> rows;
  CsvRow row;
  std::string cell;
  bool quoted = false, any = false;
  int line = 1, quote_line = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      quote_line = line;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
      any = true;
    } else if (c == '\n') {
      row.push_back(std::move(cell));
      cell.clear();
      rows.push_back(std::move(row));
      row.clear();
      any = false;
      ++line;
    } else if (c != '\r') {
      cell += c;
      any = true;
    }
  }
  if (quoted) throw ConfigError(fmt::format("{}:{}: a quoted cell is never closed", path, quote_line));
  if (any) {
    row.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string number(double v) { return fmt::format("{}", v); }

namespace {

std::string cell_of(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return fmt::format("{}", v.get<std::int64_t>());
  if (v.is_number()) return number(v.get<double>());
  return json_text(v);
}

int column(const CsvRow& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) throw RuntimeError(fmt::format("summary.csv: no column \"{}\"", name));
  return static_cast<int>(it - header.begin());
}

}  // namespace

CsvRow summary_row(int point, const std::string& mode, const json& scenario, const StrategyResult& r) {
  CsvRow row{fmt::format("{}", point)};
  for (const ScenarioKey& k : scenario_table()) {
    const auto v = scenario.find(std::string(k.name));
    if (v == scenario.end()) throw std::logic_error(fmt::format("summary_row: the scenario has no key {}", k.name));
    row.push_back(cell_of(*v));
  }
  const bool ran = r.skipped.empty() && r.failed.empty();
  double max_in = 0, max_out = 0, peak = 0, capacity = 0;
  bool oom = false;
  for (const GpuResult& g : r.per_gpu) {
    max_in = std::max(max_in, g.bytes_in);
    max_out = std::max(max_out, g.bytes_out);
    if (g.peak_memory_bytes >= peak) {
      peak = g.peak_memory_bytes;
      capacity = g.capacity_bytes;
    }
    oom = oom || g.oom;
  }
  auto num = [&](double v) { return ran ? number(v) : std::string(); };
  // Bytes per steady step are means over the steady iterations: written as whole bytes.
  auto bytes = [&](double v) { return ran ? fmt::format("{:.0f}", std::round(v)) : std::string(); };
  const GpuResult g0 = r.per_gpu.empty() ? GpuResult{} : r.per_gpu.front();
  const LinkLoad busiest = r.links.empty() ? LinkLoad{} : r.links.front();
  const CsvRow rest{
      mode, std::string(strategy_label(r.strategy)),
      !r.failed.empty() ? "failed"
      : ran             ? (oom ? "oom" : "ok")
                        : "skipped",
      r.skipped, r.failed,
      // A point that failed or was skipped ran no replica: counts it never had are left
      // blank, not written as 0 (or tokens_per_sample's default 1) for a spreadsheet to
      // average.
      // The global batch is the scenario key's column (global_batch, resolved): a second column of
      // the same name here (until 2026-12-02) made the header hold it twice.
      r.replicas > 0 ? fmt::format("{}", r.replicas) : std::string(), r.gpu, r.precision,
      r.failed.empty() && r.tokens_per_sample > 0 ? fmt::format("{}", r.tokens_per_sample) : std::string(),
      num(r.iteration_1_time_s), num(r.steady_iteration_time_s), num(r.compute_s), num(r.communication_s),
      num(r.exposed_communication_s), num(r.overlap), num(r.samples_per_s),
      r.tokens_per_sample > 0 ? num(r.tokens_per_s) : std::string(), bytes(g0.bytes_in), bytes(g0.bytes_out),
      bytes(max_in), bytes(max_out), bytes(peak), bytes(capacity), ran ? (oom ? "true" : "false") : "", busiest.name,
      busiest.name.empty() ? "" : number(busiest.utilisation), ""};
  row.insert(row.end(), rest.begin(), rest.end());
  return row;
}

json typed_cell(const CsvColumn& c, const std::string& cell) {
  if (cell.empty()) return nullptr;
  switch (c.type) {
    case T::kText:
      return cell;
    case T::kBoolean:
      if (cell == "true" || cell == "false") return cell == "true";
      break;
    case T::kBooleanOrText:
      if (cell == "true" || cell == "false") return cell == "true";
      return cell;
    case T::kInteger: {
      std::int64_t v = 0;
      const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      if (ec == std::errc() && end == cell.data() + cell.size()) return v;
      break;
    }
    case T::kNumber: {
      // Only what number() writes: a finite number (nan, inf and 1e999 are never results).
      double v = 0;
      const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      if (ec == std::errc() && end == cell.data() + cell.size() && std::isfinite(v)) return v;
      break;
    }
  }
  throw ConfigError(fmt::format("column {}: \"{}\" is not a{} value", c.name, cell,
                                c.type == T::kInteger  ? "n integer"
                                : c.type == T::kNumber ? " finite number"
                                                       : " boolean"));
}

void fill_scaling_efficiency(const CsvRow& header, std::vector<CsvRow>& rows) {
  const int gpus = column(header, "gpus");
  const int samples = column(header, "samples_per_s");
  const int status = column(header, "status");
  const int eff = column(header, "scaling_efficiency_frac");
  const int first_result = column(header, "mode");
  // nnodes and nproc_per_node follow gpus when resolved (torchrun's layout of the same world).
  const int nnodes = column(header, "nnodes");
  const int nproc = column(header, "nproc_per_node");
  // The batch follows gpus one way or the other: at a fixed batch_per_gpu the global batch grows
  // with the GPUs (weak scaling), at a fixed global_batch each GPU's shrinks (strong scaling).
  // Points are grouped first at a fixed batch_per_gpu, then, those left, at a fixed global batch.
  const int per_gpu = column(header, "batch_per_gpu");
  const int global = column(header, "global_batch");
  for (CsvRow& row : rows) row[static_cast<std::size_t>(eff)].clear();
  auto at = [](const CsvRow* row, int c) { return std::stod((*row)[static_cast<std::size_t>(c)]); };
  for (const int follows : {global, per_gpu}) {
    // Group key: every scenario cell but gpus, its layout, the batch that follows them (and the
    // point index), plus the strategy.
    auto key_of = [&](const CsvRow& row) {
      CsvRow k;
      for (int c = 1; c < first_result; ++c)
        if (c != gpus && c != nnodes && c != nproc && c != follows) k.push_back(row[static_cast<std::size_t>(c)]);
      k.push_back(row[static_cast<std::size_t>(column(header, "strategy"))]);
      return k;
    };
    std::map<CsvRow, std::vector<CsvRow*>> groups;
    for (CsvRow& row : rows) {
      const std::string& st = row[static_cast<std::size_t>(status)];
      if (st == "skipped" || st == "failed" || !row[static_cast<std::size_t>(eff)].empty()) continue;
      groups[key_of(row)].push_back(&row);
    }
    for (auto& [key, members] : groups) {
      const CsvRow* base = members.front();
      bool several = false;
      for (const CsvRow* m : members) {
        if (at(m, gpus) != at(base, gpus)) several = true;
        if (at(m, gpus) < at(base, gpus)) base = m;
      }
      if (!several) continue;
      const double base_per_gpu = at(base, samples) / at(base, gpus);
      for (CsvRow* m : members) {
        (*m)[static_cast<std::size_t>(eff)] = number(at(m, samples) / at(m, gpus) / base_per_gpu);
      }
    }
  }
}

std::string iterations_csv(const std::vector<StrategyResult>& rs) {
  std::string out = csv_line({"strategy", "iteration", "steady", "start_s", "end_s", "time_s", "compute_s",
                              "communication_s", "overlap_s", "exposed_communication_s", "overlap_frac"});
  for (const StrategyResult& r : rs) {
    for (const IterationMetrics& m : r.iterations) {
      out += csv_line({std::string(strategy_label(r.strategy)), fmt::format("{}", m.iteration),
                       m.iteration > r.warmup ? "true" : "false", number(m.start_s), number(m.end_s), number(m.time_s),
                       number(m.compute_s), number(m.communication_s), number(m.overlap_s),
                       number(m.exposed_communication_s), number(m.overlap)});
    }
  }
  return out;
}

std::string events_csv(const std::vector<StrategyResult>& rs) {
  std::string out;
  write_events_csv(rs, std::vector<std::vector<int>>(rs.size()), [&](std::string_view s) { out += s; });
  return out;
}

void write_events_csv(const std::vector<StrategyResult>& rs, const std::vector<std::vector<int>>& ranks,
                      const std::function<void(std::string_view)>& sink) {
  sink(csv_line({"strategy", "rank", "stream", "name", "iteration", "bucket", "peer", "start_s", "end_s", "duration_s",
                 "bytes"}));
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const StrategyResult& r = rs[i];
    const std::vector<int>& only = ranks.at(i);
    // Each row written in place (the cells csv_line would write: numbers as number() and
    // fmt::format("{}") give them, text quoted by append_cell), in one reused line.
    std::string label;
    append_cell(label, strategy_label(r.strategy));
    std::string line;
    for (const TraceEvent& e : r.trace.events) {
      if (!only.empty() && !std::binary_search(only.begin(), only.end(), e.rank)) continue;
      line = label;
      fmt::format_to(std::back_inserter(line), FMT_COMPILE(",{},"), e.rank);
      append_cell(line, stream_name(e.stream));
      line += ',';
      append_cell(line, e.name);
      fmt::format_to(std::back_inserter(line), FMT_COMPILE(",{},"), e.iteration);
      if (e.bucket >= 0) fmt::format_to(std::back_inserter(line), FMT_COMPILE("{}"), e.bucket);
      line += ',';
      if (e.peer >= 0) fmt::format_to(std::back_inserter(line), FMT_COMPILE("{}"), e.peer);
      fmt::format_to(std::back_inserter(line), FMT_COMPILE(",{},{},{},{}\n"), e.start_s, e.end_s, e.duration_s(),
                     e.bytes);
      sink(line);
    }
  }
}

}  // namespace gradsync::reports
