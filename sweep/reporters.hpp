// reporters.hpp: what a sweep writes, one reporter object per output, fed as results arrive (as
// Google Benchmark's reporters are): begin(context), add(record) per point, finish().
//
//   SweepCsvReporter csv("out/summary.csv");      // saved after every add: a killed sweep resumes
//   SweepJsonReporter json("out/result.json");
//   for (SweepReporter* r : {&csv, &json}) r->begin(ctx);
//   csv.add(record);  ...  csv.finish();
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "reports/csv.hpp"

namespace gradsync::sweep {

using reports::CsvRow;

// SweepContext: what every reporter knows before the first point.
struct SweepContext {
  std::vector<std::string> vary_args;               // the --vary arguments as given
  std::vector<std::string> varied;                  // the keys varied, in --vary order (strategy included when varied)
  nlohmann::ordered_json base;                      // the base scenario as requested (null: a default)
  std::vector<nlohmann::ordered_json> vary_values;  // per varied key, its values
  int points = 0;
  // inputs: the files the points read, each with a digest of its bytes (result.json "inputs"; a
  // --resume refuses files changed since).
  nlohmann::ordered_json inputs = nlohmann::ordered_json::object();
};

// SweepRecord: one finished point: its summary.csv row (resolved scenario and results) and the
// keys whose request differed from the resolved value (core/scenario_keys.hpp requested_json).
struct SweepRecord {
  int point = 0;
  std::string label;
  nlohmann::ordered_json requested = nlohmann::ordered_json::object();
  CsvRow row;
};

// SweepReporter: one output of a sweep.
class SweepReporter {
 public:
  virtual ~SweepReporter() = default;
  virtual void begin(const SweepContext& ctx) { ctx_ = ctx; }
  virtual void add(const SweepRecord& r) = 0;
  virtual void finish() {}

 protected:
  SweepContext ctx_;
};

// SweepCsvReporter: summary.csv (or a rank's part of it), written whole to a temporary name and
// renamed after every add, rows in point order with scaling efficiency filled.
class SweepCsvReporter : public SweepReporter {
 public:
  explicit SweepCsvReporter(std::string path);
  void add(const SweepRecord& r) override;  // insert, then save
  void finish() override { save(); }
  // insert keeps a row without saving (merging many rows, then one save()).
  void insert(int point, CsvRow row) { rows_[point] = std::move(row); }

  // load adds the rows of a summary.csv this sweep wrote (--resume). `key_of(point)` gives the
  // cells that identify a point (summary_key_columns()); a row of another sweep is a ConfigError.
  void load(const std::string& path, const std::vector<CsvRow>& keys);
  bool has(int point) const { return rows_.count(point) > 0; }
  // drop_failed forgets the rows of failed points (--retry-failed) and returns how many.
  int drop_failed();
  const CsvRow* row(int point) const;
  const std::map<int, CsvRow>& rows() const { return rows_; }
  std::string text() const;
  void save() const;

 private:
  std::string path_;
  CsvRow header_;
  std::map<int, CsvRow> rows_;
};

// SweepJsonReporter: result.json: the base scenario, the grid and every point as an object,
// cells typed by their column (core's CsvColumn types), with the point's request beside it.
class SweepJsonReporter : public SweepReporter {
 public:
  explicit SweepJsonReporter(std::string path) : path_(std::move(path)) {}
  void add(const SweepRecord& r) override { records_.push_back(r); }
  void finish() override;

 private:
  std::string path_;
  std::vector<SweepRecord> records_;
};

// SweepHtmlReporter: report.html with the sweep's charts.
class SweepHtmlReporter : public SweepReporter {
 public:
  explicit SweepHtmlReporter(std::string path) : path_(std::move(path)) {}
  void add(const SweepRecord& r) override { rows_.push_back(r.row); }
  void finish() override;

 private:
  std::string path_;
  std::vector<CsvRow> rows_;
};

// SweepTableReporter: the stdout table, one row per point.
class SweepTableReporter : public SweepReporter {
 public:
  SweepTableReporter(std::ostream& out, std::string folder) : out_(out), folder_(std::move(folder)) {}
  void add(const SweepRecord& r) override { records_.push_back(r); }
  void finish() override;

 private:
  std::ostream& out_;
  std::string folder_;
  std::vector<SweepRecord> records_;
};

// sweep_header_lines: the `#` lines above the table and in the HTML report.
std::vector<std::string> sweep_header_lines(const SweepContext& ctx);

}  // namespace gradsync::sweep
