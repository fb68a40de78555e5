// Artifacts (.tsr) are untrusted input: one with its checksums recomputed
// but hostile contents — absurd options, schedules whose factors exceed
// their loops, malformed step lists — is an error naming the file and what
// is wrong, never a hang, a crash or a storm of threads.
#include <gtest/gtest.h>

#include <chrono>

#include "interp/interpreter.h"
#include "support/artifact.h"
#include "runtime/executor.h"
#include "support/error.h"
#include "support/thread_pool.h"
#include "random_tensor.h"

namespace tessera::runtime {
namespace {

using tessera::testing::random_f32;

// y = Relu(x · w): one fused kernel whose schedule splits and vectorizes.
std::string saved_artifact(const std::string& name) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {8, 32}, true});
  Value* w = g->add_constant("w", random_f32({32, 16}, 3));
  Node* mm = g->add_node("MatMul", {x, w}, {"m"}, {}, "mm");
  g->add_output(g->add_node("Relu", {mm->outputs[0]}, {"y"}, {}, "relu")->outputs[0]);
  infer_graph(*g);
  Executor m(std::move(g), {});
  m.run({random_f32({8, 32}, 4)});
  std::string path = ::testing::TempDir() + "/" + name + ".tsr";
  m.save(path);
  return path;
}

// Loads `path` after `edit` changed its sections (checksums recomputed);
// returns the error ("" when it loads), failing when loading takes long.
template <class F>
std::string load_edited(const std::string& path, F edit, std::unique_ptr<Executor>* loaded = nullptr) {
  Artifact a = load_artifact(path);
  edit(a);
  save_artifact(a, path);
  auto t0 = std::chrono::steady_clock::now();
  std::string err;
  try {
    auto m = Executor::load(path, ExecutorOptions{}, true);
    if (loaded) *loaded = std::move(m);
  } catch (const Error& e) {
    err = e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << "loading took too long";
  return err;
}

TEST(ArtifactHostile, OptionsAreBounded) {
  std::string path = saved_artifact("options");
  // 100,000 threads used to be started as asked.
  for (const char* threads : {"100000", "abc", "-1", "99999999999999999999"}) {
    std::string err = load_edited(path, [&](Artifact& a) { a.sections["options"] = "isa=host\nthreads=" + std::string(threads) + "\n"; });
    EXPECT_NE(err.find(path + ": options: threads=" + threads + " is not a thread count this machine runs (0 to " +
                       std::to_string(ThreadPool::max_threads()) + ")"),
              std::string::npos)
        << err;
  }
  EXPECT_EQ(load_edited(path, [&](Artifact& a) { a.sections["options"] = "isa=host\nthreads=2\n"; }), "");
}

TEST(ArtifactHostile, ScheduleNumbersAreBounded) {
  std::string path = saved_artifact("numbers");
  // A split by a billion used to make the loader (and every run) spin.
  std::string err = load_edited(path, [&](Artifact& a) {
    a.sections["plan.0.step.0.schedule"] = "split mm.matmul rk 1000000000\n";
  });
  EXPECT_NE(err.find(path + ": malformed schedule of step 0: schedule line 1: 1000000000 is out of range"),
            std::string::npos)
      << err;
  err = load_edited(path, [&](Artifact& a) { a.sections["plan.0.step.0.nodes"] = "0 one"; });
  EXPECT_NE(err.find(path + ": step 0 lists node 'one', which the model does not have"), std::string::npos) << err;
  err = load_edited(path, [&](Artifact& a) { a.sections["plan.0.step.0.nodes"] = "0 7"; });
  EXPECT_NE(err.find(path + ": step 0 lists node '7', which the model does not have"), std::string::npos) << err;
}

// A model section that is not ONNX (checksums recomputed) is an error naming
// the artifact, not only the parser's complaint.
TEST(ArtifactHostile, ABadModelSectionNamesTheArtifact) {
  std::string path = saved_artifact("model_section");
  std::string err = load_edited(path, [&](Artifact& a) { a.sections["model.onnx"] = std::string(512, '\x7f'); });
  EXPECT_NE(err.find(path + ": its model: the model is not a valid ONNX ModelProto"), std::string::npos) << err;
}

// A factor within the text's bounds but far beyond its loop is refused when
// the kernel is lowered: the loader compiles the default schedule instead
// (promptly), and the model computes the right numbers.
TEST(ArtifactHostile, FactorsBeyondTheirLoopsFallBackToTheDefault) {
  std::string path = saved_artifact("beyond");
  std::unique_ptr<Executor> m;
  const std::string crafted = "split mm.matmul rk 16000000\nsplit relu i0 16000000\n";
  std::string err = load_edited(path, [&](Artifact& a) { a.sections["plan.0.step.0.schedule"] = crafted; }, &m);
  ASSERT_EQ(err, "");
  ASSERT_EQ(m->plans().size(), 1u);
  for (const Step& st : m->plans()[0]->steps) EXPECT_NE(schedule::to_text(st.schedule), crafted);
  std::vector<Tensor> ins{random_f32({8, 32}, 4)};
  Tensor got = m->run(ins).at(0);
  Tensor want = interpret(m->graph(), ins).at(0);
  for (int64_t i = 0; i < got.numel(); ++i) ASSERT_NEAR(got.get_double(i), want.get_double(i), 1e-4) << i;
}

}  // namespace
}  // namespace tessera::runtime
