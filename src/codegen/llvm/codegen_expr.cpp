// Loop-IR expressions -> LLVM IR: constants, arithmetic with expr.h's
// semantics (floor div/mod with x/0 == 0, wrapping integers, float min/max as
// a<b?a:b), saturating casts, ramps, broadcasts and math intrinsics.
#include <llvm/IR/Intrinsics.h>

#include "codegen/llvm/codegen_impl.h"
#include "loop/printer.h"
#include "loop/scalar_ops.h"
#include "support/error.h"

namespace tessera::codegen {

using namespace loop;
using llvm::Value;

// --- types --------------------------------------------------------------------

bool CodeGen::is_signed(DType d) {
  return d == DType::I8 || d == DType::I16 || d == DType::I32 || d == DType::I64;
}

llvm::Type* CodeGen::scalar_type(DType d) {
  switch (d) {
    case DType::Bool: return b_.getInt1Ty();
    case DType::I8: case DType::U8: return b_.getInt8Ty();
    case DType::I16: case DType::U16: return b_.getInt16Ty();
    case DType::I32: case DType::U32: return b_.getInt32Ty();
    case DType::I64: case DType::U64: return b_.getInt64Ty();
    case DType::F16: case DType::BF16: case DType::F32: return b_.getFloatTy();
    case DType::F64: return b_.getDoubleTy();
    default: TESSERA_FAIL("LLVM codegen: unsupported element type ", dtype_name(d));
  }
}

llvm::Type* CodeGen::memory_type(DType d) {
  switch (d) {
    case DType::Bool: return b_.getInt8Ty();
    case DType::F16: return b_.getHalfTy();
    case DType::BF16: return b_.getInt16Ty();
    default: return scalar_type(d);
  }
}

llvm::Type* CodeGen::llvm_type(Type t) {
  llvm::Type* s = scalar_type(t.dtype);
  return t.lanes == 1 ? s : llvm::FixedVectorType::get(s, static_cast<unsigned>(t.lanes));
}

llvm::Type* CodeGen::memory_vector(DType d, int lanes) {
  llvm::Type* s = memory_type(d);
  return lanes == 1 ? s : llvm::FixedVectorType::get(s, static_cast<unsigned>(lanes));
}

Value* CodeGen::splat(Value* v, int lanes) {
  return lanes == 1 ? v : b_.CreateVectorSplat(static_cast<unsigned>(lanes), v);
}

Value* CodeGen::int_const(Type t, int64_t v) {
  auto* c = llvm::ConstantInt::get(scalar_type(t.dtype), static_cast<uint64_t>(v), /*isSigned=*/true);
  return splat(c, t.lanes);
}

Value* CodeGen::round_to(DType d, Value* v) {
  llvm::Type* ty = v->getType();
  auto like = [&](llvm::Type* elem) -> llvm::Type* {
    if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(ty)) return llvm::FixedVectorType::get(elem, vt->getNumElements());
    return elem;
  };
  if (d == DType::F16) return b_.CreateFPExt(b_.CreateFPTrunc(v, like(b_.getHalfTy())), ty);
  if (d != DType::BF16) return v;
  // Round to nearest even on the top 16 bits; NaN keeps its payload, made quiet
  // (BFloat16(float) in dtype.cpp).
  llvm::Type* i32 = like(b_.getInt32Ty());
  auto c = [&](uint32_t x) { return llvm::ConstantInt::get(i32, x); };
  Value* bits = b_.CreateBitCast(v, i32);
  Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, c(16)), c(1));
  Value* rounded = b_.CreateAnd(b_.CreateAdd(bits, b_.CreateAdd(lsb, c(0x7fff))), c(0xffff0000u));
  Value* nan = b_.CreateOr(b_.CreateAnd(bits, c(0xffff0000u)), c(0x00400000u));
  Value* is_nan = b_.CreateFCmpUNO(v, v);
  return b_.CreateBitCast(b_.CreateSelect(is_nan, nan, rounded), ty);
}

// --- expressions --------------------------------------------------------------

