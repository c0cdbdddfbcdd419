// buffer_loader.hpp: reading a model file's `buffers` list (model_loader.cpp) into a Model being
// loaded. Errors name the file, line and buffer.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>

#include "core/yaml_reader.hpp"
#include "models/model.hpp"

namespace gradsync {

// list_entry: how an error names entry i of a model file's list: `buffers[2]`, or with its name
// `buffers[2] "running_mean"`.
inline std::string list_entry(const char* list, std::size_t i, const std::string& name) {
  return name.empty() ? fmt::format("{}[{}]", list, i) : fmt::format("{}[{}] \"{}\"", list, i, name);
}

// read_buffers: `bufs` (the file's `buffers:`, a list of {name, shape, dtype, attention}) appended
// to m.buffers; a malformed entry, a duplicate name or a size that overflows fails at its line.
void read_buffers(const YamlReader& r, const YAML::Node& bufs, Model& m);

}  // namespace gradsync
