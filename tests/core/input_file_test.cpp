// input_file_test.cpp: read_input_file on named pipes (a late writer is waited for, a pipe
// nothing writes to is refused: it used to block open() for ever) and on symbolic links that loop
// or point nowhere.
#include "core/input_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace gradsync {
namespace {

std::string fifo_path(const std::string& name) {
  const std::string p = (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))).string();
  std::remove(p.c_str());
  EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0);
  return p;
}

TEST(InputFile, ANamedPipeIsReadOnceItsWriterComes) {
  const std::string p = fifo_path("gradsync-fifo-late");
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::ofstream(p) << "model: resnet18\ngpus: 2\n";
  });
  EXPECT_EQ(read_input_file(p, "scenario file"), "model: resnet18\ngpus: 2\n");
  writer.join();
  std::remove(p.c_str());
}

TEST(InputFile, ANamedPipeNothingWritesToIsRefusedNotWaitedOnForEver) {
  const std::string p = fifo_path("gradsync-fifo-none");
  const auto start = std::chrono::steady_clock::now();
  try {
    read_input_file(p, "scenario file");
    ADD_FAILURE() << "read a pipe nothing writes to";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(p + ": cannot read the scenario file: it is a named pipe (FIFO) that nothing "
                                             "wrote to in 10 s"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  std::remove(p.c_str());
}

// A symbolic link loop and a link to nothing are said as such, not as a missing file.
TEST(InputFile, SymbolicLinksThatLoopOrPointNowhereAreNamed) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gradsync-links-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::create_symlink("b.dot", dir / "a.dot");
  fs::create_symlink("a.dot", dir / "b.dot");
  fs::create_symlink("nowhere.dot", dir / "dangling.dot");
  const auto error_of = [](const fs::path& p) {
    try {
      read_input_file(p.string(), "topology file");
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  EXPECT_EQ(error_of(dir / "a.dot"),
            (dir / "a.dot").string() + ": cannot read the topology file: its symbolic links loop (ELOOP)");
  EXPECT_EQ(error_of(dir / "dangling.dot"),
            (dir / "dangling.dot").string() +
                ": cannot read the topology file: it is a symbolic link to nowhere.dot, "
                "which does not exist");
  EXPECT_EQ(error_of(dir / "missing.dot"),
            (dir / "missing.dot").string() + ": cannot read the topology file: no such file");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradsync
