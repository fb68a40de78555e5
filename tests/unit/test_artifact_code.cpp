// The machine code an artifact keeps: loading links it (nothing is lowered
// or compiled — the JIT's kernel cache stays empty) and the outputs are the
// compiled model's bit for bit; a malformed object section is an error naming
// the file and the kernel, never a crash; code that cannot be used here
// (another ISA asked, no code saved) is compiled again from the saved
// schedules, said once on stderr.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "codegen/llvm/jit.h"
#include "codegen/llvm/object_check.h"
#include "interp/interpreter.h"
#include "runtime/executor.h"
#include "support/artifact.h"
#include "support/error.h"
#include "random_tensor.h"

namespace tessera::runtime {
namespace {

using tessera::testing::random_f32;

// Conv+Relu, Conv+Add(residual) and Sigmoid: fused blocks, packed weights.
std::unique_ptr<Graph> small_net() {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 8, 10, 10}, true});
  Value* w1 = g->add_constant("w1", random_f32({16, 8, 3, 3}, 1));
  Value* w2 = g->add_constant("w2", random_f32({16, 16, 3, 3}, 2));
  AttrMap pads;
  pads["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* c1 = g->add_node("Conv", {x, w1}, {"c1"}, pads, "conv1")->outputs[0];
  Value* r1 = g->add_node("Relu", {c1}, {"r1"}, {}, "relu1")->outputs[0];
  Value* c2 = g->add_node("Conv", {r1, w2}, {"c2"}, pads, "conv2")->outputs[0];
  Value* s = g->add_node("Add", {c2, r1}, {"s"}, {}, "add")->outputs[0];
  g->add_output(g->add_node("Sigmoid", {s}, {"y"}, {}, "sigmoid")->outputs[0]);
  infer_graph(*g);
  return g;
}

ExecutorOptions options() {
  ExecutorOptions o;
  o.fusion_profile = false;  // fusion decided by the rules alone: the same plan in every run
  o.passes.disable("blocked-layout");  // plain convolutions, whose kernels pack their weights
  return o;
}

