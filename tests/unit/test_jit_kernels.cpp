// The LLVM JIT against the loop-IR evaluator on hand-built kernels, for every
// x86 ISA the host has (AVX-512 and AVX2).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "codegen/llvm/vector_math.h"
#include "jit_test_util.h"
#include "loop_kernels.h"

namespace tessera::codegen {
namespace {

using namespace loop;
using testing::expect_jit_matches;
using testing::random_tensor;

class JitKernels : public testing::JitIsaTest {};

TEST_P(JitKernels, Matmul) {
  std::mt19937 rng(1);
  Kernel k = loop::testing::matmul_kernel(17, 13, 9);
  expect_jit_matches(k, {random_tensor(DType::F32, 17 * 9, rng), random_tensor(DType::F32, 9 * 13, rng),
                         random_tensor(DType::F32, 17 * 13, rng)},
                     options());
}

TEST_P(JitKernels, VectorRelu) {
  std::mt19937 rng(2);
  expect_jit_matches(loop::testing::relu_vector_kernel(64),
                     {random_tensor(DType::F32, 64, rng), random_tensor(DType::F32, 64, rng)}, options());
}

TEST_P(JitKernels, PaddedConv) {
  std::mt19937 rng(3);
  expect_jit_matches(loop::testing::conv1d_padded_kernel(37),
                     {random_tensor(DType::F32, 37, rng), random_tensor(DType::F32, 3, rng),
                      random_tensor(DType::F32, 37, rng)},
                     options());
}

// D = A / B, M = A % B, and by constants, elementwise over n (lanes at a time).
Kernel div_mod_kernel(DType d, int64_t n, int lanes) {
  Buffer A("A", d, {n}), B("B", d, {n}), D("D", d, {n}), M("M", d, {n}), E("E", d, {n}), F("F", d, {n});
  Var i("i");
  Expr idx = lanes == 1 ? Expr(i) : ramp(i * lanes, int_imm(1), lanes);
  Expr a = load(A, idx), b = load(B, idx);
  Type t{d, 1};
  bool sgn = d == DType::I8 || d == DType::I16 || d == DType::I32 || d == DType::I64;
  Stmt body = block({store(D, a / b, idx), store(M, a % b, idx), store(E, a / int_imm(7, t), idx),
                     store(F, a % int_imm(sgn ? -3 : 3, t), idx)});
  return Kernel{"divmod", {A, B}, {D, M, E, F}, for_loop(i, int_imm(0), int_imm(n / lanes), ForKind::Serial, body)};
}

TEST_P(JitKernels, IntegerFloorDivModWithNegativesAndZeroDivisors) {
  std::mt19937 rng(4);
  const int64_t n = 64;
  for (DType d : {DType::I8, DType::I32, DType::I64, DType::U8, DType::U32, DType::U64}) {
    for (int lanes : {1, 8}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " x" + std::to_string(lanes));
      bool sgn = d == DType::I8 || d == DType::I32 || d == DType::I64;
      Tensor a = random_tensor(d, n, rng, sgn ? -100 : 0, 100);
      Tensor b = random_tensor(d, n, rng, sgn ? -5 : 0, 5);  // many zeros and -1s
      if (d == DType::I8) {  // INT8_MIN / -1 wraps
        a.data<int8_t>()[0] = -128;
        b.data<int8_t>()[0] = -1;
      }
      if (d == DType::I64) {
        a.data<int64_t>()[1] = std::numeric_limits<int64_t>::min();
        b.data<int64_t>()[1] = -1;
      }
      std::vector<Tensor> args{a, b};
      for (int o = 0; o < 4; ++o) args.push_back(Tensor(d, {n}));
      expect_jit_matches(div_mod_kernel(d, n, lanes), args, options());
    }
  }
}

// Y_t = cast<t>(X) for several target types, scalar or `lanes` wide.
Kernel cast_kernel(DType from, const std::vector<DType>& to, int64_t n, int lanes) {
  Buffer X("X", from, {n});
  Var i("i");
  Expr idx = lanes == 1 ? Expr(i) : ramp(i * lanes, int_imm(1), lanes);
  std::vector<Buffer> outs;
  std::vector<Stmt> stores;
  for (DType d : to) {
    outs.emplace_back(std::string("Y_") + std::string(dtype_name(d)), d, Dims{n});
    stores.push_back(store(outs.back(), cast({d, lanes}, load(X, idx)), idx));
  }
  return Kernel{"casts", {X}, outs, for_loop(i, int_imm(0), int_imm(n / lanes), ForKind::Serial, block(stores))};
}

TEST_P(JitKernels, CastsSaturateAndMapNaNToZero) {
  const int64_t n = 32;
  std::vector<float> specials{NAN, -NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 3e9f, -3e9f, 2.5f, -2.5f, 0.49f,
                              -0.0f, 255.9f, 256.0f, -129.0f, 65504.0f, 70000.0f, 1e-40f, 9.3e18f, 2e19f};
  std::mt19937 rng(5);
  Tensor x = random_tensor(DType::F32, n, rng, -300, 300);
  for (size_t i = 0; i < specials.size(); ++i) x.data<float>()[i] = specials[i];
  std::vector<DType> to{DType::I8, DType::I16, DType::I32, DType::I64, DType::U8, DType::U16, DType::U32,
                        DType::U64, DType::Bool, DType::F16, DType::BF16, DType::F64};
  for (int lanes : {1, 8}) {
    SCOPED_TRACE("lanes " + std::to_string(lanes));
    std::vector<Tensor> args{x};
    for (DType d : to) args.push_back(Tensor(d, {n}));
    expect_jit_matches(cast_kernel(DType::F32, to, n, lanes), args, options());
  }
  // Integer sources: wrap, extend by signedness, round to floats.
  Tensor wide = random_tensor(DType::I64, n, rng, -1e18, 1e18);
  wide.data<int64_t>()[0] = std::numeric_limits<int64_t>::min();
  wide.data<int64_t>()[1] = (int64_t{1} << 53) + 1;
  std::vector<DType> from_int{DType::I8, DType::U16, DType::I32, DType::U64, DType::Bool,
                              DType::F32, DType::F64, DType::F16, DType::BF16};
  for (int lanes : {1, 4}) {
    std::vector<Tensor> args{wide};
    for (DType d : from_int) args.push_back(Tensor(d, {n}));
    expect_jit_matches(cast_kernel(DType::I64, from_int, n, lanes), args, options());
    Tensor u = random_tensor(DType::U64, n, rng, 0, 1e19);
    std::vector<Tensor> uargs{u};
    for (DType d : from_int) uargs.push_back(Tensor(d, {n}));
    expect_jit_matches(cast_kernel(DType::U64, from_int, n, lanes), uargs, options());
  }
}

TEST_P(JitKernels, PredicatedTailLoadsStoresAndGathers) {
  const int64_t n = 13;
  Buffer A("A", DType::F32, {n}), B("B", DType::F32, {16}), G("G", DType::F32, {3 * 16}), S("S", DType::F32, {3 * 16});
  Var o("o");
  Expr idx = ramp(o * 8, int_imm(1), 8);
  Expr valid = idx < n;  // the last vector overhangs A
  Expr strided = ramp(o * 24, int_imm(3), 8);
  Stmt s = for_loop(o, int_imm(0), int_imm(2), ForKind::Serial,
                    block({store(B, load(A, idx, valid) * 10.0f, idx),
                           store(S, load(G, strided, valid) + 1.0f, strided, valid),
                           store(B, load(B, idx) + load(G, strided), idx, valid)}));
  // Scalar predicated accesses.
  Var i("i");
  Stmt tail = for_loop(i, int_imm(0), int_imm(16), ForKind::Serial,
                       store(G, load(A, Expr(i), Expr(i) < n) + 2.0f, Expr(i) * 3, eq(Expr(i) % 2, 0)));
  std::mt19937 rng(6);
  expect_jit_matches(Kernel{"tail", {A}, {B, G, S}, block({s, tail})},
                     {random_tensor(DType::F32, n, rng), random_tensor(DType::F32, 16, rng),
                      random_tensor(DType::F32, 48, rng), random_tensor(DType::F32, 48, rng)},
                     options());
}

// Prefetches of a scalar, a contiguous vector (a line per 64 bytes, 40
// floats spanning three lines) and gathered lanes change nothing; the
// evaluator skips them, and the printer shows them.
TEST_P(JitKernels, PrefetchesReadNothing) {
  Buffer A("A", DType::F32, {64}), B("B", DType::F32, {64});
  Var o("o");
  Stmt body = block({prefetch(load(A, Expr(o) * 4)), prefetch(load(A, ramp(Expr(o), int_imm(1), 40))),
                     prefetch(load(A, ramp(Expr(o) * 2, int_imm(3), 8), ramp(Expr(o), int_imm(1), 8) < 5)),
                     store(B, load(A, Expr(o) * 4) + 1.0f, Expr(o))});
  Stmt s = for_loop(o, int_imm(0), int_imm(16), ForKind::Serial, body);
  EXPECT_NE(to_string(s).find("prefetch(A[ramp(o, 1, 40)])"), std::string::npos) << to_string(s);
  std::mt19937 rng(9);
  expect_jit_matches(Kernel{"prefetch", {A}, {B}, s}, {random_tensor(DType::F32, 64, rng), random_tensor(DType::F32, 64, rng)},
                     options());
}

// keep_in_memory of a stack tile (a total updated once per outer step) and
// of an output changes no number: compiled as an empty asm statement, the
// kernel matches the evaluator, which skips it; the printer shows it.
TEST_P(JitKernels, KeepInMemoryChangesNothing) {
  const int64_t n = 16, steps = 6;
  Buffer X("X", DType::F32, {steps * n}), Y("Y", DType::F32, {n}), T("T", DType::F32);
  Var k("k"), j("j");
  for (int lanes : {1, 8}) {
    Expr at = lanes == 1 ? Expr(j) : ramp(j * lanes, int_imm(1), lanes);
    Stmt add = for_loop(j, int_imm(0), int_imm(n / lanes), ForKind::Serial,
                        store(T, load(T, at) + load(X, k * n + at) * 0.5f, at));
    Stmt steps_loop =
        for_loop(k, int_imm(0), int_imm(steps), ForKind::Serial, block({add, keep_in_memory(T), keep_in_memory(Y)}));
    Stmt out = for_loop(j, int_imm(0), int_imm(n / lanes), ForKind::Serial, store(Y, load(T, at) + 1.0f, at));
    Stmt body = allocate(T, int_imm(n), block({steps_loop, out}));
    EXPECT_NE(to_string(body).find("keep_in_memory(T[0])"), std::string::npos) << to_string(body);
    EXPECT_EQ(kept_in_memory(keep_in_memory(Y)).get(), Y.get());
    EXPECT_TRUE(is_hint(keep_in_memory(T)));
    std::mt19937 rng(11);
    expect_jit_matches(Kernel{"kept", {X}, {Y}, body},
                       {random_tensor(DType::F32, steps * n, rng), Tensor(DType::F32, {n})}, options());
  }
}

TEST_P(JitKernels, SelectMinMaxAndFloatModWithNaN) {
  const int64_t n = 32;
  Buffer X("X", DType::F32, {n}), Y("Y", DType::F32, {n}), Z("Z", DType::F32, {n});
  Buffer Mn("Mn", DType::F32, {n}), Mx("Mx", DType::F32, {n});
  Var i("i");
  for (int lanes : {1, 8}) {
    Expr idx = lanes == 1 ? Expr(i) : ramp(i * lanes, int_imm(1), lanes);
    Expr x = load(X, idx), y = load(Y, idx);
    Expr v = select(x > y, x * 2.0f, -y) + min(x, y) * max(y, x) + x % y;
    Stmt body = block({store(Z, v, idx), store(Mn, min(x, y), idx), store(Mx, max(x, y), idx)});
    Kernel k{"select", {X, Y}, {Z, Mn, Mx}, for_loop(i, int_imm(0), int_imm(n / lanes), ForKind::Serial, body)};
    std::mt19937 rng(7);
    Tensor xs = random_tensor(DType::F32, n, rng), ys = random_tensor(DType::F32, n, rng);
    xs.data<float>()[0] = NAN;
    ys.data<float>()[1] = NAN;
    ys.data<float>()[2] = 0.0f;
    xs.data<float>()[3] = 0.0f;  // min/max of +0 and -0 pick by a<b?a:b
    ys.data<float>()[3] = -0.0f;
    xs.data<float>()[4] = ys.data<float>()[4] = 1.5f;
    expect_jit_matches(k, {xs, ys, Tensor(DType::F32, {n}), Tensor(DType::F32, {n}), Tensor(DType::F32, {n})},
                       options());
  }
}

TEST_P(JitKernels, AllocateOnStackAndHeapStartsZeroed) {
  const int64_t rows = 3, small = 16, big = 5000;  // big * 4 bytes goes to the heap
  Buffer X("X", DType::F32, {rows * small}), Y("Y", DType::F32, {rows * small}), Z("Z", DType::F32, {rows * big});
  Buffer T("T", DType::F32), H("H", DType::F32);
  Var r("r"), j("j"), m("m");
  Expr at = r * small + j;
  Stmt fill = for_loop(j, int_imm(0), int_imm(small), ForKind::Serial, store(T, load(X, at) * 2.0f, Expr(j)));
  Stmt use = for_loop(j, int_imm(0), int_imm(small), ForKind::Serial,
                      store(Y, load(T, int_imm(small - 1) - j) + load(T, Expr(j)), at));
  Stmt heap = for_loop(m, int_imm(0), int_imm(big), ForKind::Serial,
                       block({store(Z, load(H, Expr(m)) + 1.0f, r * big + m),
                              store(H, cast({DType::F32, 1}, Expr(m)), Expr(m))}));
  Stmt body = for_loop(r, int_imm(0), int_imm(rows), ForKind::Serial,
                       block({allocate(T, int_imm(small), block({fill, use})),
                              allocate(H, int_imm(big) + r - r, heap)}));
  std::mt19937 rng(8);
  expect_jit_matches(Kernel{"alloc", {X}, {Y, Z}, body},
                     {random_tensor(DType::F32, rows * small, rng), Tensor(DType::F32, {rows * small}),
                      random_tensor(DType::F32, rows * big, rng)},
                     options());
}

// Y_f = f(X) for each math intrinsic; `lanes` wide.
void check_math(const JitOptions& opts, DType d, int lanes, int64_t max_ulps) {
  const int64_t n = 64;
  Buffer X("X", d, {n}), P("P", d, {n}), W("W", d, {n});
  Var i("i");
  Expr idx = lanes == 1 ? Expr(i) : ramp(i * lanes, int_imm(1), lanes);
  Expr x = load(X, idx), p = load(P, idx), w = load(W, idx);
  Expr u = x * (1.0 / 6.5), p1 = p + 1;  // in (-1, 1) and >= 1
  struct F { const char* name; Expr e; bool exact; };
  std::vector<F> fs{{"exp", call("exp", {x}), false},       {"log", call("log", {p}), false},
                    {"sqrt", call("sqrt", {p}), true},      {"rsqrt", call("rsqrt", {p}), false},
                    {"tanh", call("tanh", {x}), false},     {"erf", call("erf", {x}), false},
                    {"sigmoid", call("sigmoid", {x}), false}, {"abs", call("abs", {x}), true},
                    {"floor", call("floor", {x}), true},    {"ceil", call("ceil", {x}), true},
                    {"round", call("round", {x}), true},    {"sin", call("sin", {x}), false},
                    {"cos", call("cos", {x}), false},       {"pow", call("pow", {p, x}), false},
                    {"fma", call("fma", {x, p, w}), true},
                    {"trunc", call("trunc", {x}), true},    {"tan", call("tan", {x}), false},
                    {"asin", call("asin", {u}), false},     {"acos", call("acos", {u}), false},
                    {"atan", call("atan", {x}), false},     {"sinh", call("sinh", {x}), false},
                    {"cosh", call("cosh", {x}), false},     {"asinh", call("asinh", {x}), false},
                    {"acosh", call("acosh", {p1}), false},  {"atanh", call("atanh", {u}), false},
                    {"log1p", call("log1p", {p}), false},   {"expm1", call("expm1", {x}), false},
                    {"log1p_small", call("log1p", {u * 1e-3}), false},
                    {"expm1_small", call("expm1", {u * 1e-3}), false},
                    {"fmod", call("fmod", {x, p}), true}};
  std::mt19937 rng(9);
  Tensor xs = random_tensor(d, n, rng, -6, 6), ps = random_tensor(d, n, rng, 0.01, 20),
         ws = random_tensor(d, n, rng, -6, 6);
  if (d == DType::F32) {  // round half to even
    xs.data<float>()[0] = 2.5f;
    xs.data<float>()[1] = -3.5f;
    xs.data<float>()[2] = NAN;
  }
  for (const F& f : fs) {
    SCOPED_TRACE(std::string(f.name) + " " + std::string(dtype_name(d)) + "x" + std::to_string(lanes));
    Buffer Y("Y", d, {n});
    Kernel k{std::string("math_") + f.name, {X, P, W}, {Y},
             for_loop(i, int_imm(0), int_imm(n / lanes), ForKind::Serial, store(Y, f.e, idx))};
    expect_jit_matches(k, {xs, ps, ws, Tensor(d, {n})}, opts, f.exact ? 0 : max_ulps);
  }
}

// Scalars and f64 vectors call libm (within 2 ulp of the evaluator's libm).
// Float vectors call glibc's libmvec, documented within 4 ulp of the
// correctly rounded result (exp: inline, see below);
// 3 lanes exercise the padded chunk, 32 the split into two calls.
TEST_P(JitKernels, MathIntrinsics) {
  check_math(options(), DType::F32, 1, 2);
  check_math(options(), DType::F32, 8, 4);
  check_math(options(), DType::F32, 16, 4);
  check_math(options(), DType::F32, 32, 4);
  check_math(options(), DType::F64, 4, 1);  // f64 vectors call libm lane by lane
  check_math(options(), DType::F16, 8, 1);
}

// The inline vector exp (and sigmoid, built on it) over its whole range:
// overflow to inf, the denormals, underflow to 0, infinities and NaN, each
// within 4 ulp of the evaluator (libm), in 16-lane vectors, with no lane-by-
// lane code: 2^n applied by vscalefps with AVX-512, else built from one
// vector conversion.
TEST_P(JitKernels, VectorExpFullRange) {
  std::vector<float> v{-1e30f, -200.f, -104.5f, -103.9f, -100.f, -95.5f, -88.f, -87.3f, -50.f, -1e-3f, -0.f, 0.f,
                       1e-7f, 0.5f, 1.f, 10.f, 50.f, 88.f, 88.7f, 88.72f, 88.8f, 89.f, 1e30f,
                       INFINITY, -INFINITY, NAN};
  while (v.size() % 16) v.push_back(1.25f * static_cast<float>(v.size()) - 20.f);
  const int64_t n = static_cast<int64_t>(v.size());
  Tensor x(DType::F32, {n});
  std::copy(v.begin(), v.end(), x.data<float>());
  for (const char* f : {"exp", "sigmoid"}) {
    SCOPED_TRACE(f);
    Buffer X("X", DType::F32, {n}), Y("Y", DType::F32, {n});
    Var i("i");
    Expr idx = ramp(i * 16, int_imm(1), 16);
    Kernel k{std::string("vexp_") + f, {X}, {Y},
             for_loop(i, int_imm(0), int_imm(n / 16), ForKind::Serial, store(Y, call(f, {load(X, idx)}), idx))};
    expect_jit_matches(k, {x, Tensor(DType::F32, {n})}, options(), 4);
    std::string ir = jit_compile(k, options())->llvm_ir();
    EXPECT_EQ(ir.find("fptosi.sat"), std::string::npos) << ir;
    const bool avx512 = GetParam() == Isa::AVX512;
    EXPECT_NE(ir.find(avx512 ? "llvm.x86.avx512.mask.scalef.ps.512" : "fptosi <16 x float>"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("fptosi <16 x float>") == std::string::npos, avx512) << ir;
  }
}

// Loads with a constant stride of 2 to 4 (one wide load and a shuffle),
// plain and under a mask, reaching the very end of the buffer.
TEST_P(JitKernels, StridedLoads) {
  for (int stride : {2, 3, 4})
    for (int lanes : {8, 16}) {
      SCOPED_TRACE("stride " + std::to_string(stride) + " lanes " + std::to_string(lanes));
      const int64_t groups = 3, n = groups * lanes * stride;
      Buffer X("X", DType::F32, {n}), Y("Y", DType::F32, {groups * lanes}), Z("Z", DType::F32, {groups * lanes});
      Var i("i");
      // Lane l of group i reads X[(i*lanes + l)*stride + stride - 1]: the last group ends at X's last element.
      Expr at = ramp(i * (lanes * stride) + (stride - 1), int_imm(stride), lanes);
      Expr out = ramp(i * lanes, int_imm(1), lanes);
      Expr mask = ramp(i * lanes, int_imm(1), lanes) % broadcast(int_imm(3), lanes) < broadcast(int_imm(2), lanes);
      Stmt body = block({store(Y, load(X, at), out), store(Z, load(X, at, mask), out)});
      std::mt19937 rng(stride * 10 + lanes);
      expect_jit_matches(Kernel{"strided", {X}, {Y, Z}, for_loop(i, int_imm(0), int_imm(groups), ForKind::Serial, body)},
                         {random_tensor(DType::F32, n, rng), Tensor(DType::F32, {groups * lanes}),
                          Tensor(DType::F32, {groups * lanes})},
                         options());
      Kernel k{"strided_ir", {X}, {Y, Z}, for_loop(i, int_imm(0), int_imm(groups), ForKind::Serial, body)};
      EXPECT_EQ(jit_compile(k, options())->llvm_ir().find("gather"), std::string::npos);
    }
}

// The vector math library is what vectorized transcendentals call (one call
// per native-width chunk, not one per lane), unless this machine lacks it.
TEST_P(JitKernels, VectorMathCallsLibmvec) {
  bool avx512 = GetParam() == Isa::AVX512;
  if (vector_math_symbol("exp", false, avx512 ? 16 : 8, avx512).empty()) GTEST_SKIP() << "no libmvec on this machine";
  Buffer X("X", DType::F32, {64}), Y("Y", DType::F32, {64});
  Var i("i");
  Expr idx = ramp(i * 32, int_imm(1), 32);
  Kernel k{"vexp", {X}, {Y}, for_loop(i, int_imm(0), int_imm(2), ForKind::Serial, store(Y, call("erf", {load(X, idx)}), idx))};
  std::string ir = jit_compile(k, options())->llvm_ir();
  EXPECT_NE(ir.find(avx512 ? "_ZGVeN16v_erff" : "_ZGVdN8v_erff"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("@erff("), std::string::npos) << ir;
}

TEST_P(JitKernels, LetsIfElseUnrolledBoolAndNarrowFloats) {
  const int64_t n = 24;
  Buffer X("X", DType::F16, {n}), Bx("Bx", DType::BF16, {n}), M("M", DType::Bool, {n});
  Buffer Y("Y", DType::F16, {n}), By("By", DType::BF16, {n}), O("O", DType::Bool, {n}), Q("Q", DType::I32, {n});
  Var i("i"), u("u"), t("t", {DType::F16, 1}), c("c", bool_type(4));
  Expr xi = load(X, Expr(i));
  Stmt scalar = for_loop(
      i, int_imm(0), int_imm(n), ForKind::Serial,
      let_stmt(t, xi * xi + float_imm(0.1, {DType::F16, 1}),
               block({if_then_else(load(M, Expr(i)), store(Y, Expr(t) / xi, Expr(i)), store(Y, -Expr(t), Expr(i))),
                      store(By, load(Bx, Expr(i)) * load(Bx, Expr(i)) + load(Bx, Expr(i)), Expr(i)),
                      eval_stmt(Expr(t))})));
  // Unrolled loop with a non-constant min; vector bools in and out.
  Expr vi = ramp(u * 4, int_imm(1), 4);
  Stmt vec = for_loop(u, int_imm(n / 4 - 5), int_imm(5), ForKind::Unrolled,
                      let_stmt(c, load(M, vi) || load(X, vi) > broadcast(float_imm(0, {DType::F16, 1}), 4),
                               block({store(O, Expr(c) && !load(M, vi), vi),
                                      store(Q, let(Var("q", {DType::I32, 4}), cast({DType::I32, 4}, load(X, vi)),
                                                   select(Expr(c), broadcast(int_imm(7, {DType::I32, 1}), 4),
                                                          cast({DType::I32, 4}, load(M, vi)))),
                                            vi)})));
  std::mt19937 rng(10);
  expect_jit_matches(Kernel{"misc", {X, Bx, M}, {Y, By, O, Q}, block({scalar, vec})},
                     {random_tensor(DType::F16, n, rng), random_tensor(DType::BF16, n, rng),
                      random_tensor(DType::Bool, n, rng), Tensor(DType::F16, {n}), Tensor(DType::BF16, {n}),
                      Tensor(DType::Bool, {n}), Tensor(DType::I32, {n})},
                     options());
}

TEST_P(JitKernels, FastMathStaysClose) {
  std::mt19937 rng(11);
  Kernel k = loop::testing::matmul_kernel(8, 8, 64);
  expect_jit_matches(k, {random_tensor(DType::F32, 8 * 64, rng, 0, 1), random_tensor(DType::F32, 64 * 8, rng, 0, 1),
                         random_tensor(DType::F32, 64, rng)},
                     options(/*fast_math=*/true), 64);
}

INSTANTIATE_TEST_SUITE_P(Jit, JitKernels, ::testing::Values(Isa::AVX512, Isa::AVX2), testing::isa_param_name);

}  // namespace
}  // namespace tessera::codegen
