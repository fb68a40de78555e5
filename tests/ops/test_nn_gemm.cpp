// MatMul and Gemm on hand-computed cases.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

TEST(NnMatMul, TwoByTwo) {
  auto out = run_op({.op = "MatMul", .inputs = {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {5, 6, 7, 8})}});
  expect_near(out[0], f32({2, 2}, {19, 22, 43, 50}));
}

TEST(NnMatMul, VectorOperandsAreSqueezed) {
  auto dot = run_op({.op = "MatMul", .inputs = {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})}});
  expect_near(dot[0], f32({}, {32}));
  Tensor b = f32({2, 2, 2}, {1, 0, 0, 1, 1, 2, 3, 4});
  auto vm = run_op({.op = "MatMul", .inputs = {f32({2}, {1, 2}), b}});
  expect_near(vm[0], f32({2, 2}, {1, 2, 7, 10}));
  auto mv = run_op({.op = "MatMul", .inputs = {b, f32({2}, {1, 1})}});
  expect_near(mv[0], f32({2, 2}, {1, 1, 3, 7}));
}

TEST(NnMatMul, BroadcastsBatchDims) {
  Tensor a = f32({2, 1, 2}, {1, 2, 3, 4});
  Tensor b = f32({1, 2, 1}, {1, 1});
  auto out = run_op({.op = "MatMul", .inputs = {a, b}});
  expect_near(out[0], f32({2, 1, 1}, {3, 7}));
}

TEST(NnMatMul, IntegerAndHalf) {
  auto out = run_op({.op = "MatMul", .inputs = {Tensor::from<int32_t>({1, 2}, {1, 2}), Tensor::from<int32_t>({2, 1}, {3, 4})}});
  EXPECT_EQ(out[0].dtype(), DType::I32);
  EXPECT_EQ(out[0].data<int32_t>()[0], 11);
  auto h = run_op({.op = "MatMul", .inputs = {Tensor::from<Half>({1, 2}, {Half(1.5f), Half(2)}),
                                              Tensor::from<Half>({2, 1}, {Half(2), Half(0.25f)})}});
  expect_near(h[0], Tensor::from<Half>({1, 1}, {Half(3.5f)}));
}

TEST(NnMatMul, FlopsAndErrors) {
  Graph g;
  Value* a = g.add_input("a", {DType::F32, {2, 3}});
  Value* b = g.add_input("b", {DType::F32, {3, 4}});
  Node* n = g.add_node("MatMul", {a, b}, {"y"});
  infer_graph(g);
  EXPECT_DOUBLE_EQ(node_flops(*n), 48);
  EXPECT_THROW(run_op({.op = "MatMul", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 1}, {1, 2})}}), Error);
  EXPECT_THROW(run_op({.op = "MatMul", .inputs = {f32({2}, {1, 2}), Tensor::from<double>({2}, {1, 2})}}), Error);
}

TEST(NnGemm, TransposesAlphaBetaAndVectorBias) {
  Tensor a = f32({3, 2}, {1, 4, 2, 5, 3, 6});  // A' = [[1,2,3],[4,5,6]]
  Tensor b = f32({2, 3}, {1, 0, 1, 0, 1, 0});  // B' = [[1,0],[0,1],[1,0]]
  auto out = run_op({.op = "Gemm", .inputs = {a, b, f32({2}, {1, 2})},
                     .attrs = {{"transA", Attribute::of_int(1)}, {"transB", Attribute::of_int(1)},
                               {"alpha", Attribute::of_float(2)}, {"beta", Attribute::of_float(0.5f)}}});
  expect_near(out[0], f32({2, 2}, {8.5f, 5, 20.5f, 11}));
}

TEST(NnGemm, OptionalAndColumnBias) {
  auto none = run_op({.op = "Gemm", .inputs = {f32({1, 2}, {1, 2}), f32({2, 1}, {3, 4})}});
  expect_near(none[0], f32({1, 1}, {11}));
  auto col = run_op({.op = "Gemm", .inputs = {f32({2, 2}, {1, 0, 0, 1}), f32({2, 2}, {1, 2, 3, 4}), f32({2, 1}, {10, 20})}});
  expect_near(col[0], f32({2, 2}, {11, 12, 23, 24}));
  auto ints = run_op({.op = "Gemm", .inputs = {Tensor::from<int64_t>({1, 2}, {2, 3}), Tensor::from<int64_t>({2, 1}, {4, 5}),
                                               Tensor::from<int64_t>({}, {1})}});
  EXPECT_EQ(ints[0].data<int64_t>()[0], 24);
}

TEST(NnGemm, RejectsBadShapes) {
  EXPECT_THROW(run_op({.op = "Gemm", .inputs = {f32({2, 2}, {1, 0, 0, 1}), f32({2, 2}, {1, 2, 3, 4}), f32({3}, {1, 2, 3})}}),
               Error);
  EXPECT_THROW(run_op({.op = "Gemm", .inputs = {f32({2}, {1, 0}), f32({2, 2}, {1, 2, 3, 4})}}), Error);
}

TEST(NnMatMul, InferenceKeepsUnknownDims) {
  auto t = infer_types("MatMul", {{DType::F32, {-1, 1, 4, 3}}, {DType::F32, {5, 3, -1}}}, {});
  EXPECT_EQ(t[0].to_string(), TensorType({DType::F32, {-1, 5, 4, -1}}).to_string());
  auto g = infer_types("Gemm", {{DType::F32, {-1, 3}}, {DType::F32, {7, 3}}}, {{"transB", Attribute::of_int(1)}});
  EXPECT_EQ(g[0].to_string(), TensorType({DType::F32, {-1, 7}}).to_string());
}

}  // namespace tessera::testing
