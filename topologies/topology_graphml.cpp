// topology_graphml.cpp: GraphML topology files. Boost.Graph's read_graphml reads the attributes
// (<data> under <key attr.name="bw">); Boost's property_tree walk beside it gives the node ids,
// which read_graphml does not keep, and catches duplicate ids and edges to undeclared nodes.
#include <fmt/format.h>
#include <boost/graph/graphml.hpp>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/error.hpp"
#include "core/markup.hpp"
#include "core/text.hpp"
#include "topologies/topology.hpp"
#include "topologies/topology_attributes.hpp"

namespace gradsync {
namespace {

using detail::RawLink;
using detail::RawNode;

// xml_message turns property_tree's "<unspecified file>(12): expected >" into "origin:12: ...".
std::string xml_message(const boost::property_tree::xml_parser_error& e, const std::string& origin) {
  return fmt::format("{}:{}: syntax error: {}", origin, e.line(), e.message());
}

// located: "origin:line: ", or "origin: " without a line (as the DOT reader's errors start).
std::string located(const std::string& origin, int line) {
  return line > 0 ? fmt::format("{}:{}: ", origin, line) : origin + ": ";
}

// kMaxElementDepth: GraphML nests graphml > graph > node > data (4 levels); property_tree's XML
// parser recurses per level, so a hostile file could exhaust the stack long before memory.
constexpr int kMaxElementDepth = 100;

// TagLines: the line of each opening tag, by tag name, in document order (property_tree keeps
// no lines; a <node>'s or <edge>'s error names its line by its rank among the tags of its name).
using TagLines = std::map<std::string, std::vector<int>, std::less<>>;

// check_entity: the reference at text[at] ('&') is one XML defines (&amp; &lt; &gt; &quot; &apos;,
// &#N; &#xH;); property_tree's parser keeps any other as it is written ("node&bogus;0").
void check_entity(std::string_view text, std::size_t at, int line, const std::string& origin) {
  const std::size_t semi = text.find(';', at);
  const std::string_view name =
      semi == std::string_view::npos || semi - at > 12 ? std::string_view() : text.substr(at + 1, semi - at - 1);
  const auto all = [&](std::string_view v, auto pred) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [&](char ch) { return pred(static_cast<unsigned char>(ch)); });
  };
  const bool ok = name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos" ||
                  (name.starts_with("#x") && all(name.substr(2), [](unsigned char ch) { return std::isxdigit(ch); })) ||
                  (name.starts_with("#") && all(name.substr(1), [](unsigned char ch) { return std::isdigit(ch); }));
  if (!ok) {
    const std::string_view shown =
        text.substr(at, std::min<std::size_t>(semi == std::string_view::npos ? 12 : semi - at + 1, 12));
    throw ConfigError(
        fmt::format("{}:{}: syntax error: \"{}\" is not an XML reference; write & as &amp; (XML "
                    "defines &amp; &lt; &gt; &quot; &apos; and &#N;)",
                    origin, line, shown));
  }
}

// scan_tags scans the tags (skipping comments, CDATA, declarations and quoted attribute values),
// fails past kMaxElementDepth before the recursive parser sees the text, and returns each opening
// tag's line.
TagLines scan_tags(std::string_view text, const std::string& origin) {
  TagLines lines;
  int depth = 0;
  int line = 1;
  std::size_t i = 0;
  const auto skip_past = [&](std::string_view end) {
    const std::size_t at = text.find(end, i);
    const std::size_t stop = at == std::string_view::npos ? text.size() : at + end.size();
    for (; i < stop; ++i) line += text[i] == '\n';
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (c == '&') check_entity(text, i, line, origin);
    if (c != '<') {
      ++i;
      continue;
    }
    const std::string_view rest = text.substr(i);
    if (rest.starts_with("<!--")) {
      skip_past("-->");
    } else if (rest.starts_with("<![CDATA[")) {
      skip_past("]]>");
    } else if (rest.starts_with("<?") || rest.starts_with("<!")) {
      skip_past(">");
    } else if (rest.starts_with("</")) {
      --depth;
      skip_past(">");
    } else {
      // An opening tag: its name, then its end outside quoted attribute values.
      std::size_t name_end = i + 1;
      while (name_end < text.size() && std::string_view(" \t\r\n/>").find(text[name_end]) == std::string_view::npos)
        ++name_end;
      lines[std::string(text.substr(i + 1, name_end - i - 1))].push_back(line);
      char quote = 0;
      std::size_t j = i + 1;
      for (; j < text.size(); ++j) {
        const char d = text[j];
        if (d == '\n') ++line;
        if (quote != 0) {
          if (d == quote) quote = 0;
          if (d == '&') check_entity(text, j, line, origin);
        } else if (d == '"' || d == '\'') {
          quote = d;
        } else if (d == '>') {
          break;
        }
      }
      const bool self_closing = j < text.size() && j > i + 1 && text[j - 1] == '/';
      if (!self_closing && ++depth > kMaxElementDepth) {
        throw ConfigError(
            fmt::format("{}:{}: elements nested more than {} deep; GraphML needs 4 levels "
                        "(graphml, graph, node, data)",
                        origin, line, kMaxElementDepth));
      }
      i = j + 1;
    }
  }
  return lines;
}

