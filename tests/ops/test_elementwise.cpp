// Binary arithmetic and variadic elementwise ops on hand-computed cases.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
template <class T>
Tensor t(Dims d, std::vector<T> v) { return Tensor::from<T>(std::move(d), v); }
Attribute ai(int64_t v) { return Attribute::of_int(v); }
Attribute as(std::string v) { return Attribute::of_string(std::move(v)); }
}  // namespace

TEST(Elementwise, AddBroadcasts) {
  auto out = run_op({.op = "Add", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})}});
  expect_near(out[0], f32({2, 3}, {11, 22, 33, 14, 25, 36}));
}

TEST(Elementwise, ReluClampsNegatives) {
  auto out = run_op({.op = "Relu", .inputs = {f32({4}, {-1, 0, 2, -3})}});
  expect_near(out[0], f32({4}, {0, 0, 2, 0}));
}

TEST(Elementwise, IntegerAddSubMulWrapAround) {
  auto add = run_op({.op = "Add", .inputs = {t<int8_t>({2}, {127, -3}), t<int8_t>({2}, {1, 5})}});
  expect_near(add[0], t<int8_t>({2}, {-128, 2}));
  auto sub = run_op({.op = "Sub", .inputs = {t<uint8_t>({2}, {0, 9}), t<uint8_t>({1}, {1})}});
  expect_near(sub[0], t<uint8_t>({2}, {255, 8}));
  auto mul = run_op({.op = "Mul", .inputs = {t<int16_t>({2}, {300, -4}), t<int16_t>({2}, {200, 5})}});
  expect_near(mul[0], t<int16_t>({2}, {-5536, -20}));  // 60000 - 65536
}

TEST(Elementwise, FloatSubMulDiv) {
  auto sub = run_op({.op = "Sub", .inputs = {f32({2}, {1, 2}), f32({}, {0.5f})}});
  expect_near(sub[0], f32({2}, {0.5f, 1.5f}));
  auto mul = run_op({.op = "Mul", .inputs = {f32({2, 1}, {2, 3}), f32({2}, {4, 5})}});
  expect_near(mul[0], f32({2, 2}, {8, 10, 12, 15}));
  auto div = run_op({.op = "Div", .inputs = {f32({3}, {1, -3, 1}), f32({3}, {4, 2, 0})}});
  expect_near(div[0], f32({3}, {0.25f, -1.5f, INFINITY}));
}

TEST(Elementwise, IntegerDivTruncatesTowardZero) {
  auto out = run_op({.op = "Div", .inputs = {t<int32_t>({4}, {7, -7, 7, -7}), t<int32_t>({4}, {2, 2, -2, -2})}});
  expect_near(out[0], t<int32_t>({4}, {3, -3, -3, 3}));
  auto u = run_op({.op = "Div", .inputs = {t<uint64_t>({1}, {10}), t<uint64_t>({1}, {3})}});
  expect_near(u[0], t<uint64_t>({1}, {3}));
  EXPECT_THROW(run_op({.op = "Div", .inputs = {t<int32_t>({1}, {1}), t<int32_t>({1}, {0})}}), Error);
}

TEST(Elementwise, ModFollowsPythonOrC) {
  auto py = run_op({.op = "Mod", .inputs = {i64({4}, {-4, 4, -4, 5}), i64({4}, {3, -3, -3, 3})}});
  expect_near(py[0], i64({4}, {2, -2, -1, 2}));
  auto c = run_op({.op = "Mod", .inputs = {i64({4}, {-4, 4, -4, 5}), i64({4}, {3, -3, -3, 3})},
                   .attrs = {{"fmod", ai(1)}}});
  expect_near(c[0], i64({4}, {-1, 1, -1, 2}));
  auto ff = run_op({.op = "Mod", .inputs = {f32({2}, {-4.5f, 4.5f}), f32({1}, {2})}, .attrs = {{"fmod", ai(1)}}});
  expect_near(ff[0], f32({2}, {-0.5f, 0.5f}));
  auto fp = run_op({.op = "Mod", .inputs = {f32({2}, {-4.5f, 4.5f}), f32({1}, {2})}});
  expect_near(fp[0], f32({2}, {1.5f, 0.5f}));
  EXPECT_THROW(run_op({.op = "Mod", .inputs = {i64({1}, {3}), i64({1}, {0})}}), Error);
  EXPECT_THROW(run_op({.op = "Mod", .inputs = {i64({1}, {3}), i64({1}, {2})}, .attrs = {{"fmod", ai(2)}}}), Error);
}

