// seq_expr_test.cpp: expressions in the sequence length T.
#include "models/seq_expr.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace gradsync {
namespace {

TEST(SeqExpr, ParsesAndEvaluates) {
  EXPECT_EQ(SeqExpr::parse("768").eval(1024), 768);
  EXPECT_EQ(SeqExpr::parse("T").eval(1024), 1024);
  EXPECT_EQ(SeqExpr::parse("50257*T").eval(1024), 51463168);
  EXPECT_EQ(SeqExpr::parse("768*T+768").eval(512), 393984);
  EXPECT_EQ(SeqExpr::parse("4*T*T").eval(8), 256);
  EXPECT_EQ(SeqExpr::parse("(T+1)*(T-1)").eval(10), 99);
  EXPECT_EQ(SeqExpr::parse(" 2 * T ").eval(3), 6);
}

TEST(SeqExpr, CanonicalText) {
  EXPECT_EQ(SeqExpr::parse("768+T*768").to_string(), "768*T+768");
  EXPECT_EQ(SeqExpr::parse("T*T-T").to_string(), "T*T-T");
  EXPECT_EQ(SeqExpr::parse("0*T").to_string(), "0");
  EXPECT_FALSE(SeqExpr::parse("0*T+5").depends_on_t());
  EXPECT_TRUE(SeqExpr::parse("T").depends_on_t());
}

TEST(SeqExpr, BadText) {
  EXPECT_THROW(SeqExpr::parse(""), ConfigError);
  EXPECT_THROW(SeqExpr::parse("3*"), ConfigError);
  EXPECT_THROW(SeqExpr::parse("3x"), ConfigError);
  EXPECT_THROW(SeqExpr::parse("(3"), ConfigError);
  EXPECT_THROW(SeqExpr::parse("99999999999999999999"), ConfigError);
  EXPECT_THROW(SeqExpr::parse("4611686018427387904*4").eval(1), ConfigError);
  try {
    SeqExpr::parse("3 + S");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "expression \"3 + S\": unexpected 'S' at character 5; expected an integer, T or (");
  }
  // Each error says what could stand where it stopped: an operand, an operator, a ')'; a leading
  // minus is no operand (sizes and counts are not negative).
  const auto message = [](std::string_view text) {
    try {
      (void)SeqExpr::parse(text);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("-1"),
            "expression \"-1\": unexpected '-' at character 1; expected an integer, T or ( (counts and sizes are not "
            "negative)");
  EXPECT_EQ(message("3x"), "expression \"3x\": unexpected 'x' at character 2; expected +, -, * or the end");
  EXPECT_EQ(message("(3*T"), "expression \"(3*T\": missing ')' at character 5; expected +, -, * or )");
  EXPECT_EQ(message("3*"), "expression \"3*\": missing operand at character 3; expected an integer, T or (");
  // Nesting is bounded (a file's 50,000 levels exhausted the stack), and a long expression is
  // quoted by its start and length.
  EXPECT_EQ(SeqExpr::parse(std::string(100, '(') + "T" + std::string(100, ')')).eval(7), 7);
  const std::string deep = std::string(50000, '(') + "1" + std::string(50000, ')');
  EXPECT_EQ(message(deep), "expression \"" + std::string(60, '(') +
                               "...\" (100001 characters): parentheses nested more than 100 deep at character 101; "
                               "expected an expression of fewer levels");
}

}  // namespace
}  // namespace gradsync
