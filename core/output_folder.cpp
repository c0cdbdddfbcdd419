// output_folder.cpp: whole-or-untouched output folders (see output_folder.hpp).
#include "core/output_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/version.hpp"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

// known_output: a file name some version of gradsync writes into --out.
bool known_output(const std::string& name) {
  static const char* const kNames[] = {"summary.csv", "iterations.csv", "events.csv", "result.json",
                                       "report.html", "validation.csv", "parts",      kOutputMarker};
  for (const char* n : kNames)
    if (name == n) return true;
  if (name.starts_with("trace-") && name.ends_with(".json")) return true;
  return name.starts_with(".") && name.find(".tmp-") != std::string::npos;  // write_file_atomic's temporaries
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "host";
  std::string h(buf);
  for (char& c : h)
    if (c == '/' || c == '.') c = '_';
  return h.empty() ? "host" : h;
}

// staging_prefix: ".NAME.gradsync-", the start of the staging and old folders' names beside --out
// NAME, with NAME shortened (name_within) where "tmp-HOST-PID" after it would pass NAME_MAX (a
// 240-byte --out was refused with "File name too long" though the folder itself could be made).
std::string staging_prefix(const std::string& name, const std::string& host) {
  constexpr std::size_t kPidDigits = 10;
  const std::size_t around = std::string_view("..gradsync-tmp-").size() + host.size() + 1 + kPidDigits;
  return fmt::format(".{}.gradsync-", name_within(name, around));
}

// process_gone: no process `pid` runs on this host: none exists, or it is a zombie (it died and
// nobody reaped it: a container whose init does not reap keeps killed processes so).
bool process_gone(long pid) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');  // "pid (comm) S ...": the state follows the command name
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

// refuse_foreign_files: UsageError when `dir` holds a file gradsync did not write (and no marker
// says it wrote the folder): the run will replace or empty the folder.
void refuse_foreign_files(const fs::path& dir, const std::string& shown) {
  std::error_code ec;
  if (fs::exists(dir / kOutputMarker, ec)) return;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!known_output(name)) {
      throw UsageError(
          fmt::format("--out {}: the folder holds \"{}\", which gradsync did not write; the run "
                      "replaces the whole folder, so give a new or empty one",
                      shown, name));
    }
  }
}

// Interruption. Ctrl-C (SIGINT) or SIGTERM while a run writes into its staging folder: the
// handler removes the staging folder and the lock file beside --out (core/folder_lock.hpp: the
// kernel drops the lock itself with the process), says that --out was left as it was, and ends the process
// by the signal (the shell's 130 or 143), as the default action would. Everything it calls is
// async-signal-safe (open, getdents64, unlinkat, close, write, signal, raise): no allocation.
// A SIGKILL cannot be caught; the next run into the same place removes what it left (above).
constexpr int kSlots = 8;
constexpr std::size_t kPathMax = 4096;
struct Slot {
  volatile sig_atomic_t used = 0;
  char staging[kPathMax] = {};
  char final_path[kPathMax] = {};
  char lock[kPathMax] = {};  // "" for none
};
Slot g_slots[kSlots];

