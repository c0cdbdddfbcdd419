// topology_reader_test.cpp: the DOT reader: what it accepts, every bad input with its exact
// message, declaration order and round trips through the writers (GraphML's own tests:
// topology_graphml_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "topologies/topology.hpp"
#include "topology_test_util.hpp"

namespace gradsync {
namespace {

// Two GPUs on one NVSwitch; tests below break one thing at a time.
const std::string& kGood = topology_test::kTwoA100s;

using topology_test::dot_error;
using topology_test::replace;

TEST(TopologyReader, ReadsVerticesLinksAndComment) {
  const Topology t = read_topology_dot(kGood, "t.dot");
  EXPECT_EQ(t.comment(), "two A100s");
  ASSERT_EQ(t.gpu_count(), 2);
  EXPECT_EQ(t.vertex(t.gpu(1)).name, "gpu1");
  EXPECT_EQ(t.vertex(t.gpu(0)).gpu->key, "a100-sxm4-80gb");
  EXPECT_EQ(t.vertex(t.gpu(0)).line, 3);
  ASSERT_EQ(t.links().size(), 2u);
  const TopoLink& l = t.link(t.links()[0]);
  EXPECT_EQ(l.type, LinkType::kNvlink);
  EXPECT_DOUBLE_EQ(l.bw_Bps, 25e9);
  EXPECT_EQ(l.links, 12);
  EXPECT_DOUBLE_EQ(l.total_bw_Bps(), 300e9);
  EXPECT_NEAR(l.latency_s, 100e-9, 1e-18);
  EXPECT_EQ(l.line, 6);
  EXPECT_EQ(t.hosts(), std::vector<std::string>{"h0"});
  // A /* */ opening comment is the file's comment too, boxed or not, so that export keeps it.
  const std::string boxed = replace(kGood, "// two A100s\n", "/* two A100s\n * on a switch\n */\n");
  EXPECT_EQ(read_topology_dot(boxed, "t.dot").comment(), "two A100s\non a switch");
  EXPECT_EQ(read_topology_dot(replace(kGood, "// two A100s\n", "/* two A100s */\n"), "t.dot").comment(), "two A100s");
}

TEST(TopologyReader, GpuRanksFollowDeclarationOrderNotNames) {
  // Boost orders vertices by name (gpu10 < gpu2); ranks must follow the file.
  const std::string text = R"(graph g {
  gpu2 [kind="gpu", model="a100", host="h"];
  gpu10 [kind="gpu", model="a100", host="h"];
  gpu1 [kind="gpu", model="a100", host="h"];
  gpu2 -- gpu10 [type="nvlink", bw="25GBps", latency="0ns"];
  gpu10 -- gpu1 [type="nvlink", bw="25GBps", latency="0ns"];
})";
  const Topology t = read_topology_dot(text, "t.dot");
  EXPECT_EQ(t.vertex(t.gpu(0)).name, "gpu2");
  EXPECT_EQ(t.vertex(t.gpu(1)).name, "gpu10");
  EXPECT_EQ(t.vertex(t.gpu(2)).name, "gpu1");
}

TEST(TopologyReader, AByteOrderMarkIsSkipped) {
  // Some editors save UTF-8 with a byte order mark; the YAML reader skips it, and so does DOT's.
  const std::string text =
      "\xEF\xBB\xBFgraph g {\n  a [kind=\"gpu\", model=\"h100\", host=\"h\"];\n"
      "  b [kind=\"gpu\", model=\"h100\", host=\"h\"];\n"
      "  a -- b [type=\"nvlink\", bw=\"25GBps\", latency=\"0ns\"];\n}";
  const Topology t = read_topology_dot(text, "t.dot");
  EXPECT_EQ(t.vertex(t.gpu(0)).name, "a");
  EXPECT_EQ(t.vertex(t.gpu(1)).name, "b");
}

