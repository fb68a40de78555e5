// NaN propagates as in torch (torch.relu(nan) is nan, and so are clamp,
// hardsigmoid, maximum, max_pool2d, amax ...): every op that takes a max, min
// or clamp of its data gives NaN where its data is NaN, in the reference
// kernel and in the compiled kernel on every ISA the host has (the loop
// evaluator and the JIT for AVX-512 and AVX2, via expect_compiled_matches).
// ArgMax/ArgMin take NaN as the extreme, as torch does.
#include <cmath>
#include <limits>

#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Attribute af(float v) { return Attribute::of_float(v); }
Attribute ai(int64_t v) { return Attribute::of_int(v); }
Attribute ais(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// 40 values (a multiple of both vector widths plus a tail), NaN at 0, 17, 39.
Tensor with_nans(Dims dims = {40}) {
  Tensor t(DType::F32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>((i % 7) - 3) * 0.75f;
  for (int64_t i : {int64_t{0}, int64_t{17}, t.numel() - 1}) t.data<float>()[i] = kNan;
  return t;
}

// The reference gives NaN exactly where `expect_nan` says, and the compiled
// kernels agree with it on every ISA.
void expect_nan_where(const OpCase& c, const std::vector<bool>& expect_nan) {
  SCOPED_TRACE(c.op);
  Tensor y = run_op(c).at(0);
  ASSERT_EQ(y.numel(), static_cast<int64_t>(expect_nan.size()));
  for (int64_t i = 0; i < y.numel(); ++i)
    EXPECT_EQ(std::isnan(y.get_double(i)), expect_nan[static_cast<size_t>(i)]) << c.op << " element " << i;
  expect_compiled_matches(c);
}

// NaN in, NaN out, element for element (the data is the largest input; the
// others are parameters broadcast to it).
void expect_elementwise_nan(const OpCase& c) {
  const Tensor* data = &c.inputs.at(0);
  for (const Tensor& t : c.inputs)
    if (t.numel() > data->numel()) data = &t;
  const Tensor& x = *data;
  std::vector<bool> nan;
  for (int64_t i = 0; i < x.numel(); ++i) nan.push_back(std::isnan(x.get_double(i)));
  expect_nan_where(c, nan);
}

TEST(NanPropagation, Activations) {
  Tensor x = with_nans();
  for (const char* op : {"Relu", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "Softplus", "Gelu"})
    expect_elementwise_nan({op, {x}, {}, 1, 20});
  expect_elementwise_nan({"HardSwish", {x}, {}, 1, 14});
  expect_elementwise_nan({"HardSigmoid", {x}, {{"alpha", af(0.5f)}, {"beta", af(0.25f)}}});
  expect_elementwise_nan({"PRelu", {x, f32({1}, {0.25f})}, {}, 1, 17, {1}});
}

TEST(NanPropagation, ClipAndElementwiseMaxMin) {
  Tensor x = with_nans();
  // Bounds from inputs (opset 11+), one or both; from attributes before.
  expect_elementwise_nan({"Clip", {x, f32({}, {0.0f}), f32({}, {6.0f})}, {}, 1, 13, {1, 2}});
  expect_elementwise_nan({"Clip", {x, f32({}, {-1.0f})}, {}, 1, 13, {1}});
  expect_elementwise_nan({"Clip", {x}, {{"min", af(0.0f)}, {"max", af(6.0f)}}, 1, 6});
  // torch.maximum / minimum: a NaN on either side wins.
  Tensor c = f32({1}, {0.5f});
  for (const char* op : {"Max", "Min"}) {
    expect_elementwise_nan({op, {x, c}});
    expect_elementwise_nan({op, {c, x}});
  }
}

TEST(NanPropagation, PoolsAndReductions) {
  // [1, 1, 4, 10]: NaN at (0, 0), (1, 7) and (3, 9).
  Tensor x = with_nans({1, 1, 4, 10});
  // MaxPool 2x2 stride 2: windows (0, 0), (0, 3) and (1, 4) hold a NaN.
  std::vector<bool> pooled(10, false);
  pooled[0] = pooled[3] = pooled[9] = true;
  expect_nan_where({"MaxPool", {x}, {{"kernel_shape", ais({2, 2})}, {"strides", ais({2, 2})}}}, pooled);
  expect_nan_where({"GlobalMaxPool", {x}}, {true});
  // Over the rows (axis 3): rows 0, 1 and 3 hold a NaN; over the columns
  // (axis 2): columns 0, 7 and 9.
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    expect_nan_where({op, {x}, {{"axes", ais({3})}, {"keepdims", ai(0)}}, 1, 13}, {true, true, false, true});
    std::vector<bool> cols(10, false);
    cols[0] = cols[7] = cols[9] = true;
    expect_nan_where({op, {x}, {{"axes", ais({2})}, {"keepdims", ai(0)}}, 1, 13}, cols);
  }
  // ArgMax / ArgMin pick the first NaN, as torch.argmax / argmin do.
  for (const char* op : {"ArgMax", "ArgMin"}) {
    OpCase c{op, {x}, {{"axis", ai(3)}, {"keepdims", ai(0)}}, 1, 13};
    Tensor idx = run_op(c).at(0);
    EXPECT_EQ(idx.to_int_vector(), (std::vector<int64_t>{0, 7, idx.get_int(2), 9})) << op;
    expect_compiled_matches(c);
  }
}

}  // namespace
}  // namespace tessera::testing
