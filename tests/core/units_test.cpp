// units_test.cpp: parse_size, parse_bandwidth, parse_duration and the human_* formatters.
#include "core/units.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace gradsync {
namespace {

// expect_error checks that fn throws ConfigError whose message contains every fragment.
template <typename Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> fragments) {
  try {
    fn();
    ADD_FAILURE() << "expected ConfigError";
  } catch (const ConfigError& e) {
    for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(ParseSize, PlainNumbersAreBytes) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("18446744073709551615"), 18446744073709551615ull);
  EXPECT_EQ(parse_size(" 12 "), 12u);
}

TEST(ParseSize, DecimalAndBinaryUnits) {
  EXPECT_EQ(parse_size("25MiB"), 25u * 1024 * 1024);
  EXPECT_EQ(parse_size("1.5GB"), 1500000000u);
  EXPECT_EQ(parse_size("1KiB"), 1024u);
  EXPECT_EQ(parse_size("1kB"), 1000u);
  EXPECT_EQ(parse_size("1KB"), 1000u);
  EXPECT_EQ(parse_size("2GiB"), 2147483648u);
  EXPECT_EQ(parse_size("1TiB"), 1099511627776u);
  EXPECT_EQ(parse_size("1PB"), 1000000000000000u);
  EXPECT_EQ(parse_size("8B"), 8u);
  EXPECT_EQ(parse_size("0.5KiB"), 512u);
  EXPECT_EQ(parse_size("1e3B"), 1000u);
  EXPECT_EQ(parse_size("0.1GB"), 100000000u);
  EXPECT_EQ(parse_size("25 MiB"), 25u * 1024 * 1024);
}

TEST(ParseSize, BadForms) {
  expect_error([] { parse_size(""); }, {"size \"\"", "empty"});
  expect_error([] { parse_size("   "); }, {"empty"});
  expect_error([] { parse_size("-1MiB"); }, {"size \"-1MiB\" must be >= 0"});
  expect_error([] { parse_size("1e"); }, {"size \"1e\"", "exponent without digits"});
  expect_error([] { parse_size("10 parsecs"); }, {"size \"10 parsecs\"", "unknown unit \"parsecs\"", "MiB"});
  expect_error([] { parse_size("MiB"); }, {"does not start with a number"});
  expect_error([] { parse_size("1.3B"); }, {"not a whole number of bytes"});
  expect_error([] { parse_size("20000000000000000000"); }, {"too large"});
  expect_error([] { parse_size("1e30B"); }, {"too large"});
  expect_error([] { parse_size("1e999"); }, {"out of range"});
  // Units are case-sensitive; one that differs only in case is named, not guessed.
  expect_error([] { parse_size("25mib"); }, {"unknown unit \"mib\" (units are case-sensitive: MiB);"});
  expect_error([] { parse_size("25mb"); }, {"unknown unit \"mb\" (units are case-sensitive: MB);"});
  EXPECT_EQ(size_unit_case_hint("25 kib"), " (units are case-sensitive: KiB)");
  EXPECT_EQ(size_unit_case_hint("25MiB"), "");
  EXPECT_EQ(size_unit_case_hint("25 parsecs"), "");
  EXPECT_EQ(size_unit_case_hint("mib"), "");
  expect_error([] { parse_size("25MiBps"); }, {"unknown unit"});
  expect_error([] { parse_size("."); }, {"does not start with a number"});
  expect_error([] { parse_size("1..2B"); }, {"unknown unit"});
  expect_error([] { parse_size("nan"); }, {"does not start with a number"});
  expect_error([] { parse_size("inf"); }, {"does not start with a number"});
}

TEST(ParseBandwidth, BytesAndBits) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("300GBps"), 300e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("200Gbps"), 25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25GiBps"), 25.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12.5GB/s"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Mbps"), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1Bps"), 1.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8bps"), 1.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1kBps"), 1e3);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1TBps"), 1e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth("2.5e1GBps"), 25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400 Gbps"), 50e9);
}

