// The compiled side of every op: its outputs as tensor expressions of its
// inputs (src/opexpr/expr_*.cpp, one file per family), or the reason the
// compiled runtime runs its reference kernel instead. Kept apart from the op
// registry (ops/registry.h) so the graph layers never see tensor expressions;
// every entry names an op the registry has.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ops/op_attrs.h"
#include "ops/registry.h"
#include "te/tensor_expr.h"

namespace tessera {

// Inputs to an op's tensor-expression definition: one placeholder per present
// input (static types), and the values of inputs whose values shape the
// result (Reshape's shape, Slice's starts ...). Reading a value records that
// the compiled kernel depends on it.
struct ExprContext {
  const Node& node;
  int64_t opset;
  std::vector<te::Tensor> inputs;           // undefined for absent optional inputs
  std::vector<const Tensor*> values;        // null when the value is not known
  std::vector<TensorType> output_types;     // inferred, fully known
  std::vector<bool> value_used;             // filled as value() is called
  // Computes the value of input i on request when `values` does not hold it
  // (null: not known); the compiled runtime computes only the values an
  // expression asks for.
  std::function<const Tensor*(int)> fetch;

  int num_inputs() const { return static_cast<int>(inputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs[static_cast<size_t>(i)].defined(); }
  const te::Tensor& in(int i) const;        // throws naming the node if absent
  // The value of input i; throws naming the node when it is not known.
  const Tensor& value(int i);
  // True when the value of input i is known (asking `fetch` for it if need be).
  bool has_value(int i);
  int num_outputs() const { return static_cast<int>(output_types.size()); }
  const TensorType& out(int i) const { return output_types.at(static_cast<size_t>(i)); }
  // A stage name unique to this node: "<node name or op>.<suffix>".
  std::string stage_name(const std::string& suffix) const;
};

// The schema-aware attribute reader for the expression's node (ops/op_attrs.h).
inline OpAttrs op_attrs(const ExprContext& c) { return OpAttrs(c.node, c.opset); }

// The op's outputs as tensor expressions of its inputs (for code generation).
using ExprFn = std::function<std::vector<te::Tensor>(ExprContext&)>;

// What the compiled runtime knows of one op: its expression, or (expr null)
// why it has none, when a reason was given.
struct ExprDef {
  ExprFn expr;
  std::string opaque_reason;
};

class ExprRegistry {
 public:
  // Sets the expression of an op the op registry has; a second definition or
  // an unknown op is an error.
  void set_expr(const std::string& op, const std::string& domain, ExprFn fn);
  // Records why a registered op has no expression (data-dependent output sizes,
  // strings, random, subgraphs ...).
  void set_opaque(const std::string& op, const std::string& domain, std::string reason);
  // The op's entry, or null when nothing was registered for it.
  const ExprDef* find(const std::string& op, const std::string& domain = "") const;
  // The op's expression; throws naming the node (and the opaque reason) when it has none.
  const ExprFn& get(const Node& n) const;

 private:
  std::map<std::string, ExprDef> defs_;  // key: domain + "::" + name
};

// The process-wide expression registry with every built-in op's, filled on first use.
const ExprRegistry& expr_registry();

// True when the node's op has a tensor-expression definition.
bool has_expression(const Node& n);

}  // namespace tessera