TEST(TopologyReader, DefaultAttributesAndCommentsAreHonoured) {
  const std::string text = R"(/* block */ graph g {
  node [kind="gpu", model="h100", host="h"];
  edge [type="nvlink", latency="1us"];
  a; b  # not a comment here, but a node named b? no: '#' only starts a comment at line start
)";
  EXPECT_EQ(dot_error(text), "t.dot:4: syntax error: unexpected character '#'");  // only at line start
  // A character that does not print is shown by its code, not written raw into the message.
  EXPECT_EQ(dot_error(std::string("graph g {\n  a \x01 b\n}")), "t.dot:2: syntax error: unexpected character '\\x01'");
  const std::string ok = R"(graph g {
  node [kind="gpu", model="h100", host="h"]
  edge [type="nvlink", latency="1us"]
# a preprocessor-style comment line
  a -- b [bw="25GBps"]
})";
  const Topology t = read_topology_dot(ok, "t.dot");
  EXPECT_EQ(t.gpu_count(), 2);
  EXPECT_NEAR(t.link(t.links()[0]).latency_s, 1e-6, 1e-15);
}

// One test per bad input, each with its exact message.
TEST(TopologyReaderErrors, SyntaxErrorNamesLine) {
  EXPECT_EQ(dot_error("graph g {\n  a -- b [bw=\n}\n"),
            "t.dot:3: syntax error: expected a value for attribute \"bw\", found '}'");
  EXPECT_EQ(dot_error("graph g {\n  a [kind=\"gpu\"\n"),
            "t.dot:3: syntax error: an attribute list '[' is never closed");
  // A list left open runs into the next statement: the message names where it was opened.
  EXPECT_EQ(dot_error("graph g {\n  a [kind=\"gpu\", model=\"a100\"\n  b [kind=\"gpu\"];\n}\n"),
            "t.dot:3: syntax error: expected '=' after attribute \"b\", found '[' (the attribute list opened with '[' "
            "on line 2 is not closed with ']')");
  EXPECT_EQ(dot_error("graph g {\n  a [kind=\"gpu\" =\n}\n"),
            "t.dot:2: syntax error: expected an attribute name, found '='");
  EXPECT_EQ(dot_error("graph g {\n  \"a [kind=gpu]\n}\n"), "t.dot:2: syntax error: a quoted string is never closed");
  EXPECT_EQ(dot_error("grap g {}"), "t.dot:1: syntax error: expected 'graph' at the start, found 'grap'");
  EXPECT_EQ(dot_error("graph g { a } }"), "t.dot:1: syntax error: unexpected '}' after the closing '}'");
}

TEST(TopologyReaderErrors, DirectedGraph) {
  EXPECT_EQ(dot_error("digraph g {\n a -> b\n}"),
            "t.dot:1: syntax error: a directed graph (digraph); a topology is an undirected 'graph' whose links carry "
            "both directions");
  EXPECT_EQ(dot_error("graph g {\n a -> b\n}"),
            "t.dot:2: syntax error: '->' in an undirected graph; write links as a -- b");
}

TEST(TopologyReaderErrors, UnknownKind) {
  EXPECT_EQ(
      dot_error(replace(kGood, "kind=\"nvswitch\"", "kind=\"nvswich\"")),
      "t.dot:5: node nvs: unknown kind \"nvswich\"; expected one of gpu, cpu, pcie_switch, nvswitch, nic, switch");
}

TEST(TopologyReaderErrors, UnknownType) {
  EXPECT_EQ(dot_error(replace(kGood, "type=\"nvlink\"", "type=\"nvlnk\"")),
            "t.dot:6: edge gpu0--nvs: unknown type \"nvlnk\"; expected one of nvlink, pcie, cpu_link, infiniband, "
            "ethernet");
}

