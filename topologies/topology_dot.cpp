// topology_dot.cpp: Graphviz DOT topology files. Boost.Graph's read_graphviz builds the graph and
// reads the attributes; dot_parser supplies what Boost does not (lines, order, duplicates,
// unquoted numbers).
#include <fmt/format.h>
#include <boost/graph/graphviz.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_map>

#include "core/error.hpp"
#include "core/text.hpp"
#include "topologies/dot_parser.hpp"
#include "topologies/topology.hpp"
#include "topologies/topology_attributes.hpp"

namespace gradsync {
namespace {

using detail::RawLink;
using detail::RawNode;

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

static Topology read_topology_dot_unchecked(std::string_view text, const std::string& origin);

// Every error of the file's content is a DataError (exit 1), whoever named the file.
Topology read_topology_dot(std::string_view text, const std::string& origin) {
  return as_data_error([&] { return read_topology_dot_unchecked(text, origin); });
}

static Topology read_topology_dot_unchecked(std::string_view text, const std::string& origin) {
  // Names and attributes go into tables, JSON and the other format's file: bytes that are not UTF-8
  // are refused at their line (GraphML export copied them raw, and XML readers refuse them).
  if (const std::size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    throw ConfigError(fmt::format("{}:{}: byte 0x{:02X} is not UTF-8; expected a UTF-8 file", origin, line,
                                  static_cast<unsigned char>(text[bad])));
  }
  // A UTF-8 byte order mark (as some editors save) is skipped, as the YAML reader skips it.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  detail::DotParse parsed = detail::parse_dot(text, origin);

  detail::BoostAttrGraph g;
  boost::dynamic_properties dp = detail::boost_properties(g, true);
  try {
    boost::read_graphviz(std::string(text), g, dp, "node_id");
  } catch (const boost::directed_graph_error&) {
    throw ConfigError(fmt::format("{}: a directed graph; a topology is an undirected 'graph'", origin));
  } catch (const std::exception& e) {
    throw ConfigError(fmt::format("{}: syntax error: {}", origin, e.what()));
  }

  // Boost's values, in the scanner's order and with its lines.
  std::unordered_map<std::string, std::size_t> pos;
  for (std::size_t i = 0; i < parsed.nodes.size(); ++i) pos.emplace(parsed.nodes[i].name, i);
  std::vector<RawNode> nodes = parsed.nodes;
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    auto it = pos.find(g[v].name);
    if (it == pos.end()) throw ConfigError(fmt::format("{}: node {} was not found by the scanner", origin, g[v].name));
    RawNode& n = nodes[it->second];
    n.attrs = detail::node_attrs(g[v]);
  }
  std::map<std::pair<std::string, std::string>, std::vector<int>> lines;  // edge -> lines, in order
  for (const RawLink& l : parsed.links) lines[{l.a, l.b}].push_back(l.line);
  std::vector<RawLink> links;
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    RawLink l{g[boost::source(e, g)].name, g[boost::target(e, g)].name, 0, {}};
    auto& ls = lines[{l.a, l.b}];
    if (!ls.empty()) {
      l.line = ls.front();
      ls.erase(ls.begin());
    }
    l.attrs = detail::link_attrs(g[e]);
    links.push_back(std::move(l));
  }
  std::stable_sort(links.begin(), links.end(), [](const RawLink& x, const RawLink& y) { return x.line < y.line; });
  return detail::topology_from_raw(origin, std::move(parsed.comment), nodes, links);
}

std::string write_topology_dot(const Topology& topo) {
  std::vector<RawNode> nodes;
  std::vector<RawLink> links;
  detail::raw_from_topology(topo, nodes, links);
  std::string out;
  if (!topo.comment().empty()) {
    std::istringstream lines(topo.comment());
    for (std::string line; std::getline(lines, line);) out += line.empty() ? "//\n" : "// " + line + "\n";
  }
  out += "graph topology {\n";
  const auto attrs = [](const std::map<std::string, std::string>& a, const std::vector<std::string>& order) {
    std::string s;
    for (const auto& key : order) {
      auto it = a.find(key);
      if (it == a.end()) continue;
      s += fmt::format("{}{}={}", s.empty() ? "" : ", ", key, quoted(it->second));
    }
    return s;
  };
  std::string host;
  for (const RawNode& n : nodes) {
    auto it = n.attrs.find("host");
    const std::string h = it == n.attrs.end() ? "" : it->second;
    if (h != host) {
      out += h.empty() ? "  // network\n" : fmt::format("  // host {}\n", h);
      host = h;
    }
    out += fmt::format("  {} [{}];\n", quoted(n.name), attrs(n.attrs, detail::kNodeAttributes));
  }
  out += "\n";
  for (const RawLink& l : links) {
    out += fmt::format("  {} -- {} [{}];\n", quoted(l.a), quoted(l.b), attrs(l.attrs, detail::kLinkAttributes));
  }
  out += "}\n";
  return out;
}

}  // namespace gradsync
