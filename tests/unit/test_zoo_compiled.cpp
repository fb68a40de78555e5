// Every zoo model, compiled for the full input shapes, against the reference
// interpreter on seeded random inputs: the largest difference of each output
// stays within 1e-4 of the output's largest magnitude. One model per test, so
// ctest runs them in parallel; the host ISA for all, AVX2 for one CNN and one
// transformer (the per-op tests cover both ISAs op by op).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "codegen/llvm/jit.h"
#include "tessera/runtime.h"

namespace tessera {
namespace {

struct ZooCase {
  const char* model;
  const char* isa;
};

// Test names show the model and ISA, not the struct's bytes.
void PrintTo(const ZooCase& c, std::ostream* os) { *os << c.model << " on " << c.isa; }

// max |got - want| / max |want| over the elements (ints and bools compared exactly).
double relative_difference(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.dtype(), want.dtype());
  EXPECT_EQ(got.dims(), want.dims());
  if (got.dtype() != want.dtype() || got.dims() != want.dims()) return INFINITY;
  Tensor g = got.cast(DType::F64), w = want.cast(DType::F64);
  double diff = 0, mag = 0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    double a = g.data<double>()[i], b = w.data<double>()[i];
    if (std::isnan(a) != std::isnan(b)) return INFINITY;
    if (std::isnan(b)) continue;
    diff = std::max(diff, std::fabs(a - b));
    mag = std::max(mag, std::fabs(b));
  }
  return mag > 0 ? diff / mag : diff;
}

class ZooCompiled : public ::testing::TestWithParam<ZooCase> {};

TEST_P(ZooCompiled, MatchesReference) {
  const ZooCase& c = GetParam();
  if (std::string(c.isa) == "avx2" && !codegen::host_supports(codegen::Isa::AVX2))
    GTEST_SKIP() << "this CPU has no AVX2";
  CompileOptions o;
  o.isa = c.isa;
  o.threads = 2;
  CompiledModel m = CompiledModel::compile(std::string("zoo:") + c.model, o);
  std::vector<Tensor> ins = m.random_inputs(11);
  std::vector<Tensor> got = m.run(ins);
  EXPECT_EQ(m.reference_steps(), 0) << m.report();
  // Every block the fusion planner made compiled as one kernel.
  EXPECT_EQ(m.report().find("not fused:"), std::string::npos) << m.report();
  std::vector<Tensor> want = m.run_reference(ins);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    double d = relative_difference(got[i], want[i]);
    EXPECT_LE(d, 1e-4) << c.model << " output " << m.outputs()[i].name << " on " << c.isa;
    std::printf("%s [%s] output %zu: max|diff|/max|ref| = %.3g\n", c.model, c.isa, i, d);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, ZooCompiled,
    ::testing::Values(ZooCase{"resnet18", "host"}, ZooCase{"resnet50", "host"}, ZooCase{"mobilenet_v2", "host"},
                      ZooCase{"squeezenet1_1", "host"}, ZooCase{"bert_base", "host"}, ZooCase{"gpt2_tiny", "host"},
                      ZooCase{"vit_b_16", "host"}, ZooCase{"resnet50", "avx2"}, ZooCase{"gpt2_tiny", "avx2"}),
    [](const ::testing::TestParamInfo<ZooCase>& i) { return std::string(i.param.model) + "_" + i.param.isa; });

}  // namespace
}  // namespace tessera
