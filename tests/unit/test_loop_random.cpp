// Seeded random programs: simplify(p) must compute exactly what p computes,
// and simplifying again must change nothing. Expressions mix loop variables
// with known (partly negative) ranges, loaded values of unknown range, floor
// division and modulo by negative and zero divisors, selects, lets, casts,
// vectors and floats; statements nest ifs the simplifier learns ranges from,
// lets and loops that run zero, one or two times.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "loop/evaluate.h"
#include "loop/printer.h"
#include "loop/simplify.h"

namespace tessera::loop {
namespace {

// TESSERA_LOOP_RANDOM_SCALE=N runs N times as many programs (for soaking).
int scaled(int n) {
  const char* s = std::getenv("TESSERA_LOOP_RANDOM_SCALE");
  return s ? n * std::max(1, std::atoi(s)) : n;
}

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  int64_t small(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1)); }

  std::vector<Expr> leaves;  // i64 scalars: loop vars, loaded values, let vars

  Expr int_leaf() {
    if (pick(3) == 0) return int_imm(small(-9, 9));
    return leaves[static_cast<size_t>(pick(static_cast<int>(leaves.size())))];
  }

  // An i64 expression; multiplications always have a constant side so values
  // stay far from overflow.
  Expr int_expr(int depth) {
    if (depth == 0 || pick(4) == 0) return int_leaf();
    Expr a = int_expr(depth - 1);
    switch (pick(12)) {
      case 0: case 1: return a + int_expr(depth - 1);
      case 2: return a - int_expr(depth - 1);
      case 3: case 4: return a * int_imm(small(-4, 8));
      case 5: return a / int_imm(small(-5, 8));                      // includes 0 and negatives
      case 6: return a % int_imm(small(-5, 8));
      case 7: return pick(2) ? a / int_expr(depth - 1) : a % int_expr(depth - 1);  // divisor may be 0
      case 8: return pick(2) ? min(a, int_expr(depth - 1)) : max(a, int_expr(depth - 1));
      case 9: return select(bool_expr(depth - 1), a, int_expr(depth - 1));
      case 10: {
        Var t("t" + std::to_string(depth));
        leaves.push_back(t);
        Expr body = int_expr(depth - 1);
        leaves.pop_back();
        return let(t, a, body);
      }
      default: return cast(index_type(), cast({DType::I32, 1}, a));
    }
  }

  Expr bool_expr(int depth) {
    static const ExprKind kCmp[] = {ExprKind::EQ, ExprKind::NE, ExprKind::LT, ExprKind::LE, ExprKind::GT, ExprKind::GE};
    switch (pick(5)) {
      case 0: return bool_leaf(depth) && bool_leaf(depth);
      case 1: return !bool_leaf(depth) || bool_leaf(depth);
      default: return binary(kCmp[pick(6)], int_expr(depth), int_expr(depth));
    }
  }
  Expr bool_leaf(int depth) {
    static const ExprKind kCmp[] = {ExprKind::LT, ExprKind::GE, ExprKind::EQ};
    if (pick(6) == 0) return bool_imm(pick(2));
    return binary(kCmp[pick(3)], int_expr(depth / 2), int_expr(depth / 2));
  }

  // A 4-lane i64 vector built from ramps and broadcasts.
  Expr vec_expr(int depth) {
    if (depth == 0 || pick(4) == 0) {
      switch (pick(3)) {
        case 0: return ramp(int_expr(1), int_imm(small(-3, 4)), 4);
        case 1: return ramp(int_leaf() * int_imm(small(1, 4) * 4), int_imm(small(0, 2)), 4);  // aligned
        default: return broadcast(int_expr(1), 4);
      }
    }
    Expr a = vec_expr(depth - 1);
    switch (pick(7)) {
      case 0: case 1: return a + vec_expr(depth - 1);
      case 2: return a - vec_expr(depth - 1);
      case 3: return a * broadcast(int_imm(small(-3, 5)), 4);
      case 4: return a / broadcast(int_imm(small(-4, 9)), 4);
      case 5: return a % broadcast(int_imm(small(-4, 9)), 4);
      default: return select(a < vec_expr(depth - 1), a, vec_expr(depth - 1));
    }
  }

  // An f32 expression over casts of integer expressions and constants.
  Expr float_expr(int depth) {
    static const float kConsts[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 3.25f, -7.0f};
    if (depth == 0 || pick(4) == 0) {
      if (pick(2)) return float_imm(kConsts[pick(8)]);
      return cast({DType::F32, 1}, int_expr(1));
    }
    Expr a = float_expr(depth - 1);
    switch (pick(9)) {
      case 0: return a + float_expr(depth - 1);
      case 1: return a - float_expr(depth - 1);
      case 2: return a * float_expr(depth - 1);
      case 3: return a / float_expr(depth - 1);
      case 4: return pick(2) ? min(a, float_expr(depth - 1)) : max(a, float_expr(depth - 1));
      case 5: return select(a < float_expr(depth - 1), a, float_expr(depth - 1));
      case 6: return call("floor", {a});
      case 7: return a % float_expr(depth - 1);
      default: return cast({DType::F32, 1}, cast(index_type(), a));
    }
  }

  // A condition the simplifier can learn from: `v op c`, `c op v + k`, combined.
  Expr simple_cond() {
    static const ExprKind kCmp[] = {ExprKind::EQ, ExprKind::NE, ExprKind::LT, ExprKind::LE, ExprKind::GT, ExprKind::GE};
    Expr v = leaves[static_cast<size_t>(pick(static_cast<int>(leaves.size())))];
    Expr lhs = pick(2) ? v : v + int_imm(small(-3, 3));
    Expr c = int_imm(small(-4, 8));
    ExprKind k = kCmp[pick(6)];
    Expr cmp = pick(2) ? binary(k, lhs, c) : binary(k, c, lhs);
    switch (pick(6)) {
      case 0: return cmp && simple_cond();
      case 1: return cmp || simple_cond();
      case 2: return !cmp;
      default: return cmp;
    }
  }

  // Nested ifs, blocks, lets and short loops around stores to OUT[at].
  Stmt stmt(const Buffer& out, const Expr& at, int depth) {
    if (depth == 0 || pick(5) == 0) return store(out, int_expr(3), at);
    switch (pick(6)) {
      case 0: case 1: {
        Stmt then_case = stmt(out, at, depth - 1);
        return if_then_else(pick(4) ? simple_cond() : bool_leaf(2), then_case,
                            pick(2) ? stmt(out, at, depth - 1) : Stmt());
      }
      case 2: return block({stmt(out, at, depth - 1), stmt(out, at, depth - 1)});
      case 3: {
        Var t("t");
        Expr value = int_expr(2);
        leaves.push_back(t);
        Stmt body = stmt(out, at, depth - 1);
        leaves.pop_back();
        return let_stmt(t, value, body);
      }
      default: {  // runs 0, 1 or 2 times
        Var k("k");
        Expr lo = pick(2) ? int_imm(small(-2, 2)) : int_leaf();
        leaves.push_back(k);
        Stmt body = stmt(out, at, depth - 1);
        leaves.pop_back();
        return for_loop(k, lo, int_imm(small(0, 2)), ForKind::Serial, body);
      }
    }
  }

 private:
  std::mt19937_64 rng_;
};

