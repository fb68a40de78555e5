// Math intrinsics -> LLVM IR: LLVM intrinsics, libm calls lane by lane,
// libmvec's vector variants (vector_math.h), and a branch-free vector exp.
#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include "codegen/llvm/codegen_impl.h"
#include "codegen/llvm/vector_math.h"
#include "loop/printer.h"
#include "loop/scalar_ops.h"
#include "support/error.h"

namespace tessera::codegen {

using namespace loop;
using llvm::Value;

// --- math ---------------------------------------------------------------------

Value* CodeGen::call_libm(const std::string& name, Type t, Value* x) {
  llvm::Type* st = scalar_type(t.dtype);
  std::string sym = t.dtype == DType::F64 ? name : name + "f";
  llvm::FunctionCallee f = module_.getOrInsertFunction(sym, llvm::FunctionType::get(st, {st}, false));
  if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
    fn->setDoesNotThrow();
    fn->setDoesNotAccessMemory();
  }
  if (t.lanes == 1) return b_.CreateCall(f, {x});
  Value* r = llvm::UndefValue::get(x->getType());
  for (int i = 0; i < t.lanes; ++i) {
    Value* lane = b_.CreateCall(f, {b_.CreateExtractElement(x, static_cast<uint64_t>(i))});
    r = b_.CreateInsertElement(r, lane, static_cast<uint64_t>(i));
  }
  return r;
}

// exp on a vector of floats without branches or calls (libmvec's expf takes
// a slow scalar path for every lane below about -87, as softmax rows with
// masked positions have): n = round(x / ln 2), r = x - n ln 2 in two parts,
// e^r by Cephes' degree-6 polynomial (about 1 ulp), times 2^n applied as two
// powers of two so that overflow gives inf and underflow rounds once into
// the denormals (with AVX-512, one vscalefps per 16 lanes does the same:
// e * 2^n rounded once). x is clamped to [-104, 88.8] first (e^x is 0 / inf
// beyond); NaN stays NaN.
Value* CodeGen::vector_exp_f32(Value* x) {
  llvm::Type* vt = x->getType();
  auto* ity = llvm::VectorType::get(b_.getInt32Ty(), llvm::cast<llvm::VectorType>(vt)->getElementCount());
  auto k = [&](double v) { return llvm::ConstantFP::get(vt, v); };
  auto fma = [&](Value* a, Value* b, Value* c) { return b_.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {a, b, c}); };
  Value *lo = k(-104.0), *hi = k(88.8);
  x = b_.CreateSelect(b_.CreateFCmpOLT(x, lo), lo, x);
  x = b_.CreateSelect(b_.CreateFCmpOGT(x, hi), hi, x);
  Value* n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b_.CreateFMul(x, k(1.44269504088896341)));
  Value* r = fma(n, k(-0.693359375), x);
  r = fma(n, k(2.12194440e-4), r);
  Value* p = k(1.9875691500e-4);
  for (double c : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1}) p = fma(p, r, k(c));
  Value* r2 = b_.CreateFMul(r, r);
  Value* e = b_.CreateFAdd(fma(p, r2, r), k(1.0));
  const unsigned lanes = llvm::cast<llvm::FixedVectorType>(vt)->getNumElements();
  if (options_.vector_math_bits == 512 && lanes % 16 == 0) {  // the AVX-512 target
    std::vector<Value*> parts;
    for (unsigned c = 0; c < lanes; c += 16) {
      std::vector<int> chunk;
      for (unsigned j = 0; j < 16; ++j) chunk.push_back(static_cast<int>(c + j));
      Value* ec = lanes == 16 ? e : b_.CreateShuffleVector(e, chunk);
      Value* nc = lanes == 16 ? n : b_.CreateShuffleVector(n, chunk);
      parts.push_back(b_.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                                         {ec, nc, llvm::UndefValue::get(ec->getType()), b_.getInt16(0xffff),
                                          b_.getInt32(4)}));  // all lanes, the current rounding mode
    }
    return parts.size() == 1 ? parts[0] : llvm::concatenateVectors(b_, parts);
  }
  // 2^n = 2^a * 2^b with a = n/2 (truncated), b = n - a: both within the normal exponents.
  // n is within [-150, 128] after the clamp, or NaN (then e is NaN and the
  // powers do not matter): a plain conversion of n with NaN replaced by 0
  // (one vcvttps2dq; the saturating intrinsic is expanded lane by lane).
  Value* ni = b_.CreateFPToSI(b_.CreateSelect(b_.CreateFCmpORD(n, n), n, k(0.0)), ity);
  Value* a = b_.CreateSDiv(ni, llvm::ConstantInt::get(ity, 2));
  Value* bexp = b_.CreateSub(ni, a);
  auto pow2 = [&](Value* m) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(m, llvm::ConstantInt::get(ity, 127)), 23), vt);
  };
  return b_.CreateFMul(b_.CreateFMul(e, pow2(a)), pow2(bexp));
}

