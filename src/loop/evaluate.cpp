// Reference evaluator of the loop IR.
#include "loop/evaluate.h"

#include <optional>
#include <sstream>

#include "loop/printer.h"
#include "loop/scalar_ops.h"
#include "support/error.h"

namespace tessera::loop {

namespace {

size_t lanes_of(Type t) { return static_cast<size_t>(t.lanes); }

// Element `i` of a tensor of dtype t: as an int (ints, bool) or a double (floats).
int64_t read_int(const Tensor& t, int64_t i) {
  const void* p = t.raw();
  switch (t.dtype()) {
    case DType::Bool: return static_cast<const uint8_t*>(p)[i] != 0;
    case DType::I8: return static_cast<const int8_t*>(p)[i];
    case DType::I16: return static_cast<const int16_t*>(p)[i];
    case DType::I32: return static_cast<const int32_t*>(p)[i];
    case DType::I64: return static_cast<const int64_t*>(p)[i];
    case DType::U8: return static_cast<const uint8_t*>(p)[i];
    case DType::U16: return static_cast<const uint16_t*>(p)[i];
    case DType::U32: return static_cast<const uint32_t*>(p)[i];
    case DType::U64: return static_cast<int64_t>(static_cast<const uint64_t*>(p)[i]);
    default: TESSERA_FAIL("loop evaluator: cannot read ", dtype_name(t.dtype()), " as an integer");
  }
}

double read_float(const Tensor& t, int64_t i) {
  const void* p = t.raw();
  switch (t.dtype()) {
    case DType::F32: return static_cast<const float*>(p)[i];
    case DType::F64: return static_cast<const double*>(p)[i];
    case DType::F16: return static_cast<float>(static_cast<const Half*>(p)[i]);
    case DType::BF16: return static_cast<float>(static_cast<const BFloat16*>(p)[i]);
    default: TESSERA_FAIL("loop evaluator: cannot read ", dtype_name(t.dtype()), " as a float");
  }
}

void write_int(Tensor& t, int64_t i, int64_t v) {
  void* p = t.raw();
  switch (t.dtype()) {
    case DType::Bool: static_cast<uint8_t*>(p)[i] = v != 0; return;
    case DType::I8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); return;
    case DType::I16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); return;
    case DType::I32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); return;
    case DType::I64: static_cast<int64_t*>(p)[i] = v; return;
    case DType::U8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); return;
    case DType::U16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); return;
    case DType::U32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); return;
    case DType::U64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); return;
    default: TESSERA_FAIL("loop evaluator: cannot write an integer to ", dtype_name(t.dtype()));
  }
}

void write_float(Tensor& t, int64_t i, double v) {
  void* p = t.raw();
  switch (t.dtype()) {
    case DType::F32: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case DType::F64: static_cast<double*>(p)[i] = v; return;
    case DType::F16: static_cast<Half*>(p)[i] = Half(static_cast<float>(v)); return;
    case DType::BF16: static_cast<BFloat16*>(p)[i] = BFloat16(static_cast<float>(v)); return;
    default: TESSERA_FAIL("loop evaluator: cannot write a float to ", dtype_name(t.dtype()));
  }
}

EvalValue blank(Type t) {
  EvalValue v;
  v.type = t;
  if (t.is_float()) v.floats.assign(lanes_of(t), 0.0);
  else v.ints.assign(lanes_of(t), 0);
  return v;
}

}  // namespace

EvalValue EvalValue::of_int(Type t, int64_t v) {
  EvalValue r = blank(t);
  if (t.is_float()) r.floats.assign(lanes_of(t), cast_to_float(t.dtype, DType::I64, v));
  else r.ints.assign(lanes_of(t), wrap_int(t.dtype, v));
  return r;
}

EvalValue EvalValue::of_float(Type t, double v) {
  TESSERA_CHECK(t.is_float(), "EvalValue::of_float needs a float type, got ", t.to_string());
  EvalValue r = blank(t);
  r.floats.assign(lanes_of(t), round_float(t.dtype, v));
  return r;
}

double EvalValue::as_double(int i) const {
  if (type.is_float()) return float_lane(i);
  if (type.dtype == DType::U64) return static_cast<double>(static_cast<uint64_t>(int_lane(i)));
  return static_cast<double>(int_lane(i));
}

std::string EvalValue::to_string() const {
  std::ostringstream os;
  if (type.lanes > 1) os << "[";
  for (int i = 0; i < type.lanes; ++i) {
    if (i) os << ", ";
    if (type.is_float()) os << float_lane(i);
    else os << int_lane(i);
  }
  if (type.lanes > 1) os << "]";
  return os.str();
}

void Evaluator::bind(const Var& v, EvalValue value) {
  TESSERA_CHECK(value.type == v.type(), "loop evaluator: variable ", v.name(), " is ", v.type().to_string(),
                ", bound to a ", value.type.to_string());
  vars_[v.node()] = std::move(value);
}