// line_of: the line of the rank-th <tag> when the file's <tag>s are exactly the ones read (count
// of them), else 0 (no line: a <tag> elsewhere, as inside a <desc>, would shift them).
int line_of(const TagLines& lines, std::string_view tag, std::size_t rank, std::size_t count) {
  const auto it = lines.find(tag);
  if (it == lines.end() || it->second.size() != count || rank >= count) return 0;
  return it->second[rank];
}

}  // namespace

static Topology read_topology_graphml_unchecked(std::string_view text, const std::string& origin);

// Every error of the file's content is a DataError (exit 1), whoever named the file.
Topology read_topology_graphml(std::string_view text, const std::string& origin) {
  return as_data_error([&] { return read_topology_graphml_unchecked(text, origin); });
}

static Topology read_topology_graphml_unchecked(std::string_view text, const std::string& origin) {
  // Names and attributes go into tables, JSON and the other format's file: bytes that are not UTF-8
  // are refused at their line (GraphML export copied them raw, and XML readers refuse them).
  if (const std::size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    throw ConfigError(fmt::format("{}:{}: byte 0x{:02X} is not UTF-8; expected a UTF-8 file", origin, line,
                                  static_cast<unsigned char>(text[bad])));
  }
  namespace pt = boost::property_tree;
  pt::ptree tree;
  const TagLines tag_lines = scan_tags(text, origin);
  {
    std::istringstream in{std::string(text)};
    try {
      pt::read_xml(in, tree);
    } catch (const pt::xml_parser_error& e) {
      throw ConfigError(xml_message(e, origin));
    }
  }
  const auto root = tree.get_child_optional("graphml");
  if (!root) throw ConfigError(fmt::format("{}: not GraphML: expected a <graphml> root element", origin));
  // GraphML's namespace, or none: a <graphml> of another vocabulary is not this format.
  if (const std::string ns = root->get<std::string>("<xmlattr>.xmlns", "");
      !ns.empty() && ns != "http://graphml.graphdrawing.org/xmlns") {
    throw ConfigError(fmt::format(
        "{}: <graphml xmlns=\"{}\">: not GraphML's namespace; expected xmlns=\"http://graphml.graphdrawing.org/xmlns\" "
        "(or none)",
        origin, ns));
  }
  const pt::ptree* graph = nullptr;
  for (const auto& [tag, child] : *root) {
    if (tag != "graph") continue;
    if (graph != nullptr) throw ConfigError(fmt::format("{}: more than one <graph>; expected exactly one", origin));
    graph = &child;
  }
  if (graph == nullptr) throw ConfigError(fmt::format("{}: no <graph> element in <graphml>", origin));
  if (graph->get<std::string>("<xmlattr>.edgedefault", "") == "directed") {
    throw ConfigError(
        fmt::format("{}<graph edgedefault=\"directed\">: a directed graph; a topology is undirected: "
                    "write edgedefault=\"undirected\"",
                    located(origin, line_of(tag_lines, "graph", 0, 1))));
  }

  std::vector<RawNode> nodes;
  std::vector<RawLink> links;
  std::unordered_map<std::string, std::size_t> index;
  // The <key> declarations, checked here because Boost's read_graphml names neither a <data> whose
  // key is not declared nor a declaration's bad type ("unrecognized type \"\" for key").
  std::map<std::string, std::string> declared;   // key id -> its domain (GraphML's for=: node, edge, all)
  std::map<std::string, std::string> key_names;  // key id -> its attr.name
  std::set<std::string> numeric_keys;            // key ids of a `links` declared int or long
  // Each <key>'s error names its line, by its rank among the document's <key> tags.
  const auto key_count = static_cast<std::size_t>(
      std::count_if(root->begin(), root->end(), [](const auto& child) { return child.first == "key"; }));
  std::size_t key_rank = 0;
  for (const auto& [tag, key] : *root) {
    if (tag != "key") continue;
    const std::string at = located(origin, line_of(tag_lines, "key", key_rank++, key_count));
    const std::string id = key.get<std::string>("<xmlattr>.id", "");
    if (id.empty()) throw ConfigError(fmt::format("{}a <key> without an id", at));
    // "attr.type" holds ptree's path separator: read it under '/' as the separator.
    const std::string type = key.get<std::string>(pt::ptree::path_type("<xmlattr>/attr.type", '/'), "");
    static const std::set<std::string> kTypes{"boolean", "int", "long", "float", "double", "string"};
    if (!kTypes.contains(type)) {
      throw ConfigError(fmt::format(
          "{}<key id=\"{}\">: attr.type \"{}\"; expected one of GraphML's boolean, int, long, float, double, "
          "string",
          at, id, type));
    }
    const std::string domain = key.get<std::string>("<xmlattr>.for", "all");
    if (domain != "node" && domain != "edge" && domain != "all" && domain != "graph" && domain != "graphml") {
      throw ConfigError(fmt::format("{}<key id=\"{}\">: for=\"{}\"; expected node, edge or all", at, id, domain));
    }
    // The attribute a node or edge key names: one gradsync reads or a drawing one it ignores. A key
    // without attr.name (yEd's graphics) carries no attribute.
    if (const std::string name = key.get<std::string>(pt::ptree::path_type("<xmlattr>/attr.name", '/'), "");
        !name.empty() && domain != "graph" && domain != "graphml") {
      if (const std::string unknown = detail::unknown_attribute(name); !unknown.empty())
        throw ConfigError(fmt::format("{}<key id=\"{}\" attr.name=\"{}\">: {}", at, id, name, unknown));
    }
    declared[id] = domain;
    key_names[id] = key.get<std::string>(pt::ptree::path_type("<xmlattr>/attr.name", '/'), "");
    // gradsync's attributes are words and sizes with units: text (a count of links may be a number).
    const std::string& named = key_names[id];
    const bool ours = std::find(detail::kNodeAttributes.begin(), detail::kNodeAttributes.end(), named) !=
                          detail::kNodeAttributes.end() ||
                      std::find(detail::kLinkAttributes.begin(), detail::kLinkAttributes.end(), named) !=
                          detail::kLinkAttributes.end();
    if (named == "links" && (type == "int" || type == "long")) numeric_keys.insert(id);
    if (ours && type != "string" && !(named == "links" && (type == "int" || type == "long"))) {
      throw ConfigError(fmt::format("{}<key id=\"{}\" attr.name=\"{}\">: attr.type \"{}\"; expected string{}", at, id,
                                    named, type, named == "links" ? " (or int)" : ""));
    }
  }
  // A <data> key twice on one element: Boost keeps the last; a link with two bandwidths is a
  // mistake to name.
  const auto once_each = [&](const pt::ptree& element, const std::string& what, const std::string& kind) {
    std::map<std::string, std::string> seen;
    for (const auto& [tag, data] : element) {
      if (tag == "graph") {
        throw ConfigError(fmt::format("{}: holds a nested <graph>; expected one flat graph of nodes and edges", what));
      }
      if (tag != "data") continue;
      const std::string key = data.get<std::string>("<xmlattr>.key", "");
      const auto decl = declared.find(key);
      if (decl == declared.end()) {
        throw ConfigError(
            fmt::format("{}: <data key=\"{}\"> names no <key id=\"{}\"> declared in <graphml>", what, key, key));
      }
      if (decl->second != kind && decl->second != "all") {
        throw ConfigError(
            fmt::format("{}: <data key=\"{}\">: that key is declared for=\"{}\"; expected a key for "
                        "{} (or all)",
                        what, key, decl->second, kind));
      }
      // A node's attribute on an edge (through a key for="all"), or a link's on a node: Boost's
      // reader would drop it without a word.
      const std::string& name = key_names[key];
      const auto& theirs = kind == "edge" ? detail::kNodeAttributes : detail::kLinkAttributes;
      if (std::find(theirs.begin(), theirs.end(), name) != theirs.end()) {
        const auto& mine = kind == "edge" ? detail::kLinkAttributes : detail::kNodeAttributes;
        throw ConfigError(fmt::format("{}: <data key=\"{}\">: attribute \"{}\" is for {}, not {}; {} takes {}", what,
                                      key, name, kind == "edge" ? "nodes" : "links",
                                      kind == "edge" ? "a link" : "a node", kind == "edge" ? "a link" : "a node",
                                      fmt::join(mine, ", ")));
      }
      const std::string value = data.get_value<std::string>();
      if (const auto [it, fresh] = seen.emplace(key, value); !fresh) {
        throw ConfigError(
            fmt::format("{}: <data key=\"{}\"> given twice ({} and {}); keep one", what, key, it->second, value));
      }
    }
  };
  // Each <node> and <edge> of the graph with its line. A <hyperedge> (one link among many nodes)
  // has no meaning in a cluster, whose links each join two ends: refused, not skipped.
  std::size_t node_count = 0, edge_count = 0, hyperedges = 0;
  for (const auto& [tag, child] : *graph) hyperedges += tag == "hyperedge";
  for (const auto& [tag, child] : *graph) {
    if (tag == "hyperedge") {
      const int line = line_of(tag_lines, "hyperedge", 0, hyperedges);
      throw ConfigError(fmt::format(
          "{}a <hyperedge>: a link joins two nodes; expected an <edge source=\"...\" target=\"...\"> for each pair",
          line > 0 ? located(origin, line) : origin + ": "));
    }
    node_count += tag == "node";
    edge_count += tag == "edge";
  }
  std::vector<int> node_lines, edge_lines;
  for (const auto& [tag, child] : *graph) {
    if (tag == "node") node_lines.push_back(line_of(tag_lines, "node", node_lines.size(), node_count));
    if (tag == "edge") edge_lines.push_back(line_of(tag_lines, "edge", edge_lines.size(), edge_count));
  }
  std::size_t node_rank = 0, edge_rank = 0;
  for (const auto& [tag, child] : *graph) {
    if (tag == "node") {
      once_each(child, located(origin, node_lines[node_rank++]) + "node " + child.get<std::string>("<xmlattr>.id", ""),
                "node");
    }
    if (tag == "edge") {
      once_each(child,
                located(origin, edge_lines[edge_rank++]) + "edge " + child.get<std::string>("<xmlattr>.source", "") +
                    "--" + child.get<std::string>("<xmlattr>.target", ""),
                "edge");
    }
  }
  node_rank = 0;
  for (const auto& [tag, child] : *graph) {
    if (tag == "node") {
      const int line = node_lines[node_rank++];
      const std::string id = child.get<std::string>("<xmlattr>.id", "");
      if (id.empty()) throw ConfigError(fmt::format("{}a <node> without an id", located(origin, line)));
      if (const auto [it, fresh] = index.emplace(id, nodes.size()); !fresh) {
        const int first = nodes[it->second].line;
        throw ConfigError(fmt::format("{}node {}: duplicate name{}; node ids must be unique", located(origin, line), id,
                                      first > 0 ? fmt::format(" (first on line {})", first) : ""));
      }
      nodes.push_back(RawNode{id, line, {}});
    }
  }
  edge_rank = 0;
  for (const auto& [tag, child] : *graph) {
    if (tag != "edge") continue;
    const int line = edge_lines[edge_rank++];
    const std::string a = child.get<std::string>("<xmlattr>.source", "");
    const std::string b = child.get<std::string>("<xmlattr>.target", "");
    for (const std::string* end : {&a, &b}) {
      if (!index.contains(*end)) {
        throw ConfigError(
            fmt::format("{}edge {}--{}: node \"{}\" is not declared by a <node>", located(origin, line), a, b, *end));
      }
    }
    // An edge may say it is directed (GraphML's directed="true"); a link carries both directions.
    if (child.get<std::string>("<xmlattr>.directed", "false") == "true") {
      throw ConfigError(fmt::format(
          "{}edge {}--{}: directed=\"true\"; a topology's links are undirected (each carries both directions): "
          "expected directed=\"false\" or none",
          located(origin, line), a, b));
    }
    links.push_back(RawLink{a, b, line, {}});
  }

  detail::BoostAttrGraph g;
  boost::dynamic_properties dp = detail::boost_properties(g, false);
  // Boost reads every attribute into text; a `links` declared int or long (networkx's
  // write_graphml writes an integer so) is handed to it declared string, its values as written.
  std::string readable(text);
  if (!numeric_keys.empty()) {
    pt::ptree copy = tree;
    for (auto& [tag, key] : copy.get_child("graphml")) {
      if (tag == "key" && numeric_keys.contains(key.get<std::string>("<xmlattr>.id", "")))
        key.put(pt::ptree::path_type("<xmlattr>/attr.type", '/'), "string");
    }
    std::ostringstream out;
    pt::write_xml(out, copy);
    readable = out.str();
  }
  try {
    std::istringstream in{readable};
    boost::read_graphml(in, g, dp);
  } catch (const pt::xml_parser_error& e) {
    throw ConfigError(xml_message(e, origin));
  } catch (const boost::directed_graph_error&) {
    throw ConfigError(fmt::format("{}: a directed graph; a topology is undirected", origin));
  } catch (const std::exception& e) {
    throw ConfigError(fmt::format("{}: {}", origin, e.what()));
  }
  // read_graphml adds vertices in <node> order and edges in <edge> order.
  if (boost::num_vertices(g) != nodes.size() || boost::num_edges(g) != links.size()) {
    throw ConfigError(fmt::format("{}: read {} nodes and {} edges, but the file declares {} and {}", origin,
                                  boost::num_vertices(g), boost::num_edges(g), nodes.size(), links.size()));
  }
  for (std::size_t v = 0; v < nodes.size(); ++v) {
    nodes[v].attrs = detail::node_attrs(g[v]);
  }
  std::size_t i = 0;
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    RawLink& l = links[i++];
    if (nodes[boost::source(e, g)].name != l.a && nodes[boost::target(e, g)].name != l.a) {
      throw ConfigError(fmt::format("{}: edge {}--{} was read out of order", origin, l.a, l.b));
    }
    l.attrs = detail::link_attrs(g[e]);
  }
  std::string comment;
  if (auto c = tree.get_optional<std::string>("<xmlcomment>")) {
    comment = *c;
    while (!comment.empty() && std::isspace(static_cast<unsigned char>(comment.front()))) comment.erase(0, 1);
    while (!comment.empty() && std::isspace(static_cast<unsigned char>(comment.back()))) comment.pop_back();
  }
  return detail::topology_from_raw(origin, std::move(comment), nodes, links);
}

