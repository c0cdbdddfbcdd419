// buffer_loader.cpp: a model file's `buffers` list (buffer_loader.hpp).
#include "models/buffer_loader.hpp"

#include <set>
#include <utility>

#include "core/error.hpp"

namespace gradsync {

void read_buffers(const YamlReader& r, const YAML::Node& bufs, Model& m) {
  if (!bufs.IsSequence()) r.fail(bufs, "buffers", "expected a list of {name, shape, dtype}");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    const YAML::Node b = bufs[i];
    std::string where = list_entry("buffers", i, "");
    if (!b.IsMap()) r.fail(b, where, "expected a mapping {name, shape, dtype}");
    Buffer buf;
    buf.name = r.string(r.required(b, where, "name"), where, "name");
    where = list_entry("buffers", i, buf.name);
    r.only_keys(b, where, {"name", "shape", "dtype", "attention"});
    buf.shape = r.shape(r.required(b, where, "shape"), where);
    if (b["dtype"]) buf.dtype = r.dtype(b["dtype"], where);
    if (const YAML::Node a = b["attention"]) {
      // attention: math: registered only when the model runs its own attention (nanoGPT's mask).
      if (r.string(a, where, "attention") != "math")
        r.fail(a, where,
               fmt::format("field \"attention\" \"{}\": expected math (a buffer that exists only under math "
                           "attention)",
                           r.string(a, where, "attention")));
      buf.math_attention_only = true;
    }
    if (!seen.insert(buf.name).second)
      r.fail(b["name"], where, fmt::format("duplicate buffer name \"{}\"", buf.name));
    try {
      (void)buf.bytes();
    } catch (const ConfigError& e) {
      r.fail(b["shape"], where, e.what());
    }
    m.buffers.push_back(std::move(buf));
  }
  try {
    (void)m.buffer_bytes();
  } catch (const ConfigError& e) {
    r.fail(bufs, "buffers", e.what());
  }
}

}  // namespace gradsync