TEST(TopologyReaderErrors, MissingAttributes) {
  EXPECT_EQ(dot_error(replace(kGood, "nvs [kind=\"nvswitch\", host=\"h0\"]", "nvs [host=\"h0\"]")),
            "t.dot:5: node nvs: missing attribute \"kind\"; expected one of gpu, cpu, pcie_switch, nvswitch, nic, "
            "switch");
  EXPECT_EQ(dot_error(replace(kGood, "bw=\"25GBps\", latency=\"100ns\", links=\"12\"];\n  gpu1",
                              "latency=\"100ns\"];\n  gpu1")),
            "t.dot:6: edge gpu0--nvs: missing attribute \"bw\"; expected a bandwidth per link and direction such as "
            "\"25GBps\" or \"200Gbps\"");
  EXPECT_EQ(
      dot_error(replace(kGood, "bw=\"25GBps\", latency=\"100ns\", links=\"12\"];\n  gpu1", "bw=\"25GBps\"];\n  gpu1")),
      "t.dot:6: edge gpu0--nvs: missing attribute \"latency\"; expected a one-way latency such as \"150ns\" or "
      "\"1us\"");
  EXPECT_EQ(
      dot_error(replace(kGood, "gpu0 [kind=\"gpu\", model=\"a100\", host=\"h0\"]", "gpu0 [kind=\"gpu\", host=\"h0\"]")),
      "t.dot:3: node gpu0: gpu needs attribute \"model\" (a key of topologies/hardware/gpus.yaml); it is missing or "
      "empty");
  EXPECT_EQ(dot_error(replace(kGood, "gpu0 [kind=\"gpu\", model=\"a100\", host=\"h0\"]",
                              "gpu0 [kind=\"gpu\", model=\"a100\"]")),
            "t.dot:3: node gpu0: gpu needs attribute \"host\" (the machine it is in)");
}

TEST(TopologyReaderErrors, UnparsableAttribute) {
  EXPECT_EQ(dot_error(replace(kGood, "bw=\"25GBps\"", "bw=\"fast\"")),
            "t.dot:6: edge gpu0--nvs: attribute \"bw\": bandwidth \"fast\" does not start with a number; expected e.g. "
            "1.5 followed by a unit");
  EXPECT_EQ(dot_error(replace(kGood, "links=\"12\"", "links=\"twelve\"")),
            "t.dot:6: edge gpu0--nvs: attribute \"links\" is \"twelve\"; expected an integer from 1 to 1024");
}

TEST(TopologyReaderErrors, ImplausibleLinksAndDeepNesting) {
  EXPECT_EQ(
      dot_error(replace(kGood, "bw=\"25GBps\"", "bw=\"1e-300Bps\"")),
      "t.dot:6: edge gpu0--nvs: attribute \"bw\" is \"1e-300Bps\"; expected 1kBps to 1PBps per link and direction "
      "(NVLink 4 is 25GBps, NDR InfiniBand 400Gbps)");
  EXPECT_NE(dot_error(replace(kGood, "bw=\"25GBps\"", "bw=\"2PBps\"")).find("expected 1kBps to 1PBps"),
            std::string::npos);
  EXPECT_EQ(dot_error(replace(kGood, "latency=\"100ns\"", "latency=\"1e300s\"")),
            "t.dot:6: edge gpu0--nvs: attribute \"latency\" is \"1e300s\"; expected at most 1s (a link's one-way "
            "latency is ns to us)");
  EXPECT_NE(dot_error(replace(kGood, "links=\"12\"", "links=\"100000\"")).find("an integer from 1 to 1024"),
            std::string::npos);
  // 100,000 nested subgraphs: one error, not a stack overflow (ours and Boost's parsers recurse).
  std::string deep = "graph g {";
  for (int i = 0; i < 100000; ++i) deep += "subgraph {";
  for (int i = 0; i < 100000; ++i) deep += "}";
  deep += "}";
  EXPECT_EQ(dot_error(deep),
            "t.dot:1: syntax error: subgraphs nested more than 100 deep; a cluster needs a few "
            "levels (host, switch)");
  std::string xml = "<?xml version=\"1.0\"?>\n<graphml>";
  for (int i = 0; i < 200000; ++i) xml += "<a x=\">\">";
  try {
    read_topology_graphml(xml, "t.graphml");
    ADD_FAILURE() << "deep GraphML accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "t.graphml:2: elements nested more than 100 deep; GraphML needs 4 levels "
              "(graphml, graph, node, data)");
  }
}

TEST(TopologyReaderErrors, ZeroOrNegativeBandwidth) {
  EXPECT_EQ(dot_error(replace(kGood, "bw=\"25GBps\"", "bw=\"0GBps\"")),
            "t.dot:6: edge gpu0--nvs: attribute \"bw\": bandwidth \"0GBps\" must be > 0");
  EXPECT_EQ(dot_error(replace(kGood, "bw=\"25GBps\"", "bw=\"-5GBps\"")),
            "t.dot:6: edge gpu0--nvs: attribute \"bw\": bandwidth \"-5GBps\" must be > 0");
}

