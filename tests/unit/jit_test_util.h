// Helpers for the JIT and loop-pass tests: seeded random tensors, and running
// kernels with the reference evaluator and the JIT on copies of the same buffers.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codegen/llvm/jit.h"
#include "loop/evaluate.h"
#include "loop/printer.h"

namespace tessera::codegen::testing {

// A copy of every tensor in args.
inline std::vector<Tensor> clones(const std::vector<Tensor>& args) {
  std::vector<Tensor> out;
  for (const Tensor& t : args) out.push_back(t.clone());
  return out;
}

// Element k of a and b hold the same bits, or are both NaN.
inline bool same_element(const Tensor& a, const Tensor& b, int64_t k) {
  size_t size = dtype_size(a.dtype());
  const char* x = static_cast<const char*>(a.raw()) + static_cast<size_t>(k) * size;
  const char* y = static_cast<const char*>(b.raw()) + static_cast<size_t>(k) * size;
  if (std::memcmp(x, y, size) == 0) return true;
  return is_float(a.dtype()) && std::isnan(a.get_double(k)) && std::isnan(b.get_double(k));
}

// Runs both kernels with the evaluator on copies of args (a loop pass's input
// and output); every buffer must end up with the same bits (NaN matching NaN).
inline void expect_same_results(const loop::Kernel& before, const loop::Kernel& after,
                                const std::vector<Tensor>& args) {
  std::vector<Tensor> want = clones(args), got = clones(args);
  loop::run_kernel(before, want);
  ASSERT_NO_THROW(loop::run_kernel(after, got)) << loop::to_string(after);
  std::vector<loop::Buffer> params = before.params();
  for (size_t p = 0; p < params.size(); ++p)
    for (int64_t k = 0; k < want[p].numel(); ++k)
      ASSERT_TRUE(same_element(want[p], got[p], k))
          << "buffer " << params[p].name() << " element " << k << ": " << got[p].get_double(k) << ", want "
          << want[p].get_double(k) << "\nbefore:\n" << loop::to_string(before) << "after:\n" << loop::to_string(after);
}

// Every test runs for AVX-512 and AVX2, skipped (with the reason) when the
// host lacks the instruction set.
class JitIsaTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!host_supports(GetParam()))
      GTEST_SKIP() << "host lacks " << isa_name(GetParam()) << " (host ISA: " << isa_name(host_isa()) << ")";
  }
  // Strict float semantics unless fast_math: these tests compare the JIT with
  // the evaluator bit for bit, which FMA contraction (on by default) breaks.
  JitOptions options(bool fast_math = false) const {
    JitOptions o;
    o.isa = GetParam();
    o.fast_math = fast_math;
    o.contract = fast_math;
    return o;
  }
  // The JIT on `lowered` (a loop pass's output) against the evaluator on
  // `original`: integers and floats bit for bit (NaN matching NaN).
  void expect_jit_matches_original(const loop::Kernel& original, const loop::Kernel& lowered,
                                   const std::vector<Tensor>& args) const;
};

inline std::string isa_param_name(const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); }

// Random values: floats uniform in [lo, hi], integers uniform in [lo, hi]
// clamped to the type, bools 0/1.
inline Tensor random_tensor(DType d, int64_t n, std::mt19937& rng, double lo = -4, double hi = 4) {
  Tensor t(d, {n});
  std::uniform_real_distribution<double> uf(lo, hi);
  for (int64_t i = 0; i < n; ++i) {
    double v = uf(rng);
    switch (d) {
      case DType::F32: t.data<float>()[i] = static_cast<float>(v); break;
      case DType::F64: t.data<double>()[i] = v; break;
      case DType::F16: t.data<Half>()[i] = Half(static_cast<float>(v)); break;
      case DType::BF16: t.data<BFloat16>()[i] = BFloat16(static_cast<float>(v)); break;
      case DType::Bool: t.data<uint8_t>()[i] = v > (lo + hi) / 2; break;
      case DType::I8: t.data<int8_t>()[i] = static_cast<int8_t>(std::floor(v)); break;
      case DType::I16: t.data<int16_t>()[i] = static_cast<int16_t>(std::floor(v)); break;
      case DType::I32: t.data<int32_t>()[i] = static_cast<int32_t>(std::floor(v)); break;
      case DType::I64: t.data<int64_t>()[i] = static_cast<int64_t>(std::floor(v)); break;
      case DType::U8: t.data<uint8_t>()[i] = static_cast<uint8_t>(std::floor(v)); break;
      case DType::U16: t.data<uint16_t>()[i] = static_cast<uint16_t>(std::floor(v)); break;
      case DType::U32: t.data<uint32_t>()[i] = static_cast<uint32_t>(std::floor(v)); break;
      case DType::U64: t.data<uint64_t>()[i] = static_cast<uint64_t>(std::floor(v)); break;
      default: ADD_FAILURE() << "random_tensor: unsupported " << dtype_name(d);
    }
  }
  return t;
}

