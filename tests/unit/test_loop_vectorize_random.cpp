// vectorize_loops on seeded random programs, run with the evaluator before
// and after (bit for bit) and with the JIT on the vectorized programs against
// the evaluator on the originals; the programs also check unroll_loops and
// both passes composed. Hand-written kernels: test_loop_vectorize.cpp.
#include <gtest/gtest.h>

#include <random>

#include "jit_test_util.h"
#include "loop/evaluate.h"
#include "loop/printer.h"
#include "loop/unroll.h"
#include "loop/vectorize.h"
#include "loop_vectorize_test_util.h"

namespace tessera::loop {
namespace {

using codegen::testing::random_tensor;
using codegen::testing::expect_same_results;
using testing::count_loops;
using testing::has_loop;
using testing::LoopVectorizeJit;

// --- seeded random programs -------------------------------------------------------------

// for (r, 0, R) { for (i, 0, W) <kind> { body } }: the body stores to OUT / OUTI
// at one index per program (usually lane-owned, sometimes not), reads IN, INI
// (through affine, modular or indirect indices) and OUT; nests ifs on lanes or
// on r, lets, short inner loops (serial or unrolled), per-iteration
// temporaries and, rarely, a reduction into ACC.
class ProgramGen {
 public:
  explicit ProgramGen(uint64_t seed) : rng_(seed) {}

  struct Program {
    Kernel kernel;
    std::vector<Tensor> args;
    Var i;
    int64_t width;
  };

  Program make(ForKind kind) {
    static const int64_t kWidths[] = {1, 2, 3, 4, 5, 8, 8, 16};
    rows_ = small(1, 3);
    width_ = kWidths[pick(8)];
    const int64_t cells = rows_ * width_;
    in_ = Buffer("IN", DType::F32, {kIn});
    ini_ = Buffer("INI", DType::I32, {kIn});
    idx_ = Buffer("IDX", DType::I64, {kIn});
    out_ = Buffer("OUT", DType::F32, {cells});
    outi_ = Buffer("OUTI", DType::I32, {cells});
    acc_ = Buffer("ACC", DType::F32, {4});
    r_ = Var("r");
    i_ = Var("i");
    ints_ = {r_, i_};
    floats_.clear();
    switch (pick(8)) {
      case 0: out_at_ = r_ * width_ + (width_ - 1) - i_; break;  // reversed
      case 1: out_at_ = (r_ * width_ + i_ + 1) % cells; break;   // not affine: stays serial
      default: out_at_ = r_ * width_ + i_;
    }
    outi_at_ = pick(6) ? out_at_ : i_ + r_ * width_;
    Stmt body = stmt(3);
    Stmt loops = for_loop(r_, int_imm(0), int_imm(rows_), pick(3) ? ForKind::Serial : ForKind::Parallel,
                          for_loop(i_, int_imm(0), int_imm(width_), kind, body));
    Program p{Kernel{"random", {in_, ini_, idx_}, {out_, outi_, acc_}, loops}, {}, i_, width_};
    p.args = {random_tensor(DType::F32, kIn, rng32_), random_tensor(DType::I32, kIn, rng32_, -50, 50),
              random_tensor(DType::I64, kIn, rng32_, 0, kIn - 0.5), random_tensor(DType::F32, cells, rng32_),
              random_tensor(DType::I32, cells, rng32_, -50, 50), random_tensor(DType::F32, 4, rng32_)};
    return p;
  }

 private:
  static constexpr int64_t kIn = 64;

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  int64_t small(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1)); }
  Expr any(const std::vector<Expr>& v) { return v[static_cast<size_t>(pick(static_cast<int>(v.size())))]; }

  // An i64 index into IN / INI: affine in the int variables, modular, or indirect.
  Expr in_index(int depth) {
    Expr e = int_imm(small(-5, 5));
    for (int t = 0, n = 1 + pick(3); t < n; ++t) e = e + any(ints_) * small(-3, 4);
    if (depth > 0 && pick(5) == 0) e = load(idx_, e % kIn) + e;  // through the index buffer
    return e % kIn;  // floor modulo: always in bounds
  }

