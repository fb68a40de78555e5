// Conv and ConvTranspose on hand-computed cases (and the ONNX spec examples).
#include <numeric>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Tensor iota_f32(Dims d, float start = 0) {
  std::vector<float> v(static_cast<size_t>(numel_of(d)));
  std::iota(v.begin(), v.end(), start);
  return f32(std::move(d), v);
}
Tensor ones_f32(Dims d) { return f32(d, std::vector<float>(static_cast<size_t>(numel_of(d)), 1.0f)); }

// Output type of a one-node graph whose inputs have the given (possibly unknown) types.
TensorType infer_with(const std::string& op, const std::vector<TensorType>& ins, AttrMap attrs) {
  return infer_types(op, ins, std::move(attrs))[0];
}
}  // namespace

TEST(NnConv, SpecExampleWithAndWithoutPadding) {
  auto padded = run_op({.op = "Conv", .inputs = {iota_f32({1, 1, 5, 5}), ones_f32({1, 1, 3, 3})},
                        .attrs = {{"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  expect_near(padded[0], f32({1, 1, 5, 5}, {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81,
                                            93, 144, 153, 162, 111, 72, 111, 117, 123, 84}));
  auto valid = run_op({.op = "Conv", .inputs = {iota_f32({1, 1, 5, 5}), ones_f32({1, 1, 3, 3})}});
  expect_near(valid[0], f32({1, 1, 3, 3}, {54, 63, 72, 99, 108, 117, 144, 153, 162}));
}

TEST(NnConv, StridesAndPadding) {
  auto out = run_op({.op = "Conv", .inputs = {iota_f32({1, 1, 7, 5}), ones_f32({1, 1, 3, 3})},
                     .attrs = {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"strides", Attribute::of_ints({2, 2})}}});
  expect_near(out[0], f32({1, 1, 4, 3}, {12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124}));
}

TEST(NnConv, GroupedDilated1DWithBias) {
  Tensor x = f32({1, 2, 5}, {1, 2, 3, 4, 5, 10, 20, 30, 40, 50});
  Tensor w = f32({2, 1, 2}, {1, -1, 2, 1});
  auto out = run_op({.op = "Conv", .inputs = {x, w, f32({2}, {100, 0})},
                     .attrs = {{"group", Attribute::of_int(2)}, {"dilations", Attribute::of_ints({2})}}});
  // ch0: x[o] - x[o+2] + 100; ch1: 2*x[o] + x[o+2].
  expect_near(out[0], f32({1, 2, 3}, {98, 98, 98, 50, 80, 110}));
}

TEST(NnConv, AutoPadSameUpperAndLower) {
  Tensor x = f32({1, 1, 4}, {1, 2, 3, 4});
  Tensor w = f32({1, 1, 2}, {1, 10});
  auto upper = run_op({.op = "Conv", .inputs = {x, w}, .attrs = {{"auto_pad", Attribute::of_string("SAME_UPPER")}}});
  expect_near(upper[0], f32({1, 1, 4}, {21, 32, 43, 4}));  // extra pad at the end
  auto lower = run_op({.op = "Conv", .inputs = {x, w}, .attrs = {{"auto_pad", Attribute::of_string("SAME_LOWER")}}});
  expect_near(lower[0], f32({1, 1, 4}, {10, 21, 32, 43}));  // extra pad at the start
  auto valid = run_op({.op = "Conv", .inputs = {x, w}, .attrs = {{"auto_pad", Attribute::of_string("VALID")},
                                                                  {"pads", Attribute::of_ints({5, 5})}}});
  expect_near(valid[0], f32({1, 1, 3}, {21, 32, 43}));
}

TEST(NnConv, ThreeDimensionalAndDoublePrecision) {
  auto out = run_op({.op = "Conv", .inputs = {iota_f32({1, 1, 2, 2, 2}, 1), ones_f32({1, 1, 2, 2, 2})}});
  expect_near(out[0], f32({1, 1, 1, 1, 1}, {36}));
  Tensor xd = Tensor::from<double>({1, 1, 3}, {0.5, 1.5, 2.5});
  Tensor wd = Tensor::from<double>({1, 1, 2}, {2, 4});
  auto od = run_op({.op = "Conv", .inputs = {xd, wd}});
  expect_near(od[0], Tensor::from<double>({1, 1, 2}, {7, 13}));
}

TEST(NnConv, InferencePropagatesUnknownDims) {
  TensorType y = infer_with("Conv", {{DType::F32, {-1, 3, 8, -1}}, {DType::F32, {4, 3, 3, 3}}},
                            {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"strides", Attribute::of_ints({2, 2})}});
  EXPECT_EQ(y.to_string(), TensorType({DType::F32, {-1, 4, 4, -1}}).to_string());
}

