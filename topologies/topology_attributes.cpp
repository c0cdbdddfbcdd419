// topology_attributes.cpp: attribute text <-> vertex and link values, with located errors.
#include "topologies/topology_attributes.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <initializer_list>
#include <iterator>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/units.hpp"

namespace gradsync::detail {
// Bounds on one link's attributes: 1 kB/s to 1 PB/s per direction, a one-way latency of at most
// 1 s, at most 1,024 parallel links in one edge (an H100 has 18 NVLinks).
constexpr double kMinLinkBps = 1e3;
constexpr double kMaxLinkBps = 1e15;
constexpr double kMaxLinkLatencyS = 1;
constexpr int kMaxParallelLinks = 1024;

namespace {

std::string at(const std::string& origin, int line) {
  return line > 0 ? fmt::format("{}:{}: ", origin, line) : origin + ": ";
}

const std::string* find_attr(const std::map<std::string, std::string>& attrs, const std::string& key) {
  auto it = attrs.find(key);
  return it == attrs.end() || it->second.empty() ? nullptr : &it->second;
}

// exact_text formats `value` in the first unit whose text parses back to the same double: GBps
// or ns when that is exact, else the base unit with every digit.
template <typename Parse>
std::string exact_text(double value, std::initializer_list<std::pair<double, const char*>> units, Parse parse) {
  for (const auto& [per_unit, unit] : units) {
    for (const char* form : {"{:.12g}{}", "{}{}"}) {
      std::string text = fmt::format(fmt::runtime(form), value / per_unit, unit);
      if (parse(text) == value) return text;
    }
  }
  return fmt::format("{}{}", value, std::data(units)[units.size() - 1].second);
}

}  // namespace

boost::dynamic_properties boost_properties(BoostAttrGraph& g, bool with_node_id) {
  boost::dynamic_properties dp(boost::ignore_other_properties);
  if (with_node_id) dp.property("node_id", boost::get(&BoostNodeAttrs::name, g));
  dp.property("kind", boost::get(&BoostNodeAttrs::kind, g));
  dp.property("model", boost::get(&BoostNodeAttrs::model, g));
  dp.property("host", boost::get(&BoostNodeAttrs::host, g));
  dp.property("p2p", boost::get(&BoostNodeAttrs::p2p, g));
  dp.property("vendor", boost::get(&BoostNodeAttrs::vendor, g));
  dp.property("type", boost::get(&BoostLinkAttrs::type, g));
  dp.property("bw", boost::get(&BoostLinkAttrs::bw, g));
  dp.property("latency", boost::get(&BoostLinkAttrs::latency, g));
  dp.property("links", boost::get(&BoostLinkAttrs::links, g));
  return dp;
}

std::map<std::string, std::string> node_attrs(const BoostNodeAttrs& n) {
  return {{"kind", n.kind}, {"model", n.model}, {"host", n.host}, {"p2p", n.p2p}, {"vendor", n.vendor}};
}

std::map<std::string, std::string> link_attrs(const BoostLinkAttrs& l) {
  return {{"type", l.type}, {"bw", l.bw}, {"latency", l.latency}, {"links", l.links}};
}

namespace {

// kDrawingAttributes: Graphviz's attributes (graphviz.org/doc/info/attrs.html: graphs, nodes,
// edges and clusters) and what GraphML editors (yEd, Gephi) write beside their graphics keys.
const std::set<std::string, std::less<>> kDrawingAttributes{
    "_background", "area", "arrowhead", "arrowsize", "arrowtail", "bb", "beautify", "bgcolor", "center", "charset",
    "class", "cluster", "clusterrank", "color", "colorscheme", "comment", "compound", "concentrate", "constraint",
    "Damping", "decorate", "defaultdist", "dim", "dimen", "dir", "diredgeconstraints", "distortion", "dpi", "edgehref",
    "edgetarget", "edgetooltip", "edgeURL", "epsilon", "esep", "fillcolor", "fixedsize", "fontcolor", "fontname",
    "fontnames", "fontpath", "fontsize", "forcelabels", "gradientangle", "group", "head_lp", "headclip", "headhref",
    "headlabel", "headport", "headtarget", "headtooltip", "headURL", "height", "href", "id", "image", "imagepath",
    "imagepos", "imagescale", "inputscale", "K", "label", "label_scheme", "labelangle", "labeldistance", "labelfloat",
    "labelfontcolor", "labelfontname", "labelfontsize", "labelhref", "labeljust", "labelloc", "labeltarget",
    "labeltooltip", "labelURL", "landscape", "layer", "layerlistsep", "layers", "layerselect", "layersep", "layout",
    "len", "levels", "levelsgap", "lhead", "lheight", "linelength", "lp", "ltail", "lwidth", "margin", "maxiter",
    "mclimit", "mindist", "minlen", "mode", "newrank", "nodesep", "nojustify", "normalize", "notranslate", "nslimit",
    "nslimit1", "oneblock", "ordering", "orientation", "outputorder", "overlap", "overlap_scaling", "overlap_shrink",
    "pack", "packmode", "pad", "page", "pagedir", "pencolor", "penwidth", "peripheries", "pin", "pos", "quadtree",
    "quantum", "radius", "rank", "rankdir", "ranksep", "ratio", "rects", "regular", "remincross", "repulsiveforce",
    "resolution", "root", "rotate", "rotation", "samehead", "sametail", "samplepoints", "scale", "searchsize", "sep",
    "shape", "shapefile", "showboxes", "sides", "size", "skew", "smoothing", "sortv", "splines", "start", "style",
    "stylesheet", "tail_lp", "tailclip", "tailhref", "taillabel", "tailport", "tailtarget", "tailtooltip", "tailURL",
    "target", "TBbalance", "tooltip", "truecolor", "URL", "vertices", "viewport", "voro_margin", "weight", "width",
    "xdotversion", "xlabel", "xlp", "z",
    // GraphML editors
    "description", "url", "name", "x", "y", "r", "g", "b"};

}  // namespace

std::string unknown_attribute(const std::string& name) {
  const auto ours = [&](const std::vector<std::string>& v) { return std::find(v.begin(), v.end(), name) != v.end(); };
  if (ours(kNodeAttributes) || ours(kLinkAttributes) || kDrawingAttributes.contains(name)) return "";
  NearestName nearest(name);
  for (const auto* list : {&kNodeAttributes, &kLinkAttributes})
    for (const std::string& a : *list) nearest.consider(a);
  return fmt::format(
      "unknown attribute \"{}\"{}; gradsync reads {} on nodes and {} on links, and ignores Graphviz's drawing "
      "attributes (label, color, pos, ...)",
      name, nearest.hint(), fmt::join(kNodeAttributes, ", "), fmt::join(kLinkAttributes, ", "));
}

Topology topology_from_raw(const std::string& origin, std::string comment, const std::vector<RawNode>& nodes,
                           const std::vector<RawLink>& links) {
  std::vector<TopoVertex> vertices;
  vertices.reserve(nodes.size());
  std::unordered_map<std::string, std::size_t> index;
  for (const RawNode& n : nodes) {
    const std::string where = fmt::format("{}node {}: ", at(origin, n.line), n.name);
    TopoVertex v;
    v.name = n.name;
    v.line = n.line;
    const std::string* kind = find_attr(n.attrs, "kind");
    if (kind == nullptr && !n.declared) {
      // Only an edge names it: a misspelt name of a declared node, or a declaration left out.
      NearestName nearest(n.name);
      for (const RawNode& other : nodes)
        if (other.declared) nearest.consider(other.name);
      throw ConfigError(where + fmt::format("an edge names it, but no statement declares it{}; declare it with its "
                                            "kind (one of {}) or correct the edge",
                                            nearest.hint(), kVertexKindNames));
    }
    if (kind == nullptr)
      throw ConfigError(where + fmt::format("missing attribute \"kind\"; expected one of {}", kVertexKindNames));
    const auto k = parse_vertex_kind(*kind);
    if (!k) throw ConfigError(where + fmt::format("unknown kind \"{}\"; expected one of {}", *kind, kVertexKindNames));
    v.kind = *k;
    if (const std::string* model = find_attr(n.attrs, "model")) v.model = *model;
    if (const std::string* host = find_attr(n.attrs, "host")) {
      // " h" and "h" would be two machines: a name with blanks at its ends is a slip, refused.
      if (!host->empty() && (std::isspace(static_cast<unsigned char>(host->front())) ||
                             std::isspace(static_cast<unsigned char>(host->back()))))
        throw ConfigError(where + fmt::format("host \"{}\" has blanks at its ends; expected the machine's name "
                                              "alone (\"{}\" and \"{}\" would be two machines)",
                                              *host, *host, std::string(trim_blanks(*host))));
      v.host = *host;
    }
    // Words in any case, as flags take them: "True", "NVLink", "AMD".
    if (const std::string* p2p = find_attr(n.attrs, "p2p")) {
      const std::string word = ascii_lower(*p2p);
      if (word != "true" && word != "false")
        throw ConfigError(where + fmt::format("attribute \"p2p\" is \"{}\"; expected true or false", *p2p));
      v.pcie_p2p = word == "true";
    }
    if (const std::string* vendor = find_attr(n.attrs, "vendor")) v.vendor = ascii_lower(*vendor);
    index.emplace(n.name, vertices.size());
    vertices.push_back(std::move(v));
  }

  std::vector<LinkSpec> specs;
  specs.reserve(links.size());
  for (const RawLink& l : links) {
    const std::string where = fmt::format("{}edge {}--{}: ", at(origin, l.line), l.a, l.b);
    LinkSpec s;
    s.link.line = l.line;
    s.a = index.at(l.a);
    s.b = index.at(l.b);
    const auto required = [&](const char* key, std::string_view expected) -> const std::string& {
      const std::string* v = find_attr(l.attrs, key);
      if (v == nullptr) throw ConfigError(where + fmt::format("missing attribute \"{}\"; expected {}", key, expected));
      return *v;
    };
    const std::string& type = required("type", fmt::format("one of {}", kLinkTypeNames));
    const auto t = parse_link_type(type);
    if (!t) throw ConfigError(where + fmt::format("unknown type \"{}\"; expected one of {}", type, kLinkTypeNames));
    s.link.type = *t;
    const auto parsed = [&](const char* key, auto parse) {
      try {
        return parse();
      } catch (const ConfigError& e) {
        throw ConfigError(where + fmt::format("attribute \"{}\": {}", key, e.what()));
      }
    };
    const std::string& bw = required("bw", "a bandwidth per link and direction such as \"25GBps\" or \"200Gbps\"");
    s.link.bw_Bps = parsed("bw", [&] { return parse_bandwidth(bw); });
    // Physical bounds: the simulator's rates and times stay finite and meaningful within them.
    if (s.link.bw_Bps < kMinLinkBps || s.link.bw_Bps > kMaxLinkBps) {
      throw ConfigError(where + fmt::format("attribute \"bw\" is \"{}\"; expected 1kBps to 1PBps per link and "
                                            "direction (NVLink 4 is 25GBps, NDR InfiniBand 400Gbps)",
                                            bw));
    }
    const std::string& latency = required("latency", "a one-way latency such as \"150ns\" or \"1us\"");
    s.link.latency_s = parsed("latency", [&] { return parse_duration(latency); });
    if (s.link.latency_s > kMaxLinkLatencyS) {
      throw ConfigError(where + fmt::format("attribute \"latency\" is \"{}\"; expected at most 1s (a link's "
                                            "one-way latency is ns to us)",
                                            latency));
    }
    if (const std::string* count = find_attr(l.attrs, "links")) {
      int n = 0;
      const auto [end, ec] = std::from_chars(count->data(), count->data() + count->size(), n);
      if (ec != std::errc() || end != count->data() + count->size() || n < 1 || n > kMaxParallelLinks) {
        throw ConfigError(where + fmt::format("attribute \"links\" is \"{}\"; expected an integer from 1 to {}", *count,
                                              kMaxParallelLinks));
      }
      s.link.links = n;
    }
    specs.push_back(std::move(s));
  }
  return Topology::build(origin, std::move(comment), std::move(vertices), std::move(specs));
}

void raw_from_topology(const Topology& topo, std::vector<RawNode>& nodes, std::vector<RawLink>& links) {
  const TopoGraph& g = topo.graph();
  for (VertexId v = 0; v < topo.vertex_count(); ++v) {
    RawNode n;
    n.name = g[v].name;
    n.attrs["kind"] = std::string(to_string(g[v].kind));
    if (!g[v].model.empty()) n.attrs["model"] = g[v].model;
    if (!g[v].host.empty()) n.attrs["host"] = g[v].host;
    if (g[v].pcie_p2p) n.attrs["p2p"] = *g[v].pcie_p2p ? "true" : "false";
    if (!g[v].vendor.empty()) n.attrs["vendor"] = g[v].vendor;
    nodes.push_back(std::move(n));
  }
  for (LinkId e : topo.links()) {
    const TopoLink& l = g[e];
    RawLink r;
    r.a = g[l.a].name;
    r.b = g[l.b].name;
    r.attrs["type"] = std::string(to_string(l.type));
    r.attrs["bw"] = exact_text(l.bw_Bps, {{1e9, "GBps"}, {1e6, "MBps"}, {1, "Bps"}}, parse_bandwidth);
    r.attrs["latency"] = exact_text(l.latency_s, {{1e-9, "ns"}, {1e-6, "us"}, {1, "s"}}, parse_duration);
    if (l.links != 1) r.attrs["links"] = std::to_string(l.links);
    links.push_back(std::move(r));
  }
}

}  // namespace gradsync::detail
