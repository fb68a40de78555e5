// The op registry: one entry per op holding every fact later stages use —
// shape/type inference, DNNFusion mapping type, multi-linear inputs (PET),
// FLOP and byte counts, and the reference kernel.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tessera {

// DNNFusion's classification of how input elements map to output elements.
enum class MappingType { OneToOne, Reorganize, Shuffle, OneToMany, ManyToMany };
std::string_view mapping_type_name(MappingType t);

// Inputs to shape/type inference: the node, its input types and, where the
// input is a known constant, its value.
struct InferContext {
  const Node& node;
  int64_t opset;
  std::vector<const TensorType*> input_types;  // nullptr for absent optional inputs
  std::vector<const Tensor*> input_values;     // nullptr unless the input is constant
  std::vector<TensorType> output_types;        // filled by the infer function

  int num_inputs() const { return static_cast<int>(input_types.size()); }
  bool has_input(int i) const { return i < num_inputs() && input_types[static_cast<size_t>(i)]; }
  const TensorType& in(int i) const;            // throws naming the node if absent
  const Tensor* value(int i) const { return i < num_inputs() ? input_values[static_cast<size_t>(i)] : nullptr; }
  int num_outputs() const { return static_cast<int>(node.outputs.size()); }
  TensorType& out(int i);                       // grows output_types as needed
};

// Inputs to a reference kernel: concrete tensors.
struct KernelContext {
  const Node& node;
  int64_t opset;
  std::vector<const Tensor*> inputs;  // nullptr for absent optional inputs
  // Looks up a value of the enclosing scope by name (for If/Loop/Scan bodies,
  // whose captures read the caller's values). Null at top level.
  std::function<const Tensor*(const std::string&)> outer;

  int num_inputs() const { return static_cast<int>(inputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs[static_cast<size_t>(i)]; }
  const Tensor& in(int i) const;      // throws naming the node if absent
  int num_outputs() const { return static_cast<int>(node.outputs.size()); }
};

using InferFn = std::function<void(InferContext&)>;
using KernelFn = std::function<std::vector<Tensor>(const KernelContext&)>;
// FLOPs of one execution, from the node and its fully-known input/output types.
using FlopsFn = std::function<double(const Node&, const std::vector<const TensorType*>& ins,
                                     const std::vector<TensorType>& outs)>;

// Checks of input values that a compiled kernel cannot report itself (index
// ranges, integer division by zero), made by the compiled runtime before the
// kernel runs; throws naming the node, as the reference kernel would. They
// look at integer inputs only: a node whose inputs are all floating point
// needs none (the fusion planner relies on this).
using ValueCheckFn = std::function<void(const Node&, const std::vector<const Tensor*>& inputs)>;

struct OpDef {
  std::string name;
  std::string domain;               // "" = default ONNX domain
  int64_t min_opset = 1;            // earliest opset whose semantics the kernel implements
  MappingType mapping = MappingType::OneToOne;
  bool broadcasts = false;          // inputs broadcast numpy-style to the output (Add, Where, PRelu ...)
  std::vector<int> linear_inputs;   // inputs the op is (multi-)linear in, for PET
  InferFn infer;
  KernelFn reference;
  FlopsFn flops;                    // null: one FLOP per output element
  std::vector<std::string> attributes;  // every attribute the op understands; any other is an error
  bool deterministic = true;        // false for random ops: never folded, outputs not reproducible
  ValueCheckFn value_check;         // null: the kernel is correct for any input values
};

class OpRegistry {
 public:
  void add(OpDef def);
  const OpDef* find(const std::string& op, const std::string& domain = "") const;
  // Like find, but throws an Error naming the node, op and opset when unknown.
  const OpDef& get(const Node& n, int64_t opset) const;
  std::vector<const OpDef*> all() const;

 private:
  std::map<std::string, OpDef> ops_;  // key: domain + "::" + name
};

// Shared inference helpers for op families.
// Numpy-style multidirectional broadcast; throws naming `n` when incompatible.
Dims broadcast_dims(const Node& n, const Dims& a, const Dims& b);
// Same for static types (-1 = unknown dim).
TensorType broadcast_types(const Node& n, const std::vector<const TensorType*>& ins);
// Normalises a possibly negative axis for the given rank; throws naming `n`.
int64_t normalize_axis(const Node& n, int64_t axis, int64_t rank);

}  // namespace tessera
