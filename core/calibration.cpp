// calibration.cpp: calibration tables, their fit, and calibration.yaml.
#include "core/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/yaml_reader.hpp"

namespace gradsync {

// kMaxLaunchS, kMaxPointS: bounds on a calibration's times, not physical constants: a kernel
// launch takes microseconds and `calibrate` times each point in well under a day; larger values
// (inf, 1e300) are an edited file, and the simulator would carry them into every step.
constexpr double kMaxLaunchS = 1.0;
constexpr double kMaxPointS = 86400.0;

double CalibrationTable::time(double size) const {
  if (size <= 0 || points.empty()) return 0.0;
  if (points.size() == 1 || size <= points.front().first) {
    // Below the smallest size measured (or a single point): that point's time (latency bound),
    // scaled down only for a single point past it.
    if (points.size() == 1 && size > points.front().first) return points.front().second * size / points.front().first;
    return points.front().second;
  }
  auto hi = std::lower_bound(points.begin(), points.end(), size,
                             [](const std::pair<double, double>& p, double s) { return p.first < s; });
  if (hi == points.end()) {
    // Past the last point: the last segment goes on when the last point was bandwidth-bound
    // (its line's latency under half its time: the measured rate carries on). A table that never
    // left its latency (a flat 2.7 us memory table up to 64 KiB) holds no rate: the time grows in
    // proportion from the last point, at that point's average rate, the fastest it showed.
    const auto& [s1, t1] = points.back();
    const auto& [s0, t0] = points[points.size() - 2];
    const double slope = (t1 - t0) / (s1 - s0);
    const double latency = t1 - s1 * slope;
    if (slope > 0 && latency <= t1 / 2) return t1 + (size - s1) * slope;
    return t1 * size / s1;
  }
  const auto lo = hi - 1;
  const double slope = (hi->second - lo->second) / (hi->first - lo->first);
  return std::max(0.0, lo->second + (size - lo->first) * slope);
}

std::vector<CalibrationTable::Segment> CalibrationTable::segments() const {
  std::vector<Segment> out;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const auto& [s0, t0] = points[i - 1];
    const auto& [s1, t1] = points[i];
    Segment g;
    g.from = s0;
    g.to = s1;
    const double slope = (t1 - t0) / (s1 - s0);
    g.latency_s = t0 - s0 * slope;
    g.rate = slope > 0 ? 1.0 / slope : 0.0;  // 0: flat (latency only)
    out.push_back(g);
  }
  return out;
}

std::optional<double> Calibration::compute_time(OpKind kind, double flops, double bytes) const {
  if (kind != OpKind::kMemory && flops > 0) {
    const auto it = compute.find(kind);
    if (it == compute.end() || it->second.points.empty()) return std::nullopt;
    return it->second.time(flops);
  }
  const auto it = compute.find(OpKind::kMemory);
  if (it == compute.end() || it->second.points.empty()) return std::nullopt;
  return it->second.time(bytes);
}

std::optional<double> Calibration::collective_time(Collective c, int members, double bytes) const {
  for (const CollectiveTable& t : collectives)
    if (t.collective == c && t.ranks == members && !t.table.points.empty()) return t.table.time(bytes);
  return std::nullopt;
}

namespace {

constexpr OpKind kKinds[] = {OpKind::kMatmul, OpKind::kConv, OpKind::kAttention, OpKind::kMemory};

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;  // no control characters in a name
    out += ch;
  }
  return out + "\"";
}

void write_table(std::string& out, const std::string& indent, const CalibrationTable& t, const char* unit) {
  out += indent + "points:  # [" + unit + ", seconds]\n";
  for (const auto& [s, sec] : t.points) out += fmt::format("{}  - [{}, {}]\n", indent, s, sec);
  // latency_s is the segment's line at size 0: negative where the time grows faster than the size
  // between two points (a cache left behind); the line is used only between from and to.
  out += indent + "segments:  # fitted: time = latency_s + size / rate between from and to (only there)\n";
  for (const auto& g : t.segments())
    out += fmt::format("{}  - {{from: {}, to: {}, latency_s: {:.6g}, rate: {:.6g}}}\n", indent, g.from, g.to,
                       g.latency_s, g.rate);
}

