// What every embedded model computes, bit for bit: the outputs of the build
// named in tests/golden/zoo_outputs.txt, on its seeded random inputs at 2
// threads, for AVX-512 and AVX2. Passes, tasks, schedules and kernels may be
// restructured; their results may not change unless the golden file is
// regenerated on purpose (tests/golden/outputs_hash.py, with the profiling
// database tests/golden/fusion_profile.tsv so the fusion planner's measured
// choices are the same ones).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/llvm/jit.h"
#include "support/hash.h"
#include "tessera/runtime.h"

namespace tessera {
namespace {

struct Golden {
  std::string model, isa, dtype, dims, hash;
  int index = 0;
};

std::vector<Golden> read_golden() {
  std::ifstream f(TESSERA_GOLDEN_DIR "/zoo_outputs.txt");
  EXPECT_TRUE(f) << "cannot read " TESSERA_GOLDEN_DIR "/zoo_outputs.txt";
  std::vector<Golden> r;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    Golden g;
    is >> g.model >> g.isa >> g.index >> g.dtype >> g.dims >> g.hash;
    r.push_back(g);
  }
  return r;
}

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

class GoldenOutputs : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenOutputs, BitIdenticalToTheGoldenBuild) {
  const std::string isa = GetParam();
  if (isa == "avx512" && !codegen::host_supports(codegen::Isa::AVX512))
    GTEST_SKIP() << "this host has no AVX-512";
  // The fusion planner reads its measured choices from a copy of the golden
  // database (a fresh measurement might decide a profile cell otherwise).
  std::filesystem::path cache = std::filesystem::temp_directory_path() / ("tessera-golden-" + isa);
  std::filesystem::create_directories(cache);
  std::filesystem::copy_file(TESSERA_GOLDEN_DIR "/fusion_profile.tsv", cache / "fusion_profile.tsv",
                             std::filesystem::copy_options::overwrite_existing);
  setenv("TESSERA_CACHE_DIR", cache.c_str(), 1);
  std::vector<Golden> golden = read_golden();
  ASSERT_FALSE(golden.empty());
  int checked = 0;
  for (size_t i = 0; i < golden.size();) {
    if (golden[i].isa != isa) {
      ++i;
      continue;
    }
    const std::string model = golden[i].model;
    SCOPED_TRACE(model + " " + isa);
    CompileOptions o;
    o.isa = isa;
    o.threads = 2;
    CompiledModel m = CompiledModel::compile(model, o);
    std::vector<Tensor> outs = m.run(m.random_inputs(0));
    for (; i < golden.size() && golden[i].model == model && golden[i].isa == isa; ++i) {
      const Golden& g = golden[i];
      ASSERT_LT(static_cast<size_t>(g.index), outs.size());
      const Tensor& t = outs[static_cast<size_t>(g.index)];
      EXPECT_EQ(dims_to_string(t.dims()), g.dims) << "output " << g.index;
      EXPECT_EQ(hex(hash_bytes(t.raw(), t.nbytes())), g.hash) << "output " << g.index << " differs from the golden build";
      ++checked;
    }
  }
  EXPECT_GE(checked, 7);  // every embedded model
}

INSTANTIATE_TEST_SUITE_P(Isa, GoldenOutputs, ::testing::Values("avx512", "avx2"));

}  // namespace
}  // namespace tessera
