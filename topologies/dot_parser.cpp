// dot_parser.cpp: a small DOT scanner and recursive-descent parser (graph, statements,
// attribute lists, subgraphs as groups) that records node statements and edges with their lines.
#include "topologies/dot_parser.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <unordered_map>

#include "core/error.hpp"

namespace gradsync::detail {
namespace {

enum class Tok {
  kId,
  kString,
  kNumeral,
  kLBrace,
  kRBrace,
  kLBracket,
  kRBracket,
  kEq,
  kSemi,
  kComma,
  kColon,
  kEdge,
  kArrow,
  kEnd
};

struct Token {
  Tok kind;
  std::string text;
  int line;
  bool glued = false;  // a numeral immediately followed by letters: "3e11"
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd:
      return "the end of the file";
    case Tok::kString:
      return fmt::format("\"{}\"", t.text);
    default:
      return fmt::format("'{}'", t.text);
  }
}

// Scanner tokenises DOT: identifiers, numerals, quoted strings, punctuation; comments (//, /* */
// and # lines) are skipped, and the comment lines before `graph` are kept as the file's comment.
class Scanner {
 public:
  Scanner(std::string_view text, const std::string& origin) : s_(text), origin_(origin) {}

  std::vector<Token> run(std::string& leading_comment) {
    std::vector<Token> out;
    bool before_graph = true;
    for (;;) {
      skip_space(before_graph ? &leading_comment : nullptr);
      if (i_ >= s_.size()) {
        out.push_back({Tok::kEnd, "", line_});
        return out;
      }
      before_graph = false;
      out.push_back(next());
    }
  }

 private:
  // shown: a character as an error quotes it: 'x', or '\x01' when it does not print.
  static std::string shown(char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isprint(u) ? fmt::format("'{}'", c) : fmt::format("'\\x{:02x}'", u);
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(fmt::format("{}:{}: syntax error: {}", origin_, line_, what));
  }

  void skip_space(std::string* comment) {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++i_;
      } else if (s_.compare(i_, 2, "//") == 0 || (c == '#' && at_line_start())) {
        const std::size_t end = std::min(s_.find('\n', i_), s_.size());
        if (comment != nullptr) {
          std::string_view body = s_.substr(i_ + (c == '#' ? 1 : 2), end - i_ - (c == '#' ? 1 : 2));
          if (!body.empty() && body.front() == ' ') body.remove_prefix(1);
          comment->append(body).push_back('\n');
        }
        i_ = end;
      } else if (s_.compare(i_, 2, "/*") == 0) {
        const std::size_t end = s_.find("*/", i_ + 2);
        if (end == std::string_view::npos) fail("a /* comment is never closed");
        if (comment != nullptr) {
          // Its lines as the file's comment, each without the leading blanks and ' * ' of a boxed one.
          std::string_view body = s_.substr(i_ + 2, end - i_ - 2);
          while (!body.empty()) {
            const std::size_t nl = std::min(body.find('\n'), body.size());
            std::string_view line = body.substr(0, nl);
            body.remove_prefix(std::min(nl + 1, body.size()));
            while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
            if (!line.empty() && line.front() == '*') line.remove_prefix(line.size() > 1 && line[1] == ' ' ? 2 : 1);
            while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
            if (!line.empty() || !comment->empty()) comment->append(line).push_back('\n');
          }
        }
        line_ += static_cast<int>(std::count(s_.begin() + static_cast<std::ptrdiff_t>(i_),
                                             s_.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
        i_ = end + 2;
      } else {
        return;
      }
    }
  }

  bool at_line_start() const {
    for (std::size_t j = i_; j > 0; --j) {
      if (s_[j - 1] == '\n') return true;
      if (!std::isspace(static_cast<unsigned char>(s_[j - 1]))) return false;
    }
    return true;
  }