void put(int fd, const char* text) {
  std::size_t n = 0;
  while (text[n] != '\0') ++n;
  while (n > 0) {
    const ssize_t w = ::write(fd, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

// remove_tree: the folder `name` under `dirfd` and what it holds, `depth` levels at most, with
// system calls only (async-signal-safe).
void remove_tree(int dirfd, const char* name, int depth) {
  const int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    for (int pass = 0; pass < 64; ++pass) {  // entries removed while listed: list again until none
      bool removed = false;
      ::lseek(fd, 0, SEEK_SET);
      for (;;) {
        const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0) break;
        for (long at = 0; at < n;) {
          const auto* e = reinterpret_cast<const struct dirent64*>(buf + at);
          at += e->d_reclen;
          const char* entry = e->d_name;
          if (entry[0] == '.' && (entry[1] == '\0' || (entry[1] == '.' && entry[2] == '\0'))) continue;
          if (::unlinkat(fd, entry, 0) == 0) {
            removed = true;
          } else if (depth > 0) {
            remove_tree(fd, entry, depth - 1);
            removed = true;
          }
        }
      }
      if (!removed) break;
    }
    ::close(fd);
  }
  ::unlinkat(dirfd, name, AT_REMOVEDIR);
}

bool same_text(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

extern "C" void on_interrupt(int sig) {
  for (int i = 0; i < kSlots; ++i) {
    const Slot& s = g_slots[i];
    if (!s.used) continue;
    remove_tree(AT_FDCWD, s.staging, 4);
    if (s.lock[0] != '\0') ::unlink(s.lock);
    bool said = false;  // one line per --out, however many folders a command staged for it
    for (int j = 0; j < i; ++j) said = said || (g_slots[j].used && same_text(g_slots[j].final_path, s.final_path));
    if (said) continue;
    put(STDERR_FILENO, sig == SIGINT ? "\ngradsync: interrupted (SIGINT: Ctrl-C); --out "
                                     : "\ngradsync: interrupted (SIGTERM); --out ");
    put(STDERR_FILENO, s.final_path);
    put(STDERR_FILENO, " is left as it was\n");
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// watch: the handler for SIGINT and SIGTERM, where nothing else (a shell's ignore, a sweep's own
// handler) has one.
void watch() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  // A child forked to run a simulation (sim/isolate.cpp) shares the process group, and so the
  // terminal's Ctrl-C, but not the folders: only the parent removes them and says so.
  ::pthread_atfork(nullptr, nullptr, [] {
    for (Slot& s : g_slots) s.used = 0;
  });
  for (const int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

int claim(const std::string& staging, const std::string& final_path, const std::string& lock) {
  if (staging.size() >= kPathMax || final_path.size() >= kPathMax || lock.size() >= kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    if (s.used) continue;
    std::memcpy(s.staging, staging.c_str(), staging.size() + 1);
    std::memcpy(s.final_path, final_path.c_str(), final_path.size() + 1);
    std::memcpy(s.lock, lock.c_str(), lock.size() + 1);
    s.used = 1;  // last: the handler reads the slot only once it is whole
    watch();
    return i;
  }
  return -1;  // more runs at once than slots: a signal leaves this one's folder to the next run
}

void release(int slot) {
  if (slot >= 0 && slot < kSlots) g_slots[slot].used = 0;
}

}  // namespace

void discard_staging_folders() noexcept {
  for (Slot& s : g_slots) {
    if (!s.used) continue;
    remove_tree(AT_FDCWD, s.staging, 4);
    if (s.lock[0] != '\0') ::unlink(s.lock);
    s.used = 0;
  }
}

void start_fresh_folder(const std::string& path, const std::string& out) {
  std::error_code ec;
  const fs::path dir(path);
  // Errors name the --out the user gave; a working folder beside it is named as that.
  const std::string what =
      out.empty() ? fmt::format("--out {}", path) : fmt::format("--out {}: its working folder {}", out, path);
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (fs::exists(st)) {
    if (fs::is_symlink(st))
      throw UsageError(fmt::format("{}: is a symbolic link; give the folder it names, or a new one", what));
    if (!fs::is_directory(st))
      throw UsageError(fmt::format("{}: exists and is not a folder; give a new or empty folder", what));
    refuse_foreign_files(dir, out.empty() ? path : fmt::format("{}: its working folder {}", out, path));
    for (const auto& e : fs::directory_iterator(dir, ec)) fs::remove_all(e.path(), ec);
  }
  fs::create_directories(dir, ec);
  if (ec) {
    // As OutputFolder says it: /proc and /sys answer ENOENT for a folder they refuse.
    std::error_code exists_ec;
    const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
    const bool there = fs::is_directory(parent, exists_ec);
    const std::string why =
        there && ec == std::errc::no_such_file_or_directory
            ? fmt::format("{} exists but the system refuses new folders in it ({})", parent.string(), ec.message())
            : ec.message();
    throw RuntimeError(fmt::format("{}: cannot create the folder: {}", what, why));
  }
  std::ofstream marker(dir / kOutputMarker);
  marker << fmt::format("written by gradsync {}; a new run into this folder replaces what it holds\n", kVersion);
  if (!marker) throw RuntimeError(fmt::format("{}: cannot write {}", what, kOutputMarker));
}

void check_out_parents(const std::string& out) {
  // A file where --out needs a folder above it is the same slip as --out naming a file: a usage
  // error, said as such, rather than the system's "Not a directory" when the folders are made.
  fs::path above;
  const fs::path parent = fs::path(out).parent_path();
  for (const fs::path& part : parent) {
    above /= part;
    std::error_code ec;
    const fs::file_status st = fs::status(above, ec);
    if (!ec && fs::exists(st) && !fs::is_directory(st))
      throw UsageError(fmt::format("--out {}: {} exists and is not a folder; give a path whose folders are folders",
                                   out, above.string()));
  }
}

void check_replaceable_folder(const std::string& final_) {
  check_out_parents(final_);
  const fs::path target(final_);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(target, ec);
  if (fs::exists(st)) {
    // A link is not followed: the run replaces the folder by renaming, which would replace the
    // link, not the folder it names.
    if (fs::is_symlink(st)) {
      throw UsageError(fmt::format("--out {}: is a symbolic link; give the folder it names, or a new one", final_));
    }
    if (!fs::is_directory(st)) {
      throw UsageError(fmt::format("--out {}: exists and is not a folder; give a new or empty folder", final_));
    }
    // The run swaps a whole new folder into place: the folder this process (and its shell) sits
    // in cannot be that one (renaming onto "." fails once the run is over; onto $PWD it leaves
    // the shell in a deleted folder).
    const fs::path here = fs::weakly_canonical(fs::current_path(ec));
    const fs::path out = fs::weakly_canonical(target, ec);
    if (!ec && !here.empty() && std::mismatch(out.begin(), out.end(), here.begin(), here.end()).first == out.end()) {
      throw UsageError(
          fmt::format("--out {}: is the current folder or holds it, and a run replaces its whole output "
                      "folder; give a folder of its own, such as --out {}",
                      final_, (fs::path(final_) / "gradsync-out").lexically_normal().string()));
    }
    refuse_foreign_files(target, final_);
  }
}

OutputFolder::OutputFolder(std::string final_path) {
  while (final_path.size() > 1 && final_path.back() == '/') final_path.pop_back();
  if (final_path.empty()) throw UsageError("--out \"\": expected a folder name");
  final_ = final_path;
  const fs::path target(final_);
  std::error_code ec;
  lock_ = std::make_unique<FolderLock>(final_);
  check_replaceable_folder(final_);
  fs::path parent = target.parent_path();
  if (parent.empty()) parent = ".";
  fs::create_directories(parent, ec);
  if (ec) throw RuntimeError(fmt::format("--out {}: cannot create {}: {}", final_, parent.string(), ec.message()));

  // Staging folders of runs into the same place that were killed: this host's, whose process is gone.
  const std::string name = target.filename().string();
  const std::string host = host_name();
  const std::string prefix = staging_prefix(name, host);
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string entry = e.path().filename().string();
    if (!entry.starts_with(prefix)) continue;
    const std::string rest = entry.substr(prefix.size());  // "tmp-HOST-PID" or "old-HOST-PID"
    const std::string mine = fmt::format("-{}-", host);
    const auto at = rest.find(mine);
    if (at != 3 || !(rest.starts_with("tmp") || rest.starts_with("old"))) continue;
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str() + at + mine.size(), &end, 10);
    if (end == nullptr || *end != '\0' || !process_gone(pid)) continue;
    std::error_code rm;
    fs::remove_all(e.path(), rm);
    if (!rm) removed_.push_back(e.path().string());
  }

  staging_ = (parent / fmt::format("{}tmp-{}-{}", prefix, host, ::getpid())).string();
  fs::remove_all(staging_, ec);  // a pid reused from a killed run
  fs::create_directory(staging_, ec);
  if (ec) {
    // The system's message alone misleads where the parent exists but refuses new entries (/proc,
    // /sys answer ENOENT): say that the folder is there.
    std::error_code exists_ec;
    const bool there = fs::is_directory(parent, exists_ec);
    const std::string why =
        there && ec == std::errc::no_such_file_or_directory
            ? fmt::format("{} exists but the system refuses new folders in it ({})", parent.string(), ec.message())
            : ec.message();
    throw RuntimeError(
        fmt::format("--out {}: cannot create a folder in {} (outputs are written beside the folder, then renamed "
                    "to it): {}",
                    final_, parent.string(), why));
  }
  slot_ = claim(staging_, final_, lock_->path());
}

OutputFolder::~OutputFolder() {
  release(slot_);
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void OutputFolder::commit() {
  {
    std::ofstream marker(fs::path(staging_) / kOutputMarker);
    marker << fmt::format("written by gradsync {}; this folder is replaced whole by the next run into it\n", kVersion);
    if (!marker) throw RuntimeError(fmt::format("--out {}: cannot write {}", final_, kOutputMarker));
  }
  left_ = swap_into_place(staging_, final_);
  committed_ = true;
}

std::string swap_into_place(const std::string& staging_, const std::string& final_) {
  std::error_code ec;
  // What could not be removed of the replaced folder: said, not left silently in a hidden folder.
  const auto remove_replaced = [&](const std::string& old) -> std::string {
    std::error_code rm;
    fs::remove_all(old, rm);
    if (!rm) return "";
    return fmt::format(
        "--out {}: the folder it replaced could not be removed whole ({}); its files are in {}: "
        "remove it by hand",
        final_, rm.message(), old);
  };
  const bool exists = fs::exists(fs::symlink_status(final_, ec));
  if (!exists) {
    if (::rename(staging_.c_str(), final_.c_str()) == 0) return "";
    // Another run into the same place put its folder there first: replace it as below.
    if (errno != ENOTEMPTY && errno != EEXIST) {
      throw RuntimeError(
          fmt::format("--out {}: cannot move {} into place: {}", final_, staging_, std::strerror(errno)));
    }
  }
  // One atomic swap: --out is the old folder or the new one at every instant.
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, final_.c_str(), RENAME_EXCHANGE) == 0) {
    return remove_replaced(staging_);  // now the old folder
  }
  // A file system without RENAME_EXCHANGE: move the old folder aside, then the new one in.
  // Named as the staging folders are, so that the next run removes it if this one dies here.
  const fs::path target(final_);
  const fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string old = (parent / fmt::format("{}old-{}-{}", staging_prefix(target.filename().string(), host_name()),
                                                host_name(), ::getpid()))
                              .string();
  if (::rename(final_.c_str(), old.c_str()) != 0 || ::rename(staging_.c_str(), final_.c_str()) != 0) {
    throw RuntimeError(fmt::format("--out {}: cannot replace it with {}: {}", final_, staging_, std::strerror(errno)));
  }
  return remove_replaced(old);
}

}  // namespace gradsync
