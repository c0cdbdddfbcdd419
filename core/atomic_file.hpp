// atomic_file.hpp: write an output file so that readers see the old file or the whole new one,
// never half of it: the text goes to a temporary file beside the target, then rename(2).
//
//   write_file_atomic("out/result.json", text);   // RuntimeError naming the path on failure
#pragma once

#include <string>
#include <string_view>

namespace gradsync {

// write_file_atomic writes `text` to `path` through a temporary file in the same directory and
// a rename; on failure the temporary file is removed and RuntimeError says which path and why.
void write_file_atomic(const std::string& path, std::string_view text);

}  // namespace gradsync
