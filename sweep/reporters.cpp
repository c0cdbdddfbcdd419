// reporters.cpp: a sweep's summary.csv, result.json, report.html and stdout table.
#include "sweep/reporters.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/scenario_keys.hpp"
#include "core/version.hpp"
#include "reports/html.hpp"
#include "reports/table.hpp"

namespace gradsync::sweep {

using json = nlohmann::ordered_json;

SweepCsvReporter::SweepCsvReporter(std::string path) : path_(std::move(path)), header_(reports::summary_header()) {}

void SweepCsvReporter::add(const SweepRecord& r) {
  rows_[r.point] = r.row;
  save();
}

int SweepCsvReporter::drop_failed() {
  const CsvRow header = reports::summary_header();
  const auto status = static_cast<std::size_t>(std::find(header.begin(), header.end(), "status") - header.begin());
  int dropped = 0;
  for (auto it = rows_.begin(); it != rows_.end();) {
    if (it->second.size() > status && it->second[status] == "failed") {
      it = rows_.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped;
}

const CsvRow* SweepCsvReporter::row(int point) const {
  const auto it = rows_.find(point);
  return it == rows_.end() ? nullptr : &it->second;
}

void SweepCsvReporter::load(const std::string& path, const std::vector<CsvRow>& keys) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<CsvRow> rows = reports::parse_csv(text.str(), path);
  if (rows.empty()) return;
  if (rows.front() != header_) {
    throw ConfigError(
        fmt::format("{}: its columns are not those of this gradsync's summary.csv; start over without --resume or "
                    "with another --out",
                    path));
  }
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const CsvRow& row = rows[i];
    const std::string where = fmt::format("{}:{}", path, i + 1);
    if (row.size() != header_.size()) {
      throw ConfigError(fmt::format("{}: {} cells, expected {}", where, row.size(), header_.size()));
    }
    int index = -1;
    const auto [end, ec] = std::from_chars(row[0].data(), row[0].data() + row[0].size(), index);
    if (ec != std::errc() || end != row[0].data() + row[0].size() || index < 0) {
      throw ConfigError(fmt::format("{}: point \"{}\" is not a point number", where, row[0]));
    }
    // The point whose settings the row holds, wherever the --vary lists now put it (a list
    // reordered or grown between runs); the same number first.
    const auto same_settings = [&](const CsvRow& k) { return std::equal(k.begin() + 1, k.end(), row.begin() + 1); };
    const bool in_range = index < static_cast<int>(keys.size());
    if (!in_range || !same_settings(keys[static_cast<std::size_t>(index)])) {
      const auto found = std::find_if(keys.begin(), keys.end(), same_settings);
      if (found == keys.end()) {
        // Name the settings no point of this sweep has ("bucket_cap_mb 25: this sweep's are 50, 5"),
        // or, when each is in the sweep but not together, how the row differs from its old number's point.
        std::vector<std::string> absent;
        const std::size_t width = keys.empty() ? 0 : keys.front().size();
        // A point that failed never resolved its defaults: its empty and "auto" cells are what was
        // asked for, not a setting that differs.
        const auto status_col = std::find(header_.begin(), header_.end(), "status");
        const bool failed_row =
            status_col != header_.end() && row[static_cast<std::size_t>(status_col - header_.begin())] == "failed";
        for (std::size_t c = 1; c < width; ++c) {
          if (failed_row && (row[c].empty() || row[c] == "auto")) continue;
          std::vector<std::string> values;
          for (const CsvRow& k : keys)
            if (std::find(values.begin(), values.end(), k[c]) == values.end()) values.push_back(k[c]);
          if (std::find(values.begin(), values.end(), row[c]) == values.end()) {
            // An empty cell is a key the model has no use for (seq_len of a conv net): say so.
            const auto cell = [](const std::string& v) { return v.empty() ? std::string("(none)") : v; };
            std::vector<std::string> shown;
            for (const std::string& v : values) shown.push_back(cell(v));
            absent.push_back(fmt::format("{} {}: this sweep's {} {}", header_[c], cell(row[c]),
                                         values.size() == 1 ? "is" : "are", fmt::join(shown, ", ")));
          }
        }
        if (absent.empty() && in_range) {
          const CsvRow& key = keys[static_cast<std::size_t>(index)];
          for (std::size_t c = 1; c < key.size(); ++c)
            if (key[c] != row[c] && !(failed_row && (row[c].empty() || row[c] == "auto")))
              absent.push_back(fmt::format("{} was {}, is {}", header_[c], row[c], key[c]));
        }
        throw ConfigError(fmt::format(
            "{}: point {} was another scenario than this sweep's, and no point of this sweep has its settings: {}; "
            "start over without --resume or with another --out",
            where, row[0],
            absent.empty() ? std::string("its settings together") : fmt::format("{}", fmt::join(absent, "; "))));
      }
      index = static_cast<int>(found - keys.begin());
    }
    const CsvRow& key = keys[static_cast<std::size_t>(index)];
    // The cells read back as they are (the table, result.json and the report take them): a
    // status this gradsync never writes is an edited file, not a result.
    const auto status = std::find(header_.begin(), header_.end(), "status");
    if (status != header_.end()) {
      const std::string& st = row[static_cast<std::size_t>(status - header_.begin())];
      if (st != "ok" && st != "oom" && st != "skipped" && st != "failed") {
        throw ConfigError(
            fmt::format("{}: status \"{}\"; expected ok, oom, skipped or failed (the file was edited?); "
                        "start over without --resume or with another --out",
                        where, st));
      }
    }
    // Every cell as its column's type, so that the table, the efficiencies and result.json
    // read what this gradsync writes (an edited 1e999 or nan is named here, not met later).
    const std::vector<reports::CsvColumn>& columns = reports::summary_columns();
    for (std::size_t c = 0; c < columns.size() && c < row.size(); ++c) {
      try {
        (void)reports::typed_cell(columns[c], row[c]);
      } catch (const ConfigError& e) {
        throw ConfigError(fmt::format(
            "{}: {} (the file was edited?); start over without --resume or with another --out", where, e.what()));
      }
    }
    CsvRow renumbered = row;
    renumbered[0] = key[0];
    rows_[index] = std::move(renumbered);
  }
}

std::string SweepCsvReporter::text() const {
  std::vector<CsvRow> rows;
  for (const auto& [i, row] : rows_) rows.push_back(row);
  reports::fill_scaling_efficiency(header_, rows);
  std::string out = reports::csv_line(header_);
  for (const CsvRow& row : rows) out += reports::csv_line(row);
  return out;
}

void SweepCsvReporter::save() const { write_file_atomic(path_, text()); }

std::vector<std::string> sweep_header_lines(const SweepContext& ctx) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("gradsync sweep over {}", fmt::join(ctx.vary_args, " ")));
  std::vector<std::string> base;
  const json defaults = scenario_json(Scenario{});
  for (const auto& [k, v] : ctx.base.items()) {
    if (std::find(ctx.varied.begin(), ctx.varied.end(), k) != ctx.varied.end()) continue;
    if (k == "model" || k == "topology" || v != defaults.at(k)) base.push_back(fmt::format("{}={}", k, value_text(v)));
  }
  lines.push_back(base.empty() ? std::string("base scenario: every key not varied at its default (resolved per "
                                             "point in the CSV)")
                               : fmt::format("base scenario: {} (other keys at their defaults, resolved per point in "
                                             "the CSV)",
                                             fmt::join(base, " ")));
  return lines;
}