  static bool id_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80); }

  Token next() {
    const int line = line_;
    const char c = s_[i_];
    const auto single = [&](Tok k) {
      ++i_;
      return Token{k, std::string(1, c), line};
    };
    switch (c) {
      case '{':
        return single(Tok::kLBrace);
      case '}':
        return single(Tok::kRBrace);
      case '[':
        return single(Tok::kLBracket);
      case ']':
        return single(Tok::kRBracket);
      case '=':
        return single(Tok::kEq);
      case ';':
        return single(Tok::kSemi);
      case ',':
        return single(Tok::kComma);
      case ':':
        return single(Tok::kColon);
      default:
        break;
    }
    if (s_.compare(i_, 2, "--") == 0 || s_.compare(i_, 2, "->") == 0) {
      const bool arrow = s_[i_ + 1] == '>';
      i_ += 2;
      return Token{arrow ? Tok::kArrow : Tok::kEdge, arrow ? "->" : "--", line};
    }
    if (c == '"') {
      std::string text;
      for (++i_;; ++i_) {
        if (i_ >= s_.size()) {
          throw ConfigError(fmt::format("{}:{}: syntax error: a quoted string is never closed", origin_, line));
        }
        const char d = s_[i_];
        if (d == '"') break;
        if (d == '\n') ++line_;
        if (d == '\\' && i_ + 1 < s_.size() && (s_[i_ + 1] == '"' || s_[i_ + 1] == '\n')) {
          if (s_[i_ + 1] == '"') text.push_back('"');
          if (s_[i_ + 1] == '\n') ++line_;
          ++i_;
          continue;
        }
        text.push_back(d);
      }
      ++i_;
      return Token{Tok::kString, std::move(text), line};
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-') {
      const std::size_t start = i_;
      if (c == '-') ++i_;
      while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.')) ++i_;
      if (i_ == start + (c == '-' ? 1 : 0)) fail(fmt::format("unexpected character {}", shown(c)));
      Token t{Tok::kNumeral, std::string(s_.substr(start, i_ - start)), line};
      if (i_ < s_.size() && id_char(s_[i_])) {
        while (i_ < s_.size() && id_char(s_[i_])) ++i_;
        t.text = std::string(s_.substr(start, i_ - start));
        t.glued = true;
      }
      return t;
    }
    if (id_char(c)) {
      const std::size_t start = i_;
      while (i_ < s_.size() && id_char(s_[i_])) ++i_;
      return Token{Tok::kId, std::string(s_.substr(start, i_ - start)), line};
    }
    if (c == '<') fail("HTML-like labels <...> are not supported; quote the value instead");
    fail(fmt::format("unexpected character {}", shown(c)));
  }

  std::string_view s_;
  const std::string& origin_;
  std::size_t i_ = 0;
  int line_ = 1;
};

// Parser walks the DOT grammar (graph, statements, attribute lists, subgraphs as groups) and
// records node statements, edges and the attribute text gradsync reads, with their lines.
class Parser {
 public:
  static constexpr int kMaxSubgraphDepth = 100;

  Parser(std::vector<Token> toks, const std::string& origin) : t_(std::move(toks)), origin_(origin) {}

  void run() {
    if (is_keyword("strict")) ++p_;
    if (is_keyword("digraph")) {
      fail(peek(), "a directed graph (digraph); a topology is an undirected 'graph' whose links carry both directions");
    }
    if (!is_keyword("graph")) fail(peek(), fmt::format("expected 'graph' at the start, found {}", describe(peek())));
    ++p_;
    if (is_id(peek())) ++p_;
    expect(Tok::kLBrace, "'{' after 'graph'");
    statements();
    expect(Tok::kRBrace, "'}' closing the graph");
    if (peek().kind != Tok::kEnd) fail(peek(), fmt::format("unexpected {} after the closing '}}'", describe(peek())));
  }

  std::vector<RawNode> nodes;  // first appearance order
  std::vector<RawLink> links;

 private:
  const Token& peek(std::size_t ahead = 0) const { return t_[std::min(p_ + ahead, t_.size() - 1)]; }
  bool is_keyword(const char* k) const { return is_keyword_token(peek(), k); }
  static bool is_keyword_token(const Token& t, const char* k) {
    if (t.kind != Tok::kId || t.text.size() != std::strlen(k)) return false;
    return std::equal(t.text.begin(), t.text.end(), k, [](char a, char b) { return std::tolower(a) == b; });
  }
  static bool is_id(const Token& t) { return t.kind == Tok::kId || t.kind == Tok::kString || t.kind == Tok::kNumeral; }
  [[noreturn]] void fail(const Token& at, const std::string& what) const {
    throw ConfigError(fmt::format("{}:{}: syntax error: {}", origin_, at.line, what));
  }
  void expect(Tok k, const char* what) {
    if (peek().kind != k) fail(peek(), fmt::format("expected {}, found {}", what, describe(peek())));
    ++p_;
  }

