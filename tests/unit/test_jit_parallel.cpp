// Parallel loops in JIT code (outlined bodies run by the runtime thread
// pool) against the loop-IR evaluator, bit for bit, with 1, 2 and the
// default number of threads, for AVX-512 and AVX2.
#include <gtest/gtest.h>

#include "jit_test_util.h"
#include "loop_kernels.h"
#include "support/thread_pool.h"

namespace tessera::codegen {
namespace {

using namespace loop;
using testing::expect_jit_matches;
using testing::random_tensor;

class JitParallel : public testing::JitIsaTest {
 protected:
  void TearDown() override { ThreadPool::global().set_threads(0); }
  // Runs `check` with the global pool at 1, 2 and the default thread count.
  template <class F> void for_thread_counts(F check) {
    for (int t : {1, 2, 0}) {
      ThreadPool::global().set_threads(t);
      SCOPED_TRACE("threads=" + std::to_string(ThreadPool::global().threads()));
      check();
    }
  }
};

TEST_P(JitParallel, MatmulOuterLoopParallel) {
  std::mt19937 rng(11);
  Kernel k = loop::testing::matmul_kernel(37, 19, 23);
  std::vector<Tensor> args = {random_tensor(DType::F32, 37 * 23, rng), random_tensor(DType::F32, 23 * 19, rng),
                              random_tensor(DType::F32, 37 * 19, rng)};
  EXPECT_NE(jit_compile(k, options())->llvm_ir().find("tessera_parallel_for"), std::string::npos);
  for_thread_counts([&] { expect_jit_matches(k, args, options()); });
}

TEST_P(JitParallel, VectorRelu) {
  std::mt19937 rng(12);
  Kernel k = loop::testing::relu_vector_kernel(8 * 41);
  for_thread_counts([&] {
    expect_jit_matches(k, {random_tensor(DType::F32, 8 * 41, rng), random_tensor(DType::F32, 8 * 41, rng)}, options());
  });
}

// A parallel loop with a computed min inside a serial loop, reading the outer
// loop variable, scalar and vector lets and an outer temporary, holding a
// temporary and a nested parallel loop of its own; and an empty parallel loop.
Kernel nested_kernel(int64_t rows, int64_t cols) {
  const Type f32{DType::F32, 1}, i32{DType::I32, 1};
  Buffer X("X", DType::F32, {rows * cols}), S("S", DType::F32, {rows}), Y("Y", DType::F32, {rows * cols}),
      Z("Z", DType::I32, {rows * cols * 3});
  Buffer bias("bias", DType::F32, {rows}), tmp("tmp", DType::F32, {4});
  Var r("r"), o("o"), p("p"), q("q"), e("e"), lo("lo"), off("off"), scale("scale", f32), v4("v4", {DType::F32, 4});
  Expr at = o * cols + p;
  Stmt row = allocate(
      tmp, int_imm(4),
      block({store(tmp, broadcast(load(X, at), 4) * v4, ramp(int_imm(0), int_imm(1), 4)),
             store(Y, load(tmp, int_imm(1)) + load(bias, o) + cast(f32, off), at),
             for_loop(q, int_imm(0), int_imm(3), ForKind::Parallel,
                      store(Z, cast(i32, off + p * 3 + q + o), at * 3 + q))}));
  Stmt outer = for_loop(
      o, int_imm(0), int_imm(rows), ForKind::Serial,
      let_stmt(scale, load(S, o) * float_imm(2),
               let_stmt(off, o * 7 + 1,
                        let_stmt(v4, broadcast(scale + float_imm(1), 4),
                                 let_stmt(lo, o % 2 + 1,
                                          for_loop(p, lo, int_imm(cols) - lo, ForKind::Parallel, row))))));
  Stmt body = allocate(
      bias, int_imm(rows),
      block({for_loop(r, int_imm(0), int_imm(rows), ForKind::Serial, store(bias, load(S, r) * float_imm(0.5), r)),
             outer, for_loop(e, int_imm(0), int_imm(0), ForKind::Parallel, store(Y, float_imm(1), e))}));
  return Kernel{"nested_parallel", {X, S}, {Y, Z}, body};
}

TEST_P(JitParallel, NestedInSerialLoopWithLets) {
  std::mt19937 rng(13);
  const int64_t rows = 9, cols = 41;
  Kernel k = nested_kernel(rows, cols);
  for_thread_counts([&] {
    expect_jit_matches(k,
                       {random_tensor(DType::F32, rows * cols, rng), random_tensor(DType::F32, rows, rng),
                        random_tensor(DType::F32, rows * cols, rng), random_tensor(DType::I32, rows * cols * 3, rng)},
                       options());
  });
}

INSTANTIATE_TEST_SUITE_P(Jit, JitParallel, ::testing::Values(Isa::AVX512, Isa::AVX2), testing::isa_param_name);

}  // namespace
}  // namespace tessera::codegen
