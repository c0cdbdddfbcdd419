// output_folder_test.cpp: --out is replaced whole or left untouched (core/output_folder.hpp).
#include "core/output_folder.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "core/error.hpp"
#include "core/folder_lock.hpp"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

class OutputFolderTest : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(testing::TempDir()) / ("gradsync-outfolder-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  static void put(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  std::set<std::string> entries(const fs::path& dir) const {
    std::set<std::string> s;
    for (const auto& e : fs::directory_iterator(dir)) s.insert(e.path().filename().string());
    return s;
  }
  fs::path root_;
};

TEST_F(OutputFolderTest, NothingAppearsUntilCommitThenExactlyThisRun) {
  const fs::path out = root_ / "out";
  {
    OutputFolder f(out.string());
    put(fs::path(f.path()) / "result.json", "{}");
    EXPECT_FALSE(fs::exists(out));  // written beside, not in place
  }                                 // not committed: nothing is left
  EXPECT_EQ(entries(root_), std::set<std::string>{});

  {
    OutputFolder f(out.string());
    put(fs::path(f.path()) / "result.json", "1");
    put(fs::path(f.path()) / "events.csv", "1");
    f.commit();
  }
  EXPECT_EQ(entries(out), (std::set<std::string>{".gradsync-run", "events.csv", "result.json"}));
  {
    OutputFolder f(out.string());  // a second run with other files replaces the whole folder
    put(fs::path(f.path()) / "summary.csv", "2");
    f.commit();
  }
  EXPECT_EQ(entries(out), (std::set<std::string>{".gradsync-run", "summary.csv"}));
  EXPECT_EQ(entries(root_), std::set<std::string>{"out"});
}

TEST_F(OutputFolderTest, ANameAsLongAsTheSystemAllowsIsStagedUnderAShorterOne) {
  // 255 bytes (NAME_MAX): the staging folder beside it keeps a prefix and a hash of the name.
  for (std::size_t length : {200u, 240u, 255u}) {
    const fs::path out = root_ / std::string(length, 'n');
    for (int run = 0; run < 2; ++run) {  // the second replaces the first
      OutputFolder f(out.string());
      EXPECT_LE(fs::path(f.path()).filename().string().size(), 255u) << length;
      put(fs::path(f.path()) / "result.json", std::to_string(run));
      f.commit();
    }
    EXPECT_EQ(entries(out), (std::set<std::string>{".gradsync-run", "result.json"})) << length;
    EXPECT_EQ(entries(root_), std::set<std::string>{out.filename().string()}) << length;
    fs::remove_all(out);
  }
}

TEST_F(OutputFolderTest, RefusesAFileOrAFolderOfOtherFiles) {
  put(root_ / "file", "x");
  EXPECT_THROW(OutputFolder((root_ / "file").string()), UsageError);
  // A file where a folder above --out must be: the same usage error, from the run and from its lock
  // alike (it was the system's "Not a directory", exit 1, until 2026-12-02).
  for (const fs::path& below : {root_ / "file" / "sub", root_ / "file" / "a" / "b"}) {
    try {
      OutputFolder f(below.string());
      ADD_FAILURE() << below << ": no error";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find((root_ / "file").string() + " exists and is not a folder"),
                std::string::npos)
          << e.what();
    }
    EXPECT_THROW(FolderLock lock(below.string()), UsageError);
  }
  fs::create_directories(root_ / "mine");
  put(root_ / "mine" / "thesis.tex", "x");
  try {
    OutputFolder f((root_ / "mine").string());
    FAIL() << "a folder of the user's files would be replaced";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the folder holds \"thesis.tex\", which gradsync did not write"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::exists(root_ / "mine" / "thesis.tex"));
  // An empty folder, or one of gradsync's own files from before the marker existed, is fine.
  fs::create_directories(root_ / "old");
  put(root_ / "old" / "summary.csv", "x");
  put(root_ / "old" / "trace-dp.json", "x");
  EXPECT_NO_THROW(OutputFolder((root_ / "old").string()));
  // A link to a folder is named as a link (the run would replace the link, not the folder).
  fs::create_directory_symlink(root_ / "old", root_ / "link");
  try {
    OutputFolder f((root_ / "link").string());
    FAIL() << "a symbolic link was taken as the folder";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is a symbolic link"), std::string::npos) << e.what();
  }
}

