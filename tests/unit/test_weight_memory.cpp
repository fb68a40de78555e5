// One copy of the weights (issue 22, "Memory"): the weight store backs a
// constant's pages by a scratch file in place (same address, same bytes,
// pages out of the process until read); the executor releases constants
// every plan reads only packed, and the model still gives the interpreter's
// outputs, compiles a second input shape right, saves an artifact that loads
// and matches; plans for two input shapes hold one packed copy. Residency is
// read from the kernel (/proc/self/pagemap), not from the code under test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "driver/driver.h"
#include "interp/interpreter.h"
#include "runtime/executor.h"
#include "runtime/weight_store.h"
#include "random_tensor.h"
#include "resident_pages.h"

namespace tessera::runtime {
namespace {

using tessera::testing::random_f32;

// The bytes of `t`'s pages present in this process's page tables.
int64_t resident_bytes_of(const Tensor& t) { return tessera::testing::resident_bytes(t.raw(), t.nbytes()); }
// The bytes of the pages over [begin, begin + bytes) present in this process.
int64_t resident_bytes_in(uintptr_t begin, size_t bytes) {
  return tessera::testing::resident_bytes(reinterpret_cast<const void*>(begin), bytes);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(Tensor, LargeBuffersArePageMappingsOfTheirOwn) {
  Tensor small(DType::F32, {1000});
  EXPECT_FALSE(small.page_mapped());
  Tensor big(DType::F32, {300, 1000});  // 1.2 MB
  ASSERT_TRUE(big.page_mapped());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.raw()) % 4096, 0u);
  EXPECT_EQ(resident_bytes_of(big), 0);  // nothing resident until touched
  for (float v : big.span<float>()) ASSERT_EQ(v, 0.0f);
  Tensor huge(DType::F32, {1024, 1024});       // 4 MiB: 2 MiB aligned (huge pages where allowed)
  EXPECT_EQ(reinterpret_cast<uintptr_t>(huge.raw()) % (2 << 20), 0u);
  EXPECT_TRUE(huge.reshaped({1024 * 1024}).page_mapped());
  EXPECT_FALSE(Tensor::view(DType::F32, {300, 1000}, big.raw()).page_mapped());
}

// Kernels load out of bounds under masks (a padded convolution's border
// rows); on pages that are not present each such load takes a slow assist.
// A mapped buffer keeps 64 KiB of present, readable pages on each side (the
// kernel's zero page: no memory of their own, as /proc/self/smaps_rollup's
// anonymous bytes show), while its own pages stay absent until written.
TEST(Tensor, MappedBuffersHavePresentMarginsBeforeAndAfter) {
  auto anonymous_kb = [] {
    FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
    if (!f) return int64_t{-1};
    char line[256];
    int64_t kb = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "Anonymous: %ld kB", &kb) == 1) break;
    std::fclose(f);
    return kb;
  };
  const size_t margin = size_t{64} << 10;
  const int64_t before = anonymous_kb();
  for (Dims dims : {Dims{300, 1000}, Dims{1024, 1024}}) {  // 1.2 MB (4 KiB aligned), 4 MiB (2 MiB aligned)
    Tensor t(DType::F32, dims);
    ASSERT_TRUE(t.page_mapped());
    const auto begin = reinterpret_cast<uintptr_t>(t.raw());
    const uintptr_t end = (begin + t.nbytes() + 4095) / 4096 * 4096;
    EXPECT_EQ(resident_bytes_in(begin - margin, margin), static_cast<int64_t>(margin));
    EXPECT_EQ(resident_bytes_in(end, margin), static_cast<int64_t>(margin));
    EXPECT_EQ(resident_bytes_of(t), 0);
    if (before >= 0) {
      EXPECT_LT(anonymous_kb() - before, 64) << "the margins hold no anonymous memory";
    }
  }
}

TEST(WeightStore, ReleasedTensorKeepsItsAddressAndBytes) {
  WeightStore store;
  ASSERT_TRUE(store.available()) << store.why();
  Tensor w = random_f32({512, 300}, 3);  // 600 KB
  Tensor want = w.clone();
  const void* at = w.raw();
  ASSERT_GT(resident_bytes_of(w), 0);
  ASSERT_TRUE(store.release(w));
  EXPECT_EQ(w.raw(), at);
  EXPECT_TRUE(store.holds(at));
  EXPECT_EQ(store.bytes(), static_cast<int64_t>(w.nbytes()));
  EXPECT_EQ(resident_bytes_of(w), 0);  // out of the process
  EXPECT_TRUE(same_bytes(w, want));      // read back from the file
  EXPECT_GT(resident_bytes_of(w), 0);
  ASSERT_TRUE(store.release(w));         // again: the pages go, the bytes stay
  EXPECT_EQ(resident_bytes_of(w), 0);
  EXPECT_EQ(store.bytes(), static_cast<int64_t>(w.nbytes()));
  EXPECT_TRUE(same_bytes(w, want));
}

