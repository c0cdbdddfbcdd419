// output_folder.hpp: a run's --out folder is whole or untouched. The run writes into a fresh
// staging folder beside it and, at the end, swaps it into place in one rename (Linux
// renameat2 RENAME_EXCHANGE), then removes what it replaced. A run killed at any moment leaves
// --out as it was or complete. Interrupted by SIGINT or SIGTERM, it removes its staging folder and
// says so; killed otherwise, the staging folder it leaves behind is removed by the next run into
// the same place (its process is gone), and that run says so.
//
//   OutputFolder out("gradsync-out");            // refuses a folder of someone else's files
//   write_file_atomic(out.path() + "/result.json", text);
//   out.commit();                                 // gradsync-out/ now holds exactly this run's files
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/folder_lock.hpp"

namespace gradsync {

class OutputFolder {
 public:
  // OutputFolder takes final_path's FolderLock for its life and prepares a staging folder for it.
  // UsageError when another gradsync writes final_path now (a sweep, or another run), when
  // final_path is a file, or a folder holding files gradsync did not write (it would be replaced
  // whole); RuntimeError when the staging folder cannot be made.
  explicit OutputFolder(std::string final_path);
  ~OutputFolder();  // not committed: the staging folder is removed, --out is untouched
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  // path: where to write now (the staging folder).
  const std::string& path() const { return staging_; }
  const std::string& final_path() const { return final_; }
  // commit puts the staging folder in place of final_path. RuntimeError naming the paths on failure.
  void commit();
  // removed: staging folders of killed runs that the constructor removed (for a note to the user).
  const std::vector<std::string>& removed() const { return removed_; }
  // left_behind: after commit, where the replaced folder's files stay when they could not all be
  // removed (a file the user cannot delete), with why; empty when they are gone.
  const std::string& left_behind() const { return left_; }

 private:
  std::unique_ptr<FolderLock> lock_;  // released after the staging folder is gone or in place
  std::string final_;
  std::string staging_;
  std::vector<std::string> removed_;
  std::string left_;
  bool committed_ = false;
  int slot_ = -1;  // where the SIGINT/SIGTERM handler finds the staging folder to remove
};

// discard_staging_folders: remove every staging folder of this process's unfinished runs, with
// system calls only (async-signal-safe), for a process about to end without unwinding (real mode's
// collective watchdog, as c10d's, ends it with _Exit): --out is left as it was, nothing beside it.
void discard_staging_folders() noexcept;

// check_replaceable_folder: UsageError unless `final_path` is absent, or a folder (not a link) of
// gradsync's files that is not the current folder nor above it: what a run may replace whole.
void check_replaceable_folder(const std::string& final_path);

// check_out_parents: UsageError if a path above `out` exists and is not a folder (a file where
// --out needs one of its folders).
void check_out_parents(const std::string& out);

// swap_into_place: the folder `staging` in place of `final_path` (absent, or a folder it replaces
// in one renameat2 RENAME_EXCHANGE; the old one is then removed). RuntimeError naming both.
// Returns "" or, when the replaced folder could not be removed whole, a note naming where its
// files stay and why (the run's outputs are in place all the same).
std::string swap_into_place(const std::string& staging, const std::string& final_path);

// start_fresh_folder: an incremental output folder (a sweep's, saved point by point so that it can
// resume): the files of any earlier gradsync run in it are removed and the marker written.
// UsageError for a file, or a folder of files gradsync did not write. `out`: the --out it works
// for, when `path` is a folder beside it (a sweep's .NAME.gradsync-sweep), named in its errors.
void start_fresh_folder(const std::string& path, const std::string& out = "");

// kOutputMarker: the file every committed output folder holds (what wrote it), so that a later
// run knows it may replace the folder.
inline constexpr const char* kOutputMarker = ".gradsync-run";

}  // namespace gradsync