Value* CodeGen::emit(const Expr& e) {
  TESSERA_CHECK(e.defined(), "LLVM codegen: undefined expression");
  Type t = e.type();
  switch (e.kind()) {
    case ExprKind::IntImm: return int_const(t, e.as<IntImmNode>()->value);
    case ExprKind::FloatImm: return llvm::ConstantFP::get(scalar_type(t.dtype), e.as<FloatImmNode>()->value);
    case ExprKind::Var: {
      auto it = vars_.find(e.as<VarNode>());
      TESSERA_CHECK(it != vars_.end(), "LLVM codegen: variable ", e.as<VarNode>()->name, " is not bound");
      return it->second;
    }
    case ExprKind::Cast: {
      const Expr& v = e.as<CastNode>()->value;
      return emit_cast(t, v.type(), emit(v));
    }
    case ExprKind::Not: return b_.CreateNot(emit(e.as<NotNode>()->a));
    case ExprKind::Select: {
      auto* op = e.as<SelectNode>();
      Value* c = emit(op->cond);
      Value* x = emit(op->true_value);
      Value* y = emit(op->false_value);
      return b_.CreateSelect(c, x, y);
    }
    case ExprKind::Load: return emit_load(e.as<LoadNode>());
    case ExprKind::Ramp: {
      auto* op = e.as<RampNode>();
      Value* base = splat(emit(op->base), op->lanes);
      Value* stride = splat(emit(op->stride), op->lanes);
      std::vector<llvm::Constant*> steps;
      for (int i = 0; i < op->lanes; ++i)
        steps.push_back(llvm::ConstantInt::get(scalar_type(t.dtype), static_cast<uint64_t>(i)));
      return b_.CreateAdd(base, b_.CreateMul(stride, llvm::ConstantVector::get(steps)));
    }
    case ExprKind::Broadcast: {
      auto* op = e.as<BroadcastNode>();
      return splat(emit(op->value), op->lanes);
    }
    case ExprKind::Call: return emit_call(e);
    case ExprKind::Let: {
      auto* op = e.as<LetNode>();
      Value* v = emit(op->value);
      auto it = vars_.find(op->var.node());
      Value* saved = it == vars_.end() ? nullptr : it->second;
      bind(op->var.node(), v);
      Value* r = emit(op->body);
      unbind(op->var.node(), saved);
      return r;
    }
    case ExprKind::ProducerLoad:
    case ExprKind::Reduce:
      TESSERA_FAIL("LLVM codegen: ", expr_kind_name(e.kind()), " must be lowered first");
    default: return emit_binary(e.as<BinaryNode>());
  }
}

Value* CodeGen::emit_binary(const BinaryNode* op) {
  Type t = op->a.type();
  DType d = t.dtype;
  Value* a = emit(op->a);
  Value* b = emit(op->b);
  if (t.is_float()) {
    switch (op->kind) {
      case ExprKind::EQ: return b_.CreateFCmpOEQ(a, b);
      case ExprKind::NE: return b_.CreateFCmpUNE(a, b);  // NaN != x holds
      case ExprKind::LT: return b_.CreateFCmpOLT(a, b);
      case ExprKind::LE: return b_.CreateFCmpOLE(a, b);
      case ExprKind::GT: return b_.CreateFCmpOGT(a, b);
      case ExprKind::GE: return b_.CreateFCmpOGE(a, b);
      default: return emit_float_arith(op->kind, t, a, b);
    }
  }
  const bool sgn = is_signed(d);
  switch (op->kind) {
    case ExprKind::Add: return b_.CreateAdd(a, b);
    case ExprKind::Sub: return b_.CreateSub(a, b);
    case ExprKind::Mul: return b_.CreateMul(a, b);
    case ExprKind::Div: return emit_int_div_mod(true, d, a, b, t);
    case ExprKind::Mod: return emit_int_div_mod(false, d, a, b, t);
    case ExprKind::Min: return b_.CreateSelect(sgn ? b_.CreateICmpSLT(b, a) : b_.CreateICmpULT(b, a), b, a);
    case ExprKind::Max: return b_.CreateSelect(sgn ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b), b, a);
    case ExprKind::EQ: return b_.CreateICmpEQ(a, b);
    case ExprKind::NE: return b_.CreateICmpNE(a, b);
    case ExprKind::LT: return sgn ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
    case ExprKind::LE: return sgn ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
    case ExprKind::GT: return sgn ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
    case ExprKind::GE: return sgn ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
    case ExprKind::And: return b_.CreateAnd(a, b);
    case ExprKind::Or: return b_.CreateOr(a, b);
    default: TESSERA_FAIL("LLVM codegen: unexpected binary op ", expr_kind_name(op->kind));
  }
}

