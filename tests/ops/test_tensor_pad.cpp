// Pad, CenterCropPad, Expand and Tile.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
AttrMap mode(const char* m) { return {{"mode", Attribute::of_string(m)}}; }
Tensor spec_x() { return f32({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}); }
Tensor iota_f32(Dims d) {
  Tensor t(DType::F32, d);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
}  // namespace

TEST(TensorPad, ConstantReflectEdgeSpecExamples) {
  Tensor pads = i64({4}, {0, 2, 0, 0});
  auto c = run_op({.op = "Pad", .inputs = {spec_x(), pads, f32({}, {0})}, .attrs = mode("constant")});
  expect_near(c[0], f32({3, 4}, {0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f}));
  auto r = run_op({.op = "Pad", .inputs = {spec_x(), pads}, .attrs = mode("reflect")});
  expect_near(r[0], f32({3, 4}, {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}));
  auto e = run_op({.op = "Pad", .inputs = {spec_x(), pads}, .attrs = mode("edge")});
  expect_near(e[0], f32({3, 4}, {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f}));
}

TEST(TensorPad, WrapAndLongReflect) {
  auto w = run_op({.op = "Pad", .inputs = {f32({3}, {1, 2, 3}), i64({2}, {2, 2})}, .attrs = mode("wrap"), .opset = 19});
  expect_near(w[0], f32({7}, {2, 3, 1, 2, 3, 1, 2}));
  auto r = run_op({.op = "Pad", .inputs = {f32({3}, {0, 1, 2}), i64({2}, {4, 4})}, .attrs = mode("reflect")});
  expect_near(r[0], f32({11}, {0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2}));
  EXPECT_THROW(run_op({.op = "Pad", .inputs = {f32({3}, {1, 2, 3}), i64({2}, {1, 1})}, .attrs = mode("wrap"),
                       .opset = 18}),
               Error);
}

TEST(TensorPad, ConstantValueNegativePadsAndAxes) {
  auto v = run_op({.op = "Pad", .inputs = {Tensor::from<int32_t>({2}, {1, 2}), i64({2}, {1, 1}),
                                           Tensor::from<int32_t>({}, {9})}});
  expect_near(v[0], Tensor::from<int32_t>({4}, {9, 1, 2, 9}));
  auto crop = run_op({.op = "Pad", .inputs = {iota_f32({5}), i64({2}, {-1, 1})}});
  expect_near(crop[0], f32({5}, {1, 2, 3, 4, 0}));
  auto ax = run_op({.op = "Pad", .inputs = {f32({2, 2}, {1, 2, 3, 4}), i64({2}, {1, 0}), Tensor(), i64({1}, {-1})},
                    .opset = 18});
  expect_near(ax[0], f32({2, 3}, {0, 1, 2, 0, 3, 4}));
  EXPECT_THROW(run_op({.op = "Pad", .inputs = {iota_f32({5}), i64({3}, {1, 1, 1})}}), Error);
  EXPECT_THROW(run_op({.op = "Pad", .inputs = {iota_f32({2}), i64({2}, {-2, -1})}}), Error);
}

TEST(TensorPad, PadAttributesBeforeOpset11) {
  AttrMap attrs{{"pads", Attribute::of_ints({1, 0})}, {"value", Attribute::of_float(1.5f)}};
  auto out = run_op({.op = "Pad", .inputs = {f32({2}, {7, 8})}, .attrs = attrs, .opset = 7});
  expect_near(out[0], f32({3}, {1.5f, 7, 8}));
}

TEST(TensorPad, PadInference) {
  auto t = infer_op({.op = "Pad", .inputs = {iota_f32({2, 3}), i64({4}, {1, 0, 1, 2})}, .constant_inputs = {1}});
  EXPECT_EQ(t[0].to_string(), "f32[4x5]");
  auto u = infer_op({.op = "Pad", .inputs = {iota_f32({2, 3}), i64({4}, {1, 0, 1, 2})}});
  EXPECT_EQ(u[0].to_string(), "f32[?x?]");
}

TEST(TensorPad, CenterCropPad) {
  auto both = run_op({.op = "CenterCropPad", .inputs = {iota_f32({2, 5}), i64({2}, {4, 3})}, .opset = 18,
                      .constant_inputs = {1}});
  expect_near(both[0], f32({4, 3}, {0, 0, 0, 1, 2, 3, 6, 7, 8, 0, 0, 0}));
  auto ax = run_op({.op = "CenterCropPad", .inputs = {iota_f32({2, 5}), i64({1}, {2})},
                    .attrs = {{"axes", Attribute::of_ints({-1})}}, .opset = 18});
  expect_near(ax[0], f32({2, 2}, {1, 2, 6, 7}));
  auto odd = run_op({.op = "CenterCropPad", .inputs = {f32({1}, {5}), i64({1}, {4})}, .opset = 18});
  expect_near(odd[0], f32({4}, {0, 5, 0, 0}));
  EXPECT_THROW(run_op({.op = "CenterCropPad", .inputs = {iota_f32({2, 5}), i64({1}, {4})}, .opset = 18}), Error);
}

TEST(TensorPad, ExpandBroadcasts) {
  auto a = run_op({.op = "Expand", .inputs = {f32({2, 1}, {1, 2}), i64({2}, {2, 3})}});
  expect_near(a[0], f32({2, 3}, {1, 1, 1, 2, 2, 2}));
  auto b = run_op({.op = "Expand", .inputs = {f32({3}, {1, 2, 3}), i64({2}, {2, 1})}, .constant_inputs = {1}});
  expect_near(b[0], f32({2, 3}, {1, 2, 3, 1, 2, 3}));
  auto c = run_op({.op = "Expand", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i64({1}, {3})}});
  expect_near(c[0], f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  auto t = infer_op({.op = "Expand", .inputs = {f32({3, 1}, {1, 2, 3}), i64({3}, {2, 1, 4})}});
  EXPECT_EQ(t[0].to_string(), "f32[?x3x?]");
  EXPECT_THROW(run_op({.op = "Expand", .inputs = {f32({3}, {1, 2, 3}), i64({1}, {2})}}), Error);
}

TEST(TensorPad, TileRepeats) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  auto a = run_op({.op = "Tile", .inputs = {x, i64({2}, {1, 2})}});
  expect_near(a[0], f32({2, 4}, {1, 2, 1, 2, 3, 4, 3, 4}));
  auto b = run_op({.op = "Tile", .inputs = {x, i64({2}, {2, 1})}, .constant_inputs = {1}});
  expect_near(b[0], f32({4, 2}, {1, 2, 3, 4, 1, 2, 3, 4}));
  auto t = infer_op({.op = "Tile", .inputs = {x, i64({2}, {3, 0})}, .constant_inputs = {1}});
  EXPECT_EQ(t[0].to_string(), "f32[6x0]");
  EXPECT_THROW(run_op({.op = "Tile", .inputs = {x, i64({1}, {2})}}), Error);
}

}  // namespace tessera::testing
