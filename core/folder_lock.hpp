// folder_lock.hpp: one gradsync at a time working on an incremental output folder (a sweep's
// .NAME.gradsync-sweep beside --out, saved point by point), so that a second sweep into the same
// --out is refused instead of emptying the first one's work folder under it.
//
//   const FolderLock lock("results/gpt2");   // .gpt2.gradsync-lock beside it, or UsageError
//
// The lock is an exclusive flock(2) on ".NAME.gradsync-lock" beside the folder: the kernel drops
// it when the process ends, killed or not, so a crashed sweep never leaves the folder locked.
#pragma once

#include <string>

namespace gradsync {

class FolderLock {
 public:
  // FolderLock takes the lock for the output folder `out`: UsageError naming `out` when another
  // process holds it; RuntimeError when the lock file cannot be opened (a read-only parent).
  explicit FolderLock(const std::string& out);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace gradsync
