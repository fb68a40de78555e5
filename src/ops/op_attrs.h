// The schema-aware attribute reader: every op reads its attributes through
// OpAttrs, which takes a missing attribute's default from the op's schema
// (OpDef::attributes) at the node's opset, so no default is restated in a
// kernel, an inference or an expression. Reading a name the op does not
// declare is an internal error: an incomplete schema cannot hide.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ops/registry.h"

namespace tessera {

// The opset of readers that have none (FLOP counts): reading there an
// attribute whose default or requirement changed between opsets is an
// internal error.
inline constexpr int64_t kAnyOpset = -1;

class OpAttrs {
 public:
  // Looks the op up in the process-wide registry (throws naming the node
  // when it is unknown). Holds references: `n` must outlive the reader.
  OpAttrs(const Node& n, int64_t opset);
  OpAttrs(const Node& n, const OpDef& def, int64_t opset) : n_(n), def_(&def), opset_(opset) {}

  // True when the op's schema declares `key` (for readers shared by ops with
  // different attribute sets, such as the window attributes).
  bool declares(std::string_view key) const { return def_->attr_spec(key) != nullptr; }
  // True when the node carries the attribute (a default does not count).
  bool has(std::string_view key) const;
  // The value, or the schema's default; throws naming the node when the
  // attribute is missing and has no default, or is of another kind.
  int64_t i(std::string_view key) const;
  float f(std::string_view key) const;  // an int attribute is widened
  const std::string& s(std::string_view key) const;
  std::vector<int64_t> ints(std::string_view key) const;  // one int reads as a list of one
  std::vector<float> floats(std::string_view key) const;  // one float reads as a list of one
  const std::vector<std::string>& strings(std::string_view key) const;
  const Tensor& tensor(std::string_view key) const;
  const std::shared_ptr<Graph>& graph(std::string_view key) const;
  // The node's attribute (not the default), or null; for readers that accept
  // several kinds. The name must be declared.
  const Attribute* raw(std::string_view key) const;

  const Node& node() const { return n_; }
  const OpDef& def() const { return *def_; }
  int64_t opset() const { return opset_; }

 private:
  const AttrSpec& spec(std::string_view key) const;
  // The node's attribute or the default, checked against `want`.
  const Attribute& value(std::string_view key, Attribute::Kind want) const;

  const Node& n_;
  const OpDef* def_;
  int64_t opset_;
};

// Readers for the node of an inference or kernel context (the expression
// context's is in opexpr/expr_registry.h).
inline OpAttrs op_attrs(const InferContext& c) { return OpAttrs(c.node, c.opset); }
inline OpAttrs op_attrs(const KernelContext& c) { return OpAttrs(c.node, c.opset); }

// Checks every node's attributes and input/output counts (recursively into
// subgraph bodies) against its op's schema, as the importer does; for graphs
// built or rewritten in C++. Throws an Error naming the first bad node.
void verify_schemas(const Graph& g);

}  // namespace tessera