void SweepJsonReporter::finish() {
  const std::vector<reports::CsvColumn>& columns = reports::summary_columns();
  json doc;
  doc["schema_version"] = 2;
  doc["gradsync_version"] = std::string(kVersion);
  doc["mode"] = "simulated";
  doc["command"] = "sweep";
  doc["base_scenario"] = ctx_.base;
  doc["inputs"] = ctx_.inputs;
  auto& jv = doc["vary"] = json::object();
  for (std::size_t i = 0; i < ctx_.varied.size(); ++i) jv[ctx_.varied[i]] = ctx_.vary_values[i];
  auto& jp = doc["points"] = json::array();
  for (const SweepRecord& r : records_) {
    json o;
    for (std::size_t c = 0; c < columns.size(); ++c) o[columns[c].name] = reports::typed_cell(columns[c], r.row[c]);
    o["requested"] = r.requested;
    jp.push_back(std::move(o));
  }
  write_file_atomic(path_, json_text(doc, 2) + "\n");
}

void SweepHtmlReporter::finish() {
  reports::SweepTable t;
  t.varied = ctx_.varied;
  t.varied.erase(std::remove(t.varied.begin(), t.varied.end(), "strategy"), t.varied.end());
  t.columns = reports::summary_header();
  t.rows = rows_;
  t.header_lines = sweep_header_lines(ctx_);
  write_file_atomic(path_, reports::html_sweep_report(t));
}

