// dot_parser.hpp: what Boost's read_graphviz does not tell: where each node and edge is
// declared (lines), in which order (Boost orders vertices by name), duplicate node statements,
// and unquoted numbers in gradsync's attributes (Boost keeps "3" of bw=3e11). Syntax errors are
// reported with their line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "topologies/topology_attributes.hpp"

namespace gradsync::detail {

// DotParse: the file's opening comment, its nodes in first-appearance order and its edges.
struct DotParse {
  std::string comment;
  std::vector<RawNode> nodes;
  std::vector<RawLink> links;
};

// parse_dot checks DOT syntax and gradsync's rules on it; ConfigError "origin:line: ..." otherwise.
DotParse parse_dot(std::string_view text, const std::string& origin);

}  // namespace gradsync::detail
