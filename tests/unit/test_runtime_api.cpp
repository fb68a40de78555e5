// The public runtime API: compile a zoo model, run it against the reference
// interpreter, save and load the artifact (bit-identical outputs), and clear
// errors for a corrupt artifact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "support/error.h"
#include "support/file_util.h"
#include "tessera/runtime.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].dims(), want[i].dims());
    double scale = 0;
    for (int64_t k = 0; k < want[i].numel(); ++k) scale = std::max(scale, std::abs(want[i].get_double(k)));
    for (int64_t k = 0; k < got[i].numel(); ++k)
      ASSERT_NEAR(got[i].get_double(k), want[i].get_double(k), rtol * (scale + 1e-30)) << "output " << i << " element " << k;
  }
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

class RuntimeApi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_rtapi_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RuntimeApi, SqueezenetCompileRunSaveLoad) {
  CompileOptions o;
  o.input_shapes["input"] = {1, 3, 48, 48};  // small: the test stays fast
  CompiledModel m = CompiledModel::compile("zoo:squeezenet1_1", o);
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].dims, (Dims{1, 3, 48, 48}));
  std::vector<Tensor> ins = m.random_inputs(3);
  std::vector<Tensor> got = m.run(ins);
  EXPECT_GT(m.last_compile_seconds(), 0);
  EXPECT_GT(m.peak_activation_bytes(), 0);
  // Fused: fewer steps than nodes (each Conv takes its Relu at least).
  EXPECT_GT(m.compiled_steps(), 0);
  EXPECT_LT(m.compiled_steps() + m.reference_steps(), static_cast<int>(m.node_count()));
  expect_close(got, m.run_reference(ins), 1e-4);
  ASSERT_EQ(got[0].dims(), (Dims{1, 1000}));

  std::string path = (dir_ / "sq.tsr").string();
  m.save(path);
  EXPECT_TRUE(CompiledModel::is_artifact(path));
  CompiledModel l = CompiledModel::load(path);
  EXPECT_EQ(l.node_count(), m.node_count());
  std::vector<Tensor> again = l.run(ins);
  EXPECT_EQ(l.last_compile_seconds(), 0);  // the saved signature was compiled on load
  // ... by linking the saved machine code of every kernel, compiling none.
  EXPECT_NE(l.load_split().find(" kernels linked, 0 compiled)"), std::string::npos) << l.load_split();
  EXPECT_EQ(l.load_split().find("(0 kernels linked"), std::string::npos) << l.load_split();
  ASSERT_EQ(again.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bit_identical(again[i], got[i])) << "output " << i;
  EXPECT_NE(l.report().find("plan 0"), std::string::npos) << l.report();
}

TEST_F(RuntimeApi, CorruptArtifactIsAClearError) {
  CompileOptions o;
  o.input_shapes["input"] = {1, 3, 32, 32};
  CompiledModel m = CompiledModel::compile("zoo:squeezenet1_1", o);
  std::string path = (dir_ / "m.tsr").string();
  m.save(path);  // no plan yet: graph and options only
  std::string bytes = read_file(path);
  std::string bad = bytes;
  bad[bad.size() / 2] ^= 0x5a;
  write_file(path, bad);
  try {
    CompiledModel::load(path);
    FAIL() << "a corrupt artifact loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("corrupt"), std::string::npos) << e.what();
  }
  write_file(path, bytes.substr(0, bytes.size() - 9));
  EXPECT_THROW(CompiledModel::load(path), Error);
  EXPECT_THROW(CompiledModel::load((dir_ / "missing.tsr").string()), Error);
  EXPECT_FALSE(CompiledModel::is_artifact((dir_ / "missing.tsr").string()));
}

TEST_F(RuntimeApi, UnknownIsaIsAnError) {
  CompileOptions o;
  o.isa = "sse9";
  EXPECT_THROW(CompiledModel::compile("zoo:squeezenet1_1", o), Error);
}

}  // namespace
}  // namespace tessera