Value* CodeGen::call_vector_math(const std::string& name, Type t, const std::vector<Value*>& args) {
  if (options_.vector_math_bits == 0 || t.lanes == 1) return nullptr;
  // Float vectors only: f64 math is what expressions use where they need
  // libm's precision (accumulations, integer results), so it stays libm.
  llvm::Type* st = scalar_type(t.dtype);
  if (!st->isFloatTy()) return nullptr;
  int native = options_.vector_math_bits / 32;
  std::string sym = vector_math_symbol(name, false, native, options_.vector_math_bits == 512);
  if (sym.empty()) return nullptr;
  auto* vt = llvm::FixedVectorType::get(st, static_cast<unsigned>(native));
  std::vector<llvm::Type*> params(args.size(), vt);
  llvm::FunctionCallee f = module_.getOrInsertFunction(sym, llvm::FunctionType::get(vt, params, false));
  if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
    fn->setDoesNotThrow();
    fn->setDoesNotAccessMemory();
  }
  // Chunks of `native` lanes (the last padded with copies of lane 0), one
  // call each, concatenated and cut back to t.lanes.
  std::vector<Value*> parts;
  for (int c = 0; c < t.lanes; c += native) {
    std::vector<int> mask;
    for (int j = 0; j < native; ++j) mask.push_back(c + j < t.lanes ? c + j : 0);
    std::vector<Value*> chunk;
    for (Value* a : args) chunk.push_back(b_.CreateShuffleVector(a, mask));
    parts.push_back(b_.CreateCall(f, chunk));
  }
  Value* all = parts.size() == 1 ? parts[0] : llvm::concatenateVectors(b_, parts);
  std::vector<int> keep;
  for (int j = 0; j < t.lanes; ++j) keep.push_back(j);
  return static_cast<int>(keep.size()) == native * static_cast<int>(parts.size()) ? all : b_.CreateShuffleVector(all, keep);
}

// Math intrinsics in the register type (float for f32/f16/bf16), rounded to
// the element type. exp and sigmoid on float vectors are inline
// (vector_exp_f32); other float vectors of transcendentals call libmvec's
// vector variants when the target has them (vector_math.h); otherwise LLVM
// intrinsics where one exists (lowered to instructions or libm calls the JIT
// resolves from the process), and tanh, erf, the inverse and hyperbolic
// trigonometric functions, tan, log1p and expm1 call libm lane by lane.
Value* CodeGen::emit_call(const Expr& e) {
  const CallNode* op = e.as<CallNode>();
  const std::string& n = op->name;
  TESSERA_CHECK(math_arity(n) >= 0 && op->type.is_float(), "LLVM codegen: unsupported call '", n, "' in ",
                to_string(e), " (only math intrinsics are lowered)");
  Type t = op->type;
  std::vector<Value*> a;
  for (const Expr& e : op->args) a.push_back(emit(e));
  using llvm::Intrinsic::ID;
  auto unary = [&](ID id) { return b_.CreateUnaryIntrinsic(id, a[0]); };
  auto one = [&] { return llvm::ConstantFP::get(a[0]->getType(), 1.0); };
  Value* r = nullptr;
  bool float_vector = t.lanes > 1 && a[0]->getType()->getScalarType()->isFloatTy();
  auto exp_of = [&](Value* x) {  // libmvec never serves exp: float vectors are inline, the rest libm
    return float_vector ? vector_exp_f32(x) : b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
  };
  if (n == "exp") return round_to(t.dtype, exp_of(a[0]));
  if (n == "sigmoid" && a[0]->getType()->getScalarType()->isDoubleTy())  // as the evaluator computes it
    return round_to(t.dtype, b_.CreateFDiv(one(), b_.CreateFAdd(one(), exp_of(b_.CreateFNeg(a[0])))));
  if (n == "sigmoid") {  // with e = exp(-|x|): 1 / (1 + e) for x >= 0, e / (1 + e) below (no overflow)
    Value* e = exp_of(b_.CreateFNeg(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a[0])));
    Value* d = b_.CreateFAdd(one(), e);
    Value* pos = b_.CreateFCmpOGE(a[0], llvm::Constant::getNullValue(a[0]->getType()));
    return round_to(t.dtype, b_.CreateSelect(pos, b_.CreateFDiv(one(), d), b_.CreateFDiv(e, d)));
  }
  if (Value* v = call_vector_math(n, t, a)) return round_to(t.dtype, v);
  if (n == "log") r = unary(llvm::Intrinsic::log);
  else if (n == "sqrt") r = unary(llvm::Intrinsic::sqrt);
  else if (n == "rsqrt") r = b_.CreateFDiv(one(), unary(llvm::Intrinsic::sqrt));
  else if (n == "abs") r = unary(llvm::Intrinsic::fabs);
  else if (n == "floor") r = unary(llvm::Intrinsic::floor);
  else if (n == "ceil") r = unary(llvm::Intrinsic::ceil);
  else if (n == "round") r = unary(llvm::Intrinsic::roundeven);  // half to even, as nearbyint
  else if (n == "sin") r = unary(llvm::Intrinsic::sin);
  else if (n == "cos") r = unary(llvm::Intrinsic::cos);
  else if (n == "trunc") r = unary(llvm::Intrinsic::trunc);
  else if (n == "tanh" || n == "erf" || n == "tan" || n == "asin" || n == "acos" || n == "atan" || n == "sinh" ||
           n == "cosh" || n == "asinh" || n == "acosh" || n == "atanh" || n == "log1p" || n == "expm1")
    r = call_libm(n, t, a[0]);  // no LLVM intrinsic (LLVM 14): libm's float / double function
  else if (n == "pow") r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, a[0], a[1]);
  else if (n == "fmod") r = b_.CreateFRem(a[0], a[1]);  // frem is C's fmod
  else if (n == "fma") r = b_.CreateIntrinsic(llvm::Intrinsic::fma, {a[0]->getType()}, {a[0], a[1], a[2]});
  else TESSERA_FAIL("LLVM codegen: no lowering for math intrinsic '", n, "'");
  return round_to(t.dtype, r);
}

}  // namespace tessera::codegen
