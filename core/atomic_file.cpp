// atomic_file.cpp: temporary file + fsync + rename.
#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace gradsync {

void write_file_atomic(const std::string& path, std::string_view text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw RuntimeError(fmt::format("cannot write {}: it is a directory", path));
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / fmt::format(".{}.tmp-XXXXXX", target.filename().string())).string();
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
  if (std::rename(tmpl.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    throw RuntimeError(fmt::format("cannot write {}: {}", path, std::strerror(err)));
  }
}

}  // namespace gradsync
