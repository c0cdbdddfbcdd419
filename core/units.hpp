// units.hpp: sizes, bandwidths and durations written with units, as every gradsync file and flag
// spells them, and their human-readable formatting.
//
// Every format (topology files, model files, scenarios, calibration files, flags) parses numbers
// with units through these functions, so "25MiB" means the same everywhere:
//
//   parse_size("25MiB")       == 26214400        // bytes; a bare number is bytes
//   parse_bandwidth("300GBps") == 300e9          // bytes per second; "200Gbps" == 25e9
//   parse_duration("2.5ms")   == 0.0025          // seconds; a unit is required
//
// A bad text (empty, "1e", "-5GBps", "10 parsecs", an overflow) throws ConfigError naming the
// text, what is wrong and what was expected. Callers that know a file and line catch it and
// prefix their location.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gradsync {

// Bytes counts bytes: message sizes, parameter and buffer sizes, memory.
using Bytes = std::uint64_t;

// kKiB, kMiB, kGiB: binary size multipliers.
inline constexpr Bytes kKiB = 1024;
inline constexpr Bytes kMiB = 1024 * kKiB;
inline constexpr Bytes kGiB = 1024 * kMiB;

// parse_size reads a size: a non-negative number with an optional unit B, kB/KB, MB, GB, TB, PB
// (powers of 1000) or KiB, MiB, GiB, TiB, PiB (powers of 1024). It must be a whole number of bytes.
Bytes parse_size(std::string_view text);
// size_unit_case_hint: " (units are case-sensitive: MiB)" when `text` is a size whose unit differs
// from one parse_size takes only in case ("25mib"), else "": for messages that refuse it.
std::string size_unit_case_hint(std::string_view text);

// parse_bandwidth reads a bandwidth in bytes per second: a number > 0 with a unit made of an
// optional prefix (k/K, M, G, T, P or Ki, Mi, Gi, Ti, Pi), then B (bytes) or b (bits), then "ps"
// or "/s": "300GBps", "200Gbps", "25GiBps", "12.5GB/s".
double parse_bandwidth(std::string_view text);

// parse_duration reads a non-negative duration in seconds with a unit ns, us (or µs), ms, s, min
// or h: "1us", "2.5ms", "30s".
double parse_duration(std::string_view text);

// human_bytes formats a size with a binary unit and three significant digits: "512 B",
// "1.00 KiB", "25.0 MiB", "475 MiB".
std::string human_bytes(double bytes);

// human_bandwidth formats bytes per second with a decimal unit: "300 GB/s", "12.5 GB/s".
std::string human_bandwidth(double bytes_per_s);

// human_duration formats seconds as ns, us, ms or s with three significant digits: "8.40 us",
// "12.3 ms", "1.05 s".
std::string human_duration(double seconds);

}  // namespace gradsync
