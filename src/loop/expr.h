// Loop-nest IR expressions: immutable, reference-counted, explicitly typed nodes
// (Halide/TVM-TIR style). Every expression has a Type (element dtype + vector
// lanes); buffers are flat arrays indexed by i64 element offsets.
//
// Semantics (shared by the evaluator, the simplifier and code generators):
// integer Div/Mod are floor division and floor modulo, and x/0 == x%0 == 0;
// integer arithmetic wraps to the type's width (index arithmetic is assumed not
// to overflow, which the simplifier relies on); float Min/Max are
// `a < b ? a : b` / `a > b ? a : b` (x86 minps/maxps); float Mod is
// a - b*floor(a/b). Lanes of a predicated Load whose predicate is false read 0.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/tensor.h"

namespace tessera::loop {

// Type of an expression: element dtype and vector lanes (1 = scalar).
struct Type {
  DType dtype = DType::Undefined;
  int lanes = 1;

  bool is_scalar() const { return lanes == 1; }
  bool is_vector() const { return lanes > 1; }
  bool is_float() const { return tessera::is_float(dtype); }
  bool is_int() const { return is_integer(dtype); }
  bool is_bool() const { return dtype == DType::Bool; }
  Type element() const { return {dtype, 1}; }
  Type with_lanes(int n) const { return {dtype, n}; }
  bool operator==(const Type&) const = default;
  std::string to_string() const;  // "f32", "i64x8"
};

// Type of loop variables and buffer indices.
inline Type index_type() { return {DType::I64, 1}; }
inline Type bool_type(int lanes = 1) { return {DType::Bool, lanes}; }

enum class ExprKind : uint8_t {
  IntImm, FloatImm, Var, Cast,
  Add, Sub, Mul, Div, Mod, Min, Max,
  EQ, NE, LT, LE, GT, GE, And, Or, Not,
  Select, Load, Ramp, Broadcast, Call, Let,
  ProducerLoad, Reduce,  // tensor-expression nodes: removed by lowering (src/schedule/lower.h)
};
std::string_view expr_kind_name(ExprKind k);
bool is_binary(ExprKind k);      // Add .. Or (two operands, BinaryNode)
bool is_comparison(ExprKind k);  // EQ .. GE
bool is_commutative(ExprKind k); // Add, Mul, Min, Max, EQ, NE, And, Or

struct ExprNode {
  ExprNode(ExprKind k, Type t) : kind(k), type(t) {}
  virtual ~ExprNode() = default;
  const ExprKind kind;
  const Type type;
};

// A handle to an immutable expression node; copies share the node.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  Type type() const { return node_->type; }
  ExprKind kind() const { return node_->kind; }
  // Same node (identity, not structure; see equal()).
  bool same_as(const Expr& o) const { return node_ == o.node_; }
  // The node as T when its kind is one T represents, else null.
  template <class T> const T* as() const {
    return node_ && T::classof(node_->kind) ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const ExprNode> node_;
};

struct VarNode : ExprNode {
  VarNode(std::string n, Type t) : ExprNode(ExprKind::Var, t), name(std::move(n)) {}
  static bool classof(ExprKind k) { return k == ExprKind::Var; }
  const std::string name;
};

// A named loop or let variable. Identity is the node: two Vars with the same
// name are different variables.
class Var : public Expr {
 public:
  Var() = default;
  explicit Var(std::string name, Type t = index_type());
  const VarNode* node() const { return as<VarNode>(); }
  const std::string& name() const { return node()->name; }
};

struct BufferNode {
  std::string name;
  DType dtype = DType::Undefined;
  Dims dims;  // the tensor's dims for graph tensors; empty when not known
};

// A named flat array of elements. Identity is the node.
class Buffer {
 public:
  Buffer() = default;
  Buffer(std::string name, DType dtype, Dims dims = {});
  bool defined() const { return node_ != nullptr; }
  const BufferNode* get() const { return node_.get(); }
  const std::string& name() const { return node_->name; }
  DType dtype() const { return node_->dtype; }
  const Dims& dims() const { return node_->dims; }
  bool same_as(const Buffer& o) const { return node_ == o.node_; }