CalibrationTable read_table(const YamlReader& r, const YAML::Node& n, const std::string& where) {
  if (!n.IsMap()) r.fail(n, where, "expected a mapping with points: [[size, seconds], ...]");
  r.only_keys(n, where, {"points", "segments"});
  const YAML::Node pts = r.required(n, where, "points");
  if (!pts.IsSequence() || pts.size() == 0) r.fail(pts, where, "points: expected a non-empty list of [size, seconds]");
  CalibrationTable t;
  double best = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const YAML::Node p = pts[i];
    const std::string at = fmt::format("{}.points[{}]", where, i);
    if (!p.IsSequence() || p.size() != 2) r.fail(p, at, "expected [size, seconds]");
    double size = 0, sec = 0;
    for (std::size_t j = 0; j < 2; ++j) {
      try {
        (j == 0 ? size : sec) = p[j].as<double>();
      } catch (const YAML::Exception&) {
        r.fail(p[j], at,
               fmt::format("{} \"{}\" is not a number; expected [size, seconds]", j == 0 ? "size" : "time",
                           YamlReader::scalar_text(p[j])));
      }
    }
    if (!(size > 0) || !std::isfinite(size)) r.fail(p, at, fmt::format("size {} must be > 0", size));
    if (!(sec > 0) || !std::isfinite(sec))
      r.fail(p, at, fmt::format("time {} s must be > 0 (a measured time; nothing runs in no time)", sec));
    if (sec > kMaxPointS)
      r.fail(p, at,
             fmt::format("time {} s: expected at most {} s (one day), a time `gradsync calibrate` measures", sec,
                         kMaxPointS));
    if (!t.points.empty() && size <= t.points.back().first) {
      r.fail(p, at,
             fmt::format("size {} is not larger than the previous {}; expected increasing sizes", size,
                         t.points.back().first));
    }
    best = std::max(best, sec);  // a larger size never takes less time than a smaller one did
    t.points.emplace_back(size, best);
  }
  return t;
}

}  // namespace

std::string calibration_yaml(const Calibration& c) {
  std::string out;
  out += "# gradsync calibration: measured by `gradsync calibrate`; load with `gradsync simulate --calibration`.\n";
  out += "# Tables are measured points; segments are their fit (latency + size / rate), shown for people.\n";
  out += "schema_version: 3\n";
  out += "hardware:\n";
  out += fmt::format("  backend: {}\n  host: {}\n  device: {}\n  library: {}\n  ranks: {}\n", quoted(c.backend),
                     quoted(c.host), quoted(c.device), quoted(c.library), c.ranks);
  out += fmt::format("  precision: {}  # the GEMM kinds' data type\n", c.precision);
  out += fmt::format("launch_s: {}\n", c.launch_s);
  out += c.compute.empty() ? "compute: {}  # none measured\n"
                           : "compute:  # GEMM kinds by FLOPs, memory-bound kernels by bytes read + written\n";
  for (OpKind k : kKinds) {
    const auto it = c.compute.find(k);
    if (it == c.compute.end()) continue;
    out += fmt::format("  {}:\n", op_kind_name(k));
    write_table(out, "    ", it->second, k == OpKind::kMemory ? "bytes" : "flops");
  }
  out += "copies:\n";
  if (!c.peer_copy.points.empty()) {
    out += "  peer:\n";
    write_table(out, "    ", c.peer_copy, "bytes");
  }
  if (!c.host_copy.points.empty()) {
    out += "  host_to_device:\n";
    write_table(out, "    ", c.host_copy, "bytes");
  }
  out += c.collectives.empty() ? "collectives: []  # none measured\n" : "collectives:\n";
  for (const CollectiveTable& t : c.collectives) {
    out += fmt::format("  - op: {}\n    ranks: {}\n    link_class: {}\n", collective_name(t.collective), t.ranks,
                       quoted(t.link_class));
    write_table(out, "    ", t.table, "bytes");
  }
  // Written last: a copy cut short (a full disk, an interrupted transfer) lacks it and is refused.
  out += "end: true  # the last line of the file\n";
  return out;
}

