// atomic_file.hpp: write an output file so that readers see the old file or the whole new one,
// never half of it: the text goes to a temporary file beside the target, then rename(2).
//
//   write_file_atomic("out/result.json", text);   // RuntimeError naming the path on failure
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gradsync {

// name_within: `name` when `reserve` more bytes beside it stay within the system's NAME_MAX (255);
// else its first bytes (whole UTF-8 characters) and "~" with a 64-bit hash of it, as long as that
// allows: the stem of a temporary or staging name made beside a file or folder of a long name.
std::string name_within(const std::string& name, std::size_t reserve);

// write_file_atomic writes `text` to `path` through a temporary file in the same directory and
// a rename; on failure the temporary file is removed and RuntimeError says which path and why. A
// symbolic link is followed (the file it names is replaced, the link stays); a device or a pipe
// (-o /dev/null, /dev/stdout) is written into as it is, never replaced.
void write_file_atomic(const std::string& path, std::string_view text);

// AtomicFileWriter: the same, written piece by piece (a trace of millions of events is never held
// whole), optionally gzip-compressed (deterministic: no name or time in the gzip header). The file
// appears at `path` on commit(); destroyed uncommitted, the temporary file is removed.
//
//   AtomicFileWriter w("out/trace-ddp.json.gz", /*gzip=*/true);
//   w.write("{\"traceEvents\":[");  ...  w.commit();
class AtomicFileWriter {
 public:
  AtomicFileWriter(std::string path, bool gzip = false);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::string_view text);
  void commit();

 private:
  void flush_buffer(bool finish);
  void write_raw(const char* data, std::size_t size);
  [[noreturn]] void fail(int err);

  std::string path_;
  std::string target_;  // path_, or the file its symbolic link names
  std::string tmp_;     // empty when target_ is a device or a pipe, written into as it is
  int fd_ = -1;
  bool gzip_ = false;
  std::string buffer_;  // text not yet written (or compressed)
  struct Deflate;
  Deflate* z_ = nullptr;
};

}  // namespace gradsync
