// ArgMax / ArgMin, CumSum / CumProd and Det compiled and checked against the reference.
#include <cmath>
#include <limits>

#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

TEST(CompiledReduceArg, ArgMaxMin) {
  std::mt19937 rng(11);
  for (const char* op : {"ArgMax", "ArgMin"})
    for (int rep = 0; rep < 8; ++rep) {
      int rank = 1 + rep % 4;
      Dims d = random_dims(rank, rng, 6);
      DType t = rep % 4 == 3 ? DType::I32 : rep % 4 == 2 ? DType::F16 : DType::F32;
      // Few distinct values so ties are common.
      Tensor x = random_tensor(t, d, rng, -2, 2);
      if (is_float(t)) x = x.cast(DType::I32).cast(t);
      OpCase c{op, {x}};
      int64_t axis = static_cast<int64_t>(rng() % static_cast<unsigned>(rank));
      if (rep % 3 == 0) axis -= rank;
      c.attrs["axis"] = Attribute::of_int(axis);
      c.attrs["keepdims"] = Attribute::of_int(rep % 2);
      c.attrs["select_last_index"] = Attribute::of_int((rep / 2) % 2);
      expect_compiled_matches(c);
    }
}

TEST(CompiledReduceArg, ArgTypesAndNan) {
  std::mt19937 rng(12);
  for (DType t : {DType::F64, DType::I64, DType::U8, DType::I8, DType::BF16})
    for (const char* op : {"ArgMax", "ArgMin"}) {
      OpCase c{op, {random_tensor(t, {3, 5}, rng, 0, 4)}};
      c.attrs["axis"] = Attribute::of_int(1);
      expect_compiled_matches(c);
    }
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor x = f32({4, 4}, {1, nan, 3, nan, -inf, -inf, -inf, -inf, 2, 2, 1, 2, inf, nan, inf, -inf});
  for (const char* op : {"ArgMax", "ArgMin"})
    for (int last : {0, 1})
      for (int64_t axis : {0, 1}) {
        OpCase c{op, {x}};
        c.attrs["axis"] = Attribute::of_int(axis);
        c.attrs["select_last_index"] = Attribute::of_int(last);
        expect_compiled_matches(c);
      }
}

TEST(CompiledReduceArg, CumSumProd) {
  std::mt19937 rng(13);
  for (const char* op : {"CumSum", "CumProd"})
    for (int rep = 0; rep < 8; ++rep) {
      int rank = 1 + rep % 3;
      Dims d = random_dims(rank, rng, 6);
      DType t = rep % 4 == 1 ? DType::I32 : rep % 4 == 2 ? DType::F64 : rep % 4 == 3 ? DType::F16 : DType::F32;
      Tensor x = random_tensor(t, d, rng, std::string(op) == "CumProd" ? 0.5 : -3, std::string(op) == "CumProd" ? 1.5 : 3);
      int64_t axis = static_cast<int64_t>(rng() % static_cast<unsigned>(rank)) - (rep % 2 ? rank : 0);
      OpCase c{op, {x, rep % 2 ? i64({}, {axis}) : Tensor::from<int32_t>({1}, {static_cast<int32_t>(axis)})}};
      c.constant_inputs = {1};
      c.attrs["exclusive"] = Attribute::of_int(rep % 2);
      c.attrs["reverse"] = Attribute::of_int((rep / 2) % 2);
      expect_compiled_matches(c, t == DType::F16 ? Tolerance{1e-3, 1e-3} : Tolerance{});
    }
  OpCase big{"CumSum", {random_tensor(DType::I64, {3, 50}, rng, -100, 100), i64({}, {1})}};
  big.constant_inputs = {1};
  expect_compiled_matches(big);
}

TEST(CompiledReduceArg, Det) {
  std::mt19937 rng(14);
  for (int rep = 0; rep < 6; ++rep) {
    int64_t n = 1 + rep % 4;
    Dims d = rep % 2 ? Dims{2, 3, n, n} : Dims{n, n};
    DType t = rep == 5 ? DType::F64 : rep == 4 ? DType::F16 : DType::F32;
    expect_compiled_matches({"Det", {random_tensor(t, d, rng)}}, t == DType::F16 ? Tolerance{1e-3, 1e-3} : Tolerance{1e-5, 1e-5});
  }
  // Singular matrices and ones needing pivoting.
  expect_compiled_matches({"Det", {f32({2, 3, 3}, {1, 2, 3, 2, 4, 6, 1, 1, 1, 0, 1, 2, 1, 0, 3, 4, -3, 8})}});
  expect_compiled_matches({"Det", {f32({0, 0}, {})}});
}

}  // namespace
}  // namespace tessera::testing