std::string write_topology_graphml(const Topology& topo) {
  std::vector<RawNode> nodes;
  std::vector<RawLink> links;
  detail::raw_from_topology(topo, nodes, links);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  if (!topo.comment().empty()) {
    std::string c = topo.comment();
    for (std::size_t p = c.find("--"); p != std::string::npos; p = c.find("--", p)) c.replace(p, 2, "- -");
    out += "<!--\n" + c + "\n-->\n";
  }
  out += "<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n";
  for (const auto& key : detail::kNodeAttributes) {
    out += fmt::format("  <key id=\"{0}\" for=\"node\" attr.name=\"{0}\" attr.type=\"string\"/>\n", key);
  }
  for (const auto& key : detail::kLinkAttributes) {
    out += fmt::format("  <key id=\"{0}\" for=\"edge\" attr.name=\"{0}\" attr.type=\"string\"/>\n", key);
  }
  out += "  <graph id=\"topology\" edgedefault=\"undirected\">\n";
  const auto data = [](const std::map<std::string, std::string>& attrs, const std::vector<std::string>& order) {
    std::string s;
    for (const auto& key : order) {
      auto it = attrs.find(key);
      if (it != attrs.end()) s += fmt::format("<data key=\"{}\">{}</data>", key, markup_escape(it->second));
    }
    return s;
  };
  for (const RawNode& n : nodes) {
    out +=
        fmt::format("    <node id=\"{}\">{}</node>\n", markup_escape(n.name), data(n.attrs, detail::kNodeAttributes));
  }
  for (const RawLink& l : links) {
    out += fmt::format("    <edge source=\"{}\" target=\"{}\">{}</edge>\n", markup_escape(l.a), markup_escape(l.b),
                       data(l.attrs, detail::kLinkAttributes));
  }
  out += "  </graph>\n</graphml>\n";
  return out;
}

}  // namespace gradsync
