// DOT output: nodes, value edges, fused blocks as filled clusters.
#include "fusion/fusion_dot.h"

#include <sstream>
#include <unordered_map>

namespace tessera::fusion {

namespace {

// DOT string literal contents.
std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r;
}

// Pastel fills, one per block in turn.
constexpr const char* kFills[] = {"#fde2e4", "#e2ece9", "#dfe7fd", "#fff1e6", "#e9edc9",
                                  "#f0efeb", "#d8e2dc", "#ffe5d9", "#cddafd", "#eae4e9"};

}  // namespace

std::string graph_dot(const Graph& g, const Partition* plan) {
  std::ostringstream o;
  o << "digraph \"" << escape(g.name.empty() ? "model" : g.name) << "\" {\n"
    << "  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", "
       "fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
  std::unordered_map<const Node*, int> index;
  for (size_t i = 0; i < g.nodes().size(); ++i) index[g.nodes()[i].get()] = static_cast<int>(i);
  auto node_line = [&](size_t i, const std::string& indent) {
    const Node& n = *g.nodes()[i];
    // Nodes PET's search put in (their names start with pet/subprogram.h's
    // kPetNodePrefix): a thick orange outline.
    const bool pet = n.name.rfind("pet/", 0) == 0;
    o << indent << "n" << i << " [label=\"" << escape(n.op_type) << "\\n" << escape(n.name) << "\""
      << (pet ? ", color=\"#e07a00\", penwidth=2.5" : "") << "];\n";
  };
  for (size_t i = 0; i < g.inputs().size(); ++i)
    o << "  in" << i << " [shape=ellipse, fillcolor=\"#f4f4f4\", label=\"" << escape(g.inputs()[i]->name) << "\\n"
      << g.inputs()[i]->type.to_string() << "\"];\n";
  for (size_t i = 0; i < g.outputs().size(); ++i)
    o << "  out" << i << " [shape=ellipse, fillcolor=\"#f4f4f4\", label=\"" << escape(g.outputs()[i]->name) << "\\n"
      << g.outputs()[i]->type.to_string() << "\"];\n";
  if (plan) {
    int fused = 0;
    for (size_t b = 0; b < plan->blocks.size(); ++b) {
      const Block& bl = plan->blocks[b];
      if (bl.nodes.size() < 2) {
        node_line(static_cast<size_t>(bl.nodes[0]), "  ");
        continue;
      }
      const char* fill = kFills[fused++ % (sizeof kFills / sizeof kFills[0])];
      o << "  subgraph cluster_" << b << " {\n    label=\"block " << b << " (" << mapping_type_name(bl.type)
        << ")\";\n    style=\"rounded,filled\"; color=\"#888888\"; fillcolor=\"" << fill << "\"; fontsize=9;\n";
      for (int n : bl.nodes) node_line(static_cast<size_t>(n), "    ");
      o << "  }\n";
    }
  } else {
    for (size_t i = 0; i < g.nodes().size(); ++i) node_line(i, "  ");
  }
  std::unordered_map<const Value*, std::string> source;
  for (size_t i = 0; i < g.inputs().size(); ++i) source[g.inputs()[i]] = "in" + std::to_string(i);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const Value* v : g.nodes()[i]->outputs)
      if (v) source[v] = "n" + std::to_string(i);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const Value* v : g.nodes()[i]->inputs) {
      auto it = v ? source.find(v) : source.end();
      if (it == source.end()) continue;  // constants are not drawn
      o << "  " << it->second << " -> n" << i << " [label=\"" << v->type.to_string() << "\"];\n";
    }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    auto it = source.find(g.outputs()[i]);
    if (it != source.end()) o << "  " << it->second << " -> out" << i << ";\n";
  }
  o << "}\n";
  return o.str();
}

}  // namespace tessera::fusion
