// Reduce* ops compiled and checked against the reference on random shapes,
// axes, keepdims and opset variants (axes attribute / axes input).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

const char* kReduceOps[] = {"ReduceSum", "ReduceMean", "ReduceMax",       "ReduceMin",      "ReduceProd",
                            "ReduceL1",  "ReduceL2",   "ReduceLogSum",    "ReduceLogSumExp", "ReduceSumSquare"};

// Axes input from opset 13 for ReduceSum, 18 for the others.
bool axes_as_input(const std::string& op, int64_t opset) { return opset >= 18 || (op == "ReduceSum" && opset >= 13); }

std::vector<int64_t> random_axes(int rank, std::mt19937& rng, bool negative) {
  std::vector<int64_t> axes;
  for (int d = 0; d < rank; ++d)
    if (rng() % 2) axes.push_back(negative && rng() % 2 ? d - rank : d);
  if (axes.empty() && rank > 0) axes.push_back(static_cast<int64_t>(rng() % static_cast<unsigned>(rank)));
  std::shuffle(axes.begin(), axes.end(), rng);
  return axes;
}

OpCase reduce_case(const std::string& op, Tensor x, const std::vector<int64_t>& axes, int keep, int64_t opset,
                   int noop = -1) {
  OpCase c{op, {std::move(x)}};
  c.opset = opset;
  if (keep >= 0) c.attrs["keepdims"] = Attribute::of_int(keep);
  if (noop >= 0) c.attrs["noop_with_empty_axes"] = Attribute::of_int(noop);
  if (axes_as_input(op, opset)) {
    c.inputs.push_back(i64({static_cast<int64_t>(axes.size())}, axes));
    c.constant_inputs = {1};
  } else if (!axes.empty()) {
    c.attrs["axes"] = Attribute::of_ints(axes);
  }
  return c;
}

TEST(CompiledReduce, F32AllOps) {
  std::mt19937 rng(101);
  for (const char* op : kReduceOps)
    for (int rep = 0; rep < 4; ++rep) {
      int rank = 1 + rep % 4;
      Dims d = random_dims(rank, rng, 7);
      std::string sop = op;
      double lo = sop == "ReduceLogSum" ? 0.1 : -3, hi = sop == "ReduceProd" ? 1.5 : 3;
      Tensor x = random_tensor(DType::F32, d, rng, lo, hi);
      int64_t opset = rep % 2 ? 18 : 13;
      expect_compiled_matches(reduce_case(op, x, random_axes(rank, rng, rep == 2), rep % 3 == 1 ? 0 : 1, opset),
                              {1e-5, 1e-6});
    }
}

TEST(CompiledReduce, AllAxesAndNoop) {
  std::mt19937 rng(202);
  for (const char* op : kReduceOps) {
    Tensor x = random_tensor(DType::F32, {3, 4, 5}, rng, 0.2, 2);
    // Empty axes: every axis (default) or none (noop_with_empty_axes).
    expect_compiled_matches(reduce_case(op, x, {}, 0, 18));
    expect_compiled_matches(reduce_case(op, x, {}, 1, 18, 1));
    expect_compiled_matches(reduce_case(op, x, {}, 1, 11));
  }
}

TEST(CompiledReduce, OtherFloatTypes) {
  std::mt19937 rng(303);
  for (const char* op : kReduceOps)
    for (DType t : {DType::F16, DType::F64, DType::BF16}) {
      Dims d = random_dims(3, rng, 5);
      Tensor x = random_tensor(t, d, rng, std::string(op) == "ReduceLogSum" ? 0.1 : -2, 2);
      expect_compiled_matches(reduce_case(op, x, random_axes(3, rng, false), 1, 18),
                              t == DType::F64 ? Tolerance{1e-12, 1e-12} : Tolerance{1e-2, 1e-3});
    }
}

TEST(CompiledReduce, Integers) {
  std::mt19937 rng(404);
  for (const char* op : kReduceOps)
    for (DType t : {DType::I32, DType::I64, DType::U8, DType::I8}) {
      Dims d = random_dims(3, rng, 5);
      double lo = (t == DType::U8) ? 0 : -4;
      Tensor x = random_tensor(t, d, rng, lo, 6);
      expect_compiled_matches(reduce_case(op, x, random_axes(3, rng, true), static_cast<int>(rng() % 2), 18));
    }
}

TEST(CompiledReduce, BoolMaxMin) {
  std::mt19937 rng(505);
  for (const char* op : {"ReduceMax", "ReduceMin"})
    for (int rep = 0; rep < 3; ++rep) {
      Tensor x = random_tensor(DType::Bool, random_dims(3, rng, 4), rng, 0, 1);
      expect_compiled_matches(reduce_case(op, x, random_axes(3, rng, false), rep % 2, 18));
    }
}

TEST(CompiledReduce, NanAndInfinity) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor x = f32({3, 4}, {1, nan, 3, 2, inf, 1, nan, 0, -inf, -inf, 2, 5});
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceLogSumExp", "ReduceSum"})
    for (int64_t axis : {0, 1}) expect_compiled_matches(reduce_case(op, x, {axis}, 1, 18));
  Tensor y = f32({2, 3}, {inf, 1, 2, -inf, -inf, -inf});
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceLogSumExp"})
    expect_compiled_matches(reduce_case(op, y, {1}, 0, 18));
}

TEST(CompiledReduce, NanVectorized) {
  // Wide outputs: the NaN check runs inside the vectorized output loop.
  std::mt19937 rng(707);
  Tensor x = random_tensor(DType::F32, {3, 40}, rng);
  x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[47] = std::numeric_limits<float>::infinity();
  x.data<float>()[87] = -std::numeric_limits<float>::infinity();
  x.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[87 - 80 + 40] = std::numeric_limits<float>::infinity();
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceLogSumExp"})
    for (int keep : {0, 1}) expect_compiled_matches(reduce_case(op, x, {0}, keep, 18));
}

TEST(CompiledReduce, LargerRows) {
  std::mt19937 rng(606);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2"}) {
    expect_compiled_matches(reduce_case(op, random_tensor(DType::F32, {4, 300}, rng), {-1}, 1, 18));
    expect_compiled_matches(reduce_case(op, random_tensor(DType::F32, {40, 70}, rng), {0}, 0, 18));
  }
}

// Sums and means of up to 4096 terms add in f32 (vector-wide partial sums
// along rows, one sum per lane down columns), longer ones in double: rows of
// 15, 197, 768, 3000 and 5000, of values spread around 0 and offset by 100,
// each within the default tolerance (1e-5 relative) of the reference.
TEST(CompiledReduce, SumsAndMeansOfRowsAndColumns) {
  std::mt19937 rng(808);
  for (int64_t n : {15, 197, 768, 3000, 5000})
    for (double offset : {0.0, 100.0}) {
      Tensor rows = random_tensor(DType::F32, {3, n}, rng, offset - 4, offset + 4);
      Tensor cols = random_tensor(DType::F32, {n, 5}, rng, offset - 4, offset + 4);
      for (const char* op : {"ReduceSum", "ReduceMean"}) {
        expect_compiled_matches(reduce_case(op, rows, {-1}, 1, 18));
        expect_compiled_matches(reduce_case(op, cols, {0}, 0, 18));
      }
    }
}

}  // namespace
}  // namespace tessera::testing