// for (i, 0, 5) for (j, -3, 6): OUT[(i*9 + j + 3)*lanes + lane] = f(i, j, x = IN[i*9 + j + 3]).
struct Program {
  Kernel kernel;
  Tensor input;
};

constexpr int64_t kRows = 5, kCols = 9;

// make_body(OUT, index) returns the statement that fills OUT[index].
template <class MakeBody>
Program make_program(Gen& g, Type out_type, MakeBody make_body) {
  Buffer in("IN", DType::I64, {kRows * kCols});
  Buffer out("OUT", out_type.dtype, {kRows * kCols * out_type.lanes});
  Var i("i"), j("j"), x("x");
  Expr cell = i * kCols + j + 3;
  g.leaves = {i, j, x};
  Expr index = out_type.is_vector() ? ramp(cell * out_type.lanes, int_imm(1), out_type.lanes) : cell;
  Stmt fill = make_body(out, index);
  Stmt body = for_loop(i, int_imm(0), int_imm(kRows), ForKind::Serial,
                       for_loop(j, int_imm(-3), int_imm(kCols), ForKind::Serial,
                                let_stmt(x, load(in, cell), fill)));
  Program p{Kernel{"random", {in}, {out}, body}, Tensor(DType::I64, {kRows * kCols})};
  for (int64_t k = 0; k < kRows * kCols; ++k) p.input.data<int64_t>()[k] = g.small(-20, 20);
  return p;
}

