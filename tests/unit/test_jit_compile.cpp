// The LLVM JIT's surface: ISA selection and assembly, the kernel cache,
// dumps, fast-math flags and errors.
#include <gtest/gtest.h>

#include <random>

#include <thread>

#include "jit_test_util.h"
#include "loop_kernels.h"
#include "support/error.h"

namespace tessera::codegen {
namespace {

using namespace loop;

// Y = X * 2 + 1 over 64 floats, 16 lanes at a time (zmm-sized when allowed).
Kernel wide_kernel() {
  Buffer X("X", DType::F32, {64}), Y("Y", DType::F32, {64});
  Var o("o");
  Expr idx = ramp(o * 16, int_imm(1), 16);
  return Kernel{"wide", {X}, {Y},
                for_loop(o, int_imm(0), int_imm(4), ForKind::Serial, store(Y, load(X, idx) * 2.0f + 1.0f, idx))};
}

TEST(JitCompile, HostIsaIsDetected) {
  Isa h = host_isa();
  EXPECT_NE(h, Isa::Host);
  EXPECT_TRUE(host_supports(h));
  EXPECT_TRUE(host_supports(Isa::Generic));
  std::shared_ptr<JitKernel> k = jit_compile(wide_kernel());
  EXPECT_EQ(k->isa(), h);
  std::printf("host ISA: %s (cpu %s)\n", std::string(isa_name(h)).c_str(), k->cpu().c_str());
}

TEST(JitCompile, Avx2AssemblyHasNoZmmRegisters) {
  if (!host_supports(Isa::AVX2)) GTEST_SKIP() << "host lacks avx2";
  JitOptions o;
  o.isa = Isa::AVX2;
  std::shared_ptr<JitKernel> k = jit_compile(wide_kernel(), o);
  std::string s = k->assembly();
  EXPECT_NE(s.find("ymm"), std::string::npos) << s;
  EXPECT_EQ(s.find("zmm"), std::string::npos) << s;
  EXPECT_EQ(k->cpu(), "haswell");
}

TEST(JitCompile, Avx512AssemblyUsesZmmRegisters) {
  if (!host_supports(Isa::AVX512)) GTEST_SKIP() << "host lacks avx512 (host ISA: " << isa_name(host_isa()) << ")";
  JitOptions o;
  o.isa = Isa::AVX512;
  std::string s = jit_compile(wide_kernel(), o)->assembly();
  EXPECT_NE(s.find("zmm"), std::string::npos) << s;
}

TEST(JitCompile, ForcingAnIsaTheHostLacksIsAnError) {
  if (host_supports(Isa::AVX512)) GTEST_SKIP() << "host has avx512";
  JitOptions o;
  o.isa = Isa::AVX512;
  EXPECT_THROW(jit_compile(wide_kernel(), o), Error);
}

TEST(JitCompile, CacheReturnsTheSameKernelForTheSameText) {
  JitOptions o;
  std::shared_ptr<JitKernel> a = jit_compile(loop::testing::matmul_kernel(4, 5, 6), o);
  std::shared_ptr<JitKernel> b = jit_compile(loop::testing::matmul_kernel(4, 5, 6), o);  // new nodes, same text
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), jit_compile(loop::testing::matmul_kernel(4, 5, 7), o).get());
  o.fast_math = true;
  EXPECT_NE(a.get(), jit_compile(loop::testing::matmul_kernel(4, 5, 6), o).get());
  EXPECT_GE(jit_cache_size(), 3u);
}

TEST(JitCompile, ConcurrentCompilesOfOneKernelShareIt) {
  jit_cache_clear();
  EXPECT_EQ(jit_cache_size(), 0u);
  std::vector<std::shared_ptr<JitKernel>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&got, t] { got[t] = jit_compile(loop::testing::conv1d_padded_kernel(11)); });
  for (auto& t : threads) t.join();
  for (auto& k : got) EXPECT_EQ(k.get(), got[0].get());
  EXPECT_EQ(jit_cache_size(), 1u);
}

TEST(JitCompile, IrTextAndFastMathFlags) {
  JitOptions o;
  std::shared_ptr<JitKernel> k = jit_compile(loop::testing::matmul_kernel(3, 3, 3), o);
  EXPECT_NE(k->llvm_ir().find("define void @tessera_matmul("), std::string::npos) << k->llvm_ir();
  EXPECT_EQ(k->llvm_ir().find("reassoc"), std::string::npos);
  EXPECT_NE(k->loop_ir().find("kernel matmul"), std::string::npos);
  o.fast_math = true;
  std::string fast = jit_compile(loop::testing::matmul_kernel(3, 3, 3), o)->llvm_ir();
  EXPECT_NE(fast.find("reassoc"), std::string::npos) << fast;
  EXPECT_NE(fast.find("contract"), std::string::npos);
  EXPECT_EQ(fast.find("nnan"), std::string::npos);
  EXPECT_EQ(fast.find("ninf"), std::string::npos);
}