// Distance in units in the last place between two floats of one type (bits
// mapped to a monotonic integer line; +0 and -0 are 1 apart); 0 when both
// are NaN.
inline int64_t ulp_distance(const Tensor& a, const Tensor& b, int64_t i) {
  double x = a.get_double(i), y = b.get_double(i);
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y) ? 0 : INT64_MAX;
  size_t size = dtype_size(a.dtype());
  auto key = [&](const Tensor& t) {
    uint64_t bits = 0;
    std::memcpy(&bits, static_cast<const char*>(t.raw()) + static_cast<size_t>(i) * size, size);
    uint64_t sign = uint64_t{1} << (8 * size - 1);
    return (bits & sign) ? -static_cast<int64_t>(bits & ~sign) : static_cast<int64_t>(bits);
  };
  int64_t d = key(a) - key(b);
  if (d == 0 && std::signbit(x) != std::signbit(y)) return 1;  // +0 vs -0
  return d < 0 ? -d : d;
}

inline void JitIsaTest::expect_jit_matches_original(const loop::Kernel& original, const loop::Kernel& lowered,
                                                     const std::vector<Tensor>& args) const {
  std::vector<Tensor> want = clones(args), got = clones(args);
  loop::run_kernel(original, want);
  jit_compile(lowered, options())->run(got);
  std::vector<loop::Buffer> params = original.params();
  for (size_t p = 0; p < params.size(); ++p)
    for (int64_t k = 0; k < want[p].numel(); ++k) {
      bool ok = is_float(want[p].dtype()) ? ulp_distance(want[p], got[p], k) == 0
                                          : want[p].get_int(k) == got[p].get_int(k);
      ASSERT_TRUE(ok) << "buffer " << params[p].name() << " element " << k << ": JIT " << got[p].get_double(k)
                      << ", evaluator " << want[p].get_double(k) << "\n" << loop::to_string(lowered);
    }
}

// Runs `k` with the evaluator and with the JIT, each on its own copy of
// `args`, and compares every buffer afterwards: integers bit for bit, floats
// within `max_ulps` (0: identical, NaN matching NaN).
inline void expect_jit_matches(const loop::Kernel& k, const std::vector<Tensor>& args, const JitOptions& opts,
                               int64_t max_ulps = 0) {
  std::vector<Tensor> want, got;
  for (const Tensor& t : args) {
    want.push_back(t.clone());
    got.push_back(t.clone());
  }
  loop::run_kernel(k, want);
  std::shared_ptr<JitKernel> jit = jit_compile(k, opts);
  jit->run(got);
  std::vector<loop::Buffer> params = k.params();
  for (size_t p = 0; p < params.size(); ++p) {
    int failures = 0;
    for (int64_t i = 0; i < want[p].numel() && failures < 5; ++i) {
      bool ok = is_float(want[p].dtype()) ? ulp_distance(want[p], got[p], i) <= max_ulps
                                          : want[p].get_int(i) == got[p].get_int(i);
      if (!ok) {
        ++failures;
        ADD_FAILURE() << k.name << " [" << isa_name(opts.isa) << "]: buffer '" << params[p].name() << "' element "
                      << i << ": evaluator " << want[p].get_double(i) << ", JIT " << got[p].get_double(i);
      }
    }
    if (failures) {
      ADD_FAILURE() << loop::to_string(k);
      return;
    }
  }
}

}  // namespace tessera::codegen::testing
