// topo_output.hpp: where `topo generate` and `topo export` write (apps/topo_generate_command.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include <ostream>
#include <string>

namespace gradsync::apps {

// check_out_name: UsageError unless `path` (empty or "-": standard output) carries an extension
// the topology reader takes `format` ("dot" or "graphml") from: .dot/.gv, .graphml/.xml.
void check_out_name(const std::string& path, const std::string& format);
// emit: `text` to `path` (atomically), or to `out` where `path` is empty or "-".
void emit(const std::string& text, const std::string& path, std::ostream& out);
// register_topo_generate: `topo generate` and its generators, under `topo`.
void register_topo_generate(CLI::App* topo);

}  // namespace gradsync::apps
