// seq_expr.cpp: polynomials in the sequence length T (see seq_expr.hpp).
#include "models/seq_expr.hpp"

#include <fmt/format.h>

#include <limits>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace gradsync {
namespace {

// Parser is a recursive-descent reader of: expr = term (('+'|'-') term)*;
// term = factor ('*' factor)*; factor = integer | 'T' | '(' expr ')'.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  SeqExpr parse() {
    SeqExpr e = expr();
    skip_space();
    if (pos_ != text_.size()) fail(fmt::format("unexpected '{}'", text_[pos_]), "+, -, * or the end");
    return e;
  }

 private:
  // fail: what is wrong where, and what could stand there (expressions hold integers, T, +, -, *
  // and parentheses).
  [[noreturn]] void fail(const std::string& what, std::string_view expected) const {
    // A long expression is quoted by its start and length, not echoed whole.
    const std::string shown = text_.size() <= 80
                                  ? std::string(text_)
                                  : fmt::format("{}...\" ({} characters", text_.substr(0, 60), text_.size());
    throw ConfigError(fmt::format("expression \"{}{}: {} at character {}; expected {}", shown,
                                  text_.size() <= 80 ? "\"" : ")", what, pos_ + 1, expected));
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  SeqExpr expr() {
    SeqExpr e = term();
    for (;;) {
      skip_space();
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) {
        const char op = text_[pos_++];
        SeqExpr rhs = term();
        e = op == '+' ? e + rhs : e - rhs;
      } else {
        return e;
      }
    }
  }
  SeqExpr term() {
    SeqExpr e = factor();
    for (;;) {
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == '*') {
        ++pos_;
        e = e * factor();
      } else {
        return e;
      }
    }
  }
  SeqExpr factor() {
    skip_space();
    constexpr std::string_view kOperand = "an integer, T or (";
    if (pos_ >= text_.size()) fail("missing operand", kOperand);
    const char c = text_[pos_];
    if (c == 'T') {
      ++pos_;
      return SeqExpr(0) + SeqExpr::variable();
    }
    if (c == '(') {
      // Each parenthesis is a level of this recursive parser: a bound keeps a file's nesting from
      // exhausting the stack (50,000 levels did).
      if (++depth_ > kMaxDepth)
        fail(fmt::format("parentheses nested more than {} deep", kMaxDepth), "an expression of fewer levels");
      ++pos_;
      SeqExpr e = expr();
      --depth_;
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ')') fail("missing ')'", "+, -, * or )");
      ++pos_;
      return e;
    }
    if (c >= '0' && c <= '9') {
      std::int64_t v = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        const int d = text_[pos_++] - '0';
        if (v > (std::numeric_limits<std::int64_t>::max() - d) / 10) fail("number too large", "at most 2^63 - 1");
        v = v * 10 + d;
      }
      return SeqExpr(v);
    }
    // A leading minus is no operand: counts and sizes are never negative.
    if (c == '-') fail("unexpected '-'", "an integer, T or ( (counts and sizes are not negative)");
    fail(fmt::format("unexpected '{}'", c), kOperand);
  }

  static constexpr int kMaxDepth = 100;
  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

std::int64_t checked_mul(std::int64_t a, std::int64_t b) { return gradsync::checked_mul(a, b, "expression"); }
std::int64_t checked_add(std::int64_t a, std::int64_t b) { return gradsync::checked_add(a, b, "expression"); }

}  // namespace

SeqExpr::SeqExpr(std::int64_t c) : coef_{c} { trim(); }

SeqExpr SeqExpr::variable() {
  SeqExpr e;
  e.coef_ = {0, 1};
  return e;
}

SeqExpr SeqExpr::parse(std::string_view text) {
  if (text.empty()) throw ConfigError("expression \"\" is empty; expected e.g. 768 or 768*T");
  return Parser(text).parse();
}

void SeqExpr::trim() {
  while (!coef_.empty() && coef_.back() == 0) coef_.pop_back();
}

std::int64_t SeqExpr::eval(std::int64_t t) const {
  std::int64_t v = 0;
  for (std::size_t i = coef_.size(); i-- > 0;) v = checked_add(checked_mul(v, t), coef_[i]);
  return v;
}

bool SeqExpr::depends_on_t() const { return coef_.size() > 1; }

std::string SeqExpr::to_string() const {
  if (coef_.empty()) return "0";
  std::string s;
  for (std::size_t i = coef_.size(); i-- > 0;) {
    const std::int64_t c = coef_[i];
    if (c == 0) continue;
    std::string power;
    for (std::size_t k = 0; k < i; ++k) power += k == 0 ? "T" : "*T";
    std::string term;
    if (i == 0) {
      term = std::to_string(c < 0 ? -c : c);
    } else {
      term = (c == 1 || c == -1) ? power : fmt::format("{}*{}", c < 0 ? -c : c, power);
    }
    if (s.empty()) {
      s = (c < 0 ? "-" : "") + term;
    } else {
      s += (c < 0 ? "-" : "+") + term;
    }
  }
  return s;
}

SeqExpr SeqExpr::operator+(const SeqExpr& o) const {
  SeqExpr r;
  r.coef_.assign(std::max(coef_.size(), o.coef_.size()), 0);
  for (std::size_t i = 0; i < coef_.size(); ++i) r.coef_[i] = checked_add(r.coef_[i], coef_[i]);
  for (std::size_t i = 0; i < o.coef_.size(); ++i) r.coef_[i] = checked_add(r.coef_[i], o.coef_[i]);
  r.trim();
  return r;
}

SeqExpr SeqExpr::operator-(const SeqExpr& o) const { return *this + o * SeqExpr(-1); }

SeqExpr SeqExpr::operator*(const SeqExpr& o) const {
  SeqExpr r;
  if (coef_.empty() || o.coef_.empty()) return r;
  r.coef_.assign(coef_.size() + o.coef_.size() - 1, 0);
  for (std::size_t i = 0; i < coef_.size(); ++i) {
    for (std::size_t j = 0; j < o.coef_.size(); ++j) {
      r.coef_[i + j] = checked_add(r.coef_[i + j], checked_mul(coef_[i], o.coef_[j]));
    }
  }
  r.trim();
  return r;
}

}  // namespace gradsync