TEST(TopologyReaderErrors, NegativeLatency) {
  EXPECT_EQ(dot_error(replace(kGood, "latency=\"100ns\"", "latency=\"-1us\"")),
            "t.dot:6: edge gpu0--nvs: attribute \"latency\": duration \"-1us\" must be >= 0");
}

TEST(TopologyReaderErrors, UnquotedNumberIsRejectedNotTruncated) {
  EXPECT_EQ(dot_error(replace(kGood, "bw=\"25GBps\"", "bw=3e11")),
            "t.dot:6: edge gpu0--nvs: attribute bw=3e11 must be a quoted string with a unit, such as bw=\"25GBps\" "
            "(unquoted, Graphviz readers keep only the leading digits)");
}

TEST(TopologyReaderErrors, DuplicateName) {
  EXPECT_EQ(
      dot_error(replace(kGood, "  nvs [kind", "  gpu1 [kind=\"gpu\", model=\"a100\", host=\"h0\"];\n  nvs [kind")),
      "t.dot:5: node gpu1: duplicate name; first declared on line 4");
}

TEST(TopologyReaderErrors, DuplicateLink) {
  EXPECT_EQ(dot_error(replace(kGood, "}\n", "  nvs -- gpu1 [type=\"nvlink\", bw=\"25GBps\", latency=\"100ns\"];\n}\n")),
            "t.dot:8: edge nvs--gpu1: duplicate link between the same two nodes (the first on line 7); give one link "
            "attribute \"links\" instead");
}

// Graphviz (and Boost) keep the last of a repeated attribute; a link given two bandwidths is named,
// in one list or across two.
TEST(TopologyReaderErrors, AnAttributeGivenTwice) {
  EXPECT_EQ(dot_error(replace(kGood, "bw=\"25GBps\"", "bw=\"25GBps\", bw=\"1GBps\"")),
            "t.dot:6: edge gpu0--nvs: attribute bw given twice (25GBps and 1GBps); keep one");
  EXPECT_EQ(dot_error(replace(kGood, "links=\"12\"]", "links=\"12\"][bw=\"2GBps\"]")),
            "t.dot:6: edge gpu0--nvs: attribute bw given twice (25GBps and 2GBps); keep one");
}

TEST(TopologyReaderErrors, UnknownGpuModel) {
  const std::string e =
      dot_error(replace(kGood, "model=\"a100\", host=\"h0\"];\n  gpu1", "model=\"a1000\", host=\"h0\"];\n  gpu1"));
  EXPECT_EQ(
      e.rfind("t.dot:3: node gpu0: attribute \"model\": GPU \"a1000\" is unknown (did you mean \"a100-sxm4-80gb\"?); "
              "expected one of v100-sxm2-16gb,",
              0),
      0u)
      << e;
}

TEST(TopologyReaderErrors, GpuThatCannotReachTheOthers) {
  EXPECT_EQ(dot_error(replace(
                kGood, "  gpu1 -- nvs [type=\"nvlink\", bw=\"25GBps\", latency=\"100ns\", links=\"12\"];\n", "")),
            "t.dot:4: node gpu1: gpu cannot reach gpu gpu0 (no path of links between them)");
}