// Runs p and simplify(p) and compares every output element bit for bit (NaNs match NaNs).
void check_same(const Program& p, const std::string& what) {
  Kernel simple = simplify(p.kernel);
  Buffer out = p.kernel.outputs[0];
  int64_t n = numel_of(out.dims());
  Tensor want(out.dtype(), {n}), got(out.dtype(), {n});
  run_kernel(p.kernel, {p.input, want});
  ASSERT_NO_THROW(run_kernel(simple, {p.input, got})) << what << "\n" << to_string(simple);
  Kernel twice = simplify(simple);
  EXPECT_EQ(to_string(twice), to_string(simple)) << what << ": simplify is not idempotent";
  for (int64_t k = 0; k < n; ++k) {
    double a = want.get_double(k), b = got.get_double(k);
    bool same = (a == b) || (std::isnan(a) && std::isnan(b));
    ASSERT_TRUE(same) << what << ": element " << k << " is " << b << ", want " << a << "\nbefore:\n"
                      << to_string(p.kernel) << "after:\n" << to_string(simple);
  }
}

TEST(LoopRandom, SimplifierPreservesIntegerSemantics) {
  Gen g(20240611);
  for (int n = 0; n < scaled(400); ++n) {
    Program p = make_program(g, index_type(), [&](const Buffer& o, const Expr& at) { return store(o, g.int_expr(4), at); });
    check_same(p, "int program " + std::to_string(n));
  }
}

TEST(LoopRandom, SimplifierPreservesBooleanSemantics) {
  Gen g(7);
  for (int n = 0; n < scaled(150); ++n) {
    Program p = make_program(g, bool_type(), [&](const Buffer& o, const Expr& at) { return store(o, g.bool_expr(3), at); });
    check_same(p, "bool program " + std::to_string(n));
  }
}

TEST(LoopRandom, SimplifierPreservesVectorSemantics) {
  Gen g(99);
  for (int n = 0; n < scaled(150); ++n) {
    Program p = make_program(g, {DType::I64, 4}, [&](const Buffer& o, const Expr& at) { return store(o, g.vec_expr(3), at); });
    check_same(p, "vector program " + std::to_string(n));
  }
}

TEST(LoopRandom, SimplifierPreservesFloatSemantics) {
  Gen g(1234);
  for (int n = 0; n < scaled(150); ++n) {
    Program p = make_program(g, {DType::F32, 1}, [&](const Buffer& o, const Expr& at) { return store(o, g.float_expr(3), at); });
    check_same(p, "float program " + std::to_string(n));
  }
}

TEST(LoopRandom, SimplifierPreservesStatementSemantics) {
  Gen g(31337);
  for (int n = 0; n < scaled(200); ++n) {
    Program p = make_program(g, index_type(), [&](const Buffer& o, const Expr& at) { return g.stmt(o, at, 4); });
    check_same(p, "statement program " + std::to_string(n));
  }
}

TEST(LoopRandom, SimplifierActuallySimplifies) {
  // Guard against a simplifier that does nothing: most random programs shrink.
  Gen g(5);
  int shrunk = 0;
  for (int n = 0; n < 100; ++n) {
    Program p = make_program(g, index_type(), [&](const Buffer& o, const Expr& at) { return store(o, g.int_expr(4), at); });
    if (to_string(simplify(p.kernel)).size() < to_string(p.kernel).size()) ++shrunk;
  }
  EXPECT_GT(shrunk, 50);
}

}  // namespace
}  // namespace tessera::loop
