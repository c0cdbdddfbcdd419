// input_file.hpp: reading a user's input file (model, topology, scenario, calibration, published
// table) whole, with one error for every way it can fail: missing, unreadable, a directory, or
// larger than any input gradsync reads (a device such as /dev/zero, a wrong file).
//
//   const std::string text = read_input_file("run.yaml", "scenario file");
//   // ConfigError: run.yaml: cannot read the scenario file: no such file
#pragma once

#include <cstdint>
#include <string>

namespace gradsync {

// kMaxInputFileBytes: the largest input file read (256 MiB). The largest built-in is a 250 KB
// model file and a generated 16,384-GPU topology is about 10 MB.
inline constexpr std::uint64_t kMaxInputFileBytes = std::uint64_t{256} << 20;

// kMaxTraceBytes: the largest torch.profiler trace read (1 GiB, inflated): a Kineto trace of a
// large model over several active steps, with record_shapes, passes 256 MiB; parsed whole, 1 GiB of
// JSON takes some 8 GiB of memory.
inline constexpr std::uint64_t kMaxTraceBytes = std::uint64_t{1} << 30;

// InputLimit: the most bytes a kind of input may hold, and what to say when it holds more.
struct InputLimit {
  std::uint64_t bytes = kMaxInputFileBytes;
  const char* hint = "is it the right file?";
};

// read_input_file: the file's bytes; ConfigError "<path>: cannot read the <what>: <why>".
std::string read_input_file(const std::string& path, const std::string& what, const InputLimit& limit = {});

// gunzip_input: `bytes` inflated when they are gzip (they start with 1f 8b: torch.profiler's
// tensorboard handler writes *.pt.trace.json.gz), else `bytes` as they are. DataError naming the
// file for a damaged stream or one that inflates past the limit.
std::string gunzip_input(std::string bytes, const std::string& path, const std::string& what,
                         const InputLimit& limit = {});

}  // namespace gradsync