TEST(Elementwise, PowMixedTypes) {
  auto fi = run_op({.op = "Pow", .inputs = {f32({3}, {2, 4, 3}), i64({3}, {3, -1, 0})}});
  expect_near(fi[0], f32({3}, {8, 0.25f, 1}));
  auto ii = run_op({.op = "Pow", .inputs = {t<int32_t>({3}, {2, -3, 5}), t<int32_t>({3}, {10, 3, 0})}});
  expect_near(ii[0], t<int32_t>({3}, {1024, -27, 1}));
  auto neg = run_op({.op = "Pow", .inputs = {i64({3}, {2, 1, -1}), i64({3}, {-1, -5, -3})}});
  expect_near(neg[0], i64({3}, {0, 1, -1}));
  auto iff = run_op({.op = "Pow", .inputs = {i64({2}, {4, 9}), f32({1}, {0.5f})}});
  expect_near(iff[0], i64({2}, {2, 3}));
  auto bc = run_op({.op = "Pow", .inputs = {f32({2, 2}, {1, 2, 3, 4}), f32({}, {2})}});
  expect_near(bc[0], f32({2, 2}, {1, 4, 9, 16}));
}

TEST(Elementwise, BitShift) {
  auto l = run_op({.op = "BitShift", .inputs = {t<uint8_t>({3}, {16, 1, 255}), t<uint8_t>({3}, {1, 7, 1})},
                   .attrs = {{"direction", as("LEFT")}}});
  expect_near(l[0], t<uint8_t>({3}, {32, 128, 254}));
  auto r = run_op({.op = "BitShift", .inputs = {t<uint32_t>({3}, {16, 4, 1}), t<uint32_t>({3}, {1, 2, 40})},
                   .attrs = {{"direction", as("RIGHT")}}});
  expect_near(r[0], t<uint32_t>({3}, {8, 1, 0}));
  EXPECT_THROW(run_op({.op = "BitShift", .inputs = {t<uint8_t>({1}, {1}), t<uint8_t>({1}, {1})},
                       .attrs = {{"direction", as("UP")}}}),
               Error);
  EXPECT_THROW(run_op({.op = "BitShift", .inputs = {t<int32_t>({1}, {1}), t<int32_t>({1}, {1})},
                       .attrs = {{"direction", as("LEFT")}}}),
               Error);
}

TEST(Elementwise, BinaryErrors) {
  EXPECT_THROW(run_op({.op = "Add", .inputs = {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}}), Error);
  EXPECT_THROW(run_op({.op = "Mul", .inputs = {f32({2}, {1, 2}), i64({2}, {1, 2})}}), Error);
  EXPECT_THROW(run_op({.op = "Add", .inputs = {t<bool>({1}, {true}), t<bool>({1}, {true})}}), Error);
}

TEST(Elementwise, BinaryInferenceKeepsUnknownDims) {
  Graph g;
  g.opset = 17;
  Value* a = g.add_input("a", {DType::F32, {-1, 3}, true});
  Value* b = g.add_input("b", {DType::F32, {3}, true});
  g.add_node("Add", {a, b}, {"y"});
  infer_graph(g);
  EXPECT_EQ(g.find_value("y")->type.to_string(), "f32[?x3]");
}

TEST(Elementwise, SumMeanMaxMin) {
  std::vector<Tensor> in = {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6}), f32({3}, {7, 8, 9})};
  expect_near(run_op({.op = "Sum", .inputs = in})[0], f32({3}, {12, 15, 18}));
  expect_near(run_op({.op = "Mean", .inputs = in})[0], f32({3}, {4, 5, 6}));
  expect_near(run_op({.op = "Sum", .inputs = {f32({2}, {1, 2})}})[0], f32({2}, {1, 2}));
  auto mx = run_op({.op = "Max", .inputs = {f32({2, 2}, {1, 5, 3, 2}), f32({2}, {4, 1})}});
  expect_near(mx[0], f32({2, 2}, {4, 5, 4, 2}));
  auto mn = run_op({.op = "Min", .inputs = {t<int32_t>({3}, {1, -5, 3}), t<int32_t>({1}, {0})}});
  expect_near(mn[0], t<int32_t>({3}, {0, -5, 0}));
  auto nan = run_op({.op = "Max", .inputs = {f32({2}, {NAN, 1}), f32({2}, {1, NAN})}});
  expect_near(nan[0], f32({2}, {NAN, NAN}));
  EXPECT_THROW(run_op({.op = "Mean", .inputs = {t<int32_t>({1}, {1}), t<int32_t>({1}, {1})}}), Error);
  EXPECT_THROW(run_op({.op = "Max", .inputs = {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}}), Error);
}

}  // namespace tessera::testing