void Evaluator::bind(const Buffer& b, Tensor t) {
  TESSERA_CHECK(t.dtype() == b.dtype(), "loop evaluator: buffer '", b.name(), "' is ", dtype_name(b.dtype()),
                ", bound to a ", dtype_name(t.dtype()), " tensor");
  if (!b.dims().empty())
    TESSERA_CHECK(t.numel() == numel_of(b.dims()), "loop evaluator: buffer '", b.name(), "' has ",
                  numel_of(b.dims()), " elements (", dims_to_string(b.dims()), "), bound to a tensor of ",
                  t.numel(), " (", dims_to_string(t.dims()), ")");
  buffers_[b.get()] = std::move(t);
}

Tensor& Evaluator::buffer(const Buffer& b) {
  auto it = buffers_.find(b.get());
  TESSERA_CHECK(it != buffers_.end(), "loop evaluator: buffer '", b.name(), "' is not bound");
  return it->second;
}

void Evaluator::check_index(const Buffer& b, const Tensor& t, int64_t index, const char* what) {
  TESSERA_CHECK(index >= 0 && index < t.numel(), "loop evaluator: ", what, " '", b.name(), "' at element ", index,
                ", outside its ", t.numel(), " elements");
}

EvalValue Evaluator::eval_binary(ExprKind k, const EvalValue& a, const EvalValue& b) {
  Type t = a.type;
  const int n = t.lanes;
  if (!t.is_float()) {
    EvalValue r = blank(is_comparison(k) ? bool_type(n) : t);
    for (int i = 0; i < n; ++i) r.ints[static_cast<size_t>(i)] = int_binary(k, t.dtype, a.int_lane(i), b.int_lane(i));
    return r;
  }
  if (is_comparison(k)) {
    EvalValue r = blank(bool_type(n));
    for (int i = 0; i < n; ++i) r.ints[static_cast<size_t>(i)] = float_compare(k, a.float_lane(i), b.float_lane(i));
    return r;
  }
  EvalValue r = blank(t);
  for (int i = 0; i < n; ++i) r.floats[static_cast<size_t>(i)] = float_arith(k, t.dtype, a.float_lane(i), b.float_lane(i));
  return r;
}

EvalValue Evaluator::eval_cast(Type t, const EvalValue& v) {
  EvalValue r = blank(t);
  for (int i = 0; i < t.lanes; ++i) {
    size_t l = static_cast<size_t>(i);
    if (t.is_float()) {
      r.floats[l] = v.type.is_float() ? round_float(t.dtype, v.float_lane(i))
                                      : cast_to_float(t.dtype, v.type.dtype, v.int_lane(i));
    } else {
      r.ints[l] = v.type.is_float() ? cast_to_int(t.dtype, v.float_lane(i))
                                    : cast_int_to_int(t.dtype, v.type.dtype, v.int_lane(i));
    }
  }
  return r;
}

EvalValue Evaluator::eval(const Expr& e) {
  TESSERA_CHECK(e.defined(), "loop evaluator: undefined expression");
  switch (e.kind()) {
    case ExprKind::IntImm: return EvalValue::of_int(e.type(), e.as<IntImmNode>()->value);
    case ExprKind::FloatImm: return EvalValue::of_float(e.type(), e.as<FloatImmNode>()->value);
    case ExprKind::Var: {
      auto it = vars_.find(e.as<VarNode>());
      TESSERA_CHECK(it != vars_.end(), "loop evaluator: variable ", e.as<VarNode>()->name, " is not bound");
      return it->second;
    }
    case ExprKind::Cast: return eval_cast(e.type(), eval(e.as<CastNode>()->value));
    case ExprKind::Not: {
      EvalValue r = eval(e.as<NotNode>()->a);
      for (auto& x : r.ints) x = x == 0;
      return r;
    }
    case ExprKind::Select: {
      auto* op = e.as<SelectNode>();
      EvalValue c = eval(op->cond), t = eval(op->true_value), f = eval(op->false_value);
      for (int i = 0; i < e.type().lanes; ++i) {
        if (c.int_lane(i)) continue;
        size_t l = static_cast<size_t>(i);
        if (e.type().is_float()) t.floats[l] = f.floats[l];
        else t.ints[l] = f.ints[l];
      }
      return t;
    }
    case ExprKind::Load: {
      auto* op = e.as<LoadNode>();
      const Tensor& t = buffer(op->buffer);
      EvalValue idx = eval(op->index);
      EvalValue pred = op->predicate.defined() ? eval(op->predicate) : EvalValue::of_int(bool_type(e.type().lanes), 1);
      EvalValue r = blank(e.type());
      for (int i = 0; i < e.type().lanes; ++i) {
        if (!pred.int_lane(i)) continue;
        int64_t at = idx.int_lane(i);
        check_index(op->buffer, t, at, "load from");
        if (e.type().is_float()) r.floats[static_cast<size_t>(i)] = read_float(t, at);
        else r.ints[static_cast<size_t>(i)] = read_int(t, at);
      }
      return r;
    }
    case ExprKind::Ramp: {
      auto* op = e.as<RampNode>();
      EvalValue base = eval(op->base), stride = eval(op->stride);
      EvalValue r = blank(e.type());
      DType d = e.type().dtype;
      for (int i = 0; i < op->lanes; ++i)
        r.ints[static_cast<size_t>(i)] =
            int_binary(ExprKind::Add, d, base.int_lane(0), int_binary(ExprKind::Mul, d, stride.int_lane(0), i));
      return r;
    }
    case ExprKind::Broadcast: {
      auto* op = e.as<BroadcastNode>();
      EvalValue v = eval(op->value);
      EvalValue r = blank(e.type());
      if (e.type().is_float()) r.floats.assign(lanes_of(e.type()), v.float_lane(0));
      else r.ints.assign(lanes_of(e.type()), v.int_lane(0));
      return r;
    }
    case ExprKind::Call: {
      auto* op = e.as<CallNode>();
      TESSERA_CHECK(math_arity(op->name) >= 0 && e.type().is_float(), "loop evaluator: unknown intrinsic '",
                    op->name, "' in ", to_string(e));
      std::vector<EvalValue> args;
      for (const Expr& a : op->args) args.push_back(eval(a));
      EvalValue r = blank(e.type());
      std::vector<double> lane_args(args.size());
      for (int i = 0; i < e.type().lanes; ++i) {
        for (size_t j = 0; j < args.size(); ++j) lane_args[j] = args[j].float_lane(i);
        r.floats[static_cast<size_t>(i)] = call_math(op->name, e.type().dtype, lane_args);
      }
      return r;
    }
    case ExprKind::Let: {
      auto* op = e.as<LetNode>();
      EvalValue v = eval(op->value);
      auto it = vars_.find(op->var.node());
      std::optional<EvalValue> saved;
      if (it != vars_.end()) saved = it->second;
      vars_[op->var.node()] = std::move(v);
      EvalValue r = eval(op->body);
      if (saved) vars_[op->var.node()] = *saved;
      else vars_.erase(op->var.node());
      return r;
    }
    case ExprKind::ProducerLoad:
    case ExprKind::Reduce:
      TESSERA_FAIL("loop evaluator: ", expr_kind_name(e.kind()), " must be lowered first: ", to_string(e));
    default: {
      auto* op = e.as<BinaryNode>();
      return eval_binary(op->kind, eval(op->a), eval(op->b));
    }
  }
}