void SweepTableReporter::finish() {
  const CsvRow header = reports::summary_header();
  std::vector<std::string> varied = ctx_.varied;
  varied.erase(std::remove(varied.begin(), varied.end(), "strategy"), varied.end());
  std::vector<reports::Column> cols{{"point", ""}};
  for (const std::string& v : varied) cols.push_back({v, "", true});
  // gpus is shown once: among the varied keys, or after the status.
  const bool gpus_varied = std::find(varied.begin(), varied.end(), "gpus") != varied.end();
  for (reports::Column c : std::vector<reports::Column>{{"strategy", "", true},
                                                        {"status", "", true},
                                                        {"steady", "ms"},
                                                        {"exposed", "ms"},
                                                        {"samples/s", "1/s"},
                                                        {"efficiency", "%"}})
    cols.push_back(c);
  if (!gpus_varied) cols.insert(cols.begin() + static_cast<std::ptrdiff_t>(varied.size()) + 3, {"gpus", ""});
  reports::Table table(cols);
  auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  auto ms = [](const std::string& s) {
    return s.empty() ? std::string("-") : fmt::format("{:.3f}", std::stod(s) * 1e3);
  };
  std::vector<std::string> oom;
  // Skipped points (DataParallel asked to span hosts) by their reason, in point order.
  std::vector<std::pair<std::string, std::vector<std::string>>> skipped;
  for (const SweepRecord& record : records_) {
    const CsvRow& row = record.row;
    if (row[col("status")] == "skipped") {
      const std::string& why = row[col("skipped_reason")];
      auto it = std::find_if(skipped.begin(), skipped.end(), [&](const auto& s) { return s.first == why; });
      if (it == skipped.end()) it = skipped.insert(skipped.end(), {why, {}});
      it->second.push_back(row[0]);
    }
    std::vector<std::string> cells{row[0]};
    // A varied value the point resolved (nccl_version auto: the release its PyTorch bundles) shows
    // both: "auto (2.28)"; summary.csv keeps the resolved value, result.json the request.
    for (const std::string& v : varied) {
      const auto asked = record.requested.find(v);
      cells.push_back(asked == record.requested.end() || row[col(v)].empty()
                          ? row[col(v)]
                          : fmt::format("{} ({})", value_text(*asked), row[col(v)]));
    }
    // A point that does not fit the GPU's memory has times (what it would take if it fit) but no
    // throughput to rank: the table shows none, summary.csv keeps them beside status oom.
    const bool fits = row[col("status")] != "oom";
    if (!fits) oom.push_back(row[0]);
    const std::string eff = fits ? row[col("scaling_efficiency_frac")] : "";
    const std::string sps = fits ? row[col("samples_per_s")] : "";
    cells.push_back(row[col("strategy")]);
    cells.push_back(row[col("status")]);
    // A point that failed before it resolved has no GPU count to show (summary.csv leaves it blank).
    if (!gpus_varied) cells.push_back(row[col("gpus")].empty() ? std::string("-") : row[col("gpus")]);
    for (const std::string& c : {ms(row[col("steady_iteration_time_s")]), ms(row[col("exposed_communication_s")]),
                                 sps.empty() ? std::string("-") : fmt::format("{:.1f}", std::stod(sps)),
                                 eff.empty() ? std::string("-") : fmt::format("{:.1f}", 100 * std::stod(eff))})
      cells.push_back(c);
    table.add_row(cells);
  }
  table.print(out_, sweep_header_lines(ctx_));
  // efficiency's baseline, which is one GPU only where the sweep has a one-GPU point.
  if (std::any_of(records_.begin(), records_.end(),
                  [&](const SweepRecord& r) { return !r.row[col("scaling_efficiency_frac")].empty(); }))
    out_ << "# efficiency: samples/s per GPU against the point with the fewest GPUs among those that differ only in "
            "gpus (same strategy, and the same batch_per_gpu or, failing that, the same global_batch): against one "
            "GPU only where the sweep has a one-GPU point\n";
  if (!oom.empty())
    out_ << fmt::format(
        "# point{} {}: {} not fit the GPU's memory (status oom): no samples/s is shown; the times are "
        "what {} would take if {} fit (summary.csv keeps them)\n",
        oom.size() == 1 ? "" : "s", fmt::join(oom, ", "), oom.size() == 1 ? "does" : "do",
        oom.size() == 1 ? "it" : "they", oom.size() == 1 ? "it" : "they");
  for (const auto& [why, which] : skipped)
    out_ << fmt::format("# point{} {} skipped (status skipped, not simulated): {}\n", which.size() == 1 ? "" : "s",
                        fmt::join(which, ", "), why);
  out_ << fmt::format("# wrote {}/summary.csv, result.json, report.html\n", folder_);
}

}  // namespace gradsync::sweep