TEST(WeightStore, SmallTensorsViewsAndMissingDirectoriesKeepTheirMemory) {
  WeightStore store;
  Tensor small = random_f32({100}, 1);
  EXPECT_FALSE(store.release(small));
  Tensor big = random_f32({512, 300}, 2);
  EXPECT_FALSE(store.release(Tensor::view(DType::F32, {512, 300}, big.raw())));
  WeightStore nowhere("/nonexistent-tessera-dir/x");
  EXPECT_FALSE(nowhere.available());
  EXPECT_NE(nowhere.why().find("/nonexistent-tessera-dir/x"), std::string::npos) << nowhere.why();
  Tensor want = big.clone();
  EXPECT_FALSE(nowhere.release(big));
  EXPECT_TRUE(same_bytes(big, want));
  EXPECT_GT(resident_bytes_of(big), 0);
}

TEST(WeightStore, TensorsOutliveTheStore) {
  Tensor w = random_f32({512, 300}, 4);
  Tensor want = w.clone();
  {
    WeightStore store;
    ASSERT_TRUE(store.release(w));
  }
  EXPECT_TRUE(same_bytes(w, want));
}

// y = x @ W + b: W (256x512, 512 KiB) is read only packed by the compiled
// MatMul; b is small. The batch dimension is dynamic: one plan per batch.
std::unique_ptr<Graph> dense_model(int64_t batch = -1) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {batch, 256}, true});
  Value* w = g->add_constant("W", random_f32({256, 512}, 11));
  Value* b = g->add_constant("b", random_f32({512}, 12));
  Value* h = g->add_node("MatMul", {x, w}, {"h"}, {}, "mm")->outputs[0];
  Value* y = g->add_node("Add", {h, b}, {"y"}, {}, "add")->outputs[0];
  g->add_output(y);
  infer_graph(*g);
  return g;
}

std::unique_ptr<Executor> dense_executor() {
  ExecutorOptions o;
  o.fusion = false;  // one step per node: the MatMul's weights are its own
  return std::make_unique<Executor>(dense_model(), o);
}

const Tensor& constant_of(const Executor& m, const std::string& name) { return *m.graph().find_value(name)->constant; }

// Outputs against the interpreter on an identical model of its own (whose
// weights were never released), to 1e-4 relative.
void expect_interpreter_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& ins) {
  std::unique_ptr<Graph> ref = dense_model();
  std::vector<Tensor> want = interpret(*ref, ins);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].dims(), want[i].dims());
    for (int64_t k = 0; k < got[i].numel(); ++k)
      ASSERT_NEAR(got[i].get_double(k), want[i].get_double(k), 1e-4 * (1 + std::abs(want[i].get_double(k))))
          << "output " << i << " element " << k;
  }
}

TEST(WeightMemory, PackedOnlyConstantsAreReleasedAndOutputsStayRight) {
  auto m = dense_executor();
  std::vector<Tensor> ins{random_f32({3, 256}, 1)};
  std::vector<Tensor> out = m->run(ins);
  const Tensor& w = constant_of(*m, "W");
  std::shared_ptr<const Plan> p = m->last_plan();
  ASSERT_GT(p->packed_bytes, 0) << m->report();
  ASSERT_TRUE(m->weight_store());
  EXPECT_TRUE(m->weight_store()->holds(w.raw()));
  EXPECT_EQ(resident_bytes_of(w), 0) << "W is read only packed, so its pages left the process";
  const Value* b = m->graph().find_value("b");
  EXPECT_NE(std::find(p->original_reads.begin(), p->original_reads.end(), b), p->original_reads.end());
  EXPECT_EQ(std::count(p->original_reads.begin(), p->original_reads.end(), m->graph().find_value("W")), 0);
  expect_interpreter_outputs(out, ins);
  expect_interpreter_outputs(m->run({random_f32({3, 256}, 2)}), {random_f32({3, 256}, 2)});
  std::string r = m->report();
  EXPECT_NE(r.find("512.0 KiB read only packed and released"), std::string::npos) << r;
  // The interpreter on the model's own graph reads the released W back.
  expect_interpreter_outputs(interpret(m->graph(), ins), ins);
  m->release_packed_weights();
  EXPECT_EQ(resident_bytes_of(w), 0);
}