// /proc is there but takes no new entries (mkdir answers ENOENT): the message says the folder
// exists rather than repeating "No such file or directory" alone.
TEST_F(OutputFolderTest, AFolderThatRefusesNewEntriesIsSaidToExist) {
  ASSERT_TRUE(fs::is_directory("/proc")) << "Linux's /proc is what this test writes into";
  try {
    OutputFolder f("/proc/gradsync-out");
    FAIL() << "a folder was created in /proc";
  } catch (const RuntimeError& e) {
    // The run's lock file beside --out is the first thing it makes there (core/folder_lock.hpp).
    EXPECT_EQ(std::string(e.what()),
              "--out /proc/gradsync-out: cannot create its lock file /proc/.gradsync-out.gradsync-lock: /proc exists "
              "but the system refuses new files in it (No such file or directory)");
  }
}

TEST_F(OutputFolderTest, StagingOfAKilledRunIsRemovedByTheNext) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string h(host);
  for (char& c : h)
    if (c == '/' || c == '.') c = '_';
  // A pid that cannot be alive (above pid_max), and this process's own (alive): only the first goes.
  const fs::path dead = root_ / (".out.gradsync-tmp-" + h + "-99999999");
  const fs::path alive = root_ / (".out.gradsync-tmp-" + h + "-1");
  fs::create_directories(dead);
  fs::create_directories(alive);
  put(dead / "events.csv", "half");
  OutputFolder f((root_ / "out").string());
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(alive));  // pid 1 is alive
  ASSERT_EQ(f.removed().size(), 1u);
  EXPECT_EQ(fs::path(f.removed().front()).filename(), dead.filename());
}

// One writer per incremental folder (a sweep's): a second lock on it is refused, naming it, until
// the first lets go, which also removes the lock file; a lock on another folder is independent.
TEST_F(OutputFolderTest, ASecondWriterOfTheSameFolderIsRefused) {
  const fs::path out = root_ / "sweep";
  {
    const FolderLock first(out.string() + "/");
    EXPECT_EQ(first.path(), (root_ / ".sweep.gradsync-lock").string());
    EXPECT_TRUE(fs::exists(first.path()));
    try {
      const FolderLock second(out.string());
      ADD_FAILURE() << "a second lock on the same folder was taken";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("another gradsync is writing this folder now"), std::string::npos)
          << e.what();
    }
    const FolderLock other((root_ / "other").string());  // another folder: its own lock
  }
  EXPECT_FALSE(fs::exists(root_ / ".sweep.gradsync-lock"));
  const FolderLock again(out.string());  // free again
  EXPECT_TRUE(fs::exists(again.path()));
}

// A run's output folder takes the same lock for the run's whole life (a new user's report of
// 2026-12-02: a `compare` into the folder a sweep was writing went through, then the sweep replaced
// its outputs): refused while a sweep (or another run) holds it, and free again when the run ends.
TEST_F(OutputFolderTest, ARunIsRefusedAFolderAnotherGradsyncWrites) {
  const fs::path out = root_ / "busy";
  {
    const FolderLock sweep(out.string());
    try {
      OutputFolder f(out.string());
      ADD_FAILURE() << "a run wrote into a locked folder";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("another gradsync is writing this folder now"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(entries(root_), std::set<std::string>{".busy.gradsync-lock"});  // no staging folder was made
  }
  {
    OutputFolder run(out.string());
    EXPECT_THROW(FolderLock sweep(out.string()), UsageError);
    put(fs::path(run.path()) / "result.json", "1");
    run.commit();
  }
  EXPECT_EQ(entries(root_), std::set<std::string>{"busy"});
  // The lock of a name as long as the system allows is made beside it under a shorter name.
  const FolderLock longest((root_ / std::string(255, 'n')).string());
  EXPECT_LE(fs::path(longest.path()).filename().string().size(), 255u);
}

}  // namespace
}  // namespace gradsync
