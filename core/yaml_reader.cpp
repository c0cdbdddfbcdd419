// yaml_reader.cpp: typed YAML access with located errors (see yaml_reader.hpp).
#include "core/yaml_reader.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <vector>

#include "core/error.hpp"

namespace gradsync {
namespace {

// parse_int reads a whole scalar as a signed 64-bit integer.
// A quoted scalar ("64") is a string in YAML (its tag is "!"), not a number, whatever it spells.
bool quoted(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }

bool parse_int(const YAML::Node& n, std::int64_t& v) {
  if (!n.IsScalar() || quoted(n)) return false;
  const std::string s = n.as<std::string>();
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// kMaxYamlNodes: the most nodes a data file may hold once its aliases are expanded. The largest
// built-in (a 250 KB model file) has about 60,000; anchors and aliases can make a few hundred bytes
// expand to billions ("billion laughs"), which every reader would then walk.
constexpr std::size_t kMaxYamlNodes = 5'000'000;

// kMaxYamlDepth: how deeply mappings and lists may nest. gradsync's files nest at most 6 deep; the
// bound keeps the walk's recursion (and every reader after it) far from the end of the stack, as
// for DOT subgraphs and GraphML elements.
constexpr int kMaxYamlDepth = 100;

// StructureCheck: what every gradsync data file must be beyond YAML's syntax: keys are single
// values (no lists or mappings as keys), no key appears twice in one mapping (YAML says keys are
// unique; yaml-cpp would keep both and return one), and aliases expand to a bounded tree: no alias
// inside the value it names (yaml-cpp builds `&x [*x]` as a cycle), bounded depth and size.
struct StructureCheck {
  const YamlReader& r;
  std::string what;  // what the file is, as its messages name it: "scenario", "document"
  std::size_t nodes = 0;
  std::vector<YAML::Node> path;  // the mappings and lists that hold the node being walked

  void walk(const YAML::Node& n) {
    if (n.IsSequence() || n.IsMap()) {
      for (const auto& outer : path) {
        if (outer.is(n)) {
          r.fail(n, what,
                 "an alias (*name) stands inside the value it names, which would nest it in itself "
                 "for ever; give the value in full instead");
        }
      }
      if (static_cast<int>(path.size()) >= kMaxYamlDepth) {
        r.fail(n, what,
               fmt::format("mappings and lists nest more than {} levels deep; gradsync's files nest a few",
                           kMaxYamlDepth));
      }
    }
    if (++nodes > kMaxYamlNodes) {
      r.fail(n, what,
             fmt::format("more than {} values once its aliases (*name) are expanded; gradsync's "
                         "files hold far fewer (is an alias nested in itself?)",
                         kMaxYamlNodes));
    }
    if (n.IsSequence()) {
      path.push_back(n);
      for (const auto& item : n) walk(item);
      path.pop_back();
    } else if (n.IsMap()) {
      path.push_back(n);
      std::map<std::string, int> lines;  // key -> line (1-based)
      for (const auto& kv : n) {
        if (kv.first.IsMap() || kv.first.IsSequence()) {
          r.fail(kv.first, what,
                 fmt::format("a key is {}; keys must be single words or numbers", YamlReader::scalar_text(kv.first)));
        }
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "null";
        const int line = kv.first.Mark().line + 1;
        if (const auto [it, fresh] = lines.emplace(key, line); !fresh) {
          r.fail(kv.first, what,
                 fmt::format("key \"{}\" appears twice in one mapping (lines {} and {}); keep one", key, it->second,
                             line));
        }
        walk(kv.second);
      }
      path.pop_back();
    }
  }
};

// DocumentStarts: the documents a parser reported and the line the second begins on.
struct DocumentStarts final : YAML::EventHandler {
  int count = 0;
  int second_line = 0;
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++count == 2) second_line = mark.line + 1;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

YAML::Node YamlReader::load(std::string_view text, std::string_view what) const {
  // YAML is text: a control byte (a NUL, an ELF header's \x04) is no character of it (YAML 1.2
  // c-printable: tab, line feed and carriage return only). Said where it stands, written as
  // \xNN, before yaml-cpp reads it as an escape or ends a line at it.
  std::size_t line = 1, column = 1;
  for (const char ch : text) {
    const auto b = static_cast<unsigned char>(ch);
    if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f)
      throw DataError(fmt::format("{}:{}:{}: a control byte \\x{:02x}; expected YAML text (a binary file?)", origin_,
                                  line, column, b));
    if (b == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  // YAML is UTF-8 here: a byte that starts no UTF-8 character (a Latin-1 file's \xe9) is named
  // where it stands, before yaml-cpp reads the text as something else.
  if (const std::size_t bad = first_bad_utf8(text); bad != std::string_view::npos) {
    const std::string_view before = text.substr(0, bad);
    const std::size_t line_start = before.rfind('\n');
    const std::size_t at_line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t at_column = bad - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    throw DataError(
        fmt::format("{}:{}:{}: byte \\x{:02x} is not UTF-8; expected YAML text in UTF-8 (a file saved "
                    "as Latin-1 or Windows-1252?)",
                    origin_, at_line, at_column, static_cast<unsigned char>(text[bad])));
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
    // A second document ("---" or "..." and more) is refused, not dropped. Its start is found by
    // a parser asked for two documents at most: yaml-cpp 0.7's LoadAll never returns on some
    // malformed input (",$"; the fuzzers found it).
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    DocumentStarts starts;
    if (parser.HandleNextDocument(starts) && parser.HandleNextDocument(starts) && starts.count > 1) {
      throw DataError(
          fmt::format("{}:{}: a second YAML document (after \"---\" or \"...\"); expected one: put "
                      "its keys in the first",
                      origin_, starts.second_line));
    }
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's parser stops nesting past its own guard with the message "bad file": said as the
    // structure check below says a nesting deeper than kMaxYamlDepth.
    throw DataError(
        fmt::format("{}:{}: {}: mappings and lists nest more than {} levels deep; gradsync's "
                    "files nest a few",
                    origin_, e.mark.line + 1, what, kMaxYamlDepth));
  } catch (const YAML::ParserException& e) {
    // line:column, as the control-byte and UTF-8 checks above say it (yaml-cpp counts from 0).
    throw DataError(fmt::format("{}:{}:{}: syntax error: {}", origin_, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  StructureCheck{*this, std::string(what), 0, {}}.walk(root);
  return root;
}

void YamlReader::fail(const YAML::Node& at, const std::string& where, const std::string& what) const {
  const int line = at.IsDefined() && at.Mark().line >= 0 ? at.Mark().line + 1 : 0;
  if (line > 0) throw DataError(fmt::format("{}:{}: {}: {}", origin_, line, where, what));
  throw DataError(fmt::format("{}: {}: {}", origin_, where, what));
}

void YamlReader::only_keys(const YAML::Node& map, const std::string& where,
                           std::initializer_list<std::string_view> allowed) const {
  if (!map.IsMap()) fail(map, where, fmt::format("expected a mapping with fields {}", fmt::join(allowed, ", ")));
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      fail(kv.first, where, fmt::format("unknown field \"{}\"; expected one of {}", key, fmt::join(allowed, ", ")));
    }
  }
}

YAML::Node YamlReader::required(const YAML::Node& map, const std::string& where, const char* key) const {
  const YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull()) fail(map, where, fmt::format("missing field \"{}\"", key));
  return n;
}

std::string YamlReader::string(const YAML::Node& n, const std::string& where, const char* key) const {
  if (!n.IsScalar()) fail(n, where, fmt::format("field \"{}\" is {}; expected a string", key, scalar_text(n)));
  return n.as<std::string>();
}

bool YamlReader::boolean(const YAML::Node& n, const std::string& where, const char* key) const {
  if (n.IsScalar()) {
    const std::string s = n.as<std::string>();
    if (s == "true") return true;
    if (s == "false") return false;
  }
  fail(n, where, fmt::format("field \"{}\" is \"{}\"; expected true or false", key, scalar_text(n)));
}

std::int64_t YamlReader::positive_int(const YAML::Node& n, const std::string& where, const char* key) const {
  std::int64_t v = 0;
  if (quoted(n))
    fail(n, where,
         fmt::format("field \"{}\" is the quoted string \"{}\"; expected a positive integer, unquoted", key,
                     scalar_text(n)));
  if (!parse_int(n, v))
    fail(n, where, fmt::format("field \"{}\" is \"{}\"; expected a positive integer", key, scalar_text(n)));
  if (v <= 0) fail(n, where, fmt::format("field \"{}\" is {}; it must be > 0", key, v));
  return v;
}

std::int64_t YamlReader::non_negative_int(const YAML::Node& n, const std::string& where, const char* key) const {
  std::int64_t v = 0;
  if (quoted(n))
    fail(n, where,
         fmt::format("field \"{}\" is the quoted string \"{}\"; expected an integer >= 0, unquoted", key,
                     scalar_text(n)));
  if (!parse_int(n, v))
    fail(n, where, fmt::format("field \"{}\" is \"{}\"; expected an integer >= 0", key, scalar_text(n)));
  if (v < 0) fail(n, where, fmt::format("field \"{}\" is {}; it must be >= 0", key, v));
  return v;
}

double YamlReader::positive_number(const YAML::Node& n, const std::string& where, const char* key) const {
  const double v = non_negative_number(n, where, key);
  if (v <= 0) fail(n, where, fmt::format("field \"{}\" is {}; it must be > 0", key, scalar_text(n)));
  return v;
}

double YamlReader::non_negative_number(const YAML::Node& n, const std::string& where, const char* key) const {
  double v = 0;
  bool ok = n.IsScalar() && !quoted(n);
  if (ok) {
    const std::string s = n.as<std::string>();
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    ok = !s.empty() && ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(v);
  }
  if (quoted(n))
    fail(n, where,
         fmt::format("field \"{}\" is the quoted string \"{}\"; expected a number, unquoted", key, scalar_text(n)));
  if (!ok) fail(n, where, fmt::format("field \"{}\" is \"{}\"; expected a number", key, scalar_text(n)));
  if (v < 0) fail(n, where, fmt::format("field \"{}\" is {}; it must be >= 0", key, scalar_text(n)));
  return v;
}

template <typename Parse>
auto YamlReader::located(const YAML::Node& n, const std::string& where, const char* key, Parse parse) const {
  const std::string text = string(n, where, key);
  try {
    return parse(text);
  } catch (const ConfigError& e) {
    fail(n, where, key[0] == '\0' ? e.what() : fmt::format("field \"{}\": {}", key, e.what()));
  }
}

Bytes YamlReader::size(const YAML::Node& n, const std::string& where, const char* key) const {
  return located(n, where, key, [](const std::string& t) { return parse_size(t); });
}

double YamlReader::bandwidth(const YAML::Node& n, const std::string& where, const char* key) const {
  return located(n, where, key, [](const std::string& t) { return parse_bandwidth(t); });
}

std::vector<std::int64_t> YamlReader::shape(const YAML::Node& n, const std::string& where) const {
  if (!n.IsSequence())
    fail(n, where, fmt::format("shape is \"{}\"; expected a list of dimensions such as [768, 3072]", scalar_text(n)));
  std::vector<std::string> text;
  for (const auto& d : n)
    text.push_back(!d.IsScalar() ? "?" : quoted(d) ? fmt::format("\"{}\"", d.as<std::string>()) : d.as<std::string>());
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < n.size(); ++i) {
    std::int64_t v = 0;
    if (!parse_int(n[i], v)) {
      fail(n[i], where,
           fmt::format("shape [{}]: dimension {} is {}; expected an integer{}", fmt::join(text, ", "), i + 1,
                       quoted(n[i]) ? fmt::format("the quoted string \"{}\"", scalar_text(n[i]))
                                    : fmt::format("\"{}\"", scalar_text(n[i])),
                       quoted(n[i]) ? ", unquoted" : ""));
    }
    if (v <= 0) {
      fail(n[i], where,
           fmt::format("shape [{}]: dimension {} is {}; every dimension must be > 0", fmt::join(text, ", "), i + 1, v));
    }
    dims.push_back(v);
  }
  return dims;
}

DType YamlReader::dtype(const YAML::Node& n, const std::string& where) const {
  string(n, where, "dtype");  // a non-string is reported as such
  return located(n, where, "", [](const std::string& t) { return parse_dtype(t); });
}

std::string YamlReader::scalar_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.as<std::string>();
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

}  // namespace gradsync