TEST(ParseBandwidth, BadForms) {
  expect_error([] { parse_bandwidth("-5GBps"); }, {"bandwidth \"-5GBps\" must be > 0"});
  expect_error([] { parse_bandwidth("0GBps"); }, {"bandwidth \"0GBps\" must be > 0"});
  // A number with an unknown unit, not a zero bandwidth (a hex-looking value: the number is 0, the unit "x10GBps").
  expect_error([] { parse_bandwidth("0x10GBps"); }, {"has unknown unit \"x10GBps\""});
  expect_error([] { parse_bandwidth("300"); }, {"bandwidth \"300\" has no unit"});
  expect_error([] { parse_bandwidth("300GB"); }, {"unknown unit \"GB\""});
  expect_error([] { parse_bandwidth("10 parsecs"); }, {"unknown unit \"parsecs\""});
  expect_error([] { parse_bandwidth(""); }, {"bandwidth \"\" is empty"});
  expect_error([] { parse_bandwidth("1e"); }, {"exponent without digits"});
  expect_error([] { parse_bandwidth("1e400GBps"); }, {"out of range; expected a number of at most 1.79769e+308"});
  expect_error([] { parse_bandwidth("1e300PBps"); }, {"out of range; the most is 1.79769e+308 B/s"});
  expect_error([] { parse_bandwidth("5XBps"); }, {"unknown unit \"XBps\""});
  expect_error([] { parse_bandwidth("5ps"); }, {"unknown unit \"ps\""});
}

TEST(ParseDuration, Units) {
  EXPECT_DOUBLE_EQ(parse_duration("1us"), 1e-6);
  EXPECT_DOUBLE_EQ(parse_duration("1\xC2\xB5s"), 1e-6);
  EXPECT_DOUBLE_EQ(parse_duration("2.5ms"), 2.5e-3);
  EXPECT_DOUBLE_EQ(parse_duration("30s"), 30.0);
  EXPECT_DOUBLE_EQ(parse_duration("700ns"), 700e-9);
  EXPECT_DOUBLE_EQ(parse_duration("10min"), 600.0);
  EXPECT_DOUBLE_EQ(parse_duration("1h"), 3600.0);
  EXPECT_DOUBLE_EQ(parse_duration("0s"), 0.0);
}

TEST(ParseDuration, BadForms) {
  expect_error([] { parse_duration("5"); }, {"duration \"5\" has no unit", "ns, us, ms, s"});
  expect_error([] { parse_duration("-1us"); }, {"duration \"-1us\" must be >= 0"});
  expect_error([] { parse_duration("10 parsecs"); }, {"unknown unit \"parsecs\""});
  expect_error([] { parse_duration(""); }, {"empty"});
  expect_error([] { parse_duration("1e"); }, {"exponent without digits"});
  expect_error([] { parse_duration("1e400s"); }, {"out of range; expected a number of at most 1.79769e+308"});
  expect_error([] { parse_duration("1e307h"); }, {"out of range; the most is 1.79769e+308 s"});
  expect_error([] { parse_duration("3 sec"); }, {"unknown unit \"sec\""});
}

TEST(Human, Bytes) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(1024), "1.00 KiB");
  EXPECT_EQ(human_bytes(25.0 * kMiB), "25.0 MiB");
  EXPECT_EQ(human_bytes(124439808.0 * 4), "475 MiB");
  EXPECT_EQ(human_bytes(1.5 * kGiB), "1.50 GiB");
}

TEST(Human, BandwidthAndDuration) {
  EXPECT_EQ(human_bandwidth(300e9), "300 GB/s");
  EXPECT_EQ(human_bandwidth(12.5e9), "12.5 GB/s");
  EXPECT_EQ(human_bandwidth(999), "999 B/s");
  EXPECT_EQ(human_duration(8.4e-6), "8.40 us");
  EXPECT_EQ(human_duration(0.0123), "12.3 ms");
  EXPECT_EQ(human_duration(1.05), "1.05 s");
  EXPECT_EQ(human_duration(0), "0 s");
  EXPECT_EQ(human_duration(5e-9), "5.00 ns");
}

}  // namespace
}  // namespace gradsync