  void statements() {
    while (peek().kind != Tok::kRBrace && peek().kind != Tok::kEnd) {
      statement();
      if (peek().kind == Tok::kSemi) ++p_;
    }
  }

  void statement() {
    const Token& t = peek();
    if ((is_keyword("graph") || is_keyword("node") || is_keyword("edge")) && peek(1).kind == Tok::kLBracket) {
      ++p_;
      attr_lists("", t, nullptr, is_keyword_token(t, "node") ? "node" : is_keyword_token(t, "edge") ? "edge" : "");
      return;
    }
    if (is_keyword("subgraph") || t.kind == Tok::kLBrace) {
      if (is_keyword("subgraph")) {
        ++p_;
        if (is_id(peek())) ++p_;
      }
      expect(Tok::kLBrace, "'{' opening the subgraph");
      // Both this parser and Boost's recurse per subgraph: bound the nesting before the stack is.
      if (++depth_ > kMaxSubgraphDepth) {
        fail(t, fmt::format("subgraphs nested more than {} deep; a cluster needs a few levels (host, switch)",
                            kMaxSubgraphDepth));
      }
      statements();
      --depth_;
      expect(Tok::kRBrace, "'}' closing the subgraph");
      if (peek().kind == Tok::kEdge || peek().kind == Tok::kArrow) {
        fail(peek(), "edges to or from a subgraph are not supported; list each link");
      }
      return;
    }
    if (!is_id(t)) fail(t, fmt::format("expected a node, an edge or an attribute, found {}", describe(t)));
    ++p_;
    if (peek().kind == Tok::kEq) {  // graph attribute: name = value
      ++p_;
      if (!is_id(peek())) fail(peek(), fmt::format("expected a value after '=', found {}", describe(peek())));
      ++p_;
      return;
    }
    check_port();
    if (peek().kind == Tok::kArrow) fail(peek(), "'->' in an undirected graph; write links as a -- b");
    if (peek().kind != Tok::kEdge) {
      // Inside a subgraph a bare name already declared is a mention (DOT's `{a b} -- c`, a cluster
      // listing its members), not a second declaration.
      if (depth_ > 0 && peek().kind != Tok::kLBracket && index_.contains(t.text)) return;
      RawNode& n = node(t, true);
      attr_lists(n.name, t, &n.attrs, "node");
      return;
    }
    std::vector<const Token*> ends{&t};
    while (peek().kind == Tok::kEdge || peek().kind == Tok::kArrow) {
      if (peek().kind == Tok::kArrow) fail(peek(), "'->' in an undirected graph; write links as a -- b");
      ++p_;
      if (is_keyword("subgraph") || peek().kind == Tok::kLBrace) {
        fail(peek(), "edges to or from a subgraph are not supported; list each link");
      }
      if (!is_id(peek())) fail(peek(), fmt::format("expected a node after '--', found {}", describe(peek())));
      ends.push_back(&peek());
      ++p_;
      check_port();
    }
    std::map<std::string, std::string> attrs;
    attr_lists(fmt::format("{}--{}", ends[0]->text, ends[1]->text), t, &attrs, "edge");
    for (std::size_t i = 0; i + 1 < ends.size(); ++i) {
      node(*ends[i], false);
      node(*ends[i + 1], false);
      links.push_back(RawLink{ends[i]->text, ends[i + 1]->text, t.line, attrs});
    }
  }

  void check_port() {
    if (peek().kind == Tok::kColon) fail(peek(), "node ports (name:port) are not supported");
  }

  RawNode& node(const Token& t, bool statement) {
    auto [it, fresh] = index_.emplace(t.text, nodes.size());
    if (fresh) nodes.push_back(RawNode{t.text, t.line, {}, false});
    RawNode& n = nodes[it->second];
    if (statement) {
      n.declared = true;
      if (auto [d, first] = declared_.emplace(t.text, t.line); !first) {
        throw ConfigError(fmt::format("{}:{}: node {}: duplicate name; first declared on line {}", origin_, t.line,
                                      t.text, d->second));
      }
      n.line = t.line;
    }
    return n;
  }

