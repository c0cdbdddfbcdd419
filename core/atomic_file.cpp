// atomic_file.cpp: temporary file + fsync + rename.
#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace gradsync {

std::string name_within(const std::string& name, std::size_t reserve) {
  if (name.size() + reserve <= NAME_MAX) return name;
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (unsigned char c : name) hash = (hash ^ c) * 1099511628211ull;
  constexpr std::size_t kHashText = 17;  // "~" and 16 hex digits
  std::size_t keep = NAME_MAX > reserve + kHashText ? NAME_MAX - reserve - kHashText : 0;
  keep = std::min(keep, name.size());
  while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;  // whole UTF-8 characters
  return fmt::format("{}~{:016x}", name.substr(0, keep), hash);
}

namespace {
// Destination: where an output named `path` goes. A symbolic link is followed (the link stays; the
// file it names gets the text), and a path that names something other than a regular file or a
// directory (/dev/null, /dev/stdout on a terminal or a pipe, a FIFO) is written into as it is: a
// temporary file renamed over it would replace the device or pipe itself (as root, /dev/null
// became a regular file until 2026-12-01).
struct Destination {
  std::string path;     // the file the text ends up in
  bool direct = false;  // written into, not replaced
};

Destination destination_of(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  Destination d{path, false};
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path resolved = fs::weakly_canonical(path, ec);
    if (!ec) d.path = resolved.string();
  }
  const fs::file_status st = fs::status(d.path, ec);
  d.direct = fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st);
  return d;
}

// open_direct: `path` opened for writing as it is (no create, no truncate: a device or a pipe).
int open_direct(const std::string& path, const std::string& named) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw RuntimeError(fmt::format("cannot write {}: {}", named, std::strerror(errno)));
  return fd;
}

// temporary_beside: the mkstemp template of a temporary file beside `target`.
std::string temporary_beside(const std::filesystem::path& dir, const std::filesystem::path& target) {
  constexpr std::size_t kAround = std::string_view("..tmp-XXXXXX").size();
  return (dir / fmt::format(".{}.tmp-XXXXXX", name_within(target.filename().string(), kAround))).string();
}
}  // namespace

void write_file_atomic(const std::string& path, std::string_view text) {
  namespace fs = std::filesystem;
  const Destination dest = destination_of(path);
  const fs::path target(dest.path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw RuntimeError(fmt::format("cannot write {}: it is a directory", path));
  if (dest.direct) {
    const int fd = open_direct(dest.path, path);
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        ::close(fd);
        throw RuntimeError(fmt::format("cannot write {}: {}", path, std::strerror(err)));
      }
      done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) throw RuntimeError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    return;
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = temporary_beside(dir, target);
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw RuntimeError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  const auto fail = [&](int err) {
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw RuntimeError(fmt::format("cannot write {}: {}", path, std::strerror(err)));
  };
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) fail(errno);
  if (::fsync(fd) != 0) fail(errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    throw RuntimeError(fmt::format("cannot write {}: {}", path, std::strerror(err)));
  }
  if (std::rename(tmpl.c_str(), dest.path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    throw RuntimeError(fmt::format("cannot write {}: {}", path, std::strerror(err)));
  }
}

}  // namespace gradsync

namespace gradsync {

// Deflate: zlib's stream state, gzip-wrapped.
struct AtomicFileWriter::Deflate {
  z_stream s{};
};

AtomicFileWriter::AtomicFileWriter(std::string path, bool gzip) : path_(std::move(path)), gzip_(gzip) {
  namespace fs = std::filesystem;
  const Destination dest = destination_of(path_);
  const fs::path target(dest.path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw RuntimeError(fmt::format("cannot write {}: it is a directory", path_));
  target_ = dest.path;
  if (dest.direct) {
    fd_ = open_direct(dest.path, path_);  // tmp_ stays empty: nothing to rename or remove
  } else {
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    tmp_ = temporary_beside(dir, target);
    fd_ = ::mkstemp(tmp_.data());
    if (fd_ < 0) throw RuntimeError(fmt::format("cannot write {}: {}", path_, std::strerror(errno)));
  }
  if (gzip_) {
    z_ = new Deflate;
    // windowBits 15 + 16: a gzip wrapper, whose header zlib writes with no name and time 0.
    // Level 1 (Z_BEST_SPEED): a trace's repeated names and numbers compress well at any level;
    // the default level took 5% of a 1,024-GPU run for files a third smaller.
    if (deflateInit2(&z_->s, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      delete z_;
      z_ = nullptr;
      ::close(fd_);
      if (!tmp_.empty()) ::unlink(tmp_.c_str());
      throw RuntimeError(fmt::format("cannot write {}: zlib could not start", path_));
    }
  }
  buffer_.reserve(1 << 20);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (z_ != nullptr) {
    deflateEnd(&z_->s);
    delete z_;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::fail(int err) {
  ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  throw RuntimeError(fmt::format("cannot write {}: {}", path_, std::strerror(err)));
}

void AtomicFileWriter::write_raw(const char* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    done += static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::flush_buffer(bool finish) {
  if (!gzip_) {
    write_raw(buffer_.data(), buffer_.size());
    buffer_.clear();
    return;
  }
  z_->s.next_in = reinterpret_cast<Bytef*>(buffer_.data());
  z_->s.avail_in = static_cast<uInt>(buffer_.size());
  char out[1 << 16];
  int rc = Z_OK;
  do {
    z_->s.next_out = reinterpret_cast<Bytef*>(out);
    z_->s.avail_out = sizeof out;
    rc = deflate(&z_->s, finish ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_ERROR) fail(EIO);
    write_raw(out, sizeof out - z_->s.avail_out);
  } while (z_->s.avail_out == 0 || (finish && rc != Z_STREAM_END));
  buffer_.clear();
}

void AtomicFileWriter::write(std::string_view text) {
  if (fd_ < 0) throw RuntimeError(fmt::format("cannot write {}: already committed", path_));
  buffer_ += text;
  if (buffer_.size() >= (1 << 20)) flush_buffer(false);
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw RuntimeError(fmt::format("cannot write {}: already committed", path_));
  flush_buffer(true);
  if (tmp_.empty()) {  // a device or a pipe, written into: nothing to sync or rename
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) throw RuntimeError(fmt::format("cannot write {}: {}", path_, std::strerror(errno)));
    return;
  }
  if (::fchmod(fd_, 0644) != 0) fail(errno);
  if (::fsync(fd_) != 0) fail(errno);
  if (::close(fd_) != 0) {
    const int err = errno;
    fd_ = -1;
    ::unlink(tmp_.c_str());
    throw RuntimeError(fmt::format("cannot write {}: {}", path_, std::strerror(err)));
  }
  fd_ = -1;
  if (std::rename(tmp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    throw RuntimeError(fmt::format("cannot write {}: {}", path_, std::strerror(err)));
  }
}

}  // namespace gradsync
