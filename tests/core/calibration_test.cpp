// calibration_test.cpp: calibration tables (the fit between points, below and past them) and
// calibration.yaml written and read back, with its errors.
#include "core/calibration.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/error.hpp"

namespace gradsync {
namespace {

CalibrationTable table() {
  CalibrationTable t;
  t.points = {{1000, 10e-6}, {1e6, 20e-6}, {1e8, 1020e-6}};
  return t;
}

TEST(CalibrationTable, LinearBetweenPointsLatencyBelowAndLastSlopeBeyond) {
  const CalibrationTable t = table();
  EXPECT_DOUBLE_EQ(t.time(1000), 10e-6);
  EXPECT_DOUBLE_EQ(t.time(1e6), 20e-6);
  // Halfway between 1e6 and 1e8 (10 us per 1e6 bytes... 1000 us over 99e6 bytes).
  EXPECT_NEAR(t.time(50.5e6), 520e-6, 1e-12);
  EXPECT_DOUBLE_EQ(t.time(10), 10e-6);         // below the smallest: its time
  EXPECT_NEAR(t.time(199e6), 2020e-6, 1e-12);  // past the largest: the last segment goes on
  EXPECT_EQ(t.time(0), 0.0);
  // A table that stayed latency-bound (flat, as a memory sweep that stopped at 64 KiB) holds no
  // rate to carry on: past it the time grows in proportion from its last point.
  CalibrationTable flat;
  flat.points = {{1024, 2.6e-6}, {65536, 2.7e-6}};
  EXPECT_NEAR(flat.time(65536 * 1000.0), 2.7e-3, 1e-15);
  EXPECT_DOUBLE_EQ(flat.time(32768), 2.6e-6 + (32768 - 1024) * (0.1e-6 / (65536 - 1024)));
  const auto seg = t.segments();
  ASSERT_EQ(seg.size(), 2u);
  EXPECT_NEAR(seg[1].rate, 99e6 / 1000e-6, 1.0);  // bytes per second along the last segment
  EXPECT_NEAR(seg[1].latency_s + 1e8 / seg[1].rate, 1020e-6, 1e-12);
}

// write: text in a file of this test's own (ctest runs the tests of this file side by side, so a
// shared name let one test read another's file).
std::string write(const std::string& text) {
  const std::string path = testing::TempDir() + "/calibration_test-" +
                           testing::UnitTest::GetInstance()->current_test_info()->name() + "-" +
                           std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(Calibration, WrittenFileReadsBackTheSamePoints) {
  Calibration c;
  c.backend = "gpu";
  c.host = "node\"1";
  c.device = "Some CPU";
  c.library = "Open MPI v4.1.4, OpenBLAS 0.3.21";
  c.ranks = 2;
  c.precision = "bf16";
  c.launch_s = 1.5e-6;
  c.compute[OpKind::kMatmul] = table();
  c.compute[OpKind::kMemory] = table();
  c.host_copy = table();
  c.collectives.push_back({Collective::kAllreduce, 2, "shm", table()});
  const Calibration back = read_calibration(write(calibration_yaml(c)));
  EXPECT_EQ(back.backend, "gpu");
  EXPECT_EQ(back.host, "node\"1");
  EXPECT_EQ(back.ranks, 2);
  EXPECT_EQ(back.precision, "bf16");
  EXPECT_DOUBLE_EQ(back.launch_s, 1.5e-6);
  ASSERT_EQ(back.collectives.size(), 1u);
  EXPECT_EQ(back.collectives[0].link_class, "shm");
  EXPECT_EQ(back.collectives[0].table.points, table().points);
  EXPECT_EQ(back.compute.at(OpKind::kMatmul).points, table().points);
  EXPECT_TRUE(back.peer_copy.points.empty());
  EXPECT_DOUBLE_EQ(*back.collective_time(Collective::kAllreduce, 2, 1e6), 20e-6);
  EXPECT_FALSE(back.collective_time(Collective::kAllreduce, 4, 1e6).has_value());
  EXPECT_FALSE(back.collective_time(Collective::kBroadcast, 2, 1e6).has_value());
  EXPECT_DOUBLE_EQ(*back.compute_time(OpKind::kMatmul, 1e6, 0), 20e-6);
  EXPECT_FALSE(back.compute_time(OpKind::kConv, 1e6, 0).has_value());
  EXPECT_DOUBLE_EQ(*back.compute_time(OpKind::kConv, 0, 1e6), 20e-6);  // no FLOPs: memory-bound
}

// Schema 2 says which data type the GEMM tables were timed in; schema 1 files (no such field) come
// from the calibrate that always timed fp32 GEMMs, and read as fp32.
TEST(Calibration, PrecisionOfTheGemmTables) {
  const std::string rest = "launch_s: 1e-6\ncompute: {}\ncollectives: []\n";
  EXPECT_EQ(parse_calibration("schema_version: 1\nhardware: {backend: gpu, host: h, device: d, ranks: 1}\n" + rest,
                              "old.yaml")
                .precision,
            "fp32");
  EXPECT_EQ(parse_calibration(
                "schema_version: 2\nhardware: {backend: gpu, host: h, device: d, ranks: 1, precision: fp16}\n" + rest,
                "new.yaml")
                .precision,
            "fp16");
  const auto error = [&](const std::string& hw, int schema) {
    try {
      parse_calibration(fmt::format("schema_version: {}\nhardware: {}\n{}", schema, hw, rest), "cal.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error("{backend: gpu, host: h, device: d, ranks: 1}", 2).find("precision"), std::string::npos);
  const std::string bad = error("{backend: gpu, host: h, device: d, ranks: 1, precision: int8}", 2);
  EXPECT_NE(bad.find("cal.yaml:2"), std::string::npos) << bad;
  EXPECT_NE(bad.find("precision \"int8\": expected fp32, tf32, bf16 or fp16"), std::string::npos) << bad;
  // calibrate on CPUs times fp32 only: a CPU file of another type was edited.
  const std::string cpu16 = error("{backend: cpu, host: h, device: d, ranks: 1, precision: bf16}", 2);
  EXPECT_NE(cpu16.find("cal.yaml:2"), std::string::npos) << cpu16;
  EXPECT_NE(cpu16.find("precision \"bf16\" with backend cpu: the CPU backend computes in fp32 only"), std::string::npos)
      << cpu16;
  EXPECT_NE(error("{backend: gpu, host: h, device: d, ranks: 1, precision: bf16}", 1).find("precision"),
            std::string::npos);  // schema 1 knows no such key
  EXPECT_NE(error("{backend: gpu, host: h, device: d, ranks: 1, precision: bf16}", 4).find("expected 1, 2 or 3"),
            std::string::npos);
}

// Schema 3 files end with `end: true`: one cut short anywhere before it (here inside the last
// collective's points, which still parse as YAML) is refused, naming the file's last line.
TEST(Calibration, AFileCutShortIsRefused) {
  Calibration c;
  c.backend = "gpu";
  c.host = "h";
  c.device = "d";
  c.ranks = 2;
  c.launch_s = 1e-6;
  c.collectives.push_back({Collective::kAllreduce, 2, "nvlink", table()});
  c.collectives.push_back({Collective::kAllgather, 2, "nvlink", table()});
  const std::string text = calibration_yaml(c);
  EXPECT_EQ(parse_calibration(text, "cal.yaml").collectives.size(), 2u);
  const std::size_t cut = text.rfind("  - [");  // the last point's line
  ASSERT_NE(cut, std::string::npos);
  const std::string shorter = text.substr(0, cut);
  try {
    parse_calibration(shorter, "cal.yaml");
    FAIL() << "a calibration cut short was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    const auto lines = std::count(shorter.begin(), shorter.end(), '\n') + 1;
    EXPECT_NE(what.find(fmt::format("cal.yaml:{}: the file ends without its last line `end: true`", lines)),
              std::string::npos)
        << what;
  }
  std::string wrong = text;
  wrong.replace(wrong.rfind("end: true"), 9, "end: 1");
  try {
    parse_calibration(wrong, "cal.yaml");
    FAIL() << "end: 1 was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("end \"1\": expected true"), std::string::npos) << e.what();
  }
}

TEST(Calibration, ErrorsNameTheFileLineAndField) {
  const std::string head =
      "schema_version: 1\nhardware: {backend: cpu, host: h, device: d, ranks: 2}\nlaunch_s: 1e-6\ncompute: {}\n";
  const std::string path =
      write(head + "collectives:\n  - op: allreduce\n    ranks: 2\n    points: [[8, 1e-5], [4, 2e-5]]\n");
  try {
    read_calibration(path);
    FAIL() << "decreasing sizes accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":8"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("size 4 is not larger than the previous 8"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_calibration(write(head + "collectives:\n  - {op: allscatter, ranks: 2, points: [[8, 1]]}\n")),
               ConfigError);
  EXPECT_THROW(read_calibration(write(head + "collectives:\n  - {op: allreduce, ranks: 2, points: [[8, -1]]}\n")),
               ConfigError);
  EXPECT_THROW(read_calibration(write("schema_version: 1\nhardware: {backend: tpu, host: h, device: d, ranks: 1}\n")),
               ConfigError);
  EXPECT_THROW(read_calibration(testing::TempDir() + "/no-such-calibration.yaml"), ConfigError);
  // A zero time and a second table for the same collective and ranks are refused, located.
  const auto error = [](const std::string& text) {
    try {
      parse_calibration(text, "cal.yaml");
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(head + "launch_s: 2e-6\ncollectives: []\n"),
            "cal.yaml:5: document: key \"launch_s\" appears twice in one mapping (lines 3 and 5); keep one");
  EXPECT_EQ(error(head + "collectives:\n  - {op: allreduce, ranks: 2, points: [[8, 0]]}\n"),
            "cal.yaml:6: collectives[0].points[0]: time 0 s must be > 0 (a measured time; nothing runs in no time)");
  EXPECT_EQ(error(head + "collectives:\n  - {op: allreduce, ranks: 2, points: [[8, 1e-5]]}\n"
                         "  - {op: allreduce, ranks: 2, points: [[8, 2e-5]]}\n"),
            "cal.yaml:7: collectives[1]: a second table for allreduce over 2 ranks (the first is collectives[0]); "
            "keep one");
  EXPECT_EQ(error(head + "collectives:\n  - {op: allreduce, ranks: 2, points: [[8, 1e-5]]}\n"
                         "  - {op: allreduce, ranks: 4, points: [[8, 2e-5]]}\n"),
            "no error");
  // Times no measurement gives (inf, a launch of a second, a point of more than a day) are refused
  // here, where the simulator would carry them into every step (SimGrid aborts on inf).
  const std::string no_launch = "schema_version: 1\nhardware: {backend: cpu, host: h, device: d, ranks: 2}\n";
  EXPECT_EQ(error(no_launch + "launch_s: .inf\ncompute: {}\ncollectives: []\n"),
            "cal.yaml:3: calibration: launch_s inf: expected a launch time in seconds, >= 0 and below 1 s");
  EXPECT_EQ(error(no_launch + "launch_s: 1e300\ncompute: {}\ncollectives: []\n"),
            "cal.yaml:3: calibration: launch_s 1e+300: expected a launch time in seconds, >= 0 and below 1 s");
  EXPECT_EQ(error(head + "collectives:\n  - {op: allreduce, ranks: 2, points: [[8, 1e300]]}\n"),
            "cal.yaml:6: collectives[0].points[0]: time 1e+300 s: expected at most 86400 s (one day), a time `gradsync "
            "calibrate` measures");
}

}  // namespace
}  // namespace gradsync