// Floor division / modulo with x/0 == x%0 == 0; INT_MIN / -1 wraps (and its
// modulo is 0). Divisors 0 and -1 are replaced by 1 before the hardware
// division so it never traps; constant divisors fold the guards away.
Value* CodeGen::emit_int_div_mod(bool is_div, DType d, Value* a, Value* b, Type t) {
  Value* zero = int_const(t, 0);
  Value* one = int_const(t, 1);
  Value* b_zero = b_.CreateICmpEQ(b, zero);
  if (!is_signed(d)) {
    Value* sb = b_.CreateSelect(b_zero, one, b);
    Value* r = is_div ? b_.CreateUDiv(a, sb) : b_.CreateURem(a, sb);
    return b_.CreateSelect(b_zero, zero, r);
  }
  Value* b_neg1 = b_.CreateICmpEQ(b, int_const(t, -1));
  Value* sb = b_.CreateSelect(b_.CreateOr(b_zero, b_neg1), one, b);
  Value* q = b_.CreateSDiv(a, sb);
  Value* r = b_.CreateSRem(a, sb);
  // The truncated result is one too high (div) / of the wrong sign (mod) when
  // the remainder is nonzero and its sign differs from the divisor's.
  Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, sb), zero));
  if (is_div) {
    Value* fq = b_.CreateSub(q, b_.CreateZExt(adjust, q->getType()));
    return b_.CreateSelect(b_zero, zero, b_.CreateSelect(b_neg1, b_.CreateSub(zero, a), fq));
  }
  Value* fr = b_.CreateSelect(adjust, b_.CreateAdd(r, sb), r);
  return b_.CreateSelect(b_.CreateOr(b_zero, b_neg1), zero, fr);
}

Value* CodeGen::emit_float_arith(ExprKind k, Type t, Value* a, Value* b) {
  switch (k) {
    case ExprKind::Add: return round_to(t.dtype, b_.CreateFAdd(a, b));
    case ExprKind::Sub: return round_to(t.dtype, b_.CreateFSub(a, b));
    case ExprKind::Mul: return round_to(t.dtype, b_.CreateFMul(a, b));
    case ExprKind::Div: return round_to(t.dtype, b_.CreateFDiv(a, b));
    case ExprKind::Min: return b_.CreateSelect(b_.CreateFCmpOLT(a, b), a, b);
    case ExprKind::Max: return b_.CreateSelect(b_.CreateFCmpOGT(a, b), a, b);
    case ExprKind::Mod: {
      // a - b*floor(a/b), computed in double like the evaluator, then rounded.
      llvm::Type* ty = a->getType();
      llvm::Type* dty = llvm_type({DType::F64, t.lanes});
      Value* x = t.dtype == DType::F64 ? a : b_.CreateFPExt(a, dty);
      Value* y = t.dtype == DType::F64 ? b : b_.CreateFPExt(b, dty);
      Value* fl = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(x, y));
      Value* r = b_.CreateFSub(x, b_.CreateFMul(y, fl));
      return t.dtype == DType::F64 ? r : round_to(t.dtype, b_.CreateFPTrunc(r, ty));
    }
    default: TESSERA_FAIL("LLVM codegen: unexpected float op ", expr_kind_name(k));
  }
}

// Cast semantics (scalar_ops.h): float -> int truncates and saturates with
// NaN -> 0 (llvm.fpto[su]i.sat); -> bool is `!= 0`; int -> int wraps; int ->
// float rounds once for f32/f64, and goes through double then float for
// f16/bf16 as the evaluator does.
Value* CodeGen::emit_cast(Type to, Type from, Value* v) {
  llvm::Type* ty = llvm_type(to);
  if (to.dtype == from.dtype) return v;
  if (to.is_bool()) {
    if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (!to.is_float()) {
    if (from.is_float()) {
      auto id = is_signed(to.dtype) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
      return b_.CreateIntrinsic(id, {ty, v->getType()}, {v});
    }
    return is_signed(from.dtype) ? b_.CreateSExtOrTrunc(v, ty) : b_.CreateZExtOrTrunc(v, ty);
  }
  // to a float type
  if (!from.is_float()) {
    bool sgn = is_signed(from.dtype);
    if (!is_narrow_float(to.dtype)) return sgn ? b_.CreateSIToFP(v, ty) : b_.CreateUIToFP(v, ty);
    llvm::Type* dty = llvm_type({DType::F64, to.lanes});
    Value* dbl = sgn ? b_.CreateSIToFP(v, dty) : b_.CreateUIToFP(v, dty);
    return round_to(to.dtype, b_.CreateFPTrunc(dbl, ty));
  }
  if (to.dtype == DType::F64) return b_.CreateFPExt(v, ty);  // from f32/f16/bf16: exact
  if (from.dtype == DType::F64) v = b_.CreateFPTrunc(v, ty);
  return round_to(to.dtype, v);  // f32 <-> f16 <-> bf16 live as float
}

}  // namespace tessera::codegen
