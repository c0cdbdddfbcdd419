// published_table.cpp: the shared reading of the published tables (sim/published_table.hpp).
#include "sim/published_table.hpp"

#include <fmt/format.h>

#include <span>
#include <stdexcept>

#include "core/embedded_file.hpp"

namespace gradsync::detail {
std::span<const EmbeddedFile> published_files();  // generated (cmake/GradsyncEmbed.cmake)
}  // namespace gradsync::detail

namespace gradsync::sim {

YAML::Node table_cases(const YamlReader& r, const YAML::Node& root, const char* what, const char* format) {
  if (!root.IsMap()) r.fail(root, what, "expected a mapping with format and cases");
  r.only_keys(root, what, {"format", "cases"});
  const std::string found = r.string(r.required(root, what, "format"), what, "format");
  if (found != format) r.fail(root["format"], what, fmt::format("format \"{}\": expected {}", found, format));
  const YAML::Node cases = r.required(root, what, "cases");
  if (!cases.IsSequence()) r.fail(cases, what, "cases: expected a list");
  return cases;
}

CaseHeader case_header(const YamlReader& r, const YAML::Node& n, std::size_t i,
                       std::initializer_list<std::string_view> keys, std::set<std::string>& ids) {
  const std::string where = fmt::format("cases[{}]", i);
  if (!n.IsMap()) r.fail(n, where, "expected a mapping");
  r.only_keys(n, where, keys);
  CaseHeader h;
  h.line = n.Mark().line + 1;
  h.id = r.string(r.required(n, where, "id"), where, "id");
  h.at = fmt::format("case {}", h.id);
  if (!ids.insert(h.id).second) r.fail(n["id"], h.at, "id given twice");
  h.split = r.string(r.required(n, h.at, "split"), h.at, "split");
  if (h.split != "train" && h.split != "holdout")
    r.fail(n["split"], h.at, fmt::format("split \"{}\": expected train or holdout", h.split));
  h.source = r.string(r.required(n, h.at, "source"), h.at, "source");
  return h;
}

std::string_view builtin_table_text(std::string_view file) {
  const std::string path = "validation/published/" + std::string(file);
  for (const EmbeddedFile& f : detail::published_files())
    if (f.path == path) return f.text;
  throw std::logic_error(fmt::format("published: {} is not compiled in", file));
}

}  // namespace gradsync::sim
