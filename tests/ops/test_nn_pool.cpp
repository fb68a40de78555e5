// MaxPool, AveragePool, LpPool, global pools and MaxUnpool on hand-computed cases.
#include <numeric>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Tensor iota_f32(Dims d, float start) {
  std::vector<float> v(static_cast<size_t>(numel_of(d)));
  std::iota(v.begin(), v.end(), start);
  return f32(std::move(d), v);
}
AttrMap kernel(std::vector<int64_t> k, AttrMap extra = {}) {
  extra["kernel_shape"] = Attribute::of_ints(std::move(k));
  return extra;
}
}  // namespace

TEST(NnPool, MaxPoolWithIndicesBothStorageOrders) {
  Tensor x = iota_f32({1, 1, 4, 4}, 1);
  auto row = run_op({.op = "MaxPool", .inputs = {x}, .attrs = kernel({2, 2}, {{"strides", Attribute::of_ints({2, 2})}}),
                     .num_outputs = 2});
  expect_near(row[0], f32({1, 1, 2, 2}, {6, 8, 14, 16}));
  EXPECT_EQ(row[1].to_int_vector(), (std::vector<int64_t>{5, 7, 13, 15}));
  auto col = run_op({.op = "MaxPool", .inputs = {x},
                     .attrs = kernel({2, 2}, {{"strides", Attribute::of_ints({2, 2})}, {"storage_order", Attribute::of_int(1)}}),
                     .num_outputs = 2});
  EXPECT_EQ(col[1].to_int_vector(), (std::vector<int64_t>{5, 13, 7, 15}));
}

TEST(NnPool, MaxPoolCeilModeDilationsAndAutoPad) {
  Tensor x = f32({1, 1, 5}, {1, 3, 2, 5, 4});
  auto fl = run_op({.op = "MaxPool", .inputs = {x}, .attrs = kernel({2}, {{"strides", Attribute::of_ints({2})}})});
  expect_near(fl[0], f32({1, 1, 2}, {3, 5}));
  auto ce = run_op({.op = "MaxPool", .inputs = {x},
                    .attrs = kernel({2}, {{"strides", Attribute::of_ints({2})}, {"ceil_mode", Attribute::of_int(1)}})});
  expect_near(ce[0], f32({1, 1, 3}, {3, 5, 4}));
  auto dil = run_op({.op = "MaxPool", .inputs = {x}, .attrs = kernel({2}, {{"dilations", Attribute::of_ints({2})}})});
  expect_near(dil[0], f32({1, 1, 3}, {2, 5, 4}));
  Tensor y = f32({1, 1, 3}, {1, 2, 3});
  auto up = run_op({.op = "MaxPool", .inputs = {y}, .attrs = kernel({2}, {{"auto_pad", Attribute::of_string("SAME_UPPER")}})});
  expect_near(up[0], f32({1, 1, 3}, {2, 3, 3}));
  auto lo = run_op({.op = "MaxPool", .inputs = {y}, .attrs = kernel({2}, {{"auto_pad", Attribute::of_string("SAME_LOWER")}})});
  expect_near(lo[0], f32({1, 1, 3}, {1, 2, 3}));
}

TEST(NnPool, MaxPoolInt8) {
  auto out = run_op({.op = "MaxPool", .inputs = {Tensor::from<int8_t>({1, 1, 1, 3}, {-5, -2, -9})}, .attrs = kernel({1, 2})});
  EXPECT_EQ(out[0].dtype(), DType::I8);
  EXPECT_EQ(out[0].to_int_vector(), (std::vector<int64_t>{-2, -2}));
}

TEST(NnPool, AveragePoolCountIncludePad) {
  Tensor x = f32({1, 1, 3}, {1, 2, 3});
  auto ex = run_op({.op = "AveragePool", .inputs = {x}, .attrs = kernel({2}, {{"pads", Attribute::of_ints({1, 1})}})});
  expect_near(ex[0], f32({1, 1, 4}, {1, 1.5f, 2.5f, 3}));
  auto in = run_op({.op = "AveragePool", .inputs = {x},
                    .attrs = kernel({2}, {{"pads", Attribute::of_ints({1, 1})}, {"count_include_pad", Attribute::of_int(1)}})});
  expect_near(in[0], f32({1, 1, 4}, {0.5f, 1.5f, 2.5f, 1.5f}));
  auto sq = run_op({.op = "AveragePool", .inputs = {f32({1, 1, 2, 2}, {1, 2, 3, 4})}, .attrs = kernel({2, 2})});
  expect_near(sq[0], f32({1, 1, 1, 1}, {2.5f}));
}

