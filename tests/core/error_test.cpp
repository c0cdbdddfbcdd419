// error_test.cpp: the Error hierarchy and its exit codes.
#include "core/error.hpp"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

TEST(Error, ExitCodesFollowTheKind) {
  EXPECT_EQ(ConfigError("x").exit_code(), kExitRuntime);
  EXPECT_EQ(RuntimeError("x").exit_code(), kExitRuntime);
  EXPECT_EQ(UsageError("x").exit_code(), kExitUsage);
}

TEST(Error, ChildrenAreCaughtAsError) {
  try {
    throw UsageError("--gpus \"0\" must be >= 1");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--gpus \"0\" must be >= 1");
    EXPECT_EQ(e.exit_code(), 2);
  }
}

// A value quoted into a message keeps the whole message: a NUL no longer ends what() early, and an
// escape sequence is written out rather than sent to the terminal; newlines, tabs and UTF-8 stay.
TEST(Error, ControlCharactersAreWrittenOut) {
  const std::string value("res\0net\x1b[31m\x7f", 13);
  const ConfigError e("model \"" + value + "\": expected a name\n\tor a file \xc3\xa9");
  EXPECT_STREQ(e.what(), "model \"res\\x00net\\x1b[31m\\x7f\": expected a name\n\tor a file \xc3\xa9");
  // Written out once: a message rethrown with a prefix stays as it was.
  EXPECT_STREQ(DataError(std::string("f.yaml:1: ") + e.what()).what(), (std::string("f.yaml:1: ") + e.what()).c_str());
}

TEST(Error, BytesThatAreNotUtf8AreWrittenOut) {
  // 0xff is never UTF-8; a lone continuation byte, a lead byte cut short, an overlong form and a
  // surrogate are not characters either; é, 节 and 😀 are kept.
  const ConfigError e("model \"res\xffnet\x80 \xc3 \xc0\xaf \xed\xa0\x80 \xc3\xa9 \xe8\x8a\x82 \xf0\x9f\x98\x80\"");
  EXPECT_STREQ(e.what(),
               "model \"res\\xffnet\\x80 \\xc3 \\xc0\\xaf \\xed\\xa0\\x80 \xc3\xa9 \xe8\x8a\x82 \xf0\x9f\x98\x80\"");
}

// A bidirectional control is written out as \uNNNN: U+202E would turn the rest of the terminal's
// line around; other characters, even right-to-left letters, stay as they are.
TEST(Error, BidirectionalControlsAreWrittenOut) {
  const ConfigError e("model \"mlp\u202eevil\" \u2066x\u2069 \u05d0");
  EXPECT_STREQ(e.what(), "model \"mlp\\u202eevil\" \\u2066x\\u2069 \u05d0");
  EXPECT_TRUE(has_bidi_control("a\u200fb"));
  EXPECT_FALSE(has_bidi_control("caf\u00e9"));
  EXPECT_EQ(first_bad_utf8("caf\xe9!"), 3U);
  EXPECT_EQ(first_bad_utf8("caf\u00e9!"), std::string_view::npos);
}

}  // namespace
}  // namespace gradsync
