// Loop IR statements: construction with type checks.
#include "loop/stmt.h"

#include "support/error.h"

namespace tessera::loop {

std::string_view for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
  }
  return "?";
}

namespace {
template <class T, class... Args>
Stmt make(Args&&... args) {
  return Stmt(std::make_shared<const T>(std::forward<Args>(args)...));
}

void check_index_scalar(const Expr& e, std::string_view what) {
  TESSERA_CHECK(e.defined(), "loop IR: ", what, " is undefined");
  TESSERA_CHECK(e.type() == index_type(), "loop IR: ", what, " must be a scalar i64, got ", e.type().to_string());
}
}  // namespace

Stmt for_loop(Var var, Expr min, Expr extent, ForKind kind, Stmt body) {
  TESSERA_CHECK(var.defined() && var.type() == index_type(), "loop IR: loop variable must be an i64 Var");
  check_index_scalar(min, "min of loop " + var.name());
  check_index_scalar(extent, "extent of loop " + var.name());
  TESSERA_CHECK(body.defined(), "loop IR: loop ", var.name(), " has no body");
  return make<ForNode>(std::move(var), std::move(min), std::move(extent), kind, std::move(body));
}

Stmt store(Buffer buf, Expr value, Expr index, Expr predicate) {
  TESSERA_CHECK(buf.defined(), "loop IR: store to an undefined buffer");
  TESSERA_CHECK(value.defined() && index.defined(), "loop IR: store to '", buf.name(), "' needs a value and an index");
  int lanes = value.type().lanes;
  TESSERA_CHECK(value.type().dtype == buf.dtype(), "loop IR: store of ", value.type().to_string(), " into '",
                buf.name(), "' of ", dtype_name(buf.dtype()));
  TESSERA_CHECK(index.type() == Type({DType::I64, lanes}), "loop IR: index of store to '", buf.name(),
                "' must be ", Type{DType::I64, lanes}.to_string(), ", got ", index.type().to_string());
  if (predicate.defined())
    TESSERA_CHECK(predicate.type() == bool_type(lanes), "loop IR: predicate of store to '", buf.name(),
                  "' must be ", bool_type(lanes).to_string(), ", got ", predicate.type().to_string());
  return make<StoreNode>(std::move(buf), std::move(value), std::move(index), std::move(predicate));
}

Stmt let_stmt(Var var, Expr value, Stmt body) {
  TESSERA_CHECK(var.defined() && value.defined() && body.defined(), "loop IR: incomplete let statement");
  TESSERA_CHECK(var.type() == value.type(), "loop IR: let ", var.name(), " (", var.type().to_string(),
                ") bound to a ", value.type().to_string());
  return make<LetStmtNode>(std::move(var), std::move(value), std::move(body));
}

Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case) {
  TESSERA_CHECK(cond.defined() && cond.type() == bool_type(), "loop IR: if condition must be a scalar bool",
                cond.defined() ? ", got " + cond.type().to_string() : "");
  TESSERA_CHECK(then_case.defined(), "loop IR: if without a then branch");
  return make<IfThenElseNode>(std::move(cond), std::move(then_case), std::move(else_case));
}

Stmt allocate(Buffer buf, Expr extent, Stmt body) {
  TESSERA_CHECK(buf.defined() && body.defined(), "loop IR: incomplete allocate");
  check_index_scalar(extent, "extent of allocation " + buf.name());
  return make<AllocateNode>(std::move(buf), std::move(extent), std::move(body));
}

Stmt block(std::vector<Stmt> stmts) {
  for (const Stmt& s : stmts) TESSERA_CHECK(s.defined(), "loop IR: undefined statement in a block");
  return make<BlockNode>(std::move(stmts));
}

Stmt eval_stmt(Expr value) {
  TESSERA_CHECK(value.defined(), "loop IR: evaluate of an undefined expression");
  return make<EvaluateNode>(std::move(value));
}

namespace {
constexpr const char* kPrefetch = "prefetch";
}

Stmt prefetch(Expr load) {
  TESSERA_CHECK(load.defined() && (load.as<LoadNode>() || load.as<ProducerLoadNode>()),
                "loop IR: prefetch takes a load");
  Type t = load.type();
  return eval_stmt(call(t, kPrefetch, {std::move(load)}));
}

Expr prefetched(const EvaluateNode* s) {
  auto* c = s ? s->value.as<CallNode>() : nullptr;
  return c && c->name == kPrefetch && c->args.size() == 1 && c->args[0].as<LoadNode>() ? c->args[0] : Expr();
}

Expr prefetched(const Stmt& s) { return prefetched(s.as<EvaluateNode>()); }

namespace {
constexpr const char* kKeepInMemory = "keep_in_memory";
}

// Written as a call on a load of the buffer's first element (the load is
// never run): the printer shows the buffer, and substitutions leave it be.
Stmt keep_in_memory(Buffer buf) {
  TESSERA_CHECK(buf.defined(), "loop IR: keep_in_memory of an undefined buffer");
  Type t{buf.dtype(), 1};
  return eval_stmt(call(t, kKeepInMemory, {load(std::move(buf), int_imm(0))}));
}

Buffer kept_in_memory(const EvaluateNode* s) {
  auto* c = s ? s->value.as<CallNode>() : nullptr;
  if (!c || c->name != kKeepInMemory || c->args.size() != 1) return Buffer();
  auto* l = c->args[0].as<LoadNode>();
  return l ? l->buffer : Buffer();
}

Buffer kept_in_memory(const Stmt& s) { return kept_in_memory(s.as<EvaluateNode>()); }

bool is_hint(const EvaluateNode* s) { return prefetched(s).defined() || kept_in_memory(s).defined(); }
bool is_hint(const Stmt& s) { return is_hint(s.as<EvaluateNode>()); }

Stmt no_op() { return block({}); }

bool is_no_op(const Stmt& s) {
  if (!s.defined()) return true;
  if (auto* b = s.as<BlockNode>()) return b->stmts.empty();
  if (auto* e = s.as<EvaluateNode>()) return is_const(e->value);
  return false;
}

std::vector<Buffer> Kernel::params() const {
  std::vector<Buffer> p = inputs;
  p.insert(p.end(), outputs.begin(), outputs.end());
  return p;
}

}  // namespace tessera::loop
