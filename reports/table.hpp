// table.hpp: the stdout table, nccl-tests style: configuration on `#` lines, a names row and a
// units row (both behind `#`), then one right-aligned row per record, for people and for grep.
//
//   reports::Table t({{"strategy", ""}, {"step", "ms"}, {"samples/s", "1/s"}});
//   t.add_row({"dp", "412.3", "310.4"});
//   t.print(std::cout, {"gradsync compare: gpt2 on dgx-a100, 8 GPUs"});
//
// prints
//   # gradsync compare: gpt2 on dgx-a100, 8 GPUs
//   #
//   # strategy   step  samples/s
//   #              ms        1/s
//           dp  412.3      310.4
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gradsync::reports {

// Column is one table column: its name, its unit ("" for none), and whether its cells are
// left-aligned (text) rather than right-aligned (numbers).
struct Column {
  std::string name;
  std::string unit;
  bool left = false;
};

// Table collects rows of already formatted cells and prints them aligned.
class Table {
 public:
  explicit Table(std::vector<Column> columns);

  // add_row appends one row; it must have one cell per column (else std::invalid_argument).
  void add_row(std::vector<std::string> cells);

  // print writes the header lines (each behind "# "), a blank "#" line, the names and units rows,
  // then the rows. Columns are separated by two spaces.
  void print(std::ostream& out, const std::vector<std::string>& header_lines = {}) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace gradsync::reports
