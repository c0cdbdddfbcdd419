// input_file.cpp: bounded whole-file reads with one clear error (see input_file.hpp).
#include "core/input_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <zlib.h>

#include "core/error.hpp"

namespace gradsync {
namespace {

// kFifoWait: how long a named pipe may stay without a byte before it is refused. Opened without
// O_NONBLOCK, a FIFO that nothing writes to blocks open() for ever; a process substitution
// (<(cmd)) has its writer from the start and sends as it runs.
constexpr auto kFifoWait = std::chrono::seconds(10);

// read_fifo: a pipe's bytes until its writer closes it, at most `limit` bytes; nothing at all for
// kFifoWait is an error.
std::string read_fifo(const std::string& path, const std::function<void(const std::string&)>& fail, std::size_t limit,
                      const std::string& too_large) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(errno == EACCES ? "permission denied" : std::strerror(errno));
  std::string text;
  const auto start = std::chrono::steady_clock::now();
  char block[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, block, sizeof block);
    if (n > 0) {
      text.append(block, static_cast<std::size_t>(n));
      if (text.size() > limit) {
        ::close(fd);
        fail(too_large);
      }
      continue;
    }
    if (n == 0 && !text.empty()) break;  // its writer closed it
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      const int e = errno;
      ::close(fd);
      fail(std::strerror(e));
    }
    // No writer yet (n == 0) or one that has not written (EAGAIN): wait a little, within limits.
    if (text.empty() && std::chrono::steady_clock::now() - start > kFifoWait) {
      ::close(fd);
      fail(fmt::format("it is a named pipe (FIFO) that nothing wrote to in {} s",
                       std::chrono::duration_cast<std::chrono::seconds>(kFifoWait).count()));
    }
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 100);
  }
  ::close(fd);
  return text;
}

}  // namespace

std::string read_input_file(const std::string& path, const std::string& what, const InputLimit& limit) {
  namespace fs = std::filesystem;
  const auto fail = [&](const std::string& why) {
    throw DataError(fmt::format("{}: cannot read the {}: {}", path, what, why));
  };
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  // The system's reason where it is not simply a missing file: a name longer than the system
  // allows (ENAMETOOLONG: NAME_MAX bytes a part, PATH_MAX a path) is not "no such file", nor is a
  // folder on the path that may not be searched.
  if (ec == std::errc::filename_too_long) {
    std::size_t longest = 0;
    for (const auto& part : fs::path(path)) longest = std::max(longest, part.native().size());
    if (longest > NAME_MAX)
      fail(fmt::format("its name is too long ({} bytes in one part of the path; the system allows {})", longest,
                       NAME_MAX));
    fail(fmt::format("its path is too long ({} bytes; the system allows {})", path.size(), PATH_MAX - 1));
  }
  if (ec == std::errc::permission_denied) fail("permission denied (a folder on its path cannot be searched)");
  if (ec == std::errc::too_many_symbolic_link_levels) fail("its symbolic links loop (ELOOP)");
  // A symbolic link whose target is missing is not a missing file: say where it points.
  if (!fs::exists(st)) {
    std::error_code lec;
    if (fs::is_symlink(fs::symlink_status(path, lec))) {
      const fs::path target = fs::read_symlink(path, lec);
      if (!lec) fail(fmt::format("it is a symbolic link to {}, which does not exist", target.string()));
    }
  }
  if (ec || !fs::exists(st)) fail("no such file");
  if (fs::is_directory(st)) fail("it is a directory");
  const std::string too_large =
      fmt::format("it is larger than {} MiB, the most a {} may hold ({})", limit.bytes >> 20, what, limit.hint);
  if (fs::is_fifo(st)) return read_fifo(path, fail, limit.bytes, too_large);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(errno == EACCES ? "permission denied" : std::strerror(errno));
  // Read in blocks up to the limit: a device or a pipe has no size to ask for first.
  std::string text;
  // A regular file's size, where the system gives it, read in one allocation (a trace of 100 MB
  // grown by doubling would be copied and paged in twice over).
  if (const auto size = fs::file_size(path, ec); !ec && fs::is_regular_file(st) && size <= limit.bytes)
    text.reserve(static_cast<std::size_t>(size));
  char block[1 << 16];
  while (in) {
    in.read(block, sizeof block);
    text.append(block, static_cast<std::size_t>(in.gcount()));
    if (text.size() > limit.bytes) fail(too_large);
  }
  if (in.bad()) fail("read error");
  return text;
}

std::string gunzip_input(std::string bytes, const std::string& path, const std::string& what, const InputLimit& limit) {
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f || static_cast<unsigned char>(bytes[1]) != 0x8b)
    return bytes;
  const auto fail = [&](const std::string& why) {
    throw DataError(fmt::format("{}: cannot read the {}: {}", path, what, why));
  };
  z_stream s{};
  if (inflateInit2(&s, 15 + 16) != Z_OK) fail("zlib could not start");  // 15 + 16: a gzip wrapper
  std::string out;
  char block[1 << 16];
  s.next_in = reinterpret_cast<Bytef*>(bytes.data());
  s.avail_in = static_cast<uInt>(bytes.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    s.next_out = reinterpret_cast<Bytef*>(block);
    s.avail_out = sizeof block;
    rc = inflate(&s, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const std::string why = rc == Z_BUF_ERROR ? "the gzip stream ends early (a truncated file?)"
                                                : fmt::format("not a valid gzip stream ({})", s.msg ? s.msg : "zlib");
      inflateEnd(&s);
      fail(why);
    }
    out.append(block, sizeof block - s.avail_out);
    if (out.size() > limit.bytes) {
      inflateEnd(&s);
      fail(fmt::format("it inflates past {} MiB, the most a {} may hold ({})", limit.bytes >> 20, what, limit.hint));
    }
  }
  inflateEnd(&s);
  return out;
}

}  // namespace gradsync
