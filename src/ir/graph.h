// Graph IR: values (typed tensors), nodes (op + typed attributes), constants,
// graph inputs and outputs. Nodes are kept in topological order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/tensor.h"

namespace tessera {

class Graph;
class Node;

// Static type of a value: element type and dims; a dim of -1 is unknown, and
// rank_known=false means even the rank is unknown.
struct TensorType {
  DType dtype = DType::Undefined;
  Dims dims;
  bool rank_known = true;

  bool fully_known() const;
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  std::string to_string() const;  // "f32[1x3x224x224]", "f32[?x3]", "f32[*]"
  bool operator==(const TensorType&) const = default;
};

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors, Graphs };
  Kind kind = Kind::Int;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;

  static Attribute of_int(int64_t v);
  static Attribute of_float(float v);
  static Attribute of_string(std::string v);
  static Attribute of_ints(std::vector<int64_t> v);
  static Attribute of_floats(std::vector<float> v);
  static Attribute of_strings(std::vector<std::string> v);
  static Attribute of_tensor(Tensor v);
  static Attribute of_graph(std::shared_ptr<Graph> v);
};

using AttrMap = std::map<std::string, Attribute>;

struct Use {
  Node* node;
  int input_index;
};

class Value {
 public:
  std::string name;
  TensorType type;
  Node* producer = nullptr;  // null for graph inputs and constants
  int producer_output = 0;
  std::vector<Use> uses;
  std::optional<Tensor> constant;  // initializers and folded values
  bool is_graph_input = false;

  bool is_constant() const { return constant.has_value(); }
};

class Node {
 public:
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  std::vector<Value*> inputs;   // nullptr for an absent optional input
  std::vector<Value*> outputs;  // nullptr for an absent optional output
  AttrMap attrs;

  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
  // True when an attribute holds a graph (If/Loop/Scan bodies).
  bool has_subgraph() const;
  // The raw attribute or null, for code that handles attributes generically
  // (printing, export, cloning); ops read theirs through OpAttrs
  // (src/ops/op_attrs.h), which knows each op's defaults.
  const Attribute* attr(const std::string& key) const;

  int num_inputs() const { return static_cast<int>(inputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs[static_cast<size_t>(i)]; }
  // "Conv 'conv1'" — used at the start of every error message about a node.
  std::string describe() const;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  // Moving keeps every Node and Value where it is (they are owned through
  // pointers and point to no graph): a pass that tried a rewrite on a clone
  // can put the clone in the graph's place, or the graph back from a clone.
  Graph(Graph&&) noexcept = default;
  Graph& operator=(Graph&&) noexcept = default;

  std::string name;
  int64_t opset = 17;     // default-domain opset the graph was written against
  int64_t ir_version = 8;
  std::map<std::string, int64_t> extra_opsets;  // other domains
  // The names of the model's symbolic dimensions (ONNX's dim_param), by graph
  // input or output value name: one entry per dimension, "" where it has none.
  // Shapes keep only that a dimension is dynamic (-1); the public signatures
  // show such a dimension by its name, as ONNX Runtime does, and the exported
  // graph (a saved artifact's among them) writes the names back.
  std::map<std::string, std::vector<std::string>> dim_names;
  // Values a subgraph (If/Loop/Scan body) reads from the enclosing graph; they
  // are bound by name when the body runs. Empty for a top-level graph.
  std::vector<Value*> captures;

  // --- building -----------------------------------------------------------
  Value* add_value(std::string name, TensorType type = {});
  Value* add_input(std::string name, TensorType type);
  Value* add_constant(std::string name, Tensor t);
  // A 1-D int64 constant (shapes, pads, axes, slice bounds: the operands
  // passes and builders give Reshape, Pad, Slice, Split) named
  // unique_name(prefix).
  Value* add_int64s(const std::string& prefix, const std::vector<int64_t>& values);
  void add_output(Value* v) { outputs_.push_back(v); }
  // Appends a node; output values are created with the given names.
  Node* add_node(std::string op_type, std::vector<Value*> inputs, std::vector<std::string> output_names,
                 AttrMap attrs = {}, std::string name = "");
  // Inserts a node before `pos` (or at the end when pos is null).
  Node* insert_node_before(Node* pos, std::string op_type, std::vector<Value*> inputs,
                           std::vector<std::string> output_names, AttrMap attrs = {},
                           std::string name = "");

  // --- rewriting ----------------------------------------------------------
  // Points every use of `from` (and graph outputs) at `to`.
  void replace_all_uses(Value* from, Value* to);
  void set_input(Node* n, int index, Value* v);
  // Removes a node whose outputs are unused (throws otherwise).
  void erase_node(Node* n);
  // Removes nodes whose outputs reach no graph output; returns how many.
  int remove_dead_nodes();
  // Drops values that are neither used nor produced nor graph inputs/outputs.
  void remove_unused_values();
  // Drops `v` alone when nothing reads it (no use, not a graph input or
  // output, not captured by a subgraph) and nothing produces it; returns
  // whether it did. A pass that replaces a constant calls this on the old
  // one as it goes, so the old weights' memory is freed before the next is
  // made (peak memory), not all at the pass's end. `v` is invalid after.
  bool erase_value_if_unused(Value* v);
  // Re-sorts nodes topologically; throws on a cycle naming a node on it.
  void topo_sort();

  // --- queries ------------------------------------------------------------
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  std::vector<Value*>& mutable_outputs() { return outputs_; }
  std::vector<Value*>& mutable_inputs() { return inputs_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  Value* find_value(const std::string& name) const;
  // True when `v` is one of the graph's outputs.
  bool is_output(const Value* v) const;
  // A fresh value name with the given prefix.
  std::string unique_name(const std::string& prefix);

  // --- whole-graph operations ---------------------------------------------
  std::unique_ptr<Graph> clone() const;
  // The nodes given (in graph order) as a standalone graph: inputs are the values
  // they read but do not produce, outputs the values they produce that are used
  // outside the set or are graph outputs.
  std::unique_ptr<Graph> extract(const std::vector<Node*>& nodes) const;

 private:
  Node* make_node(std::string op_type, std::vector<Value*> inputs, std::vector<std::string> output_names,
                  AttrMap attrs, std::string name);
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::map<std::string, Value*> by_name_;
  int64_t name_counter_ = 0;
};

// Names of enclosing-scope values read by the node's subgraph bodies
// (recursively): If/Loop/Scan use these besides their explicit inputs.
std::vector<std::string> captured_names(const Node& n);

// Text form of a graph, one node per line, for dumps and tests.
std::string print_graph(const Graph& g);
// Structural hash: op types, attributes, wiring and types; value and node names
// are ignored, constants hashed by content.
uint64_t structural_hash(const Graph& g);
// Hashes of a tensor (dtype, dims, contents) and of an attribute, as the
// structural hash uses them.
uint64_t hash_tensor(const Tensor& t);
uint64_t hash_attribute(const Attribute& a);
// Checks the graph is well-formed: acyclic and ordered, every input defined,
// unique value names, outputs exist. Throws Error describing the first problem.
void verify_graph(const Graph& g);

}  // namespace tessera