Calibration read_calibration(const std::string& path) {
  return parse_calibration(read_input_file(path, "calibration file"), path);
}

static Calibration parse_calibration_unchecked(std::string_view text, const std::string& path);

// Every error of the file's content is a DataError (exit 1), whoever named the file.
Calibration parse_calibration(std::string_view text, const std::string& path) {
  return as_data_error([&] { return parse_calibration_unchecked(text, path); });
}

static Calibration parse_calibration_unchecked(std::string_view text, const std::string& path) {
  const YamlReader r(path);
  const YAML::Node root = r.load(text);
  if (!root.IsMap()) r.fail(root, "calibration", "expected a mapping (the file `gradsync calibrate` writes)");
  const YAML::Node version = r.required(root, "calibration", "schema_version");
  const auto schema = r.positive_int(version, "calibration", "schema_version");
  if (schema < 1 || schema > 3)
    r.fail(version, "calibration",
           fmt::format("schema_version {}: expected 1, 2 or 3 (2 records hardware.precision, 3 ends with end: true)",
                       YamlReader::scalar_text(version)));
  if (schema < 3) {
    r.only_keys(root, "calibration", {"schema_version", "hardware", "launch_s", "compute", "copies", "collectives"});
  } else {
    r.only_keys(root, "calibration",
                {"schema_version", "hardware", "launch_s", "compute", "copies", "collectives", "end"});
    // Schema 3 ends with `end: true`: a file without it was cut short, and its tables (the
    // collectives come last) would be read with points or whole tables missing.
    const YAML::Node end = root["end"];
    if (!end)
      throw ConfigError(
          fmt::format("{}:{}: the file ends without its last line `end: true`, which `gradsync "
                      "calibrate` writes: it was cut short (a full disk, an interrupted copy); copy it "
                      "again or run `gradsync calibrate` again",
                      path, std::count(text.begin(), text.end(), '\n') + 1));
    if (!end.IsScalar() || end.Scalar() != "true")
      r.fail(end, "calibration", fmt::format("end \"{}\": expected true", YamlReader::scalar_text(end)));
  }
  Calibration c;
  c.origin = path;
  const YAML::Node hw = r.required(root, "calibration", "hardware");
  if (schema == 1) {
    r.only_keys(hw, "hardware", {"backend", "host", "device", "library", "ranks"});
  } else {
    r.only_keys(hw, "hardware", {"backend", "host", "device", "library", "ranks", "precision"});
    c.precision = r.string(r.required(hw, "hardware", "precision"), "hardware", "precision");
    if (c.precision != "fp32" && c.precision != "tf32" && c.precision != "bf16" && c.precision != "fp16")
      r.fail(hw["precision"], "hardware",
             fmt::format("precision \"{}\": expected fp32, tf32, bf16 or fp16", c.precision));
  }
  c.backend = r.string(r.required(hw, "hardware", "backend"), "hardware", "backend");
  if (c.backend != "cpu" && c.backend != "gpu")
    r.fail(hw["backend"], "hardware", fmt::format("backend \"{}\": expected cpu or gpu", c.backend));
  // calibrate on CPUs times OpenBLAS's sgemm: a CPU calibration of another type was edited.
  if (schema >= 2 && c.backend == "cpu" && c.precision != "fp32")
    r.fail(hw["precision"], "hardware",
           fmt::format("precision \"{}\" with backend cpu: the CPU backend computes in fp32 only (OpenBLAS sgemm); "
                       "expected fp32 (the file was edited?)",
                       c.precision));
  c.host = r.string(r.required(hw, "hardware", "host"), "hardware", "host");
  c.device = r.string(r.required(hw, "hardware", "device"), "hardware", "device");
  if (hw["library"]) c.library = r.string(hw["library"], "hardware", "library");
  c.ranks = static_cast<int>(r.positive_int(r.required(hw, "hardware", "ranks"), "hardware", "ranks"));
  const YAML::Node launch = r.required(root, "calibration", "launch_s");
  try {
    c.launch_s = launch.as<double>();
  } catch (const YAML::Exception&) {
    r.fail(launch, "calibration", fmt::format("launch_s \"{}\": expected seconds", YamlReader::scalar_text(launch)));
  }
  // A kernel launch takes microseconds; a second or more (or inf) is not a measurement.
  if (!(c.launch_s >= 0) || !(c.launch_s < kMaxLaunchS)) {
    r.fail(launch, "calibration",
           fmt::format("launch_s {}: expected a launch time in seconds, >= 0 and below {} s", c.launch_s, kMaxLaunchS));
  }

  const YAML::Node compute = r.required(root, "calibration", "compute");
  if (!compute.IsMap()) r.fail(compute, "compute", "expected a mapping of kind: table");
  for (const auto& kv : compute) {
    const std::string name = kv.first.as<std::string>();
    const auto kind =
        std::find_if(std::begin(kKinds), std::end(kKinds), [&](OpKind k) { return op_kind_name(k) == name; });
    if (kind == std::end(kKinds))
      r.fail(kv.first, "compute", fmt::format("unknown kind \"{}\"; expected matmul, conv, attention or memory", name));
    c.compute[*kind] = read_table(r, kv.second, "compute." + name);
  }
  if (const YAML::Node copies = root["copies"]; copies && !copies.IsNull()) {
    if (!copies.IsMap()) r.fail(copies, "copies", "expected a mapping with peer and host_to_device");
    r.only_keys(copies, "copies", {"peer", "host_to_device"});
    if (copies["peer"]) c.peer_copy = read_table(r, copies["peer"], "copies.peer");
    if (copies["host_to_device"]) c.host_copy = read_table(r, copies["host_to_device"], "copies.host_to_device");
  }
  const YAML::Node colls = r.required(root, "calibration", "collectives");
  if (!colls.IsSequence()) r.fail(colls, "collectives", "expected a list of {op, ranks, link_class, points}");
  for (std::size_t i = 0; i < colls.size(); ++i) {
    const YAML::Node e = colls[i];
    const std::string where = fmt::format("collectives[{}]", i);
    if (!e.IsMap()) r.fail(e, where, "expected a mapping {op, ranks, link_class, points}");
    r.only_keys(e, where, {"op", "ranks", "link_class", "points", "segments"});
    CollectiveTable t;
    const std::string op = r.string(r.required(e, where, "op"), where, "op");
    const auto coll = parse_collective(op);
    if (!coll)
      r.fail(e["op"], where,
             fmt::format("op \"{}\": expected allreduce, broadcast, reduce, allgather or reducescatter", op));
    t.collective = *coll;
    t.ranks = static_cast<int>(r.positive_int(r.required(e, where, "ranks"), where, "ranks"));
    if (e["link_class"]) t.link_class = r.string(e["link_class"], where, "link_class");
    YAML::Node table;
    table["points"] = r.required(e, where, "points");
    t.table = read_table(r, table, where);
    for (std::size_t j = 0; j < c.collectives.size(); ++j) {
      if (c.collectives[j].collective == t.collective && c.collectives[j].ranks == t.ranks) {
        r.fail(e, where,
               fmt::format("a second table for {} over {} ranks (the first is collectives[{}]); keep one", op, t.ranks,
                           j));
      }
    }
    c.collectives.push_back(std::move(t));
  }
  return c;
}

}  // namespace gradsync
