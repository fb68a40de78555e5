// Tensor ops at opsets 1-5: Concat's default axis, Split's split input,
// Reshape's shape attribute, Pad's `paddings`, and the one-axis Tile.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Attribute ai(int64_t v) { return Attribute::of_int(v); }
Attribute af(float v) { return Attribute::of_float(v); }
Attribute ais(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
}  // namespace

TEST(TensorLegacy, ConcatAxisDefaultsToOneBeforeOpset4) {
  auto out = run_op({.op = "Concat", .inputs = {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})}, .opset = 1});
  expect_near(out[0], f32({2, 3}, {1, 3, 4, 2, 5, 6}));
  auto ax0 = run_op({.op = "Concat", .inputs = {f32({1, 2}, {1, 2}), f32({1, 2}, {3, 4})},
                     .attrs = {{"axis", ai(0)}}, .opset = 3});
  expect_near(ax0[0], f32({2, 2}, {1, 2, 3, 4}));
  EXPECT_THROW(run_op({.op = "Concat", .inputs = {f32({2, 1}, {1, 2}), f32({2, 1}, {3, 4})}, .opset = 4}), Error);
}

TEST(TensorLegacy, SplitSizesFromInputInOpset1) {
  auto out = run_op({.op = "Split", .inputs = {f32({5}, {1, 2, 3, 4, 5}), i64({2}, {2, 3})}, .num_outputs = 2,
                     .opset = 1, .constant_inputs = {1}});
  expect_near(out[0], f32({2}, {1, 2}));
  expect_near(out[1], f32({3}, {3, 4, 5}));
  // Not a constant: inference leaves the sizes unknown, the kernel still splits.
  auto dyn = run_op({.op = "Split", .inputs = {f32({3}, {1, 2, 3}), i64({2}, {1, 2})}, .num_outputs = 2, .opset = 1});
  expect_near(dyn[1], f32({2}, {2, 3}));
  auto attr = run_op({.op = "Split", .inputs = {f32({4}, {1, 2, 3, 4})}, .attrs = {{"split", ais({3, 1})}},
                      .num_outputs = 2, .opset = 1});
  expect_near(attr[0], f32({3}, {1, 2, 3}));
}

TEST(TensorLegacy, ReshapeShapeAttributeBeforeOpset5) {
  auto out = run_op({.op = "Reshape", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6})},
                     .attrs = {{"shape", ais({3, -1})}, {"consumed_inputs", ais({0})}}, .opset = 1});
  expect_near(out[0], f32({3, 2}, {1, 2, 3, 4, 5, 6}));
  auto copy = run_op({.op = "Reshape", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6})},
                      .attrs = {{"shape", ais({0, 3, 1})}}, .opset = 4});
  expect_near(copy[0], f32({2, 3, 1}, {1, 2, 3, 4, 5, 6}));
  EXPECT_THROW(run_op({.op = "Reshape", .inputs = {f32({2}, {1, 2})}, .attrs = {{"shape", ais({4})}}, .opset = 1}),
               Error);
  // From opset 5 the shape is an input and the attribute is an error.
  EXPECT_THROW(run_op({.op = "Reshape", .inputs = {f32({2}, {1, 2}), i64({1}, {2})},
                       .attrs = {{"shape", ais({2})}}, .opset = 5}),
               Error);
  EXPECT_THROW(run_op({.op = "Reshape", .inputs = {f32({2}, {1, 2}), i64({1}, {2})},
                       .attrs = {{"shape", ais({2})}}, .opset = 4}),
               Error);
}

TEST(TensorLegacy, PadPaddingsInOpset1) {
  // [x1_begin, x2_begin, x1_end, x2_end] = {0, 1, 0, 2} on a [1,2] input.
  auto out = run_op({.op = "Pad", .inputs = {f32({1, 2}, {1, 2})},
                     .attrs = {{"paddings", ais({0, 1, 0, 2})}, {"value", af(9)}}, .opset = 1});
  expect_near(out[0], f32({1, 5}, {9, 1, 2, 9, 9}));
  EXPECT_THROW(run_op({.op = "Pad", .inputs = {f32({2}, {1, 2})}, .attrs = {{"pads", ais({1, 1})}}, .opset = 1}),
               Error);
  EXPECT_THROW(run_op({.op = "Pad", .inputs = {f32({2}, {1, 2})}, .attrs = {{"paddings", ais({1, 1})}}, .opset = 2}),
               Error);
}

TEST(TensorLegacy, TileAlongOneAxisBeforeOpset6) {
  // Opset 1 typed tiles and axis like the data.
  auto out = run_op({.op = "Tile", .inputs = {f32({2, 2}, {1, 2, 3, 4}), f32({}, {2}), f32({}, {1})}, .opset = 1,
                     .constant_inputs = {1, 2}});
  expect_near(out[0], f32({2, 4}, {1, 2, 1, 2, 3, 4, 3, 4}));
  auto dyn = run_op({.op = "Tile", .inputs = {f32({1, 2}, {1, 2}), i64({}, {3}), i64({}, {0})}, .opset = 5});
  expect_near(dyn[0], f32({3, 2}, {1, 2, 1, 2, 1, 2}));
  EXPECT_THROW(run_op({.op = "Tile", .inputs = {f32({2}, {1, 2}), f32({}, {1.5f}), f32({}, {0})}, .opset = 1}), Error);
  EXPECT_THROW(run_op({.op = "Tile", .inputs = {f32({2}, {1, 2}), i64({}, {2}), i64({}, {1})}, .opset = 1}), Error);
  EXPECT_THROW(run_op({.op = "Tile", .inputs = {f32({2}, {1, 2}), i64({}, {2})}, .opset = 1}), Error);
}

}  // namespace tessera::testing
