// folder_lock.hpp: one gradsync at a time writing an output folder: a sweep's (its
// .NAME.gradsync-sweep beside --out, saved point by point) and every other run's (OutputFolder, for
// the whole run), so that a second run into the same --out is refused instead of emptying the first
// one's work folder under it or replacing its outputs. Until 2026-12-02 only sweeps took it, and a
// `compare` into a folder a sweep was writing went through and was then replaced by the sweep's.
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