  Expr fexpr(int depth) {
    if (depth == 0 || pick(4) == 0) {
      switch (pick(7)) {
        case 0: return float_imm(static_cast<double>(small(-8, 8)) * 0.5);
        case 1: return load(out_, out_at_);
        case 2: return floats_.empty() ? load(in_, in_index(depth)) : any(floats_);
        case 3: return cast({DType::F32, 1}, any(ints_));
        case 4: return pick(8) ? load(out_, out_at_) : load(out_, in_index(0) % (rows_ * width_));  // rarely a foreign element
        default: return load(in_, in_index(depth));
      }
    }
    Expr a = fexpr(depth - 1);
    switch (pick(10)) {
      case 0: return a + fexpr(depth - 1);
      case 1: return a - fexpr(depth - 1);
      case 2: return a * fexpr(depth - 1);
      case 3: return a / fexpr(depth - 1);
      case 4: return pick(2) ? min(a, fexpr(depth - 1)) : max(a, fexpr(depth - 1));
      case 5: return select(a < fexpr(depth - 1), a, fexpr(depth - 1));
      case 6: return call(pick(2) ? "floor" : "abs", {a});
      case 7: return cast({DType::F32, 1}, iexpr(depth - 1));
      case 8: return cast({DType::F32, 1}, cast({DType::I32, 1}, a * 4.0f));
      default: return a + cast({DType::F32, 1}, any(ints_));
    }
  }

  Expr iexpr(int depth) {
    Type i32{DType::I32, 1};
    if (depth == 0 || pick(4) == 0) {
      switch (pick(4)) {
        case 0: return int_imm(small(-9, 9), i32);
        case 1: return load(outi_, outi_at_);
        case 2: return cast(i32, any(ints_));
        default: return load(ini_, in_index(depth));
      }
    }
    Expr a = iexpr(depth - 1);
    switch (pick(8)) {
      case 0: return a + iexpr(depth - 1);
      case 1: return a - iexpr(depth - 1);
      case 2: return a * int_imm(small(-3, 5), i32);
      case 3: return a / int_imm(small(-4, 5), i32);
      case 4: return a % iexpr(depth - 1);
      case 5: return pick(2) ? min(a, iexpr(depth - 1)) : max(a, iexpr(depth - 1));
      case 6: return select(fexpr(depth - 1) > 0.0f, a, iexpr(depth - 1));
      default: return cast(i32, fexpr(depth - 1));
    }
  }

  // Depends on the lanes (i, loaded values) or only on r and inner variables.
  Expr cond() {
    switch (pick(5)) {
      case 0: return Expr(i_) < small(0, width_);
      case 1: return fexpr(1) > 0.0f;
      case 2: return eq(Expr(i_) % 2, 0) || Expr(r_) > 0;
      case 3: return Expr(r_) < small(0, 3);
      default: return any(ints_) >= small(-1, 3);
    }
  }

  Stmt leaf() {
    switch (pick(8)) {
      case 0: return store(outi_, iexpr(2), outi_at_);
      case 1: return store(acc_, load(acc_, Expr(r_) % 4) + fexpr(1), Expr(r_) % 4);  // a reduction
      default: return store(out_, fexpr(3), out_at_);
    }
  }

