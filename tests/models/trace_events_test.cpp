// trace_events_test.cpp: a Chrome trace read event by event (read_trace_events) hands over each
// element of the event list whole, in order and with its index, and says what the document is.
#include "models/trace_events.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace gradsync {
namespace {

using json = nlohmann::json;

struct Seen {
  std::vector<json> events;
  std::vector<std::size_t> indices;
};

TraceShape read(const std::string& text, Seen& seen) {
  return read_trace_events(text, [&](const json& e, std::size_t i) {
    seen.events.push_back(e);
    seen.indices.push_back(i);
  });
}

TEST(TraceEvents, EachEventWholeInOrderWithItsIndex) {
  Seen seen;
  const std::string text = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
    "traceEvents": [
      {"name": "a", "ph": "X", "args": {"correlation": 7, "dims": [[1, 2], []]}},
      3,
      {"name": "b", "ph": "X", "ts": 1.5, "flag": true, "none": null},
      {"name": "c", "args": {}}
    ], "displayTimeUnit": "ms"})";
  const TraceShape shape = read(text, seen);
  EXPECT_TRUE(shape.root_object);
  EXPECT_TRUE(shape.event_list);
  ASSERT_TRUE(shape.device_properties);
  EXPECT_EQ((*shape.device_properties)[0]["name"], "NVIDIA H200");
  ASSERT_EQ(seen.events.size(), 4u);
  EXPECT_EQ(seen.indices, (std::vector<std::size_t>{0, 1, 2, 3}));
  // Each as json::parse builds it: nested objects and lists.
  EXPECT_EQ(seen.events[0],
            json::parse(R"({"name": "a", "ph": "X", "args": {"correlation": 7, "dims": [[1, 2], []]}})"));
  EXPECT_EQ(seen.events[1], json(3));
  EXPECT_EQ(seen.events[2], json::parse(R"({"name": "b", "ph": "X", "ts": 1.5, "flag": true, "none": null})"));
  EXPECT_EQ(seen.events[3], json::parse(R"({"name": "c", "args": {}})"));
}

// A key given twice in an object that is read is an error naming the key and where it is; json::parse
// would keep the last, so a trace with two "dur" would be read as one of them, unsaid.
TEST(TraceEvents, AKeyGivenTwiceIsAnError) {
  const auto duplicate = [](const std::string& text) -> std::optional<TraceDuplicateKey> {
    Seen seen;
    try {
      (void)read(text, seen);
    } catch (const TraceDuplicateKey& e) {
      return e;
    }
    return std::nullopt;
  };
  const auto in_event = duplicate(R"({"traceEvents": [{"name": "a"}, {"name": "b", "dur": 1, "dur": 2}]})");
  ASSERT_TRUE(in_event);
  EXPECT_EQ(in_event->key, "dur");
  EXPECT_EQ(in_event->event, std::optional<std::size_t>(1));
  const auto nested = duplicate(R"([{"name": "a", "args": {"External id": 3, "External id": 4}}])");
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->key, "External id");
  EXPECT_EQ(nested->event, std::optional<std::size_t>(0));
  const auto top = duplicate(R"({"traceEvents": [], "traceEvents": [{"name": "a"}]})");
  ASSERT_TRUE(top);
  EXPECT_FALSE(top->event);
  EXPECT_EQ(top->where, "the top level");
  const auto properties = duplicate(R"({"deviceProperties": [{"id": 0, "id": 1}], "traceEvents": []})");
  ASSERT_TRUE(properties);
  EXPECT_EQ(properties->where, "deviceProperties");
  // The same key in two objects, or in an object the reader skips, is no error.
  EXPECT_FALSE(duplicate(R"({"traceEvents": [{"name": "a"}, {"name": "b"}], "other": {"x": 1, "x": 2}})"));
}

TEST(TraceEvents, ABareListAndDocumentsWithoutOne) {
  Seen list;
  const TraceShape bare = read(R"([{"name": "x"}, {"name": "y"}])", list);
  EXPECT_TRUE(bare.root_array);
  EXPECT_FALSE(bare.root_object);
  EXPECT_EQ(list.events.size(), 2u);
  Seen none;
  EXPECT_FALSE(read(R"({"traceEvents": {"name": "x"}})", none).event_list);  // not a list
  EXPECT_FALSE(read(R"({"other": [{"name": "x"}]})", none).event_list);
  const TraceShape scalar = read("42", none);
  EXPECT_FALSE(scalar.root_object || scalar.root_array);
  EXPECT_TRUE(none.events.empty());
}

TEST(TraceEvents, ErrorsAreNlohmannsOwn) {
  Seen seen;
  try {
    read(R"({"traceEvents": [{"name": "x"},)", seen);
    FAIL() << "a truncated document was read";
  } catch (const json::parse_error& e) {
    EXPECT_GT(e.byte, 0u);  // where it ended, for the caller's line and column
  }
  EXPECT_THROW(read(R"([{"ts": 1e400}])", seen), json::out_of_range);
}

}  // namespace
}  // namespace gradsync
