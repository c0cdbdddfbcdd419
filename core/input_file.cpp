// input_file.cpp: bounded whole-file reads with one clear error (see input_file.hpp).
#include "core/input_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace gradsync {

std::string read_input_file(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  const auto fail = [&](const std::string& why) {
    throw DataError(fmt::format("{}: cannot read the {}: {}", path, what, why));
  };
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) fail("no such file");
  if (fs::is_directory(st)) fail("it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(errno == EACCES ? "permission denied" : std::strerror(errno));
  // Read in blocks up to the limit: a device or a pipe has no size to ask for first.
  std::string text;
  char block[1 << 16];
  while (in) {
    in.read(block, sizeof block);
    text.append(block, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxInputFileBytes) {
      fail(fmt::format("it is larger than {} MiB, the most any input file may hold (is it the right file?)",
                       kMaxInputFileBytes >> 20));
    }
  }
  if (in.bad()) fail("read error");
  return text;
}

}  // namespace gradsync
