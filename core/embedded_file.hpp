// embedded_file.hpp: data files compiled into the binary (the model zoo, GPU specs, built-in
// clusters), so `gradsync` works from any directory. cmake/GradsyncEmbed.cmake generates the
// tables; each library exposes its own.
#pragma once

#include <string_view>

namespace gradsync {

// EmbeddedFile is one data file: its path relative to the repository root and its text.
struct EmbeddedFile {
  std::string_view path;
  std::string_view text;
};

}  // namespace gradsync