void Evaluator::exec(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::For: {
      auto* op = s.as<ForNode>();
      int64_t lo = eval(op->min).int_lane(0), n = eval(op->extent).int_lane(0);
      const VarNode* v = op->var.node();
      for (int64_t i = 0; i < n; ++i) {
        vars_[v] = EvalValue::of_int(index_type(), lo + i);
        exec(op->body);
      }
      vars_.erase(v);
      return;
    }
    case StmtKind::Store: {
      auto* op = s.as<StoreNode>();
      Tensor& t = buffer(op->buffer);
      EvalValue val = eval(op->value), idx = eval(op->index);
      int lanes = op->value.type().lanes;
      EvalValue pred = op->predicate.defined() ? eval(op->predicate) : EvalValue::of_int(bool_type(lanes), 1);
      for (int i = 0; i < lanes; ++i) {
        if (!pred.int_lane(i)) continue;
        int64_t at = idx.int_lane(i);
        check_index(op->buffer, t, at, "store to");
        if (val.type.is_float()) write_float(t, at, val.float_lane(i));
        else write_int(t, at, val.int_lane(i));
      }
      return;
    }
    case StmtKind::LetStmt: {
      auto* op = s.as<LetStmtNode>();
      vars_[op->var.node()] = eval(op->value);
      exec(op->body);
      vars_.erase(op->var.node());
      return;
    }
    case StmtKind::IfThenElse: {
      auto* op = s.as<IfThenElseNode>();
      if (eval(op->cond).int_lane(0)) exec(op->then_case);
      else exec(op->else_case);
      return;
    }
    case StmtKind::Allocate: {
      auto* op = s.as<AllocateNode>();
      int64_t n = eval(op->extent).int_lane(0);
      TESSERA_CHECK(n >= 0, "loop evaluator: allocation '", op->buffer.name(), "' of ", n, " elements");
      auto it = buffers_.find(op->buffer.get());
      std::optional<Tensor> saved;
      if (it != buffers_.end()) saved = it->second;
      buffers_[op->buffer.get()] = Tensor(op->buffer.dtype(), {n});
      exec(op->body);
      if (saved) buffers_[op->buffer.get()] = *saved;
      else buffers_.erase(op->buffer.get());
      return;
    }
    case StmtKind::Block:
      for (const Stmt& st : s.as<BlockNode>()->stmts) exec(st);
      return;
    case StmtKind::Evaluate:
      if (!is_hint(s)) eval(s.as<EvaluateNode>()->value);
      return;
  }
}

void run_kernel(const Kernel& k, const std::vector<Tensor>& args) {
  std::vector<Buffer> params = k.params();
  TESSERA_CHECK(args.size() == params.size(), "loop evaluator: kernel ", k.name, " takes ", params.size(),
                " buffers, got ", args.size());
  Evaluator ev;
  for (size_t i = 0; i < params.size(); ++i) ev.bind(params[i], args[i]);
  ev.exec(k.body);
}

}  // namespace tessera::loop