// A GPU has the NVLinks gpus.yaml gives it: none on an RTX 4090, 12 on an A100.
TEST(TopologyReaderErrors, NvlinksAGpuDoesNotHave) {
  std::string geforce = replace(kGood, "model=\"a100\"", "model=\"rtx-4090\"");
  geforce = replace(geforce, "model=\"a100\"", "model=\"rtx-4090\"");
  EXPECT_EQ(dot_error(geforce),
            "t.dot:6: edge gpu0--nvs: gpu gpu0 (NVIDIA GeForce RTX 4090) has no NVLink "
            "(topologies/hardware/gpus.yaml); expected its GPUs joined over pcie");
  EXPECT_EQ(
      dot_error(replace(kGood, "}\n", "  gpu0 -- gpu1 [type=\"nvlink\", bw=\"25GBps\", latency=\"100ns\"];\n}\n")),
      "t.dot:8: edge gpu0--gpu1: gpu gpu0 (NVIDIA A100 SXM4 80GB) has 12 NVLinks "
      "(topologies/hardware/gpus.yaml), and its nvlink edges take 13 so far; expected at most 12 in all");
  // bw is per link: a link faster than the datasheet's (an A100's 25 GB/s) is refused, not simulated
  // at 1,000 GB/s of busbw.
  EXPECT_EQ(dot_error(replace(kGood, "bw=\"25GBps\", latency=\"100ns\", links=\"12\"];\n  gpu1",
                              "bw=\"500GBps\", latency=\"100ns\", links=\"12\"];\n  gpu1")),
            "t.dot:6: edge gpu0--nvs: gpu gpu0 (NVIDIA A100 SXM4 80GB) has NVLinks of 25.00 GB/s per direction "
            "(topologies/hardware/gpus.yaml nvlink.per_link), and this nvlink edge gives 500.00 GB/s per link; "
            "expected at most that (bw is per link: give the link count in links)");
  // A bridged PCIe board's NVLink joins it to one other board: not an NVSwitch, not a third board.
  std::string bridged = replace(kGood, "model=\"a100\"", "model=\"a100-pcie-80gb\"");
  bridged = replace(bridged, "model=\"a100\"", "model=\"a100-pcie-80gb\"");
  EXPECT_EQ(dot_error(replace(bridged, "links=\"12\"", "links=\"4\"")),
            "t.dot:6: edge gpu0--nvs: gpu gpu0 (NVIDIA A100 PCIe 80GB) has an NVLink bridge to one other board "
            "(topologies/hardware/gpus.yaml nvlink.bridge), not a port on a nvswitch; expected its nvlink edge to go "
            "to the one gpu it is bridged to");
  const std::string three = R"(graph g {
  a [kind="gpu", model="a100-pcie-80gb", host="h"]; b [kind="gpu", model="a100-pcie-80gb", host="h"];
  c [kind="gpu", model="a100-pcie-80gb", host="h"];
  a -- b [type="nvlink", bw="25GBps", latency="100ns", links="4"];
  a -- c [type="nvlink", bw="25GBps", latency="100ns", links="4"];
}
)";
  EXPECT_EQ(dot_error(three),
            "t.dot:5: edge a--c: gpu a (NVIDIA A100 PCIe 80GB) is bridged to b already; an NVLink bridge joins two "
            "boards (topologies/hardware/gpus.yaml nvlink.bridge), expected one bridged peer");
}

// A GPU's PCIe edge carries at most its port: an A100's Gen4 x16 is 31.5 GB/s per direction
// (32GBps, within 5%, is taken); 1000 GB/s made 751 GB/s of busbw over "PCIe".
TEST(TopologyReaderErrors, PcieFasterThanTheGpusPort) {
  const std::string pcie =
      "graph g {\n  sw [kind=\"pcie_switch\", host=\"h0\"];\n  cpu0 [kind=\"cpu\", host=\"h0\"];\n"
      "  gpu0 [kind=\"gpu\", model=\"a100\", host=\"h0\"];\n"
      "  gpu1 [kind=\"gpu\", model=\"a100\", host=\"h0\"];\n"
      "  sw -- cpu0 [type=\"pcie\", bw=\"64GBps\", latency=\"150ns\"];\n"
      "  gpu0 -- sw [type=\"pcie\", bw=\"BW\", latency=\"150ns\"];\n"
      "  gpu1 -- sw [type=\"pcie\", bw=\"31.5GBps\", latency=\"150ns\"];\n}\n";
  EXPECT_EQ(dot_error(replace(pcie, "BW", "32GBps")), "no error");
  EXPECT_EQ(dot_error(replace(pcie, "BW", "1000GBps")),
            "t.dot:7: edge gpu0--sw: gpu gpu0 (NVIDIA A100 SXM4 80GB) has a PCIe Gen4 x16 port, 31.50 GB/s per "
            "direction (topologies/hardware/gpus.yaml), and this pcie edge gives 1000.00 GB/s; expected at most the "
            "port's rate");
}