// Contraction is on by default: the matrix product's multiply-adds become
// FMA instructions (one rounding), its result stays within a few ulps of the
// evaluator's; with contract off the instructions are separate and the result
// is the evaluator's bit for bit.
TEST(JitCompile, MultiplyAddsContractToFmaByDefault) {
  loop::Kernel mm = loop::testing::matmul_kernel(16, 32, 64);
  std::mt19937 rng(3);
  std::vector<Tensor> args;
  for (const loop::Buffer& b : mm.params()) args.push_back(testing::random_tensor(b.dtype(), numel_of(b.dims()), rng));
  JitOptions o;
  o.isa = host_isa();
  EXPECT_TRUE(o.contract);
  std::shared_ptr<JitKernel> fused = jit_compile(mm, o);
  EXPECT_NE(fused->llvm_ir().find("contract"), std::string::npos);
  EXPECT_EQ(fused->llvm_ir().find("reassoc"), std::string::npos);
  if (o.isa != Isa::Generic) {
    EXPECT_NE(fused->assembly().find("vfmadd"), std::string::npos) << fused->assembly();
  }
  std::vector<Tensor> want = testing::clones(args), got = testing::clones(args);
  loop::run_kernel(mm, want);
  fused->run(got);
  for (int64_t i = 0; i < want[2].numel(); ++i)  // sums of 64 products of magnitude <= 16
    ASSERT_NEAR(got[2].data<float>()[i], want[2].data<float>()[i], 1e-3) << "element " << i;
  o.contract = false;
  std::shared_ptr<JitKernel> strict = jit_compile(mm, o);
  EXPECT_EQ(strict->assembly().find("vfmadd"), std::string::npos);
  testing::expect_jit_matches(mm, args, o, 0);
}

// Every function of a kernel starts on a 64-byte boundary, so its loops sit
// at the same offsets in the front end's fetch blocks in every process.
TEST(JitCompile, FunctionsStartOn64ByteBoundaries) {
  std::shared_ptr<JitKernel> k = jit_compile(loop::testing::matmul_kernel(16, 32, 64), JitOptions{});
  std::string a = k->assembly();
  int functions = 0;
  for (size_t at = a.find("\t.type\t"); at != std::string::npos; at = a.find("\t.type\t", at + 1)) {
    if (a.find("@function", at) > a.find('\n', at)) continue;  // not a function's .type line
    size_t line = a.rfind('\n', at - 2);  // the line before: the function's alignment
    EXPECT_EQ(a.compare(line + 1, 11, "\t.p2align\t6"), 0) << a.substr(line + 1, at - line);
    ++functions;
  }
  EXPECT_GE(functions, 1) << a;
}

TEST(JitCompile, DumpsGoToStderr) {
  JitOptions o;
  o.dump_ir = o.dump_llvm = o.dump_asm = true;
  ::testing::internal::CaptureStderr();
  jit_compile(loop::testing::relu_vector_kernel(16), o);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("kernel relu"), std::string::npos);
  EXPECT_NE(err.find("define void @tessera_relu"), std::string::npos);
  EXPECT_NE(err.find("tessera_relu:"), std::string::npos);  // the assembly label
}

TEST(JitCompile, RunChecksTensorsAgainstParams) {
  std::shared_ptr<JitKernel> k = jit_compile(loop::testing::relu_vector_kernel(16));
  EXPECT_THROW(k->run(std::vector<Tensor>{Tensor(DType::F32, {16})}), Error);
  EXPECT_THROW(k->run(std::vector<Tensor>{Tensor(DType::F32, {16}), Tensor(DType::I32, {16})}), Error);
  EXPECT_THROW(k->run(std::vector<Tensor>{Tensor(DType::F32, {16}), Tensor(DType::F32, {8})}), Error);
  Tensor x = Tensor::from<float>({16}, {-1, 2, -3, 4, -5, 6, -7, 8, -9, 10, -11, 12, -13, 14, -15, 16});
  Tensor y(DType::F32, {16});
  k->run(std::vector<void*>{x.raw(), y.raw()});
  EXPECT_EQ(y.data<float>()[0], 0.0f);
  EXPECT_EQ(y.data<float>()[15], 16.0f);
}

TEST(JitCompile, UnsupportedCallsAndUnboundBuffersAreClearErrors) {
  Buffer Y("Y", DType::F32, {4}), T("T", DType::F32, {4});
  Var i("i");
  Kernel bad_call{"bad_call", {}, {Y},
                  for_loop(i, int_imm(0), int_imm(4), ForKind::Serial,
                           store(Y, call({DType::F32, 1}, "tessera_rt_thing", {}), Expr(i)))};
  try {
    jit_compile(bad_call);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tessera_rt_thing"), std::string::npos) << e.what();
  }
  Kernel unbound{"unbound", {}, {Y},
                 for_loop(i, int_imm(0), int_imm(4), ForKind::Serial, store(Y, load(T, Expr(i)), Expr(i)))};
  EXPECT_THROW(jit_compile(unbound), Error);
  EXPECT_THROW(jit_compile(unbound), Error);  // a failed compile is not cached
}

}  // namespace
}  // namespace tessera::codegen
