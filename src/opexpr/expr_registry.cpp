// The expression registry: every op family's tensor-expression definitions.
#include "opexpr/expr_registry.h"

#include "ir/op_key.h"
#include "opexpr/expr_util.h"
#include "support/error.h"

namespace tessera {

const te::Tensor& ExprContext::in(int i) const {
  TESSERA_CHECK(has_input(i), node.describe(), ": required input ", i, " is missing");
  return inputs[static_cast<size_t>(i)];
}

bool ExprContext::has_value(int i) {
  if (i < 0 || i >= num_inputs()) return false;
  const Tensor*& v = values[static_cast<size_t>(i)];
  if (!v && fetch && node.inputs[static_cast<size_t>(i)]) v = fetch(i);
  return v != nullptr;
}

const Tensor& ExprContext::value(int i) {
  TESSERA_CHECK(i < num_inputs(), node.describe(), ": required input ", i, " is missing");
  has_value(i);
  TESSERA_CHECK(values[static_cast<size_t>(i)], node.describe(), ": compiling needs the value of input ", i,
                " ('", node.inputs[static_cast<size_t>(i)] ? node.inputs[static_cast<size_t>(i)]->name : "", "')");
  if (value_used.size() < values.size()) value_used.resize(values.size());
  value_used[static_cast<size_t>(i)] = true;
  return *values[static_cast<size_t>(i)];
}

std::string ExprContext::stage_name(const std::string& suffix) const {
  std::string base = node.name.empty() ? node.op_type : node.name;
  return suffix.empty() ? base : base + "." + suffix;
}

namespace {
// The entry for a registered op, created on first use; throws for an op the
// op registry does not have (a misspelt name would otherwise go unnoticed).
ExprDef& entry(std::map<std::string, ExprDef>& defs, const std::string& op, const std::string& domain,
               const char* what) {
  TESSERA_CHECK(op_registry().find(op, domain), what, " for unregistered op '", op, "'");
  return defs[op_key(op, domain)];
}
}  // namespace

void ExprRegistry::set_expr(const std::string& op, const std::string& domain, ExprFn fn) {
  ExprDef& d = entry(defs_, op, domain, "expression");
  TESSERA_CHECK(!d.expr, "op '", op, "' has two expression definitions");
  d.expr = std::move(fn);
}

void ExprRegistry::set_opaque(const std::string& op, const std::string& domain, std::string reason) {
  entry(defs_, op, domain, "opaque reason").opaque_reason = std::move(reason);
}

const ExprDef* ExprRegistry::find(const std::string& op, const std::string& domain) const {
  auto it = defs_.find(op_key(op, domain));
  return it == defs_.end() ? nullptr : &it->second;
}

const ExprFn& ExprRegistry::get(const Node& n) const {
  const ExprDef* d = find(n.op_type, n.domain);
  TESSERA_CHECK(d && d->expr, n.describe(), ": ", n.op_type, " has no compiled kernel",
                !d || d->opaque_reason.empty() ? std::string() : " (" + d->opaque_reason + ")");
  return d->expr;
}

const ExprRegistry& expr_registry() {
  static const ExprRegistry reg = [] {
    ExprRegistry r;
    ops::register_elementwise_exprs(r);
    ops::register_tensor_exprs(r);
    ops::register_nn_exprs(r);
    ops::register_reduce_exprs(r);
    ops::register_misc_exprs(r);
    return r;
  }();
  return reg;
}

bool has_expression(const Node& n) {
  const ExprDef* d = expr_registry().find(n.op_type, n.domain);
  return d && d->expr;
}

}  // namespace tessera