TEST(TopologyReaderErrors, LinkRules) {
  const std::string cpu = replace(kGood, "nvs [kind=\"nvswitch\"", "nvs [kind=\"cpu\"");
  EXPECT_EQ(dot_error(cpu), "t.dot:6: edge gpu0--nvs: an nvlink joins gpus and nvswitches, not a gpu and a cpu");
  EXPECT_EQ(dot_error(replace(kGood, "type=\"nvlink\"", "type=\"cpu_link\"")),
            "t.dot:6: edge gpu0--nvs: a cpu_link joins two cpus, not a gpu and a nvswitch");
  // A GPU reaches the network through a NIC on PCIe, not by a cable of its own.
  const std::string ib = replace(replace(kGood, "nvs [kind=\"nvswitch\", host=\"h0\"]", "nvs [kind=\"switch\"]"),
                                 "type=\"nvlink\"", "type=\"infiniband\"");
  EXPECT_EQ(dot_error(ib),
            "t.dot:6: edge gpu0--nvs: an infiniband cable joins nics and network switches, not a gpu (gpu0); connect "
            "the gpu to a nic over pcie");
  EXPECT_EQ(dot_error(replace(ib, "type=\"infiniband\"", "type=\"pcie\"")),
            "t.dot:6: edge gpu0--nvs: a pcie link joins gpus, cpus, pcie_switches and nics, not a gpu and a switch");
  EXPECT_EQ(dot_error(replace(kGood, "type=\"nvlink\"", "type=\"pcie\"")),
            "t.dot:6: edge gpu0--nvs: a pcie link joins gpus, cpus, pcie_switches and nics, not a gpu and a nvswitch");
  // Two GPUs meet at a switch's or root port's downstream ports, not on a PCIe cable of their own.
  const std::string gpus = replace(replace(kGood, "nvs [kind=\"nvswitch\"", "nvs [kind=\"gpu\", model=\"a100\""),
                                   "type=\"nvlink\"", "type=\"pcie\"");
  EXPECT_EQ(dot_error(gpus),
            "t.dot:6: edge gpu0--nvs: a pcie link between two gpus: PCIe endpoints meet at a pcie_switch or a cpu's "
            "root port; expected each gpu linked to a pcie_switch or cpu over pcie (or the two gpus joined over "
            "nvlink)");
  // A node's attribute on a link, or a link's on a node, is a slip to name, not a hint to ignore.
  EXPECT_EQ(dot_error(replace(kGood, "links=\"12\"];\n  gpu1", "links=\"12\", host=\"h0\"];\n  gpu1")),
            "t.dot:6: edge gpu0--nvs: attribute \"host\" is for nodes, not a link; a link takes type, bw, latency, "
            "links");
  EXPECT_EQ(dot_error(replace(kGood, "nvs [kind=\"nvswitch\", host=\"h0\"]",
                              "nvs [kind=\"nvswitch\", host=\"h0\", bw=\"1GBps\"]")),
            "t.dot:5: node nvs: attribute \"bw\" is for links, not a node; a node takes kind, model, host, p2p, "
            "vendor");
  // " h0" and "h0" would be two machines.
  EXPECT_EQ(dot_error(replace(kGood, "gpu1 [kind=\"gpu\", model=\"a100\", host=\"h0\"]",
                              "gpu1 [kind=\"gpu\", model=\"a100\", host=\" h0\"]")),
            "t.dot:4: node gpu1: host \" h0\" has blanks at its ends; expected the machine's name alone (\" h0\" and "
            "\"h0\" would be two machines)");
  EXPECT_EQ(dot_error(replace(kGood, "gpu0 -- nvs", "gpu0 -- gpu0")),
            "t.dot:6: edge gpu0--gpu0: a link from a node to itself");
  EXPECT_EQ(dot_error("graph g { s [kind=\"switch\", host=\"h\"] }"),
            "t.dot:1: node s: a network switch belongs to no host; remove attribute \"host\"");
  EXPECT_EQ(dot_error("graph g { c [kind=\"cpu\"] }"),
            "t.dot: no gpu in the topology; expected at least one node with kind=\"gpu\"");
}

