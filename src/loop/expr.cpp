// Loop IR expressions: construction with type checks, constants, equality.
#include "loop/expr.h"

#include <algorithm>
#include <cmath>

#include "loop/scalar_ops.h"
#include "support/error.h"

namespace tessera::loop {

std::string Type::to_string() const {
  std::string s(dtype_name(dtype));
  if (lanes != 1) {
    s += 'x';
    s += std::to_string(lanes);
  }
  return s;
}

std::string_view expr_kind_name(ExprKind k) {
  static constexpr std::string_view kNames[] = {
      "IntImm", "FloatImm", "Var", "Cast", "Add", "Sub", "Mul", "Div", "Mod", "Min", "Max",
      "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not",
      "Select", "Load", "Ramp", "Broadcast", "Call", "Let", "ProducerLoad", "Reduce"};
  return kNames[static_cast<size_t>(k)];
}

bool is_binary(ExprKind k) { return k >= ExprKind::Add && k <= ExprKind::Or; }
bool is_comparison(ExprKind k) { return k >= ExprKind::EQ && k <= ExprKind::GE; }
bool is_commutative(ExprKind k) {
  switch (k) {
    case ExprKind::Add: case ExprKind::Mul: case ExprKind::Min: case ExprKind::Max:
    case ExprKind::EQ: case ExprKind::NE: case ExprKind::And: case ExprKind::Or:
      return true;
    default:
      return false;
  }
}

Var::Var(std::string name, Type t) : Expr(std::make_shared<VarNode>(std::move(name), t)) {
  TESSERA_CHECK(t.dtype != DType::Undefined && t.dtype != DType::String,
                "loop IR: variable '", node()->name, "' needs a numeric type");
}

Buffer::Buffer(std::string name, DType dtype, Dims dims)
    : node_(std::make_shared<BufferNode>(BufferNode{std::move(name), dtype, std::move(dims)})) {
  TESSERA_CHECK(dtype_size(dtype) > 0, "loop IR: buffer '", node_->name,
                "' needs a fixed-width element type, got ", dtype_name(dtype));
}

namespace {

template <class T, class... Args>
Expr make(Args&&... args) {
  return Expr(std::make_shared<const T>(std::forward<Args>(args)...));
}

void check_defined(const Expr& e, std::string_view what) {
  TESSERA_CHECK(e.defined(), "loop IR: ", what, " of an undefined expression");
}

// Broadcasts a scalar operand to the other operand's lanes.
void match_lanes(Expr& a, Expr& b, ExprKind k) {
  if (a.type().lanes == b.type().lanes) return;
  if (a.type().is_scalar()) a = broadcast(a, b.type().lanes);
  else if (b.type().is_scalar()) b = broadcast(b, a.type().lanes);
  else
    TESSERA_FAIL("loop IR: ", expr_kind_name(k), " operands have different lanes: ",
                 a.type().to_string(), " vs ", b.type().to_string());
}

}  // namespace

Expr int_imm(int64_t v, Type t) {
  TESSERA_CHECK(t.is_scalar() && (t.is_int() || t.is_bool()), "loop IR: IntImm needs a scalar integer type, got ",
                t.to_string());
  return make<IntImmNode>(t, wrap_int(t.dtype, v));
}

Expr float_imm(double v, Type t) {
  TESSERA_CHECK(t.is_scalar() && t.is_float(), "loop IR: FloatImm needs a scalar float type, got ",
                t.to_string());
  return make<FloatImmNode>(t, round_float(t.dtype, v));
}

Expr bool_imm(bool v, int lanes) { return make_int_const(bool_type(lanes), v ? 1 : 0); }

Expr make_int_const(Type t, int64_t v) {
  if (t.is_float()) return make_const(t, static_cast<double>(v));
  Expr s = int_imm(v, t.element());
  return t.is_vector() ? broadcast(s, t.lanes) : s;
}

Expr make_const(Type t, double v) {
  if (!t.is_float()) {
    TESSERA_CHECK(v == std::trunc(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0,
                  "loop IR: constant ", v, " is not a value of type ", t.to_string());
    return make_int_const(t, static_cast<int64_t>(v));
  }
  Expr s = float_imm(v, t.element());
  return t.is_vector() ? broadcast(s, t.lanes) : s;
}

Expr make_zero(Type t) { return make_int_const(t, 0); }
Expr make_one(Type t) { return make_int_const(t, 1); }

Expr cast(Type t, Expr v) {
  check_defined(v, "cast");
  TESSERA_CHECK(t.lanes == v.type().lanes, "loop IR: cast from ", v.type().to_string(), " to ",
                t.to_string(), " changes the lanes");
  TESSERA_CHECK(dtype_size(t.dtype) > 0, "loop IR: cannot cast to ", dtype_name(t.dtype));
  return make<CastNode>(t, std::move(v));
}

Expr binary(ExprKind k, Expr a, Expr b) {
  TESSERA_CHECK(is_binary(k), "loop IR: ", expr_kind_name(k), " is not a binary op");
  check_defined(a, expr_kind_name(k));
  check_defined(b, expr_kind_name(k));
  match_lanes(a, b, k);
  Type t = a.type();
  TESSERA_CHECK(t == b.type(), "loop IR: ", expr_kind_name(k), " operand types differ: ",
                t.to_string(), " vs ", b.type().to_string());
  if (k == ExprKind::And || k == ExprKind::Or) {
    TESSERA_CHECK(t.is_bool(), "loop IR: ", expr_kind_name(k), " needs bool operands, got ", t.to_string());
    return make<BinaryNode>(k, t, std::move(a), std::move(b));
  }
  if (is_comparison(k)) return make<BinaryNode>(k, bool_type(t.lanes), std::move(a), std::move(b));
  TESSERA_CHECK(t.is_int() || t.is_float(), "loop IR: ", expr_kind_name(k),
                " needs numeric operands, got ", t.to_string());
  return make<BinaryNode>(k, t, std::move(a), std::move(b));
}

Expr min(Expr a, Expr b) { return binary(ExprKind::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return binary(ExprKind::Max, std::move(a), std::move(b)); }
Expr eq(Expr a, Expr b) { return binary(ExprKind::EQ, std::move(a), std::move(b)); }
Expr ne(Expr a, Expr b) { return binary(ExprKind::NE, std::move(a), std::move(b)); }

Expr logical_not(Expr a) {
  check_defined(a, "Not");
  TESSERA_CHECK(a.type().is_bool(), "loop IR: Not needs a bool operand, got ", a.type().to_string());
  Type t = a.type();
  return make<NotNode>(t, std::move(a));
}

Expr select(Expr cond, Expr t, Expr f) {
  check_defined(cond, "select");
  check_defined(t, "select");
  check_defined(f, "select");
  match_lanes(t, f, ExprKind::Select);
  TESSERA_CHECK(t.type() == f.type(), "loop IR: select branches differ in type: ", t.type().to_string(),
                " vs ", f.type().to_string());
  TESSERA_CHECK(cond.type().is_bool(), "loop IR: select condition must be bool, got ", cond.type().to_string());
  if (cond.type().lanes != t.type().lanes) {
    TESSERA_CHECK(cond.type().is_scalar(), "loop IR: select condition ", cond.type().to_string(),
                  " does not match ", t.type().to_string());
    cond = broadcast(cond, t.type().lanes);
  }
  Type ty = t.type();
  return make<SelectNode>(ty, std::move(cond), std::move(t), std::move(f));
}

Expr load(Buffer buf, Expr index, Expr predicate) {
  TESSERA_CHECK(buf.defined(), "loop IR: load from an undefined buffer");
  check_defined(index, "load index");
  TESSERA_CHECK(index.type().dtype == DType::I64, "loop IR: index into '", buf.name(), "' must be i64, got ",
                index.type().to_string());
  int lanes = index.type().lanes;
  if (predicate.defined()) {
    TESSERA_CHECK(predicate.type() == bool_type(lanes), "loop IR: predicate of load from '", buf.name(),
                  "' must be ", bool_type(lanes).to_string(), ", got ", predicate.type().to_string());
  }
  Type t{buf.dtype(), lanes};
  return make<LoadNode>(t, std::move(buf), std::move(index), std::move(predicate));
}

Expr ramp(Expr base, Expr stride, int lanes) {
  check_defined(base, "ramp");
  check_defined(stride, "ramp");
  TESSERA_CHECK(lanes >= 2, "loop IR: ramp needs at least 2 lanes, got ", lanes);
  TESSERA_CHECK(base.type().is_scalar() && base.type() == stride.type() && base.type().is_int(),
                "loop IR: ramp base and stride must be scalar integers of one type, got ",
                base.type().to_string(), " and ", stride.type().to_string());
  Type t = base.type().with_lanes(lanes);
  return make<RampNode>(t, std::move(base), std::move(stride), lanes);
}

Expr broadcast(Expr value, int lanes) {
  check_defined(value, "broadcast");
  TESSERA_CHECK(lanes >= 2, "loop IR: broadcast needs at least 2 lanes, got ", lanes);
  TESSERA_CHECK(value.type().is_scalar(), "loop IR: broadcast of a vector ", value.type().to_string());
  Type t = value.type().with_lanes(lanes);
  return make<BroadcastNode>(t, std::move(value), lanes);
}

Expr call(std::string name, std::vector<Expr> args) {
  int arity = math_arity(name);
  TESSERA_CHECK(arity >= 0, "loop IR: '", name, "' is not a math intrinsic; give runtime calls a type");
  TESSERA_CHECK(static_cast<int>(args.size()) == arity, "loop IR: ", name, " takes ", arity,
                " arguments, got ", args.size());
  for (auto& a : args) check_defined(a, name);
  int lanes = 1;
  for (auto& a : args) lanes = std::max(lanes, a.type().lanes);
  for (auto& a : args)
    if (a.type().lanes != lanes) {
      TESSERA_CHECK(a.type().is_scalar(), "loop IR: ", name, " arguments differ in lanes");
      a = broadcast(a, lanes);
    }
  Type t = args[0].type();
  TESSERA_CHECK(t.is_float(), "loop IR: ", name, " needs float arguments, got ", t.to_string());
  for (auto& a : args)
    TESSERA_CHECK(a.type() == t, "loop IR: ", name, " arguments differ in type: ", t.to_string(), " vs ",
                  a.type().to_string());
  return make<CallNode>(t, std::move(name), std::move(args));
}

Expr call(Type t, std::string name, std::vector<Expr> args) {
  for (auto& a : args) check_defined(a, name);
  return make<CallNode>(t, std::move(name), std::move(args));
}

Expr let(Var var, Expr value, Expr body) {
  TESSERA_CHECK(var.defined(), "loop IR: let of an undefined variable");
  check_defined(value, "let value");
  check_defined(body, "let body");
  TESSERA_CHECK(var.type() == value.type(), "loop IR: let ", var.name(), " (", var.type().to_string(),
                ") bound to a ", value.type().to_string());
  Type t = body.type();
  return make<LetNode>(t, std::move(var), std::move(value), std::move(body));
}

std::string_view reduce_op_name(ReduceOp op) {
  static constexpr std::string_view kNames[] = {"sum", "prod", "min", "max"};
  return kNames[static_cast<size_t>(op)];
}

Expr producer_load(std::shared_ptr<const Producer> p, int value_index, Type t, std::vector<Expr> indices) {
  TESSERA_CHECK(p != nullptr, "loop IR: producer load of a null producer");
  TESSERA_CHECK(t.is_scalar(), "loop IR: producer load of ", p->producer_name(), " must be scalar");
  for (auto& i : indices) {
    check_defined(i, "producer load index");
    TESSERA_CHECK(i.type().is_scalar() && i.type().is_int(), "loop IR: index of ", p->producer_name(),
                  " must be a scalar integer, got ", i.type().to_string());
    if (i.type() != index_type()) i = cast(index_type(), i);
  }
  return make<ProducerLoadNode>(t, std::move(p), value_index, std::move(indices));
}

Expr reduce_identity(ReduceOp op, Type t) {
  switch (op) {
    case ReduceOp::Sum: return make_zero(t);
    case ReduceOp::Prod: return make_one(t);
    case ReduceOp::Min:
    case ReduceOp::Max: {
      bool is_min = op == ReduceOp::Min;
      if (t.is_float()) return make_const(t, is_min ? INFINITY : -INFINITY);
      if (t.dtype == DType::U64) return make_int_const(t, is_min ? -1 : 0);  // all ones = UINT64_MAX
      if (t.is_bool()) return make_int_const(t, is_min ? 1 : 0);
      int64_t lo = 0, hi = 0;
      switch (t.dtype) {
        case DType::I8: lo = INT8_MIN; hi = INT8_MAX; break;
        case DType::I16: lo = INT16_MIN; hi = INT16_MAX; break;
        case DType::I32: lo = INT32_MIN; hi = INT32_MAX; break;
        case DType::I64: lo = INT64_MIN; hi = INT64_MAX; break;
        case DType::U8: hi = UINT8_MAX; break;
        case DType::U16: hi = UINT16_MAX; break;
        case DType::U32: hi = UINT32_MAX; break;
        default: TESSERA_FAIL("loop IR: no ", reduce_op_name(op), " identity for ", t.to_string());
      }
      return make_int_const(t, is_min ? hi : lo);
    }
  }
  return {};
}

Expr reduce_combine(ReduceOp op, Expr acc, Expr value) {
  switch (op) {
    case ReduceOp::Sum: return std::move(acc) + std::move(value);
    case ReduceOp::Prod: return std::move(acc) * std::move(value);
    case ReduceOp::Min: return min(std::move(acc), std::move(value));
    case ReduceOp::Max: return max(std::move(acc), std::move(value));
  }
  return {};
}

Expr reduce(ReduceOp op, Expr source, std::vector<ReduceAxis> axes, Expr condition, Expr init) {
  check_defined(source, "reduce source");
  Type t = source.type();
  TESSERA_CHECK(t.is_scalar(), "loop IR: reduce source must be scalar, got ", t.to_string());
  for (auto& a : axes) {
    TESSERA_CHECK(a.var.defined() && a.min.defined() && a.extent.defined(), "loop IR: incomplete reduce axis");
    if (a.min.type() != index_type()) a.min = cast(index_type(), a.min);
    if (a.extent.type() != index_type()) a.extent = cast(index_type(), a.extent);
  }
  if (condition.defined())
    TESSERA_CHECK(condition.type() == bool_type(), "loop IR: reduce condition must be a scalar bool");
  if (!init.defined()) init = reduce_identity(op, t);
  TESSERA_CHECK(init.type() == t, "loop IR: reduce init ", init.type().to_string(), " differs from source ",
                t.to_string());
  return make<ReduceNode>(t, op, std::move(source), std::move(axes), std::move(condition), std::move(init));
}

Expr operator+(Expr a, Expr b) { return binary(ExprKind::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return binary(ExprKind::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return binary(ExprKind::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return binary(ExprKind::Div, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return binary(ExprKind::Mod, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return binary(ExprKind::LT, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return binary(ExprKind::LE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return binary(ExprKind::GT, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return binary(ExprKind::GE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return binary(ExprKind::And, std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return binary(ExprKind::Or, std::move(a), std::move(b)); }
Expr operator!(Expr a) { return logical_not(std::move(a)); }

Expr all_of(const std::vector<Expr>& terms) {
  Expr all;
  for (const Expr& t : terms)
    if (t.defined()) all = all.defined() ? (all && t) : t;
  return all;
}
Expr operator-(Expr a) {
  Expr z = make_zero(a.type());
  return std::move(z) - std::move(a);
}

const int64_t* as_const_int(const Expr& e) {
  if (!e.defined()) return nullptr;
  if (auto* b = e.as<BroadcastNode>()) return as_const_int(b->value);
  if (auto* i = e.as<IntImmNode>()) return &i->value;
  return nullptr;
}

const double* as_const_float(const Expr& e) {
  if (!e.defined()) return nullptr;
  if (auto* b = e.as<BroadcastNode>()) return as_const_float(b->value);
  if (auto* f = e.as<FloatImmNode>()) return &f->value;
  return nullptr;
}

bool is_const_int(const Expr& e, int64_t v) {
  const int64_t* c = as_const_int(e);
  return c && *c == v;
}

bool is_const(const Expr& e) { return as_const_int(e) || as_const_float(e); }

bool equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || a.type() != b.type()) return false;
  switch (a.kind()) {
    case ExprKind::IntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case ExprKind::FloatImm: {
      double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
      return x == y ? std::signbit(x) == std::signbit(y) : (x != x && y != y);
    }
    case ExprKind::Var: return false;  // identity checked above
    case ExprKind::Cast: return equal(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case ExprKind::Not: return equal(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case ExprKind::Select: {
      auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
      return equal(x->cond, y->cond) && equal(x->true_value, y->true_value) &&
             equal(x->false_value, y->false_value);
    }
    case ExprKind::Load: {
      auto *x = a.as<LoadNode>(), *y = b.as<LoadNode>();
      return x->buffer.same_as(y->buffer) && equal(x->index, y->index) &&
             x->predicate.defined() == y->predicate.defined() &&
             (!x->predicate.defined() || equal(x->predicate, y->predicate));
    }
    case ExprKind::Ramp: {
      auto *x = a.as<RampNode>(), *y = b.as<RampNode>();
      return equal(x->base, y->base) && equal(x->stride, y->stride);
    }
    case ExprKind::Broadcast: return equal(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value);
    case ExprKind::Call: {
      auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      if (x->name != y->name || x->args.size() != y->args.size()) return false;
      for (size_t i = 0; i < x->args.size(); ++i)
        if (!equal(x->args[i], y->args[i])) return false;
      return true;
    }
    case ExprKind::Let: {
      auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
      return x->var.same_as(y->var) && equal(x->value, y->value) && equal(x->body, y->body);
    }
    case ExprKind::ProducerLoad: {
      auto *x = a.as<ProducerLoadNode>(), *y = b.as<ProducerLoadNode>();
      if (x->producer != y->producer || x->value_index != y->value_index) return false;
      for (size_t i = 0; i < x->indices.size(); ++i)
        if (!equal(x->indices[i], y->indices[i])) return false;
      return x->indices.size() == y->indices.size();
    }
    case ExprKind::Reduce: {
      auto *x = a.as<ReduceNode>(), *y = b.as<ReduceNode>();
      if (x->op != y->op || x->axes.size() != y->axes.size()) return false;
      for (size_t i = 0; i < x->axes.size(); ++i)
        if (!x->axes[i].var.same_as(y->axes[i].var) || !equal(x->axes[i].min, y->axes[i].min) ||
            !equal(x->axes[i].extent, y->axes[i].extent))
          return false;
      return equal(x->source, y->source) && equal(x->init, y->init) &&
             x->condition.defined() == y->condition.defined() &&
             (!x->condition.defined() || equal(x->condition, y->condition));
    }
    default: {
      auto *x = a.as<BinaryNode>(), *y = b.as<BinaryNode>();
      return equal(x->a, y->a) && equal(x->b, y->b);
    }
  }
}

}  // namespace tessera::loop
