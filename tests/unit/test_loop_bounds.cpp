// Interval analysis of integer loop-IR expressions.
#include <gtest/gtest.h>

#include "loop/bounds.h"

namespace tessera::loop {
namespace {

TEST(LoopBounds, AffineIndexExpressions) {
  Var i("i"), j("j");
  VarBounds b{{i.node(), {0, 127}}, {j.node(), {0, 15}}};
  EXPECT_EQ(bounds_of(i * 16 + j, b), (Interval{0, 2047}));
  EXPECT_EQ(bounds_of(i - j, b), (Interval{-15, 127}));
  EXPECT_EQ(bounds_of(i * -2, b), (Interval{-254, 0}));
  EXPECT_EQ(bounds_of(int_imm(5), b), Interval::single(5));
  EXPECT_EQ(bounds_of(i * j, b), (Interval{0, 127 * 15}));
}

TEST(LoopBounds, FloorDivisionAndModulo) {
  Var i("i"), x("x"), d("d");
  VarBounds b{{i.node(), {0, 127}}, {d.node(), {-3, 4}}};
  EXPECT_EQ(bounds_of(i / 16, b), (Interval{0, 7}));
  EXPECT_EQ(bounds_of((i - 64) / 16, b), (Interval{-4, 3}));
  EXPECT_EQ(bounds_of(i / -16, b), (Interval{-8, 0}));
  EXPECT_EQ(bounds_of(i % 16, b), (Interval{0, 15}));
  EXPECT_EQ(bounds_of((i - 64) % 16, b), (Interval{0, 15}));
  EXPECT_EQ(bounds_of(i % 200, b), (Interval{0, 127}));
  EXPECT_EQ(bounds_of(i % -16, b), (Interval{-15, 0}));
  EXPECT_EQ(bounds_of(x % 8, b), (Interval{0, 7}));  // x unknown
  EXPECT_EQ(bounds_of(i / d, b), (Interval{-127, 127}));  // divisor may be 0 or +-1
  EXPECT_EQ(bounds_of(i % d, b), (Interval{-2, 3}));
}

TEST(LoopBounds, MinMaxSelectAndLet) {
  Var i("i"), j("j"), t("t");
  VarBounds b{{i.node(), {0, 127}}, {j.node(), {0, 15}}};
  EXPECT_EQ(bounds_of(min(i, 10), b), (Interval{0, 10}));
  EXPECT_EQ(bounds_of(max(i - 100, 0), b), (Interval{0, 27}));
  EXPECT_EQ(bounds_of(select(i < 3, i, j + 200), b), (Interval{0, 215}));
  EXPECT_EQ(bounds_of(let(t, j * 2, t + 1), b), (Interval{1, 31}));
  EXPECT_EQ(bounds_of(i < 3, b), (Interval{0, 1}));
}

TEST(LoopBounds, VectorsCastsAndTypes) {
  Var i("i");
  VarBounds b{{i.node(), {0, 127}}};
  EXPECT_EQ(bounds_of(ramp(i * 8, int_imm(1), 8), b), (Interval{0, 1023}));
  EXPECT_EQ(bounds_of(ramp(i, int_imm(-2), 4), b), (Interval{-6, 127}));
  EXPECT_EQ(bounds_of(broadcast(i + 1, 4), b), (Interval{1, 128}));
  Type i32{DType::I32, 1}, u8{DType::U8, 1};
  EXPECT_EQ(bounds_of(cast(i32, i), b), (Interval{0, 127}));
  EXPECT_EQ(bounds_of(cast(u8, i * 4), b), (Interval{0, 255}));  // would wrap
  Buffer A("A", DType::I8);
  EXPECT_EQ(bounds_of(load(A, i), b), (Interval{-128, 127}));
  Var small("s", u8);
  EXPECT_EQ(bounds_of(small + int_imm(1, u8)), (Interval{0, 255}));  // u8 arithmetic wraps
  Var x("x");
  EXPECT_EQ(bounds_of(x), Interval::everything());
  EXPECT_EQ(bounds_of(x + 1).to_string(), "[-inf, inf]");
  EXPECT_EQ(bounds_of(max(x, 3)).to_string(), "[3, inf]");
  EXPECT_EQ(bounds_of(x / 4).to_string(), "[-inf, inf]");
}

}  // namespace
}  // namespace tessera::loop