// Same vertices (names, kinds, hosts, models) and links (ends, type, numbers), in order.
void expect_same(const Topology& a, const Topology& b) {
  ASSERT_EQ(a.vertex_count(), b.vertex_count());
  for (VertexId v = 0; v < a.vertex_count(); ++v) {
    EXPECT_EQ(a.vertex(v).name, b.vertex(v).name);
    EXPECT_EQ(a.vertex(v).kind, b.vertex(v).kind);
    EXPECT_EQ(a.vertex(v).host, b.vertex(v).host);
    EXPECT_EQ(a.vertex(v).model, b.vertex(v).model);
  }
  ASSERT_EQ(a.links().size(), b.links().size());
  for (std::size_t i = 0; i < a.links().size(); ++i) {
    const TopoLink& x = a.link(a.links()[i]);
    const TopoLink& y = b.link(b.links()[i]);
    EXPECT_EQ(a.vertex(x.a).name, b.vertex(y.a).name);
    EXPECT_EQ(a.vertex(x.b).name, b.vertex(y.b).name);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.bw_Bps, y.bw_Bps);  // exact: the writers print numbers that read back bit for bit
    EXPECT_EQ(x.latency_s, y.latency_s);
    EXPECT_EQ(x.links, y.links);
  }
}

TEST(TopologyRoundTrip, EveryBuiltinThroughDotAndGraphml) {
  for (const std::string& name : builtin_topology_names()) {
    SCOPED_TRACE(name);
    const Topology t = load_topology(name);
    const Topology dot = read_topology_dot(write_topology_dot(t), "rt.dot");
    expect_same(t, dot);
    EXPECT_EQ(dot.comment(), t.comment());
    EXPECT_EQ(write_topology_dot(dot), write_topology_dot(t));
    expect_same(t, read_topology_graphml(write_topology_graphml(t), "rt.graphml"));
  }
}

TEST(TopologyRoundTrip, ExactNumbersSurvive) {
  const std::string text =
      replace(replace(kGood, "bw=\"25GBps\"", "bw=\"14.0625GBps\""), "latency=\"100ns\"", "latency=\"0.3us\"");
  const Topology t = read_topology_dot(text, "t.dot");
  expect_same(t, read_topology_dot(write_topology_dot(t), "rt.dot"));
  expect_same(t, read_topology_graphml(write_topology_graphml(t), "rt.graphml"));
}

TEST(TopologyLoad, NamesFilesAndErrors) {
  EXPECT_EQ(load_topology("dgx-a100").gpu_count(), 8);
  EXPECT_EQ(load_topology("topologies/dgx1-v100.dot").gpu_count(), 8);
  const auto error = [](const std::string& arg) {
    try {
      load_topology(arg);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("dgx-a1000"),
            "unknown topology \"dgx-a1000\"; expected a .dot or .graphml file or a built-in: 16x-dgx-h100-ndr, "
            "2x-dgx-a100-hdr, dgx-a100, dgx-h100, dgx1-v100, pcie-2gpu-nvlink-bridge, pcie-4gpu");
  EXPECT_EQ(error("missing/x.dot"), "missing/x.dot: cannot read the topology file: no such file");
  EXPECT_EQ(error("/dev/zero.dot"), "/dev/zero.dot: cannot read the topology file: no such file");
  EXPECT_EQ(error("topologies/README.md"),
            "topologies/README.md: unknown topology file extension \".md\"; expected .dot, .gv, .graphml or .xml");
  EXPECT_THROW(load_topology("topologies/hardware"), DataError);  // a bad input file: exit 1, as a model folder
  EXPECT_EQ(error("topologies/hardware"),
            "topologies/hardware: is a folder; expected a topology file (.dot, .gv, .graphml or .xml) or a built-in: "
            "16x-dgx-h100-ndr, 2x-dgx-a100-hdr, dgx-a100, dgx-h100, dgx1-v100, pcie-2gpu-nvlink-bridge, pcie-4gpu");
}

// A subgraph may list nodes declared before (a cluster of a host's GPUs); an edge to or from one is
// refused as such, in either direction, not as a duplicate name.
TEST(TopologyReaderDot, SubgraphsMentionDeclaredNodesAndTakeNoEdges) {
  const std::string head = R"(graph g {
  g0 [kind="gpu", model="a100-pcie-80gb", host="h"];
  g1 [kind="gpu", model="a100-pcie-80gb", host="h"];
  cpu0 [kind="cpu", host="h"];
)";
  const std::string links = R"(  g0 -- cpu0 [type="pcie", bw="25GBps", latency="1us"];
  g1 -- cpu0 [type="pcie", bw="25GBps", latency="1us"];
}
)";
  EXPECT_NO_THROW(read_topology_dot(head + "  subgraph cluster_h { g0; g1 }\n" + links, "t.dot"));
  const std::string edge = R"(  [type="pcie", bw="25GBps", latency="1us"];
}
)";
  const std::string why = "syntax error: edges to or from a subgraph are not supported; list each link";
  EXPECT_EQ(dot_error(head + "  {g0 g1} -- cpu0" + edge), "t.dot:5: " + why);
  EXPECT_EQ(dot_error(head + "  cpu0 -- {g0 g1}" + edge), "t.dot:5: " + why);
  EXPECT_EQ(dot_error(head + "  subgraph s { g0; g1 } -- cpu0" + edge), "t.dot:5: " + why);
  // A second declaration with attributes is still one.
  EXPECT_EQ(dot_error(head + "  { g0 [kind=\"gpu\"] }\n" + links),
            "t.dot:5: node g0: duplicate name; first declared on line 2");
}