class ArtifactCode : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/code_" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".tsr";
    model_ = std::make_unique<Executor>(small_net(), options());
    ins_ = {random_f32({1, 8, 10, 10}, 3)};
    want_ = model_->run(ins_);
    model_->save(path_);
  }

  // The distinct kernels of the loaded model's plans.
  static size_t distinct_kernels(const Executor& m) {
    std::set<const codegen::JitKernel*> ks;
    for (const auto& p : m.plans())
      for (const Step& st : p->steps)
        if (st.kernel) ks.insert(st.kernel.get());
    return ks.size();
  }

  void expect_bit_identical(Executor& m) {
    std::vector<Tensor> got = m.run(ins_);
    ASSERT_EQ(got.size(), want_.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].nbytes(), want_[i].nbytes());
      EXPECT_EQ(std::memcmp(got[i].raw(), want_[i].raw(), got[i].nbytes()), 0) << "output " << i;
    }
  }

  // Loads the artifact after `edit` (checksums recomputed); the error, or "".
  template <class F>
  std::string load_edited(F edit) {
    Artifact a = load_artifact(path_);
    edit(a);
    save_artifact(a, path_);
    try {
      Executor::load(path_, options(), true);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  // The name of every task's saved kernel object section.
  std::vector<std::string> object_sections() const {
    std::vector<std::string> r;
    for (const auto& [name, data] : load_artifact(path_).sections)
      if (name.size() > 9 && name.rfind("task.", 0) == 0 && name.substr(name.size() - 9) == ".kernel.o") r.push_back(name);
    return r;
  }

  std::string path_;
  std::unique_ptr<Executor> model_;
  std::vector<Tensor> ins_, want_;
};

TEST_F(ArtifactCode, LinkedKernelsGiveTheCompiledOutputsBitForBit) {
  const Plan& compiled = *model_->last_plan();
  EXPECT_GE(compiled.fused_steps, 1);
  EXPECT_GT(compiled.packed_bytes, 0);
  EXPECT_GE(compiled.compiled_steps, 2);

  codegen::jit_cache_clear();
  ::testing::internal::CaptureStderr();
  auto m = Executor::load(path_, options(), true);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // nothing to say: the code is used
  // Nothing went through jit_compile (lowering, LLVM's pipeline): every kernel was linked.
  EXPECT_EQ(codegen::jit_cache_size(), 0u);
  const LoadTimes& t = m->load_times();
  EXPECT_EQ(t.compiled, 0);
  EXPECT_EQ(static_cast<size_t>(t.linked), distinct_kernels(*m));
  EXPECT_GE(t.linked, 2);
  ASSERT_EQ(m->plans().size(), 1u);
  for (const Step& st : m->plans()[0]->steps) {
    if (!st.kernel) continue;
    EXPECT_TRUE(st.kernel->llvm_ir().empty()) << st.node->describe();
    EXPECT_FALSE(st.kernel->object().empty());
  }
  EXPECT_EQ(m->plans()[0]->fused_steps, compiled.fused_steps);
  expect_bit_identical(*m);
}

TEST_F(ArtifactCode, MalformedObjectsAreClearErrors) {
  std::vector<std::string> objects = object_sections();
  ASSERT_FALSE(objects.empty());
  const std::string section = objects[0];
  const std::string task = section.substr(0, section.size() - std::string(".o").size());
  std::string original = load_artifact(path_).sections.at(section);
  std::string description = load_artifact(path_).sections.at(task);
  std::string kernel = description.substr(5, description.find('\n') - 5);  // "name ..."

  struct Case {
    std::string object, want;
  };
  std::vector<Case> cases = {
      {original.substr(0, original.size() / 2), "malformed"},
      {original.substr(0, 40), "malformed"},
      {"not an object file at all", "not an ELF object file"},
      {std::string(original.size(), '\0'), "not an ELF object file"},
  };
  for (const Case& c : cases) {
    std::string err = load_edited([&](Artifact& a) { a.sections[section] = c.object; });
    EXPECT_NE(err.find(path_), std::string::npos) << err;
    EXPECT_NE(err.find("kernel " + kernel), std::string::npos) << err;
    EXPECT_NE(err.find(c.want), std::string::npos) << err;
  }
  // The entry symbol missing from the object.
  std::string err = load_edited([&](Artifact& a) {
    a.sections[section] = original;
    std::string& d = a.sections[task];
    auto at = d.find("\nsymbol ");
    d.replace(at, d.find('\n', at + 1) - at, "\nsymbol tessera_no_such_kernel");
  });
  EXPECT_NE(err.find(path_), std::string::npos) << err;
  EXPECT_NE(err.find("no function 'tessera_no_such_kernel' defined"), std::string::npos) << err;
  // The object section gone.
  err = load_edited([&](Artifact& a) {
    a.sections[task] = description;
    a.sections.erase(section);
  });
  EXPECT_NE(err.find("kernel " + kernel + " has no machine code section"), std::string::npos) << err;
}

// Random damage to an object (checksums recomputed, as a hostile file
// would): loading links or refuses it, never crashes. Nothing is run.
TEST_F(ArtifactCode, DamagedObjectsNeverCrashTheLoader) {
  std::vector<std::string> objects = object_sections();
  ASSERT_FALSE(objects.empty());
  const std::string original = load_artifact(path_).sections.at(objects[0]);
  std::mt19937 rng(7);
  for (int i = 0; i < 60; ++i) {
    std::string bad = original;
    // Half the flips in the headers and tables at the start, half anywhere.
    size_t at = i % 2 ? rng() % bad.size() : rng() % std::min<size_t>(bad.size(), 128);
    bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
    std::string err = load_edited([&](Artifact& a) { a.sections[objects[0]] = bad; });
    if (!err.empty()) {
      EXPECT_NE(err.find(path_), std::string::npos) << err;
    }
  }
}

TEST_F(ArtifactCode, ObjectCheckReadsAnyBytes) {
  const codegen::JitKernel& k = *model_->last_plan()->steps[0].kernel;
  EXPECT_EQ(codegen::check_object(k.object(), k.symbol()), "");
  EXPECT_NE(codegen::check_object(k.object(), "tessera_other"), "");
  for (size_t n = 0; n < k.object().size(); n += 1 + n / 8)
    EXPECT_NE(codegen::check_object(std::string_view(k.object()).substr(0, n), k.symbol()), "") << n;
}

// One flag bit makes a section thread-local, which the JIT's linker cannot
// allocate (it aborts the process): the check refuses it, whichever section.
TEST_F(ArtifactCode, ObjectCheckRefusesThreadLocalSections) {
  const codegen::JitKernel& k = *model_->last_plan()->steps[0].kernel;
  const std::string& object = k.object();
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  std::memcpy(&shoff, object.data() + 0x28, 8);  // ELF64 header: e_shoff, e_shentsize, e_shnum
  std::memcpy(&shentsize, object.data() + 0x3A, 2);
  std::memcpy(&shnum, object.data() + 0x3C, 2);
  ASSERT_GT(shnum, 1);
  ASSERT_LE(shoff + uint64_t{shnum} * shentsize, object.size());
  for (uint16_t i = 1; i < shnum; ++i) {
    std::string bad = object;
    char* flags = bad.data() + shoff + uint64_t{i} * shentsize + 8;  // sh_flags
    flags[1] = static_cast<char>(flags[1] | 0x04);                 // SHF_TLS (0x400)
    EXPECT_EQ(codegen::check_object(bad, k.symbol()), "section " + std::to_string(i) + " holds thread-local data");
  }
}

TEST_F(ArtifactCode, AnotherIsaCompilesAgainAndSaysSo) {
  ExecutorOptions o = options();
  o.isa = Isa::Generic;  // every host runs it; the artifact's code is for the host's
  ::testing::internal::CaptureStderr();
  auto m = Executor::load(path_, o, false);
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find(path_ + ": its code was compiled for --isa host, not x86-64: compiling the kernels again"),
            std::string::npos)
      << said;
  EXPECT_EQ(said.find('\n'), said.size() - 1) << "said more than once: " << said;
  EXPECT_EQ(m->load_times().linked, 0);
  EXPECT_GT(m->load_times().compiled, 0);
  std::vector<Tensor> got = m->run(ins_);
  std::vector<Tensor> ref = interpret(m->graph(), ins_);
  for (int64_t i = 0; i < got[0].numel(); ++i) ASSERT_NEAR(got[0].get_double(i), ref[0].get_double(i), 1e-4) << i;
}