 private:
  std::shared_ptr<const BufferNode> node_;
};

// --- nodes -------------------------------------------------------------------

struct IntImmNode : ExprNode {  // integer or bool constant (bool: 0 / 1)
  IntImmNode(Type t, int64_t v) : ExprNode(ExprKind::IntImm, t), value(v) {}
  static bool classof(ExprKind k) { return k == ExprKind::IntImm; }
  const int64_t value;
};
struct FloatImmNode : ExprNode {  // value already rounded to the type
  FloatImmNode(Type t, double v) : ExprNode(ExprKind::FloatImm, t), value(v) {}
  static bool classof(ExprKind k) { return k == ExprKind::FloatImm; }
  const double value;
};
struct CastNode : ExprNode {
  CastNode(Type t, Expr v) : ExprNode(ExprKind::Cast, t), value(std::move(v)) {}
  static bool classof(ExprKind k) { return k == ExprKind::Cast; }
  const Expr value;
};
struct BinaryNode : ExprNode {  // Add .. Or
  BinaryNode(ExprKind k, Type t, Expr x, Expr y) : ExprNode(k, t), a(std::move(x)), b(std::move(y)) {}
  static bool classof(ExprKind k) { return is_binary(k); }
  const Expr a, b;
};
struct NotNode : ExprNode {
  NotNode(Type t, Expr x) : ExprNode(ExprKind::Not, t), a(std::move(x)) {}
  static bool classof(ExprKind k) { return k == ExprKind::Not; }
  const Expr a;
};
struct SelectNode : ExprNode {
  SelectNode(Type t, Expr c, Expr x, Expr y)
      : ExprNode(ExprKind::Select, t), cond(std::move(c)), true_value(std::move(x)), false_value(std::move(y)) {}
  static bool classof(ExprKind k) { return k == ExprKind::Select; }
  const Expr cond, true_value, false_value;
};
struct LoadNode : ExprNode {
  LoadNode(Type t, Buffer b, Expr i, Expr p)
      : ExprNode(ExprKind::Load, t), buffer(std::move(b)), index(std::move(i)), predicate(std::move(p)) {}
  static bool classof(ExprKind k) { return k == ExprKind::Load; }
  const Buffer buffer;
  const Expr index;      // i64 with the load's lanes
  const Expr predicate;  // undefined: every lane is read
};
struct RampNode : ExprNode {  // base, base + stride, ... (lanes values)
  RampNode(Type t, Expr b, Expr s, int n)
      : ExprNode(ExprKind::Ramp, t), base(std::move(b)), stride(std::move(s)), lanes(n) {}
  static bool classof(ExprKind k) { return k == ExprKind::Ramp; }
  const Expr base, stride;
  const int lanes;
};
struct BroadcastNode : ExprNode {
  BroadcastNode(Type t, Expr v, int n) : ExprNode(ExprKind::Broadcast, t), value(std::move(v)), lanes(n) {}
  static bool classof(ExprKind k) { return k == ExprKind::Broadcast; }
  const Expr value;
  const int lanes;
};
struct CallNode : ExprNode {  // math intrinsic or runtime function
  CallNode(Type t, std::string n, std::vector<Expr> a)
      : ExprNode(ExprKind::Call, t), name(std::move(n)), args(std::move(a)) {}
  static bool classof(ExprKind k) { return k == ExprKind::Call; }
  const std::string name;
  const std::vector<Expr> args;
};
struct LetNode : ExprNode {
  LetNode(Type t, Var v, Expr val, Expr b)
      : ExprNode(ExprKind::Let, t), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  static bool classof(ExprKind k) { return k == ExprKind::Let; }
  const Var var;
  const Expr value, body;
};

// --- tensor-expression nodes ---------------------------------------------------
// Tensor expressions (src/te) reuse these expressions and add two nodes that
// only exist before lowering: a multi-dimensional read of another stage, and a
// reduction. The evaluator and code generators reject them.

// A stage of a tensor-expression program, as seen from the loop IR (src/te
// defines the stages; this interface only names them).
struct Producer {
  virtual ~Producer() = default;
  virtual const std::string& producer_name() const = 0;
};

struct ProducerLoadNode : ExprNode {  // producer's output `value_index` at `indices`
  ProducerLoadNode(Type t, std::shared_ptr<const Producer> p, int vi, std::vector<Expr> idx)
      : ExprNode(ExprKind::ProducerLoad, t), producer(std::move(p)), value_index(vi), indices(std::move(idx)) {}
  static bool classof(ExprKind k) { return k == ExprKind::ProducerLoad; }
  const std::shared_ptr<const Producer> producer;
  const int value_index;
  const std::vector<Expr> indices;  // scalar i64, one per dimension
};

// An axis of a reduction: var runs over [min, min + extent).
struct ReduceAxis {
  Var var;
  Expr min, extent;
};
enum class ReduceOp : uint8_t { Sum, Prod, Min, Max };
std::string_view reduce_op_name(ReduceOp op);  // "sum", "prod", "min", "max"

// combine(init, source over every point of the axes where condition holds).
struct ReduceNode : ExprNode {
  ReduceNode(Type t, ReduceOp o, Expr s, std::vector<ReduceAxis> a, Expr c, Expr i)
      : ExprNode(ExprKind::Reduce, t), op(o), source(std::move(s)), axes(std::move(a)),
        condition(std::move(c)), init(std::move(i)) {}
  static bool classof(ExprKind k) { return k == ExprKind::Reduce; }
  const ReduceOp op;
  const Expr source;
  const std::vector<ReduceAxis> axes;
  const Expr condition;  // undefined: every point
  const Expr init;       // the combiner's identity unless given
};

// --- construction (every constructor checks its operand types) ---------------

Expr int_imm(int64_t v, Type t = index_type());  // wraps v to t
Expr float_imm(double v, Type t = {DType::F32, 1});  // rounds v to t
Expr bool_imm(bool v, int lanes = 1);
// A constant of any type (int, bool or float); vector types become broadcasts.
Expr make_const(Type t, double v);
Expr make_int_const(Type t, int64_t v);
Expr make_zero(Type t);
Expr make_one(Type t);

Expr cast(Type t, Expr v);
// Binary op; a scalar operand is broadcast to the other's lanes, dtypes must match.
Expr binary(ExprKind k, Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr logical_not(Expr a);
Expr select(Expr cond, Expr t, Expr f);
Expr load(Buffer buf, Expr index, Expr predicate = {});
Expr ramp(Expr base, Expr stride, int lanes);
Expr broadcast(Expr value, int lanes);
// A math intrinsic (exp, log, sqrt, tanh, erf, fma, ...): float args of one
// type, which is also the result type.
Expr call(std::string name, std::vector<Expr> args);
// Any call with an explicit result type (runtime intrinsics).
Expr call(Type t, std::string name, std::vector<Expr> args);
Expr let(Var var, Expr value, Expr body);
// A read of a producer's output (scalar; indices are converted to i64).
Expr producer_load(std::shared_ptr<const Producer> p, int value_index, Type t, std::vector<Expr> indices);
// A reduction of a scalar source; init defaults to the combiner's identity
// (0, 1, the type's largest / lowest value, +inf / -inf for floats).
Expr reduce(ReduceOp op, Expr source, std::vector<ReduceAxis> axes, Expr condition = {}, Expr init = {});
// The combiner applied to an accumulator and a new value.
Expr reduce_combine(ReduceOp op, Expr acc, Expr value);
// The combiner's identity for type t.
Expr reduce_identity(ReduceOp op, Type t);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);
// terms[0] && terms[1] && ... over the defined terms; undefined when there are none.
Expr all_of(const std::vector<Expr>& terms);
Expr operator-(Expr a);  // 0 - a

// A number next to an expression becomes a constant of the expression's element type.
template <class T> concept Number = std::integral<T> || std::floating_point<T>;
template <Number T> Expr const_like(const Expr& e, T v) {
  if constexpr (std::integral<T>)
    if (!e.type().is_float()) return make_int_const(e.type().element(), static_cast<int64_t>(v));
  return make_const(e.type().element(), static_cast<double>(v));
}
#define TESSERA_LOOP_NUMBER_OP(op)                                                        \
  template <Number T> Expr operator op(Expr a, T b) { Expr c = const_like(a, b); return std::move(a) op std::move(c); } \
  template <Number T> Expr operator op(T a, Expr b) { Expr c = const_like(b, a); return std::move(c) op std::move(b); }
TESSERA_LOOP_NUMBER_OP(+)
TESSERA_LOOP_NUMBER_OP(-)
TESSERA_LOOP_NUMBER_OP(*)
TESSERA_LOOP_NUMBER_OP(/)
TESSERA_LOOP_NUMBER_OP(%)
TESSERA_LOOP_NUMBER_OP(<)
TESSERA_LOOP_NUMBER_OP(<=)
TESSERA_LOOP_NUMBER_OP(>)
TESSERA_LOOP_NUMBER_OP(>=)
#undef TESSERA_LOOP_NUMBER_OP
template <Number T> Expr min(Expr a, T b) { Expr c = const_like(a, b); return min(std::move(a), std::move(c)); }
template <Number T> Expr max(Expr a, T b) { Expr c = const_like(a, b); return max(std::move(a), std::move(c)); }
template <Number T> Expr min(T a, Expr b) { Expr c = const_like(b, a); return min(std::move(c), std::move(b)); }
template <Number T> Expr max(T a, Expr b) { Expr c = const_like(b, a); return max(std::move(c), std::move(b)); }
template <Number T> Expr eq(Expr a, T b) { Expr c = const_like(a, b); return eq(std::move(a), std::move(c)); }
template <Number T> Expr ne(Expr a, T b) { Expr c = const_like(a, b); return ne(std::move(a), std::move(c)); }

// --- queries -----------------------------------------------------------------

// The constant value when e is an IntImm (or a Broadcast of one), else null.
const int64_t* as_const_int(const Expr& e);
// The constant value when e is a FloatImm (or a Broadcast of one), else null.
const double* as_const_float(const Expr& e);
bool is_const_int(const Expr& e, int64_t v);  // IntImm (or broadcast of one) equal to v
bool is_const(const Expr& e);                 // IntImm, FloatImm, or a broadcast of one
// Structural equality: same kinds, types and operands; vars and buffers by identity.
bool equal(const Expr& a, const Expr& b);

}  // namespace tessera::loop
