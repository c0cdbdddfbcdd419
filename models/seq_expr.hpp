// seq_expr.hpp: an integer that may depend on the sequence length T, as model files write it:
// "768", "T", "50257*T", "768*T+768", "4*T*T". Held as a polynomial in T with integer coefficients.
//
//   SeqExpr e = SeqExpr::parse("768*T+768");
//   e.eval(1024) == 787200;   e.to_string() == "768*T+768"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gradsync {

// SeqExpr is sum_i coef[i] * T^i.
class SeqExpr {
 public:
  SeqExpr() = default;
  // SeqExpr(c) is the constant c.
  explicit SeqExpr(std::int64_t c);

  // variable is the polynomial T itself.
  static SeqExpr variable();

  // parse reads integers, T, +, -, * and parentheses. Throws ConfigError naming the text.
  static SeqExpr parse(std::string_view text);

  // eval computes the value for sequence length t; ConfigError on overflow.
  std::int64_t eval(std::int64_t t) const;
  // depends_on_t is true when any coefficient of T^1 or higher is non-zero.
  bool depends_on_t() const;
  // to_string writes the canonical form: highest power first, "768*T+768".
  std::string to_string() const;

  SeqExpr operator+(const SeqExpr& o) const;
  SeqExpr operator-(const SeqExpr& o) const;
  SeqExpr operator*(const SeqExpr& o) const;
  bool operator==(const SeqExpr& o) const = default;

 private:
  void trim();
  std::vector<std::int64_t> coef_;  // coef_[i] multiplies T^i; empty means 0
};

}  // namespace gradsync