TEST_F(ArtifactCode, WithoutCodeCompilesAgainFromTheSavedSchedules) {
  Artifact a = load_artifact(path_);
  for (auto it = a.sections.begin(); it != a.sections.end();)
    it = it->first == "code.target" || it->first.rfind("task.", 0) == 0 ? a.sections.erase(it) : std::next(it);
  save_artifact(a, path_);
  ::testing::internal::CaptureStderr();
  auto m = Executor::load(path_, options(), true);
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("it holds no machine code"), std::string::npos) << said;
  EXPECT_EQ(m->load_times().linked, 0);
  EXPECT_GT(m->load_times().compiled, 0);
  expect_bit_identical(*m);  // the same schedules, the same ISA: the same code
}

// An artifact saved before any run (dynamic input shapes leave compiling to
// the first run) has no code to miss: loading it says nothing.
TEST(ArtifactCodeNone, SavedBeforeAnyRunLoadsWithoutAWord) {
  const std::string path = ::testing::TempDir() + "/code_none.tsr";
  Executor(small_net(), options()).save(path);
  ::testing::internal::CaptureStderr();
  auto m = Executor::load(path, options(), true);
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(said, "");
  std::vector<Tensor> ins{random_f32({1, 8, 10, 10}, 3)};
  std::vector<Tensor> got = m->run(ins);
  std::vector<Tensor> ref = interpret(*small_net(), ins);
  for (int64_t i = 0; i < got[0].numel(); ++i) ASSERT_NEAR(got[0].get_double(i), ref[0].get_double(i), 1e-4) << i;
}

}  // namespace
}  // namespace tessera::runtime