  Stmt stmt(int depth) {
    if (depth == 0 || pick(5) == 0) return leaf();
    switch (pick(8)) {
      case 0: case 1: return block({stmt(depth - 1), stmt(depth - 1)});
      case 2: case 3: return if_then_else(cond(), stmt(depth - 1), pick(2) ? stmt(depth - 1) : Stmt());
      case 4: {
        Var t("t", {DType::F32, 1});
        Expr value = fexpr(2);
        floats_.push_back(t);
        Stmt body = stmt(depth - 1);
        floats_.pop_back();
        return let_stmt(t, value, body);
      }
      case 5: {  // a short inner loop accumulating into OUT
        Var k("k");
        ints_.push_back(k);
        Stmt body = pick(3) ? store(out_, load(out_, out_at_) * 0.5f + fexpr(2), out_at_) : stmt(depth - 1);
        ints_.pop_back();
        return for_loop(k, int_imm(small(-1, 1)), int_imm(small(0, 3)), pick(2) ? ForKind::Serial : ForKind::Unrolled, body);
      }
      case 6: {  // a temporary per iteration
        Buffer T("T", DType::F32);
        Var k("k");
        Stmt fill = for_loop(k, int_imm(0), int_imm(3), ForKind::Serial, store(T, fexpr(2) + cast({DType::F32, 1}, Expr(k)), Expr(k)));
        return allocate(T, int_imm(3), block({fill, store(out_, load(T, int_imm(small(0, 2))) + load(T, Expr(r_) % 3), out_at_)}));
      }
      default: {
        Var t("t");
        Expr value = in_index(1);
        ints_.push_back(t);
        Stmt body = stmt(depth - 1);
        ints_.pop_back();
        return let_stmt(t, value, body);
      }
    }
  }

  std::mt19937_64 rng_;
  std::mt19937 rng32_{77};
  int64_t rows_ = 1, width_ = 1;
  Buffer in_, ini_, idx_, out_, outi_, acc_;
  Var r_, i_;
  Expr out_at_, outi_at_;
  std::vector<Expr> ints_, floats_;
};

TEST(LoopVectorizeRandom, VectorizingPreservesSemantics) {
  ProgramGen g(20250301);
  int wide = 0, vectorized = 0;
  for (int n = 0; n < 300; ++n) {
    SCOPED_TRACE("program " + std::to_string(n));
    ProgramGen::Program p = g.make(ForKind::Vectorized);
    Kernel v = vectorize_loops(p.kernel);
    ASSERT_EQ(count_loops(v.body, ForKind::Vectorized), 0) << to_string(v);
    if (p.width > 1) {
      ++wide;
      vectorized += !has_loop(v.body, p.i);
    }
    expect_same_results(p.kernel, v, p.args);
    if (HasFatalFailure()) return;
  }
  // Most programs are vectorizable; the rest exercise the serial fallback.
  EXPECT_GT(vectorized, wide / 3) << vectorized << " of " << wide;
  EXPECT_LT(vectorized, wide) << vectorized << " of " << wide;
}

TEST(LoopVectorizeRandom, UnrollingAndBothPassesPreserveSemantics) {
  ProgramGen g(777);
  for (int n = 0; n < 120; ++n) {
    SCOPED_TRACE("program " + std::to_string(n));
    ProgramGen::Program p = g.make(n % 2 ? ForKind::Unrolled : ForKind::Vectorized);
    Kernel u = unroll_loops(p.kernel);
    EXPECT_EQ(count_loops(u.body, ForKind::Unrolled), 0) << to_string(u);
    expect_same_results(p.kernel, u, p.args);
    expect_same_results(p.kernel, vectorize_loops(u), p.args);
    expect_same_results(p.kernel, unroll_loops(vectorize_loops(p.kernel)), p.args);
    if (HasFatalFailure()) return;
  }
}

// --- the JIT on vectorized random programs -------------------------------------------------

// One suite with test_loop_vectorize.cpp's JIT tests, which instantiates it.
TEST_P(LoopVectorizeJit, RandomPrograms) {
  ProgramGen g(4242);
  int compiled = 0;
  for (int n = 0; n < 200 && compiled < 8; ++n) {
    ProgramGen::Program p = g.make(ForKind::Vectorized);
    Kernel v = vectorize_loops(p.kernel);
    if (p.width < 4 || has_loop(v.body, p.i)) continue;
    SCOPED_TRACE("program " + std::to_string(n));
    ++compiled;
    expect_jit_matches_original(p.kernel, v, p.args);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(compiled, 8);
}

}  // namespace
}  // namespace tessera::loop