TEST(WeightMemory, ReleasingOffKeepsEveryConstant) {
  ExecutorOptions o;
  o.fusion = false;
  o.release_weights = false;
  Executor m(dense_model(), o);
  std::vector<Tensor> ins{random_f32({3, 256}, 1)};
  expect_interpreter_outputs(m.run(ins), ins);
  EXPECT_FALSE(m.weight_store());
  EXPECT_GT(resident_bytes_of(constant_of(m, "W")), 0);
  EXPECT_NE(m.report().find("releasing is off"), std::string::npos) << m.report();
}

// After W was released, packing it again reads it back: a plan compiled
// afresh (sharing nothing) packs the same bytes, and a second input shape
// runs right.
TEST(WeightMemory, SecondShapeAndRepackingAfterReleaseAreRight) {
  auto m = dense_executor();
  std::vector<Tensor> a{random_f32({3, 256}, 1)}, b{random_f32({7, 256}, 2)};
  m->run(a);
  std::shared_ptr<const Plan> first = m->last_plan();
  ASSERT_EQ(resident_bytes_of(constant_of(*m, "W")), 0);
  expect_interpreter_outputs(m->run(b), b);
  EXPECT_EQ(m->plans_compiled(), 2);
  ExecutorOptions o;
  o.fusion = false;
  std::unique_ptr<Plan> fresh = compile_plan(m->graph(), a, o);  // packs from the released W
  ASSERT_EQ(fresh->steps.size(), first->steps.size());
  int compared = 0;
  for (size_t i = 0; i < fresh->steps.size(); ++i) {
    ASSERT_EQ(fresh->steps[i].packed.size(), first->steps[i].packed.size());
    for (size_t j = 0; j < fresh->steps[i].packed.size(); ++j, ++compared)
      EXPECT_TRUE(same_bytes(fresh->slots[static_cast<size_t>(fresh->steps[i].packed[j])].data,
                             first->slots[static_cast<size_t>(first->steps[i].packed[j])].data));
  }
  EXPECT_GT(compared, 0);
  EXPECT_GT(resident_bytes_of(constant_of(*m, "W")), 0);  // read back to pack it
  m->release_packed_weights();
  EXPECT_EQ(resident_bytes_of(constant_of(*m, "W")), 0);
}

TEST(WeightMemory, SaveAfterReleaseWritesAnArtifactThatLoadsAndMatches) {
  auto m = dense_executor();
  std::vector<Tensor> ins{random_f32({3, 256}, 1)};
  std::vector<Tensor> first = m->run(ins);
  ASSERT_EQ(resident_bytes_of(constant_of(*m, "W")), 0);
  std::string path = ::testing::TempDir() + "/released.tsr";
  m->save(path);
  EXPECT_EQ(resident_bytes_of(constant_of(*m, "W")), 0);  // released again after saving
  auto l = Executor::load(path, ExecutorOptions{}, true);
  std::unique_ptr<Graph> ref = dense_model();
  EXPECT_TRUE(same_bytes(constant_of(*l, "W"), *ref->find_value("W")->constant));
  std::vector<Tensor> again = l->run(ins);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(same_bytes(again[0], first[0]));
  expect_interpreter_outputs(again, ins);
}

// A loaded artifact holds W twice (original and packed); the original, read
// only packed, leaves the process's memory (its whole pages: those at its
// ends may hold other sections' bytes too) and is read from the file when
// something reads it again.
TEST(WeightMemory, LoadedArtifactsPackedOnlyWeightsStayInTheFile) {
  auto m = dense_executor();
  std::vector<Tensor> ins{random_f32({3, 256}, 1)};
  std::vector<Tensor> first = m->run(ins);
  std::string path = ::testing::TempDir() + "/dropped.tsr";
  m->save(path);
  auto l = Executor::load(path, ExecutorOptions{}, true);
  const int64_t page = sysconf(_SC_PAGESIZE);
  EXPECT_LE(resident_bytes_of(constant_of(*l, "W")), 2 * page);
  EXPECT_GT(resident_bytes_of(constant_of(*l, "b")), 0);  // read as it is: stays
  std::string r = l->report();
  EXPECT_NE(r.find("read only packed and left in the artifact's file"), std::string::npos) << r;
  std::vector<Tensor> again = l->run(ins);
  EXPECT_TRUE(same_bytes(again[0], first[0]));
  std::unique_ptr<Graph> ref = dense_model();
  EXPECT_TRUE(same_bytes(constant_of(*l, "W"), *ref->find_value("W")->constant));  // read back from the file
  l->release_packed_weights();
  EXPECT_LE(resident_bytes_of(constant_of(*l, "W")), 2 * page);
}