TEST(NnConv, FlopsCountMultiplyAdds) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {1, 2, 5, 5}});
  Value* w = g.add_input("w", {DType::F32, {4, 2, 3, 3}});
  Node* n = g.add_node("Conv", {x, w}, {"y"}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
  infer_graph(g);
  EXPECT_DOUBLE_EQ(node_flops(*n), 2.0 * 4 * 2 * 9 * 25);
}

TEST(NnConv, RejectsBadInputs) {
  EXPECT_THROW(run_op({.op = "Conv", .inputs = {iota_f32({1, 2, 4, 4}), ones_f32({1, 3, 3, 3})}}), Error);
  EXPECT_THROW(run_op({.op = "Conv", .inputs = {iota_f32({1, 1, 2, 2}), ones_f32({1, 1, 3, 3})}}), Error);
  EXPECT_THROW(run_op({.op = "Conv", .inputs = {iota_f32({1, 1, 4, 4}), ones_f32({1, 1, 3, 3})},
                       .attrs = {{"auto_pad", Attribute::of_string("SAME")}}}),
               Error);
  EXPECT_THROW(run_op({.op = "Conv", .inputs = {iota_f32({1, 1, 4, 4}), ones_f32({1, 1, 3, 3})},
                       .attrs = {{"strides", Attribute::of_ints({0, 1})}}}),
               Error);
}

TEST(NnConvTranspose, SpecExample1D) {
  auto out = run_op({.op = "ConvTranspose", .inputs = {f32({1, 1, 3}, {0, 1, 2}), ones_f32({1, 2, 3})}});
  expect_near(out[0], f32({1, 2, 5}, {0, 1, 3, 3, 2, 0, 1, 3, 3, 2}));
}

TEST(NnConvTranspose, StridesPadsOutputPaddingAndShape) {
  Tensor x = f32({1, 1, 2}, {1, 2});
  Tensor w = f32({1, 1, 3}, {1, 2, 3});
  auto plain = run_op({.op = "ConvTranspose", .inputs = {x, w}, .attrs = {{"strides", Attribute::of_ints({2})}}});
  expect_near(plain[0], f32({1, 1, 5}, {1, 2, 5, 4, 6}));
  auto pads = run_op({.op = "ConvTranspose", .inputs = {x, w},
                      .attrs = {{"strides", Attribute::of_ints({2})}, {"pads", Attribute::of_ints({1, 1})}}});
  expect_near(pads[0], f32({1, 1, 3}, {2, 5, 4}));
  auto outpad = run_op({.op = "ConvTranspose", .inputs = {x, w},
                        .attrs = {{"strides", Attribute::of_ints({2})}, {"output_padding", Attribute::of_ints({1})}}});
  expect_near(outpad[0], f32({1, 1, 6}, {1, 2, 5, 4, 6, 0}));
  auto shape = run_op({.op = "ConvTranspose", .inputs = {x, w, f32({1}, {10})},
                       .attrs = {{"strides", Attribute::of_ints({2})}, {"output_shape", Attribute::of_ints({6})}}});
  expect_near(shape[0], f32({1, 1, 6}, {11, 12, 15, 14, 16, 10}));
}

TEST(NnConvTranspose, AutoPadAndGroups) {
  Tensor x = f32({1, 1, 2}, {1, 2});
  Tensor w = f32({1, 1, 3}, {1, 2, 3});
  auto upper = run_op({.op = "ConvTranspose", .inputs = {x, w},
                       .attrs = {{"strides", Attribute::of_ints({2})}, {"auto_pad", Attribute::of_string("SAME_UPPER")}}});
  expect_near(upper[0], f32({1, 1, 4}, {1, 2, 5, 4}));
  auto lower = run_op({.op = "ConvTranspose", .inputs = {x, w},
                       .attrs = {{"strides", Attribute::of_ints({2})}, {"auto_pad", Attribute::of_string("SAME_LOWER")}}});
  expect_near(lower[0], f32({1, 1, 4}, {2, 5, 4, 6}));
  auto grouped = run_op({.op = "ConvTranspose", .inputs = {f32({1, 2, 1}, {1, 2}), f32({2, 1, 2}, {1, 1, 3, 4})},
                         .attrs = {{"group", Attribute::of_int(2)}}});
  expect_near(grouped[0], f32({1, 2, 2}, {1, 1, 6, 8}));
}

TEST(NnConvTranspose, RejectsChannelMismatch) {
  EXPECT_THROW(run_op({.op = "ConvTranspose", .inputs = {f32({1, 2, 1}, {1, 2}), ones_f32({1, 1, 2})}}), Error);
}

}  // namespace tessera::testing
