// table_test.cpp: the nccl-tests-style table, input paired with its exact output.
#include "reports/table.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/text.hpp"

namespace gradsync::reports {
namespace {

TEST(Table, HeaderNamesUnitsAndAlignedRows) {
  Table t({{"strategy", ""}, {"step", "ms"}, {"samples/s", "1/s"}});
  t.add_row({"dp", "412.3", "310.4"});
  t.add_row({"ddp", "98.1", "1304.9"});
  std::ostringstream out;
  t.print(out, {"gradsync compare: gpt2 on dgx-a100, 8 GPUs"});
  EXPECT_EQ(out.str(),
            "# gradsync compare: gpt2 on dgx-a100, 8 GPUs\n"
            "#\n"
            "# strategy   step  samples/s\n"
            "#              ms        1/s\n"
            "        dp  412.3      310.4\n"
            "       ddp   98.1     1304.9\n");
}

TEST(Table, NoHeaderLines) {
  Table t(std::vector<Column>{{"a", "B"}});
  t.add_row({"12345"});
  std::ostringstream out;
  t.print(out);
  EXPECT_EQ(out.str(), "#     a\n#     B\n  12345\n");
}

// Columns line up on screen: a cell is padded by the columns it takes, not its bytes ("œ" and "é"
// are two bytes and one column each, "节" three bytes and two columns).
TEST(Table, UnicodeCellsAreAlignedByColumns) {
  Table t({{"host", "", true}, {"gpus", ""}});
  t.add_row({"nœud-é", "2"});
  t.add_row({"节点0", "8"});
  t.add_row({"n1", "4"});
  std::ostringstream out;
  t.print(out);
  EXPECT_EQ(out.str(),
            "# host    gpus\n"
            "#\n"
            "  nœud-é     2\n"
            "  节点0      8\n"
            "  n1         4\n");
  EXPECT_EQ(display_width("nœud-é"), 6u);
  EXPECT_EQ(display_width("节点0"), 5u);
  EXPECT_EQ(display_width(""), 0u);
}

TEST(Table, RowWithWrongCellCountIsRejected) {
  Table t({{"a", ""}, {"b", ""}});
  EXPECT_THROW(t.add_row({"1"}), std::invalid_argument);
}

}  // namespace
}  // namespace gradsync::reports

namespace gradsync::reports {
namespace {

TEST(Table, LeftAlignedColumns) {
  Table t({{"key", "", true}, {"n", "B"}});
  t.add_row({"ab", "1"});
  t.add_row({"abcd", "100"});
  std::ostringstream out;
  t.print(out);
  EXPECT_EQ(out.str(), "# key     n\n#         B\n  ab      1\n  abcd  100\n");
}

}  // namespace
}  // namespace gradsync::reports