TEST(NnPool, LpPool) {
  auto p2 = run_op({.op = "LpPool", .inputs = {f32({1, 1, 2}, {3, -4})}, .attrs = kernel({2})});
  expect_near(p2[0], f32({1, 1, 1}, {5}));
  auto p1 = run_op({.op = "LpPool", .inputs = {f32({1, 1, 2}, {3, -4})}, .attrs = kernel({2}, {{"p", Attribute::of_int(1)}})});
  expect_near(p1[0], f32({1, 1, 1}, {7}));
}

TEST(NnPool, GlobalPools) {
  Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, 0, 0, 0, 8});
  expect_near(run_op({.op = "GlobalAveragePool", .inputs = {x}})[0], f32({1, 2, 1, 1}, {2.5f, 2}));
  expect_near(run_op({.op = "GlobalMaxPool", .inputs = {x}})[0], f32({1, 2, 1, 1}, {4, 8}));
  expect_near(run_op({.op = "GlobalLpPool", .inputs = {f32({1, 1, 2}, {3, 4})}})[0], f32({1, 1, 1}, {5}));
}

TEST(NnPool, MaxUnpoolDefaultAndExplicitShape) {
  Tensor x = f32({1, 1, 2, 2}, {5, 6, 7, 8});
  Tensor idx = i64({1, 1, 2, 2}, {5, 7, 13, 15});
  AttrMap a = kernel({2, 2}, {{"strides", Attribute::of_ints({2, 2})}});
  auto d = run_op({.op = "MaxUnpool", .inputs = {x, idx}, .attrs = a});
  std::vector<float> want(16, 0);
  want[5] = 5, want[7] = 6, want[13] = 7, want[15] = 8;
  expect_near(d[0], f32({1, 1, 4, 4}, want));
  // A larger output keeps each value's (row, column).
  auto big = run_op({.op = "MaxUnpool", .inputs = {x, idx, i64({4}, {1, 1, 5, 5})}, .attrs = a, .constant_inputs = {2}});
  std::vector<float> want5(25, 0);
  want5[6] = 5, want5[8] = 6, want5[16] = 7, want5[18] = 8;
  expect_near(big[0], f32({1, 1, 5, 5}, want5));
  EXPECT_THROW(run_op({.op = "MaxUnpool", .inputs = {x, i64({1, 1, 2, 2}, {0, 1, 2, 16})}, .attrs = a}), Error);
}

TEST(NnPool, RejectsBadAttributes) {
  Tensor x = f32({1, 1, 2}, {1, 2});
  EXPECT_THROW(run_op({.op = "MaxPool", .inputs = {x}}), Error);                    // no kernel_shape
  EXPECT_THROW(run_op({.op = "MaxPool", .inputs = {x}, .attrs = kernel({3})}), Error);  // window too large
  EXPECT_THROW(run_op({.op = "AveragePool", .inputs = {x}, .attrs = kernel({1, 1})}), Error);
}

TEST(NnPool, InferenceKeepsUnknownDims) {
  auto t = infer_types("MaxPool", {{DType::F32, {-1, 8, 9, -1}}},
                       kernel({3, 3}, {{"strides", Attribute::of_ints({2, 2})}, {"ceil_mode", Attribute::of_int(1)}}), 2);
  EXPECT_EQ(t[0].to_string(), TensorType({DType::F32, {-1, 8, 4, -1}}).to_string());
  EXPECT_EQ(t[1].dtype, DType::I64);
  auto s = infer_types("AveragePool", {{DType::F32, {1, 2, 7}}},
                       kernel({2}, {{"strides", Attribute::of_ints({2})}, {"auto_pad", Attribute::of_string("SAME_UPPER")}}));
  EXPECT_EQ(s[0].to_string(), TensorType({DType::F32, {1, 2, 4}}).to_string());
}

}  // namespace tessera::testing
