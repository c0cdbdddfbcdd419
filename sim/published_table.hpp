// published_table.hpp: what the three published tables of validation/published/ share: a mapping
// {format, cases}, each case a mapping with an id (unique in the table), a split (train or
// holdout, decided when the case was added) and a source; and their compiled-in texts.
//
//   const YAML::Node cases = table_cases(r, root, "published DDP", "gradsync-published-ddp/1");
//   const CaseHeader h = case_header(r, cases[i], i, {"id", "split", "source", ...}, ids);
//   h.at   // "case <id>": where the rest of the case's errors point
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>

#include "core/yaml_reader.hpp"

namespace gradsync::sim {

// CaseHeader: a case's line, id, split and source, and "case <id>" for its further errors.
struct CaseHeader {
  int line = 0;
  std::string id;
  std::string split;
  std::string source;
  std::string at;
};

// table_cases: the `cases` list of `root`, whose `format` must be `format`; `what` names the table
// in errors ("published DDP"). ConfigError at the line otherwise.
YAML::Node table_cases(const YamlReader& r, const YAML::Node& root, const char* what, const char* format);

// case_header: case `i` of a table: a mapping with only `keys`, its id new to `ids` (added), its
// split train or holdout, its source.
CaseHeader case_header(const YamlReader& r, const YAML::Node& n, std::size_t i,
                       std::initializer_list<std::string_view> keys, std::set<std::string>& ids);

// builtin_table_text: the compiled-in text of validation/published/<file>; std::logic_error if the
// build left it out.
std::string_view builtin_table_text(std::string_view file);

}  // namespace gradsync::sim