  // attr_lists reads [a=b, ...][...]; gradsync's own attributes go to `out` and may not be
  // unquoted numbers (Boost would keep "3" of 3e11).
  // `on`: "node" or "edge" (a statement's or a default's element), else "" (a graph's defaults).
  void attr_lists(const std::string& element, const Token& at, std::map<std::string, std::string>* out = nullptr,
                  std::string_view on = "") {
    // What a message names: "edge a--b" or "node a" as the topology's own errors do (it said
    // "element" until 2026-12-02, a new user's report), "element" where the kind is not known.
    const std::string named = fmt::format("{} {}", on.empty() ? std::string_view("element") : on, element);
    while (peek().kind == Tok::kLBracket) {
      const int opened = peek().line;
      ++p_;
      // A list that runs past its own line into trouble most likely lacks its ']': said with the
      // token that stopped it, which is on a later line.
      const auto unclosed = [&] {
        return peek().line > opened
                   ? fmt::format(" (the attribute list opened with '[' on line {} is not closed with ']')", opened)
                   : std::string();
      };
      while (peek().kind != Tok::kRBracket) {
        if (!is_id(peek()))
          fail(peek(), fmt::format("expected an attribute name, found {}{}", describe(peek()), unclosed()));
        const Token& key = peek();
        ++p_;
        if (peek().kind != Tok::kEq)
          fail(peek(),
               fmt::format("expected '=' after attribute \"{}\", found {}{}", key.text, describe(peek()), unclosed()));
        ++p_;
        const Token& value = peek();
        if (!is_id(value))
          fail(value, fmt::format("expected a value for attribute \"{}\", found {}", key.text, describe(value)));
        ++p_;
        const bool ours = std::find(detail::kNodeAttributes.begin(), detail::kNodeAttributes.end(), key.text) !=
                              detail::kNodeAttributes.end() ||
                          std::find(detail::kLinkAttributes.begin(), detail::kLinkAttributes.end(), key.text) !=
                              detail::kLinkAttributes.end();
        if (!ours) {
          if (const std::string unknown = detail::unknown_attribute(key.text); !unknown.empty())
            throw ConfigError(fmt::format("{}:{}: {}: {}", origin_, key.line,
                                          element.empty() ? std::string("defaults") : named, unknown));
        }
        // A link's attribute on a node, or a node's on a link, is a slip to name: Boost's reader would
        // drop it without a word.
        const auto& mine = on == "edge" ? detail::kLinkAttributes : detail::kNodeAttributes;
        if (ours && !on.empty() && std::find(mine.begin(), mine.end(), key.text) == mine.end()) {
          throw ConfigError(fmt::format("{}:{}: {}: attribute \"{}\" is for {}, not {}; {} takes {}", origin_, key.line,
                                        element.empty() ? fmt::format("{} defaults", on) : named, key.text,
                                        on == "edge" ? "nodes" : "links", on == "edge" ? "a link" : "a node",
                                        on == "edge" ? "a link" : "a node", fmt::join(mine, ", ")));
        }
        if (ours && value.kind == Tok::kNumeral && (value.glued || key.text != "links")) {
          throw ConfigError(fmt::format(
              "{}:{}: {}: attribute {}={} must be a quoted string with a unit, such as {}=\"{}\" (unquoted, "
              "Graphviz readers keep only the leading digits)",
              origin_, value.line, element.empty() ? std::string("defaults") : named, key.text, value.text, key.text,
              key.text == "latency" ? "150ns" : "25GBps"));
        }
        if (ours && out != nullptr) {
          // Graphviz keeps the last of a repeated attribute; a topology saying two bandwidths for
          // one link is a mistake to name, not a choice to make for the user.
          if (const auto [it, fresh] = out->emplace(key.text, value.text); !fresh) {
            throw ConfigError(fmt::format("{}:{}: {}: attribute {} given twice ({} and {}); keep one", origin_,
                                          key.line, named, key.text, it->second, value.text));
          }
        }
        if (peek().kind == Tok::kComma || peek().kind == Tok::kSemi) ++p_;
        if (peek().kind == Tok::kEnd) fail(peek(), "an attribute list '[' is never closed");
      }
      ++p_;
    }
    (void)at;
  }

  std::vector<Token> t_;
  std::size_t p_ = 0;
  int depth_ = 0;  // subgraphs open
  const std::string& origin_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_map<std::string, int> declared_;
};

}  // namespace

DotParse parse_dot(std::string_view text, const std::string& origin) {
  DotParse out;
  Parser parser(Scanner(text, origin).run(out.comment), origin);
  parser.run();
  while (!out.comment.empty() && out.comment.back() == '\n') out.comment.pop_back();
  out.nodes = std::move(parser.nodes);
  out.links = std::move(parser.links);
  return out;
}

}  // namespace gradsync::detail
