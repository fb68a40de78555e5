// Sizes no machine of this kind could hold are errors naming the node (or
// input) and the size, before anything is allocated: never std::bad_alloc.
// An Expand to 2^39 floats (2 TiB) through the compiled runtime and the
// reference interpreter; tensor sizes computed without overflow.
#include <gtest/gtest.h>

#include "interp/interpreter.h"
#include "ops/registry.h"
#include "runtime/executor.h"
#include "support/error.h"
#include "support/memory.h"
#include "unit/error_message.h"

namespace tessera {
namespace {

// y = Expand(x, [2^13, 2^13, 2^13]): 2^39 floats, 2 TiB.
std::unique_ptr<Graph> huge_expand() {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1}, true});
  Value* s = g->add_constant("s", Tensor::from<int64_t>({3}, {8192, 8192, 8192}));
  Node* e = g->add_node("Expand", {x, s}, {"y"}, {}, "big_expand");
  g->add_output(e->outputs[0]);
  infer_graph(*g);
  return g;
}

using testing::error_of;

TEST(MemoryLimits, HugeOutputIsAnErrorNamingTheNodeOnBothBackends) {
  ASSERT_LT(memory_limit_bytes(), int64_t{2} << 40) << "a machine with 2 TiB of memory";
  std::vector<Tensor> ins = {Tensor::from<float>({1}, {1.0f})};
  runtime::Executor m(huge_expand(), {});
  std::string err = error_of([&] { m.run(ins); });
  EXPECT_NE(err.find("Expand node 'big_expand': output 'y' needs 2.0 TiB (8192x8192x8192 f32), more than this "
                     "machine's memory"),
            std::string::npos)
      << err;
  auto g = huge_expand();
  err = error_of([&] { interpret(*g, ins); });
  EXPECT_NE(err.find("Expand node 'big_expand': a tensor needs 2.0 TiB (8192x8192x8192 f32)"), std::string::npos)
      << err;
}

TEST(MemoryLimits, SizesAreComputedWithoutOverflow) {
  EXPECT_EQ(tensor_bytes(DType::F32, {2, 3}), 24);
  EXPECT_EQ(tensor_bytes(DType::F64, {}), 8);
  EXPECT_EQ(tensor_bytes(DType::F32, {0, int64_t{1} << 62}), 0);
  // 2^62 elements fit in 64 bits; their bytes do not. Nor does 2^32 * 2^32.
  EXPECT_EQ(tensor_bytes(DType::F32, {int64_t{1} << 62}), std::nullopt);
  EXPECT_EQ(tensor_bytes(DType::U8, {int64_t{1} << 32, int64_t{1} << 32}), std::nullopt);
  EXPECT_EQ(tensor_bytes(DType::U8, {-1}), std::nullopt);
  std::string err = error_of([] { check_tensor_fits(DType::F32, {int64_t{1} << 62}, "input 'x'"); });
  EXPECT_NE(err.find("input 'x' needs more than 2^63 bytes"), std::string::npos) << err;
  EXPECT_EQ(error_of([] { check_tensor_fits(DType::F32, {1024}, "input 'x'"); }), "");
}

}  // namespace
}  // namespace tessera
