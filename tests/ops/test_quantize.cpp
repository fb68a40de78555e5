// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear on hand-computed
// cases (the per-tensor ones are the ONNX spec's examples).
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
template <class T>
Tensor t(Dims d, std::vector<T> v) { return Tensor::from<T>(std::move(d), v); }
Attribute ai(int64_t v) { return Attribute::of_int(v); }
}  // namespace

TEST(Quantize, PerTensorRoundsHalfToEvenAndSaturates) {
  Tensor x = f32({6}, {0, 2, 3, 1000, -254, -1000});
  auto out = run_op({.op = "QuantizeLinear", .inputs = {x, f32({}, {2}), t<uint8_t>({}, {128})}});
  // 3 / 2 = 1.5 rounds to 2; 1000 / 2 + 128 saturates to 255.
  expect_near(out[0], t<uint8_t>({6}, {128, 129, 130, 255, 1, 0}));
  auto i8 = run_op({.op = "QuantizeLinear", .inputs = {f32({4}, {2.5f, -2.5f, 300, 0.4f}), f32({}, {1}),
                                                        t<int8_t>({}, {0})}});
  expect_near(i8[0], t<int8_t>({4}, {2, -2, 127, 0}));
  // Without a zero point the output is uint8.
  auto u8 = run_op({.op = "QuantizeLinear", .inputs = {f32({2}, {-1, 7}), f32({}, {0.5f})}});
  expect_near(u8[0], t<uint8_t>({2}, {0, 14}));
}

TEST(Quantize, PerAxisAndBlocked) {
  auto axis = run_op({.op = "QuantizeLinear",
                      .inputs = {f32({2, 2}, {-3.5f, 2.5f, 4, 5}), f32({2}, {1, 2}), t<int8_t>({2}, {0, -1})},
                      .attrs = {{"axis", ai(0)}}});
  expect_near(axis[0], t<int8_t>({2, 2}, {-4, 2, 1, 1}));
  auto blocked = run_op({.op = "QuantizeLinear",
                         .inputs = {f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), f32({2, 2}, {1, 2, 1, 4}),
                                    t<uint16_t>({2, 2}, {0, 0, 10, 100})},
                         .attrs = {{"axis", ai(1)}, {"block_size", ai(2)}},
                         .opset = 21});
  // Row 0: blocks scaled by 1 and 2; row 1: by 1 (+10) and 4 (+100).
  expect_near(blocked[0], t<uint16_t>({2, 4}, {1, 2, 2, 2, 15, 16, 102, 102}));
  auto typed = run_op({.op = "QuantizeLinear", .inputs = {f32({2}, {-40000, 40000}), f32({}, {1})},
                       .attrs = {{"output_dtype", ai(static_cast<int64_t>(DType::I16))}}, .opset = 23});
  expect_near(typed[0], t<int16_t>({2}, {-32768, 32767}));
}

TEST(Quantize, BadScalesThrow) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {x, f32({2}, {1, 1})}}), Error);  // axis 1 has 3
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {x, f32({2, 1}, {1, 1})},
                       .attrs = {{"axis", ai(1)}, {"block_size", ai(2)}}, .opset = 21}),
               Error);  // needs ceil(3 / 2) = 2 blocks
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {x, f32({}, {1}), f32({}, {0})}}), Error);
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {x, f32({3}, {1, 1, 1})}, .attrs = {{"axis", ai(5)}}}),
               Error);
}

TEST(Quantize, DequantizeLinear) {
  auto out = run_op({.op = "DequantizeLinear",
                     .inputs = {t<uint8_t>({4}, {0, 3, 128, 255}), f32({}, {2}), t<uint8_t>({}, {128})}});
  expect_near(out[0], f32({4}, {-256, -250, 0, 254}));
  auto i32 = run_op({.op = "DequantizeLinear", .inputs = {t<int32_t>({2}, {-4, 10}), f32({}, {0.5f})}});
  expect_near(i32[0], f32({2}, {-2, 5}));
  auto axis = run_op({.op = "DequantizeLinear",
                      .inputs = {t<int8_t>({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 10}), t<int8_t>({2}, {0, 1})},
                      .attrs = {{"axis", ai(0)}}});
  expect_near(axis[0], f32({2, 2}, {1, 2, 20, 30}));
  auto blocked = run_op({.op = "DequantizeLinear",
                         .inputs = {t<int16_t>({1, 3}, {1, 2, 3}), f32({1, 2}, {2, 3})},
                         .attrs = {{"axis", ai(1)}, {"block_size", ai(2)}}, .opset = 21});
  expect_near(blocked[0], f32({1, 3}, {2, 4, 9}));
  auto half = run_op({.op = "DequantizeLinear",
                      .inputs = {t<uint8_t>({1}, {3}), Tensor::from<Half>({}, {Half(0.5f)})}, .opset = 19});
  expect_near(half[0], Tensor::from<Half>({1}, {Half(1.5f)}), 0, 0);
  EXPECT_THROW(run_op({.op = "DequantizeLinear", .inputs = {f32({1}, {1}), f32({}, {1})}}), Error);
  EXPECT_THROW(run_op({.op = "DequantizeLinear",
                       .inputs = {t<uint8_t>({1}, {1}), f32({}, {1}), t<int8_t>({}, {0})}}),
               Error);
}

TEST(Quantize, InferenceWithUnknownDims) {
  Graph g;
  g.opset = 21;
  Value* x = g.add_input("x", {DType::F32, {-1, 4}, true});
  Value* s = g.add_input("s", {DType::F32, {-1}, true});
  Value* zp = g.add_input("zp", {DType::I8, {-1}, true});
  g.add_node("QuantizeLinear", {x, s, zp}, {"q"});
  g.add_node("DequantizeLinear", {g.find_value("q"), s, zp}, {"d"});
  g.add_node("DynamicQuantizeLinear", {x}, {"y", "ys", "yz"});
  infer_graph(g);
  EXPECT_EQ(g.find_value("q")->type.to_string(), "i8[?x4]");
  EXPECT_EQ(g.find_value("d")->type.to_string(), "f32[?x4]");
  EXPECT_EQ(g.find_value("y")->type.to_string(), "u8[?x4]");
  EXPECT_EQ(g.find_value("ys")->type.rank(), 0);
}

TEST(Quantize, DynamicQuantizeLinearSpecExample) {
  auto out = run_op({.op = "DynamicQuantizeLinear", .inputs = {f32({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f})},
                     .num_outputs = 3});
  // scale = (2 - -3) / 255, zero point = round(3 / scale) = 153.
  expect_near(out[0], t<uint8_t>({6}, {153, 255, 0, 26, 221, 179}));
  expect_near(out[1], f32({}, {0.0196078438f}));
  expect_near(out[2], t<uint8_t>({}, {153}));
  // All-positive input: the range still includes 0, so the zero point is 0.
  auto pos = run_op({.op = "DynamicQuantizeLinear", .inputs = {f32({3}, {1, 2.55f, 0.5f})}, .num_outputs = 3});
  expect_near(pos[0], t<uint8_t>({3}, {100, 255, 50}));
  expect_near(pos[2], t<uint8_t>({}, {0}));
  auto zeros = run_op({.op = "DynamicQuantizeLinear", .inputs = {f32({2}, {0, 0})}, .num_outputs = 3});
  expect_near(zeros[0], t<uint8_t>({2}, {0, 0}));
  expect_near(zeros[1], f32({}, {0}));
  EXPECT_THROW(run_op({.op = "DynamicQuantizeLinear", .inputs = {i64({1}, {1})}, .num_outputs = 3}), Error);
}

}  // namespace tessera::testing
