// topology_graphml_test.cpp: the GraphML reader: document order, XML's own references, bytes
// that are not UTF-8, and every bad input with its exact message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "topologies/topology.hpp"
#include "topology_test_util.hpp"

namespace gradsync {
namespace {

using topology_test::dot_error;
using topology_test::graphml_error;
using topology_test::replace;

const std::string kGraphml = R"(<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
)" + topology_test::kGraphmlKeys +
                             R"(  <graph id="g" edgedefault="undirected">
    <node id="gpu9"><data key="kind">gpu</data><data key="model">v100</data><data key="host">h</data></node>
    <node id="gpu1"><data key="kind">gpu</data><data key="model">v100</data><data key="host">h</data></node>
    <edge source="gpu9" target="gpu1"><data key="type">nvlink</data><data key="bw">25GBps</data><data key="latency">1us</data></edge>
  </graph>
</graphml>
)";

TEST(TopologyReaderGraphml, ReadsNodesInDocumentOrder) {
  const Topology t = read_topology_graphml(kGraphml, "t.graphml");
  ASSERT_EQ(t.gpu_count(), 2);
  EXPECT_EQ(t.vertex(t.gpu(0)).name, "gpu9");
  EXPECT_EQ(t.vertex(t.gpu(0)).gpu->key, "v100-sxm2-32gb");
  EXPECT_DOUBLE_EQ(t.link(t.links()[0]).bw_Bps, 25e9);
}

// A count of links declared int or long (networkx's write_graphml writes integers so) is read as
// its text; a bad value is still named at its line. Boost's reader, given the int key, threw a bare
// boost::bad_any_cast until 2026-12-01 (a new user's report).
TEST(TopologyReaderGraphml, LinksDeclaredIntOrLongAreRead) {
  for (const std::string type : {"int", "long"}) {
    std::string text = replace(
        kGraphml,
        "  <graph id=", "  <key id=\"n\" for=\"edge\" attr.name=\"links\" attr.type=\"" + type + "\"/>\n  <graph id=");
    text =
        replace(text, "<data key=\"latency\">1us</data>", "<data key=\"latency\">1us</data><data key=\"n\">2</data>");
    const Topology t = read_topology_graphml(text, "t.graphml");
    EXPECT_EQ(t.link(t.links()[0]).links, 2) << type;  // two NVLinks of 25 GB/s
    EXPECT_DOUBLE_EQ(t.link(t.links()[0]).total_bw_Bps(), 50e9) << type;
    const std::string bad = replace(text, "<data key=\"n\">2</data>", "<data key=\"n\">two</data>");
    EXPECT_NE(graphml_error(bad).find("t.graphml:"), std::string::npos) << graphml_error(bad);
    EXPECT_NE(graphml_error(bad).find("attribute \"links\" is \"two\""), std::string::npos) << graphml_error(bad);
  }
}

TEST(TopologyReaderGraphml, OnlyXmlsOwnReferencesAreRead) {
  // property_tree keeps an undefined reference as written: it is refused, with its line.
  EXPECT_EQ(graphml_error(replace(replace(kGraphml, "id=\"gpu9\"", "id=\"node&bogus;0\""), "source=\"gpu9\"",
                                  "source=\"node&bogus;0\"")),
            "t.graphml:10: syntax error: \"&bogus;\" is not an XML reference; write & as &amp; (XML defines &amp; "
            "&lt; &gt; &quot; &apos; and &#N;)");
  EXPECT_EQ(graphml_error(replace(kGraphml, "<data key=\"host\">h</data></node>\n    <node id=\"gpu1\">",
                                  "<data key=\"host\">h & i</data></node>\n    <node id=\"gpu1\">")),
            "t.graphml:10: syntax error: \"& i</data></\" is not an XML reference; write & as &amp; (XML defines "
            "&amp; &lt; &gt; &quot; &apos; and &#N;)");
  // The references XML defines are read, and so is a comment's '&'.
  const Topology t = read_topology_graphml(
      replace(replace(replace(kGraphml, "<data key=\"host\">h</data>", "<data key=\"host\">h&amp;&#105;</data>"),
                      "<data key=\"host\">h</data>", "<data key=\"host\">h&amp;&#x69;</data>"),
              "<graph id", "<!-- R&D's nodes --><graph id"),
      "t.graphml");
  EXPECT_EQ(t.gpu_count(), 2);
  EXPECT_EQ(t.vertex(t.gpu(0)).host, "h&i");
}