// Checking the artifact leaves its pages out of the process; loading then
// brings in those its plan reads (the packed weights, the constants read as
// they are), so the first run faults none in, and leaves out the rest.
TEST(WeightMemory, LoadedArtifactsReadWeightsAreInMemoryBeforeTheFirstRun) {
  auto m = dense_executor();
  std::vector<Tensor> ins{random_f32({3, 256}, 1)};
  std::vector<Tensor> first = m->run(ins);
  std::string path = ::testing::TempDir() + "/populated.tsr";
  m->save(path);
  auto l = Executor::load(path, ExecutorOptions{}, true);
  std::shared_ptr<const Plan> p = l->last_plan();
  ASSERT_TRUE(p);
  int packed = 0;
  for (const Slot& s : p->slots) {
    if (s.kind != SlotKind::Packed) continue;
    ++packed;
    EXPECT_GE(resident_bytes_of(s.data), static_cast<int64_t>(s.data.nbytes()));
  }
  EXPECT_GT(packed, 0) << l->report();
  const Tensor& b = constant_of(*l, "b");
  EXPECT_GE(resident_bytes_of(b), static_cast<int64_t>(b.nbytes()));
  EXPECT_LE(resident_bytes_of(constant_of(*l, "W")), 2 * sysconf(_SC_PAGESIZE));
  EXPECT_TRUE(same_bytes(l->run(ins)[0], first[0]));
  std::filesystem::remove(path);
}

// The packed buffers of `plans`, each once: their bytes.
int64_t packed_bytes_once(const std::vector<std::shared_ptr<const Plan>>& plans) {
  std::set<const void*> seen;
  int64_t n = 0;
  for (const auto& p : plans)
    for (const Slot& s : p->slots)
      if (s.kind == SlotKind::Packed && seen.insert(s.data.raw()).second) n += static_cast<int64_t>(s.data.nbytes());
  return n;
}

TEST(WeightMemory, PlansForTwoShapesShareOnePackedTensor) {
  auto m = dense_executor();
  m->run({random_f32({3, 256}, 1)});
  m->run({random_f32({7, 256}, 2)});
  std::vector<std::shared_ptr<const Plan>> plans = m->plans();
  ASSERT_EQ(plans.size(), 2u);
  auto packed_of = [](const Plan& p) {
    for (const Step& st : p.steps)
      if (!st.packed.empty()) return p.slots[static_cast<size_t>(st.packed[0])].data.raw();
    return static_cast<const void*>(nullptr);
  };
  ASSERT_TRUE(packed_of(*plans[0]));
  EXPECT_EQ(packed_of(*plans[0]), packed_of(*plans[1]));  // one tensor
  EXPECT_EQ(plans[1]->shared_packed_bytes, plans[0]->packed_bytes);
  EXPECT_EQ(packed_bytes_once(plans), plans[0]->packed_bytes);
  std::string r = m->report();
  EXPECT_NE(r.find("of it shared by several plans"), std::string::npos) << r;
}

// ResNet-18 at batch 1 and batch 4 (issue 22: 44.6 MiB of packed weights per
// batch size before): the second plan packs nothing its first did not.
TEST(WeightMemory, ResNet18AtTwoBatchSizesHoldsItsPackedWeightsOnce) {
  std::unique_ptr<Graph> g = load_model("zoo:resnet18");
  for (const auto& v : g->values())  // inferred again below, for a dynamic batch
    if (!v->constant && !v->is_graph_input) v->type = TensorType{v->type.dtype, {}, false};
  g->inputs()[0]->type.dims = {-1, 3, 64, 64};
  infer_graph(*g);
  Executor m(std::move(g), {});
  std::vector<Tensor> one{random_f32({1, 3, 64, 64}, 1)}, four{random_f32({4, 3, 64, 64}, 2)};
  std::vector<Tensor> before = m.run(one);
  m.run(four);
  std::vector<std::shared_ptr<const Plan>> plans = m.plans();
  ASSERT_EQ(plans.size(), 2u);
  ASSERT_GT(plans[0]->packed_bytes, 0);
  EXPECT_EQ(plans[1]->shared_packed_bytes, plans[1]->packed_bytes) << m.report();
  EXPECT_EQ(packed_bytes_once(plans), std::max(plans[0]->packed_bytes, plans[1]->packed_bytes)) << m.report();
  std::vector<Tensor> after = m.run(one);
  ASSERT_EQ(after.size(), before.size());
  EXPECT_TRUE(same_bytes(after[0], before[0]));
}

}  // namespace
}  // namespace tessera::runtime
