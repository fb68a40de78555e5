// separate_max_pools (opt/separable_max_pool.cpp): max pools whose window has
// at least twice the taps of its axes' windows (3x3x3, 1x5x5) become one
// pool per axis, chained; the others (3x3, 2x2x2, Indices, ceil_mode) stay.
// Against the interpreter on the original graph: the pass's graph bit for
// bit (NaN, +inf and -inf inputs included), and compiled (+inf and -inf) for AVX-512 and
// AVX2 with the whole pipeline (the pools then blocked).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "codegen/llvm/jit.h"
#include "interp/interpreter.h"
#include "opt/passes.h"
#include "runtime/executor.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::count_ops;
using tessera::testing::host_isas;
using tessera::testing::random_f32;

struct Case {
  std::string what;
  Dims x;
  AttrMap attrs;
  int pools_after;  // MaxPool nodes after the pass (1: left alone)
  bool indices = false;
};

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }

std::vector<Case> cases() {
  const Dims video{2, 20, 5, 6, 7};
  return {
      {"3x3x3 stride 1 pad 1 (S3D)", video,
       {{"kernel_shape", ints({3, 3, 3})}, {"pads", ints({1, 1, 1, 1, 1, 1})}}, 3},
      {"3x3x3 stride 2 pad 1", video,
       {{"kernel_shape", ints({3, 3, 3})}, {"strides", ints({2, 2, 2})}, {"pads", ints({1, 1, 1, 1, 1, 1})}}, 3},
      {"3x3x3 dilated, uneven pads", video,
       {{"kernel_shape", ints({3, 3, 3})}, {"dilations", ints({1, 2, 1})}, {"pads", ints({1, 0, 0, 0, 2, 1})}}, 3},
      {"3x3x3 SAME_UPPER stride 2", video,
       {{"kernel_shape", ints({3, 3, 3})}, {"strides", ints({2, 1, 2})}, {"auto_pad", Attribute::of_string("SAME_UPPER")}},
       3},
      {"1x5x5, stride 2 on the kernel-1 axis", video,
       {{"kernel_shape", ints({1, 5, 5})}, {"strides", ints({2, 1, 1})}, {"pads", ints({0, 2, 2, 0, 2, 2})}}, 2},
      {"2-D 5x5", {1, 20, 9, 8}, {{"kernel_shape", ints({5, 5})}, {"pads", ints({2, 2, 2, 2})}}, 2},
      {"2-D 3x3 stays", {1, 20, 9, 8}, {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}}, 1},
      {"2x2x2 stride 2 stays", video, {{"kernel_shape", ints({2, 2, 2})}, {"strides", ints({2, 2, 2})}}, 1},
      {"ceil_mode stays", video,
       {{"kernel_shape", ints({3, 3, 3})}, {"strides", ints({2, 2, 2})}, {"ceil_mode", Attribute::of_int(1)}}, 1},
      {"Indices stays", video, {{"kernel_shape", ints({3, 3, 3})}, {"pads", ints({1, 1, 1, 1, 1, 1})}}, 1, true},
  };
}

// x -> MaxPool -> Relu (a reader after the pool), the pool's output an output too.
std::unique_ptr<Graph> build(const Case& c) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, c.x, true});
  std::vector<std::string> outs{"pooled"};
  if (c.indices) outs.push_back("indices");
  Node* p = g->add_node("MaxPool", {x}, outs, c.attrs, "pool");
  g->add_output(p->outputs[0]);
  if (c.indices) g->add_output(p->outputs[1]);
  g->add_output(g->add_node("Relu", {p->outputs[0]}, {"relu"}, {}, "relu")->outputs[0]);
  infer_graph(*g);
  return g;
}

// Random values with +inf and -inf sprinkled in, and NaNs with `nan` (the
// compiled ReLU after the pool need not give NaN for NaN as the reference does).
Tensor input(const Dims& d, bool nan) {
  Tensor t = random_f32(d, 31);
  float* p = t.data<float>();
  const float values[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          nan ? std::numeric_limits<float>::quiet_NaN() : 0.5f};
  for (int64_t k = 0; k < t.numel(); k += 37) p[k] = values[(k / 37) % 3];
  return t;
}

// Element for element the same value (NaN matching NaN, the dtypes' values compared).
void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].dims(), want[o].dims()) << "output " << o;
    for (int64_t k = 0; k < got[o].numel(); ++k) {
      const double a = got[o].get_double(k), b = want[o].get_double(k);
      if (std::isnan(b)) ASSERT_TRUE(std::isnan(a)) << "output " << o << " element " << k;
      else ASSERT_EQ(a, b) << "output " << o << " element " << k;
    }
  }
}

TEST(SeparableMaxPool, ChainsGiveThePoolsValues) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.what);
    auto g = build(c);
    const std::vector<Tensor> ins{input(c.x, true)};
    const std::vector<Tensor> want = interpret(*g, ins);
    EXPECT_EQ(separate_max_pools(*g), c.pools_after > 1 ? 1 : 0);
    EXPECT_EQ(count_ops(*g, "MaxPool"), c.pools_after);
    expect_same(interpret(*g, ins), want);
  }
}

TEST(SeparableMaxPool, CompiledMatchesTheOriginalGraph) {
  for (codegen::Isa isa : host_isas()) {
    for (const Case& c : cases()) {
      SCOPED_TRACE(c.what + ", " + std::string(codegen::isa_name(isa)));
      const std::vector<Tensor> ins{input(c.x, false)};
      const std::vector<Tensor> want = interpret(*build(c), ins);
      runtime::ExecutorOptions o;
      o.isa = isa;
      runtime::Executor m(build(c), o);
      EXPECT_EQ(count_ops(m.graph(), "MaxPool"), c.pools_after);
      expect_same(m.run(ins), want);
    }
  }
}

}  // namespace
}  // namespace tessera
