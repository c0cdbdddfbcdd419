// text_test.cpp: edit_distance and NearestName, the "did you mean" hints of every reader.
#include "core/text.hpp"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);  // two substitutions and one insertion
  EXPECT_EQ(edit_distance("bucket_cap_mb", "bucket_cap_md"), 1u);
  EXPECT_EQ(edit_distance("nvlink", ""), 6u);
  EXPECT_EQ(edit_distance("ab", "ba"), 2u);  // a transposition is two edits, as Levenshtein counts
}

TEST(NearestName, NamesTheNearestCandidateWithinTwoEdits) {
  NearestName n("bandwith");
  n.consider("latency");
  n.consider("bandwidth");
  EXPECT_EQ(n.name(), "bandwidth");
  EXPECT_EQ(n.hint(), " (did you mean \"bandwidth\"?)");
}

TEST(NearestName, SaysNothingBeyondTwoEdits) {
  NearestName n("gpus");
  n.consider("sockets");
  n.consider("gpu_kind_x");
  EXPECT_EQ(n.name(), "");
  EXPECT_EQ(n.hint(), "");
}

TEST(NearestName, KeepsTheFirstOfEquallyNearOnesAndShowsTheGivenName) {
  NearestName n("abc");
  n.consider("abd", "first");
  n.consider("abe", "second");  // also one edit away: not nearer
  EXPECT_EQ(n.name(), "first");
  n.consider("abc", "exact");
  EXPECT_EQ(n.name(), "exact");
}

}  // namespace
}  // namespace gradsync