// Ranks follow declaration order and torchrun numbers them node by node: a host's GPUs come
// together, or --nnodes 1 would run on two hosts.
TEST(TopologyReaderDot, AHostsGpusAreDeclaredTogether) {
  const std::string interleaved = R"(graph g {
  ga0 [kind="gpu", model="a100", host="a"];
  gb0 [kind="gpu", model="a100", host="b"];
  ga1 [kind="gpu", model="a100", host="a"];
}
)";
  EXPECT_EQ(dot_error(interleaved),
            "t.dot:4: node ga1: gpu of host \"a\" declared after gpu gb0 of host \"b\"; ranks follow the order gpus "
            "are declared in and torchrun numbers them node by node: expected each host's gpus declared together");
}

// NVLink between hosts (GB200 NVL72's multi-node NVLink, NCCL's MNNVL) is refused, named at the
// first GPU of another host in the domain, whether through an NVSwitch or a direct link.
TEST(TopologyReaderDot, NvlinkBetweenHostsIsRefused) {
  const std::string head = R"(graph g {
  a0 [kind="gpu", model="h100", host="a"]; b0 [kind="gpu", model="h100", host="b"];
)";
  const std::string rest = R"(  na [kind="nic", host="a"]; nb [kind="nic", host="b"]; ib [kind="switch"];
  a0 -- na [type="pcie", bw="64GBps", latency="1us"]; b0 -- nb [type="pcie", bw="64GBps", latency="1us"];
  na -- ib [type="infiniband", bw="50GBps", latency="1us"]; nb -- ib [type="infiniband", bw="50GBps", latency="1us"];
}
)";
  const std::string why =
      "; NVLink between hosts (multi-node NVLink as in GB200 NVL72, NCCL's MNNVL) is not "
      "modelled: give each host its own NVLink and NVSwitches, joined through NICs";
  EXPECT_EQ(
      dot_error(
          head +
          "  sw [kind=\"nvswitch\"];\n  a0 -- sw [type=\"nvlink\", bw=\"25GBps\", links=\"18\", latency=\"100ns\"];\n"
          "  b0 -- sw [type=\"nvlink\", bw=\"25GBps\", links=\"18\", latency=\"100ns\"];\n" +
          rest),
      "t.dot:2: node b0: gpu of host \"b\" is in one NVLink domain with gpu a0 of host \"a\"" + why);
  EXPECT_EQ(dot_error(head + "  a0 -- b0 [type=\"nvlink\", bw=\"25GBps\", links=\"2\", latency=\"100ns\"];\n" + rest),
            "t.dot:2: node b0: gpu of host \"b\" is in one NVLink domain with gpu a0 of host \"a\"" + why);
  // Said for what it is even where the cable would also take more NVLinks than the GPU has.
  EXPECT_EQ(dot_error(head + "  a0 -- b0 [type=\"nvlink\", bw=\"25GBps\", links=\"19\", latency=\"100ns\"];\n" + rest),
            "t.dot:2: node b0: gpu of host \"b\" is in one NVLink domain with gpu a0 of host \"a\"" + why);
  EXPECT_NO_THROW(read_topology_dot(head + rest, "t.dot"));
}

}  // namespace
}  // namespace gradsync
