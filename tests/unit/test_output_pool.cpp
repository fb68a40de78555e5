// Output buffers reused across runs (runtime/output_pool.h): the pool hands
// back a kept tensor only when nobody else holds its buffer, keeps two per
// slot, and a run never writes into a result its caller still holds; a
// reused buffer is written whole (every run against the interpreter).
#include <gtest/gtest.h>

#include <cstring>

#include "interp/interpreter.h"
#include "runtime/executor.h"
#include "runtime/output_pool.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::expect_near_scaled;
using tessera::testing::random_f32;

TEST(OutputPool, ReusesOnlyBuffersNobodyHolds) {
  runtime::OutputPool pool;
  Tensor a = pool.take(0, DType::F32, {2, 3});
  pool.keep(0, a);
  Tensor b = pool.take(0, DType::F32, {2, 3});  // `a` is still held: a new one
  EXPECT_NE(a.raw(), b.raw());
  EXPECT_EQ(pool.allocations(), 2);
  pool.keep(0, b);
  const void* pa = a.raw();
  a = Tensor();  // the caller lets go of the first
  Tensor c = pool.take(0, DType::F32, {2, 3});
  EXPECT_EQ(c.raw(), pa);
  EXPECT_EQ(pool.allocations(), 2);
  EXPECT_NE(pool.take(1, DType::F32, {2, 3}).raw(), nullptr);  // another slot: its own
  EXPECT_EQ(pool.allocations(), 3);
  pool.keep(0, c);
  c = Tensor();
  pool.take(0, DType::F32, {3, 2});  // other dims: not that buffer
  EXPECT_EQ(pool.allocations(), 4);
}

TEST(OutputPool, KeepsTwoPerSlot) {
  runtime::OutputPool pool;
  std::vector<Tensor> held;  // every result still held when the next is taken
  for (int i = 0; i < 3; ++i) {
    held.push_back(pool.take(0, DType::F32, {1024}));
    pool.keep(0, held.back());
  }
  EXPECT_EQ(pool.allocations(), 3);
  const void* r1 = held[1].raw();
  const void* r2 = held[2].raw();
  held.clear();
  // The oldest left the pool; the last two come back, then a new one.
  Tensor x = pool.take(0, DType::F32, {1024});
  Tensor y = pool.take(0, DType::F32, {1024});
  EXPECT_TRUE(x.raw() == r1 || x.raw() == r2);
  EXPECT_TRUE(y.raw() == r1 || y.raw() == r2);
  EXPECT_NE(x.raw(), y.raw());
  EXPECT_EQ(pool.allocations(), 3);
  Tensor z = pool.take(0, DType::F32, {1024});
  EXPECT_EQ(pool.allocations(), 4);
}

// A conv and a bilinear upsampling into a large graph output (a mapped buffer).
std::unique_ptr<Graph> upsampling() {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 8, 12, 12}, true});
  Value* w = g->add_constant("w", random_f32({21, 8, 1, 1}, 3, -0.5f, 0.5f));
  Value* c = g->add_node("Conv", {x, w}, {"c"}, {}, "conv")->outputs[0];
  Value* roi = g->add_constant("roi", Tensor(DType::F32, {0}));
  Value* scales = g->add_constant("scales", Tensor(DType::F32, {0}));
  Value* sizes = g->add_constant("sizes", Tensor::from<int64_t>({4}, {1, 21, 192, 192}));
  AttrMap a;
  a["mode"] = Attribute::of_string("linear");
  g->add_output(g->add_node("Resize", {c, roi, scales, sizes}, {"y"}, std::move(a), "up")->outputs[0]);
  infer_graph(*g);
  return g;
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// A held result keeps its values through later runs; a dropped one's buffer
// is written again by the next run, all of it.
TEST(OutputPool, RunsReuseDroppedResultsAndKeepHeldOnes) {
  auto g = upsampling();
  std::vector<std::vector<Tensor>> ins;
  std::vector<Tensor> want;
  for (uint32_t s = 0; s < 4; ++s) {
    ins.push_back({random_f32({1, 8, 12, 12}, 40 + s)});
    want.push_back(interpret(*g, ins.back())[0]);
  }
  runtime::Executor m(upsampling(), {});
  std::vector<Tensor> r0 = m.run(ins[0]);
  const Tensor copy0 = r0[0].clone();
  std::vector<Tensor> r1 = m.run(ins[1]);
  EXPECT_NE(r0[0].raw(), r1[0].raw());
  EXPECT_TRUE(bit_identical(r0[0], copy0));  // run 1 did not write run 0's result
  expect_near_scaled(r1, {want[1]}, 1e-5);
  const void* p0 = r0[0].raw();
  r0.clear();
  std::vector<Tensor> r2 = m.run(ins[2]);  // run 0's buffer, free again
  EXPECT_EQ(r2[0].raw(), p0);
  expect_near_scaled(r2, {want[2]}, 1e-5);
  expect_near_scaled(r1, {want[1]}, 1e-5);
  // A result kept as a reshaped view still holds its buffer.
  Tensor flat = r2[0].reshaped({21 * 192 * 192});
  r2.clear();
  std::vector<Tensor> r3 = m.run(ins[3]);
  EXPECT_NE(r3[0].raw(), flat.raw());
  expect_near_scaled(r3, {want[3]}, 1e-5);
  expect_near_scaled({flat.reshaped({1, 21, 192, 192})}, {want[2]}, 1e-5);
}

}  // namespace
}  // namespace tessera
