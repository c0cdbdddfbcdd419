// topology_attributes.hpp: the attribute vocabulary of topology files, shared by the DOT and
// GraphML readers and writers. A reader produces raw elements (names, lines, attribute text);
// topology_from_raw checks and converts them; raw_from_topology is the way back.
//
//   node: kind="gpu" model="a100-sxm4-80gb" host="node0" [p2p="true"]; kind="cpu" vendor="amd"
//   edge: type="nvlink" bw="25GBps" latency="150ns" links="12"
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <boost/property_map/dynamic_property_map.hpp>

#include <map>
#include <string>
#include <vector>

#include "topologies/topology.hpp"

namespace gradsync::detail {

// RawNode / RawLink: one element as a reader saw it; `line` is 0 where the format has none.
struct RawNode {
  std::string name;
  int line = 0;
  std::map<std::string, std::string> attrs;
  // declared: a statement of its own declares it; false for a DOT node only an edge names (DOT
  // makes it silently, with no attributes).
  bool declared = true;
};
struct RawLink {
  std::string a, b;
  int line = 0;
  std::map<std::string, std::string> attrs;
};

// kNodeAttributes / kLinkAttributes: the attributes gradsync reads; Graphviz's own (label, color,
// pos, ...) and a GraphML editor's (description, url, x, y) are ignored so that files can carry
// drawing hints, and any other is an error (unknown_attribute): a typo (link="12" for links,
// vendr="amd") would otherwise leave a default in place without a word.
inline const std::vector<std::string> kNodeAttributes{"kind", "model", "host", "p2p", "vendor"};
inline const std::vector<std::string> kLinkAttributes{"type", "bw", "latency", "links"};

// unknown_attribute: "" for an attribute gradsync reads or a drawing attribute it ignores; else
// what to say of it: 'unknown attribute "link" (did you mean "links"?); gradsync reads ...'.
std::string unknown_attribute(const std::string& name);

// BoostAttrGraph is what Boost's readers fill: every attribute gradsync reads, as text.
struct BoostNodeAttrs {
  std::string name, kind, model, host, p2p, vendor;
};
struct BoostLinkAttrs {
  std::string type, bw, latency, links;
};
using BoostAttrGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, BoostNodeAttrs, BoostLinkAttrs>;

// boost_properties maps the attribute names onto `g` (plus "node_id" for DOT), ignoring others.
boost::dynamic_properties boost_properties(BoostAttrGraph& g, bool with_node_id);

// node_attrs / link_attrs: one element's attributes as a RawNode / RawLink holds them.
std::map<std::string, std::string> node_attrs(const BoostNodeAttrs& n);
std::map<std::string, std::string> link_attrs(const BoostLinkAttrs& l);

// topology_from_raw parses every attribute (units, kinds, counts) with errors naming the
// origin, line and element, then builds the Topology.
Topology topology_from_raw(const std::string& origin, std::string comment, const std::vector<RawNode>& nodes,
                           const std::vector<RawLink>& links);

// raw_from_topology gives each vertex and link its attribute text, formatted so that parsing
// it back yields the same numbers.
void raw_from_topology(const Topology& topo, std::vector<RawNode>& nodes, std::vector<RawLink>& links);

}  // namespace gradsync::detail
