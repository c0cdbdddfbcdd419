// atomic_file_test.cpp: outputs appear whole or not at all, and failures name the path.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gradsync-atomic-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(AtomicFile, WritesAndReplacesLeavingNoTemporaryFile) {
  const fs::path target = dir_ / "out.dot";
  write_file_atomic(target.string(), "first\n");
  EXPECT_EQ(read(target), "first\n");
  write_file_atomic(target.string(), "second\n");
  EXPECT_EQ(read(target), "second\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(AtomicFile, ANameAsLongAsTheSystemAllowsIsWrittenThroughAShorterTemporary) {
  for (std::size_t length : {240u, 255u}) {
    const fs::path target = dir_ / std::string(length, 'm');
    write_file_atomic(target.string(), "one\n");
    AtomicFileWriter w(target.string());
    w.write("two\n");
    w.commit();
    EXPECT_EQ(read(target), "two\n") << length;
    fs::remove(target);
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 0);
  // The shortened stem: the name's first bytes, whole UTF-8 characters, then a hash of all of it.
  EXPECT_EQ(name_within("out", 12), "out");
  // 243 + 12 bytes fit exactly; 245 do not: 226 bytes are kept, and the 226th would split "é".
  const std::string accented = std::string(225, 'x') + "\xc3\xa9" + std::string(18, 'b');
  const std::string stem = name_within(accented, 12);
  EXPECT_EQ(stem.substr(0, 226), std::string(225, 'x') + "~");
  EXPECT_EQ(stem.size(), 225u + 17u);
  EXPECT_NE(name_within(accented, 12), name_within(accented + "c", 12));  // different names, different stems
}

TEST_F(AtomicFile, FailureNamesThePathAndKeepsTheOldFile) {
  const fs::path missing = dir_ / "no-such-dir" / "out.dot";
  try {
    write_file_atomic(missing.string(), "x");
    FAIL() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write " + missing.string() + ": No such file or directory");
  }
  // A directory where the file should go: the error says so, nothing is left behind.
  fs::create_directories(dir_ / "taken");
  try {
    write_file_atomic((dir_ / "taken").string(), "x");
    FAIL() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write " + (dir_ / "taken").string() + ": it is a directory");
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

// A pipe or a device (-o /dev/null, /dev/stdout) is written into, never replaced by a renamed
// file (as root that turned /dev/null into a regular file); a symbolic link stays a link and the
// file it names gets the text. A FIFO stands for every such file here: a test must not risk the
// machine's /dev/null.
TEST_F(AtomicFile, APipeIsWrittenIntoAndALinkIsFollowed) {
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const bool streamed : {false, true}) {
    std::string got;
    std::thread reader([&] { got = read(fifo); });
    if (streamed) {
      AtomicFileWriter w(fifo.string());
      w.write("streamed\n");
      w.commit();
    } else {
      write_file_atomic(fifo.string(), "whole\n");
    }
    reader.join();
    EXPECT_EQ(got, streamed ? "streamed\n" : "whole\n");
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  }
  const fs::path file = dir_ / "real.txt", link = dir_ / "link.txt";
  write_file_atomic(file.string(), "old\n");
  fs::create_symlink(file, link);
  write_file_atomic(link.string(), "new\n");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(read(file), "new\n");
  AtomicFileWriter w(link.string());
  w.write("newer\n");
  w.commit();
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(read(file), "newer\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 3);  // pipe, file, link
}

}  // namespace
}  // namespace gradsync
