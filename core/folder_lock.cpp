// folder_lock.cpp: FolderLock, an flock(2) on a file beside an output folder.
#include "core/folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/output_folder.hpp"

namespace gradsync {

FolderLock::FolderLock(const std::string& out) {
  std::string name = out;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  const std::filesystem::path target(name);
  const std::filesystem::path parent = target.parent_path().empty() ? "." : target.parent_path();
  // A name near NAME_MAX is shortened as the staging folders' are (name_within), so that the lock
  // file beside it can be made.
  const std::size_t around = std::string_view("..gradsync-lock").size();
  path_ = (parent / fmt::format(".{}.gradsync-lock", name_within(target.filename().string(), around))).string();
  // The lock lives beside --out, so the folders above --out are made first, as the run itself makes them.
  check_out_parents(name);
  std::error_code made;
  std::filesystem::create_directories(parent, made);
  if (made) throw RuntimeError(fmt::format("--out {}: cannot create {}: {}", out, parent.string(), made.message()));
  // The holder removes the file as it lets go (below): a lock taken on a file that is no longer the
  // one at path_ (removed between our open and our flock) is dropped and taken again.
  for (int attempt = 0; attempt < 100; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      const int err = errno;
      const std::string why = err == ENOENT && std::filesystem::is_directory(parent)
                                  ? fmt::format("{} exists but the system refuses new files in it ({})",
                                                parent.string(), std::strerror(err))
                                  : std::string(std::strerror(err));
      throw RuntimeError(fmt::format("--out {}: cannot create its lock file {}: {}", out, path_, why));
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK) {
        throw UsageError(fmt::format(
            "--out {}: another gradsync is writing this folder now (it holds {}); wait for it to finish, or "
            "choose another --out",
            out, path_));
      }
      throw RuntimeError(fmt::format("--out {}: cannot lock {}: {}", out, path_, std::strerror(err)));
    }
    struct stat held {
    }, named{};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev)
      return;
    ::close(fd_);
    fd_ = -1;
  }
  throw RuntimeError(fmt::format("--out {}: cannot lock {}: it keeps being replaced", out, path_));
}

FolderLock::~FolderLock() {
  if (fd_ < 0) return;
  // Removed while still held, so that a process that opens it next finds no file or a new one.
  ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace gradsync