// Bytes that are not UTF-8 (a host name saved in Latin-1) are refused at their line: exported to
// GraphML they made XML that other readers refuse.
TEST(TopologyReader, BytesThatAreNotUtf8AreRefusedAtTheirLine) {
  EXPECT_EQ(dot_error("graph g {\n  a [kind=\"gpu\", model=\"h100\", host=\"n\xFF"
                      "de\"];\n}"),
            "t.dot:2: byte 0xFF is not UTF-8; expected a UTF-8 file");
  const std::string latin1 =
      graphml_error(replace(kGraphml, "<data key=\"host\">h</data></node>", "<data key=\"host\">h\xE9</data></node>"));
  EXPECT_EQ(latin1.rfind("t.graphml:", 0), 0u) << latin1;  // at the byte's line, whichever node it is
  EXPECT_NE(latin1.find(": byte 0xE9 is not UTF-8; expected a UTF-8 file"), std::string::npos) << latin1;
}

TEST(TopologyReaderGraphml, Errors) {
  // A node's key on an edge (Boost would read it into the edge's attribute of that name), and a
  // graph nested in a node (Boost reads its nodes into the one graph).
  EXPECT_EQ(graphml_error(replace(kGraphml, "<data key=\"latency\">1us</data></edge>",
                                  "<data key=\"latency\">1us</data><data key=\"host\">h</data></edge>")),
            "t.graphml:12: edge gpu9--gpu1: <data key=\"host\">: that key is declared for=\"node\"; expected a key for "
            "edge (or all)");
  EXPECT_EQ(graphml_error(replace(kGraphml, "<data key=\"host\">h</data></node>\n    <node id=\"gpu1\">",
                                  "<data key=\"host\">h</data><graph id=\"inner\" edgedefault=\"undirected\"><node "
                                  "id=\"x\"/></graph></node>\n    <node id=\"gpu1\">")),
            "t.graphml: node gpu9: holds a nested <graph>; expected one flat graph of nodes and edges");
  EXPECT_EQ(graphml_error(replace(kGraphml, "xmlns=\"http://graphml.graphdrawing.org/xmlns\"",
                                  "xmlns=\"http://example.com/graphs\"")),
            "t.graphml: <graphml xmlns=\"http://example.com/graphs\">: not GraphML's namespace; expected "
            "xmlns=\"http://graphml.graphdrawing.org/xmlns\" (or none)");
  EXPECT_EQ(graphml_error(replace(kGraphml, "  </graph>",
                                  "    <hyperedge><endpoint node=\"gpu9\"/><endpoint node=\"gpu1\"/></hyperedge>\n  "
                                  "</graph>")),
            "t.graphml:13: a <hyperedge>: a link joins two nodes; expected an <edge source=\"...\" target=\"...\"> "
            "for each pair");
  // An edge that says it is directed in an undirected graph: named at its line.
  EXPECT_EQ(graphml_error(replace(kGraphml, "<edge source=\"gpu9\" target=\"gpu1\">",
                                  "<edge source=\"gpu9\" target=\"gpu1\" directed=\"true\">")),
            "t.graphml:12: edge gpu9--gpu1: directed=\"true\"; a topology's links are undirected (each carries both "
            "directions): expected directed=\"false\" or none");
  // A key for one of gradsync's attributes holds text: Boost would read "gpu" as a double. A <key>'s
  // error names its line (it named only the file until 2026-12-02).
  EXPECT_EQ(graphml_error(replace(kGraphml, "attr.name=\"kind\" attr.type=\"string\"",
                                  "attr.name=\"kind\" attr.type=\"double\"")),
            "t.graphml:3: <key id=\"kind\" attr.name=\"kind\">: attr.type \"double\"; expected string");
  // A node's attribute on an edge through a key for all elements is named, not dropped.
  EXPECT_EQ(graphml_error(
                replace(replace(kGraphml, "for=\"node\" attr.name=\"host\"", "for=\"all\" attr.name=\"host\""),
                        "<data key=\"bw\">25GBps</data>", "<data key=\"bw\">25GBps</data><data key=\"host\">h</data>")),
            "t.graphml:12: edge gpu9--gpu1: <data key=\"host\">: attribute \"host\" is for nodes, not a link; a link "
            "takes type, bw, latency, links");
  EXPECT_EQ(graphml_error(replace(kGraphml, "for=\"edge\" attr.name=\"bw\"", "for=\"port\" attr.name=\"bw\"")),
            "t.graphml:7: <key id=\"bw\">: for=\"port\"; expected node, edge or all");
  EXPECT_EQ(graphml_error(replace(kGraphml, "edgedefault=\"undirected\"", "edgedefault=\"directed\"")),
            "t.graphml:9: <graph edgedefault=\"directed\">: a directed graph; a topology is undirected: write "
            "edgedefault=\"undirected\"");
  EXPECT_EQ(graphml_error(replace(kGraphml, "<node id=\"gpu1\">", "<node id=\"gpu9\">")),
            "t.graphml:11: node gpu9: duplicate name (first on line 10); node ids must be unique");
  EXPECT_EQ(graphml_error(replace(kGraphml, "target=\"gpu1\"", "target=\"gpu2\"")),
            "t.graphml:12: edge gpu9--gpu2: node \"gpu2\" is not declared by a <node>");
  EXPECT_EQ(graphml_error(replace(kGraphml, "<edge source", "<edge <source")),
            "t.graphml:12: syntax error: expected >");
  EXPECT_EQ(graphml_error(replace(kGraphml, "<data key=\"bw\">25GBps</data>", "<data key=\"bw\">-1GBps</data>")),
            "t.graphml:12: edge gpu9--gpu1: attribute \"bw\": bandwidth \"-1GBps\" must be > 0");
  EXPECT_EQ(graphml_error(replace(kGraphml, "<data key=\"bw\">25GBps</data>",
                                  "<data key=\"bw\">25GBps</data><data key=\"bw\">1GBps</data>")),
            "t.graphml:12: edge gpu9--gpu1: <data key=\"bw\"> given twice (25GBps and 1GBps); keep one");
  // Boost names neither of these ("unrecognized type \"\" for key").
  EXPECT_EQ(graphml_error(
                replace(kGraphml, "  <key id=\"model\" for=\"node\" attr.name=\"model\" attr.type=\"string\"/>\n", "")),
            "t.graphml:9: node gpu9: <data key=\"model\"> names no <key id=\"model\"> declared in <graphml>");
  EXPECT_EQ(
      graphml_error(replace(kGraphml, "attr.name=\"bw\" attr.type=\"string\"", "attr.name=\"bw\" attr.type=\"str\"")),
      "t.graphml:7: <key id=\"bw\">: attr.type \"str\"; expected one of GraphML's boolean, int, long, float, "
      "double, string");
  // Each node's and edge's line, as the DOT reader gives it: a tag inside a comment, a CDATA section
  // or an attribute value shifts nothing.
  EXPECT_EQ(graphml_error(replace(
                replace(kGraphml, "<data key=\"model\">v100</data><data key=\"host\">h</data></node>\n    <edge",
                        "<data key=\"model\">v999</data><data key=\"host\">h</data></node>\n    <edge"),
                "  <graph id=\"g\"", "  <!-- <node id=\"x\"> -->\n  <graph id=\"g\"")),
            graphml_error(replace(
                replace(kGraphml, "<data key=\"model\">v100</data><data key=\"host\">h</data></node>\n    <edge",
                        "<data key=\"model\">v999</data><data key=\"host\">h</data></node>\n    <edge"),
                "  <graph id=\"g\"", "\n  <graph id=\"g\"")));
  EXPECT_EQ(
      graphml_error(replace(kGraphml, "<data key=\"bw\">25GBps</data>", "<data key=\"bw\">fast</data>")).substr(0, 46),
      "t.graphml:12: edge gpu9--gpu1: attribute \"bw\":");
  EXPECT_EQ(graphml_error(replace(kGraphml, "<node id=\"gpu1\"><data key=\"kind\">gpu</data><data key=\"model\">v100",
                                  "<node id=\"gpu1\"><data key=\"kind\">gpu</data><data key=\"model\">v999"))
                .substr(0, 38),
            "t.graphml:11: node gpu1: attribute \"mo");
}

// A .graphml file loads by its extension.
TEST(TopologyReaderGraphml, LoadsByItsExtension) {
  const auto path = std::filesystem::temp_directory_path() / "gradsync-reader-test.graphml";
  { std::ofstream(path) << kGraphml; }
  EXPECT_EQ(load_topology(path.string()).gpu_count(), 2);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gradsync
