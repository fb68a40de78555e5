// The op registry: one entry per op holding every fact later stages use —
// shape/type inference, DNNFusion mapping type, multi-linear inputs (PET),
// FLOP and byte counts, and the reference kernel.
#pragma once

#include <functional>
#include <map>
#include <optional>
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

// One attribute an op understands: its name, kind and what a node without it
// means — a default value, "required", or "optional" (absence is meaningful,
// e.g. Conv's kernel_shape is taken from the weight). The default or the
// requirement may change at an opset where ONNX changed it (Softmax's axis
// defaults to 1 before opset 13 and to -1 from it); `rules` holds one entry per
// change, in ascending opset order, the first from opset 1.
struct AttrSpec {
  enum class Presence { Optional, Defaulted, Required };
  struct Rule {
    int64_t since_opset = 1;
    Presence presence = Presence::Optional;
    Attribute value;  // the default when presence is Defaulted
  };
  std::string name;
  Attribute::Kind kind = Attribute::Kind::Int;
  std::vector<Rule> rules;
  // Further kinds a node may carry (the op's reader tells them apart), e.g.
  // Cast's `to` is a type name before opset 6.
  std::vector<Attribute::Kind> other_kinds;

  // The rule in force at `opset`.
  const Rule& at(int64_t opset) const;
  // The attribute is required from `opset` on (before: as declared).
  AttrSpec required_from(int64_t opset) const;
  // From `opset` on the default is `value` (of the declared kind).
  AttrSpec default_from(int64_t opset, Attribute value) const;
  // Required at every opset.
  AttrSpec required() const { return required_from(1); }
  // A node may also carry the attribute as `kind`.
  AttrSpec or_kind(Attribute::Kind kind) const;
  // True when a node's attribute of kind `found` is accepted.
  bool accepts(Attribute::Kind found) const;
};

// Declaration helpers for op tables: with a value the attribute has that
// default; without, it is optional (see `.required()` for required ones).
AttrSpec int_attr(std::string name);
AttrSpec int_attr(std::string name, int64_t def);
AttrSpec float_attr(std::string name);
AttrSpec float_attr(std::string name, float def);
AttrSpec string_attr(std::string name);
AttrSpec string_attr(std::string name, std::string def);
AttrSpec ints_attr(std::string name);
AttrSpec ints_attr(std::string name, std::vector<int64_t> def);
AttrSpec floats_attr(std::string name);
AttrSpec floats_attr(std::string name, std::vector<float> def);
AttrSpec strings_attr(std::string name);
AttrSpec strings_attr(std::string name, std::vector<std::string> def);
AttrSpec tensor_attr(std::string name);
AttrSpec graph_attr(std::string name);

std::string_view attr_kind_name(Attribute::Kind k);  // "int", "list of floats", ...
// True when an attribute of kind `found` is accepted where `declared` is
// expected: the same kind, or the widenings ONNX exporters rely on (an int
// where a float is declared, one int or float where a list of them is).
bool attr_kind_accepts(Attribute::Kind declared, Attribute::Kind found);

// An op's formal inputs and outputs at one opset range, in ONNX's notation
// (ONNX's schemas are the source: src/ops/onnx_signatures.cpp). One character
// per formal parameter: '1' required, '?' optional (a node names it '' or, at
// the end, leaves it off); a variadic last parameter is '*' and its minimum
// count ("*1": one or more; "??*0": two optional ones, then any number).
// A node must list at least every parameter up to the last required one (and
// the variadic minimum), at most every parameter, and '' only where optional.
struct Signature {
  int64_t since_opset = 1;
  std::string inputs;
  std::string outputs;
};

struct OpDef;
// The counts a signature side allows: [min, max], max -1 = no limit; throws
// on a malformed notation.
std::pair<int, int> signature_counts(const std::string& sig);
struct OpDef;
// Checks a node's attributes against its op's schema at `opset`: every
// attribute is declared and of an accepted kind, every required one present.
// Throws an Error starting with `label` (the node's description).
void check_attributes(const OpDef& def, const AttrMap& attrs, int64_t opset, const std::string& label);
// Checks a node's inputs and outputs against the op's signature at `opset`
// (ONNX's rules, as ONNX Runtime applies them): the counts, and '' (false in
// `present`) only for an optional parameter. Throws an Error starting with
// `label`. An op without signatures is not checked.
void check_arity(const OpDef& def, int64_t opset, const std::vector<bool>& inputs_present,
                 const std::vector<bool>& outputs_present, const std::string& label);

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
  std::vector<AttrSpec> attributes;  // every attribute the op understands; any other is an error
  bool deterministic = true;        // false for random ops: never folded, outputs not reproducible
  ValueCheckFn value_check;         // null: the kernel is correct for any input values
  // Input and output signatures in ascending since_opset, checked at import
  // and by the verifier; ONNX's ops take theirs from ONNX's schemas when the
  // registry is built (op_registry()), other domains declare their own.
  std::vector<Signature> signatures;

  // The spec of attribute `name`, or null when the op declares none.
  const AttrSpec* attr_spec(std::string_view name) const;
  // The signature in force at `opset`, or null when none is declared.
  const Signature* signature_at(int64_t opset) const;
};

class OpRegistry {
 public:
  void add(OpDef def);
  // Appends a signature row to op `name` of `domain` when it is registered
  // (rows in ascending since_opset); false when no such op is.
  bool add_signature(const std::string& name, const std::string& domain, Signature row);
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
