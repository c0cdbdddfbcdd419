// table.cpp: nccl-tests-style stdout table (see table.hpp).
#include "reports/table.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/text.hpp"

namespace gradsync::reports {

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size()) {
    throw std::invalid_argument("reports::Table: a row has " + std::to_string(cells.size()) + " cells for " +
                                std::to_string(columns_.size()) + " columns");
  }
  rows_.push_back(std::move(cells));
}

void Table::print(std::ostream& out, const std::vector<std::string>& header_lines) const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    width[c] = std::max(display_width(columns_[c].name), display_width(columns_[c].unit));
    for (const auto& row : rows_) width[c] = std::max(width[c], display_width(row[c]));
  }
  // The first column's cells start two characters in, so the "# " of the header rows lines up.
  auto line = [&](const std::string& lead, auto&& cell) {
    std::string text = lead;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const std::string& v = cell(c);
      if (c > 0) text += "  ";
      const std::string pad(width[c] - display_width(v), ' ');  // columns, not bytes
      text += columns_[c].left ? v + pad : pad + v;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  for (const auto& h : header_lines) out << (h.empty() ? "#" : "# " + h) << '\n';
  if (!header_lines.empty()) out << "#\n";
  line("# ", [&](std::size_t c) -> const std::string& { return columns_[c].name; });
  line("# ", [&](std::size_t c) -> const std::string& { return columns_[c].unit; });
  for (const auto& row : rows_) line("  ", [&](std::size_t c) -> const std::string& { return row[c]; });
}

}  // namespace gradsync::reports
