// PET's mutant generator (pet/mutants.h): every family is found on a
// subprogram where it applies, and the reference interpreter on random float
// inputs (activations and weights) gives the original's outputs (exact
// families, relative 1e-5) or differs only in the seam region the test
// computes from the conv's window (N2H, N2W); dedup, reciprocity pruning,
// bad input skipped with a reason, splice + fold_constants, and the time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "opt/passes.h"
#include "pet/mutants.h"
#include "pet/subprogram.h"
#include "runtime/executor.h"
#include "pet_test_util.h"
#include "support/error.h"

namespace tessera::pet {
namespace {

using testing::pet::expect_same_outputs;
using testing::pet::max_scaled_diff;
using testing::pet::ModelBuilder;
using testing::pet::random_inputs;

// The one subprogram of a model whose nodes are all multi-linear.
Subprogram whole(const Graph& g) {
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  return make_subprogram(g, nodes);
}

std::vector<Mutant> of_family(const Subprogram& s, const std::string& family, MutantReport* rep = nullptr) {
  MutantOptions o;
  o.families = {family};
  auto ms = generate_mutants(s, o, rep);
  std::vector<Mutant> out;
  for (auto& m : ms)
    if (m.family == family) out.push_back(m);
  return out;
}

// Finds `family` on the subprogram and checks every such mutant equals it.
void expect_exact_family(const Subprogram& s, const std::string& family, bool own_weights = false) {
  SCOPED_TRACE(family);
  MutantReport rep;
  auto ms = of_family(s, family, &rep);
  ASSERT_FALSE(ms.empty()) << "not found; skipped: " << (rep.skipped.empty() ? "" : rep.skipped[0]);
  for (const auto& m : ms) {
    EXPECT_TRUE(m.expect_equivalent);
    auto ins = random_inputs(*s.graph, 3);
    if (own_weights)
      for (size_t i = 0; i < s.weight_tensors.size(); ++i) ins[s.num_activations + i] = s.weight_tensors[i];
    expect_same_outputs(*m.graph, *s.graph, ins, 1e-5);
  }
}

Subprogram single_conv(Dims x, int64_t M, int64_t k, std::vector<int64_t> pads, int64_t stride = 1,
                       int64_t dil = 1, int64_t group = 1, std::unique_ptr<Graph>* keep = nullptr) {
  ModelBuilder m;
  m.g->add_output(m.conv(m.input("x", std::move(x)), M, k, k, std::move(pads), "conv", stride, dil, group));
  Subprogram s = whole(*m.g);
  if (keep) *keep = std::move(m.g);
  return s;
}

TEST(PetMutants, Conv1x1ToMatMul) {
  std::unique_ptr<Graph> g;
  expect_exact_family(single_conv({2, 8, 5, 6}, 12, 1, {0, 0, 0, 0}, 1, 1, 1, &g), "conv1x1-to-matmul");
}

TEST(PetMutants, GroupToConv) {
  std::unique_ptr<Graph> g;
  expect_exact_family(single_conv({1, 8, 6, 6}, 12, 3, {1, 1, 1, 1}, 1, 1, 4, &g), "group-to-conv");
}

TEST(PetMutants, ConvToGroupOnlyForBlockDiagonalWeights) {
  ModelBuilder m;
  Value* x = m.input("x", {1, 8, 6, 6});
  Tensor w = testing::random_f32({8, 8, 3, 3}, 4, -1, 1);
  for (int64_t o = 0; o < 8; ++o)
    for (int64_t i = 0; i < 8; ++i)
      if (o / 4 != i / 4)
        for (int64_t k = 0; k < 9; ++k) w.data<float>()[(o * 8 + i) * 9 + k] = 0;
  AttrMap a;
  a["pads"] = Attribute::of_ints({1, 1, 1, 1});
  m.g->add_output(m.op("Conv", {x, m.g->add_constant("w", w)}, "dense", a));
  Subprogram s = whole(*m.g);
  auto ms = of_family(s, "conv-to-group");
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_TRUE(ms[0].weight_dependent);
  expect_exact_family(s, "conv-to-group", true);
  // Random (dense) weights: no such mutant.
  std::unique_ptr<Graph> g;
  EXPECT_TRUE(of_family(single_conv({1, 8, 6, 6}, 8, 3, {1, 1, 1, 1}, 1, 1, 1, &g), "conv-to-group").empty());
}

TEST(PetMutants, StrideToUnit) {
  std::unique_ptr<Graph> g1, g2, g3;
  expect_exact_family(single_conv({1, 4, 9, 10}, 6, 3, {1, 1, 1, 1}, 2, 1, 1, &g1), "stride-to-unit");
  expect_exact_family(single_conv({1, 3, 16, 16}, 4, 7, {3, 3, 3, 3}, 2, 1, 1, &g2), "stride-to-unit");
  expect_exact_family(single_conv({2, 4, 11, 11}, 4, 2, {0, 0, 0, 0}, 3, 1, 1, &g3), "stride-to-unit");
}

TEST(PetMutants, DilatedToRegularConv) {
  std::unique_ptr<Graph> g1, g2, g3;
  // Sizes and pads multiples of the dilation: phases convolved with pads p/d.
  Subprogram even = single_conv({1, 4, 8, 8}, 4, 3, {2, 2, 2, 2}, 1, 2, 1, &g1);
  for (const char* f : {"D2H", "D2W", "D2H+D2W"}) expect_exact_family(even, f);
  // Odd sizes: padded to equal phases, sliced back.
  Subprogram odd = single_conv({1, 4, 9, 7}, 4, 3, {2, 2, 2, 2}, 1, 2, 1, &g2);
  for (const char* f : {"D2H", "D2W", "D2H+D2W"}) expect_exact_family(odd, f);
  Subprogram wide = single_conv({1, 3, 13, 10}, 5, 3, {1, 0, 2, 3}, 1, 3, 1, &g3);
  expect_exact_family(wide, "D2H+D2W");
  // The result is a regular conv.
  for (const auto& m : of_family(even, "D2H+D2W"))
    for (const auto& n : m.graph->nodes())
      if (n->op_type == "Conv") {
        EXPECT_EQ(n->attr("dilations")->ints, (std::vector<int64_t>{1, 1}));
      }
}

TEST(PetMutants, AvgPoolToDepthwise) {
  for (int64_t include_pad : {0, 1}) {
    SCOPED_TRACE("count_include_pad " + std::to_string(include_pad));
    ModelBuilder m;
    AttrMap a;
    a["kernel_shape"] = Attribute::of_ints({3, 3});
    a["pads"] = Attribute::of_ints({1, 1, 1, 1});
    a["strides"] = Attribute::of_ints({2, 2});
    a["count_include_pad"] = Attribute::of_int(include_pad);
    m.g->add_output(m.op("AveragePool", {m.input("x", {1, 4, 7, 8})}, "pool", a));
    expect_exact_family(whole(*m.g), "avgpool-to-depthwise");
  }
}

TEST(PetMutants, MergeParallelConvs) {
  ModelBuilder m;
  Value* x = m.input("x", {1, 6, 7, 7});
  m.g->add_output(m.conv(x, 4, 1, 1, {0, 0, 0, 0}, "a"));
  m.g->add_output(m.conv(x, 5, 1, 1, {0, 0, 0, 0}, "b"));
  m.g->add_output(m.conv(x, 3, 1, 1, {0, 0, 0, 0}, "c", 1, 1, 1, false));
  expect_exact_family(whole(*m.g), "merge-parallel-conv");
}

TEST(PetMutants, MergeParallelConvsOfOtherKernelSizes) {
  {
    ModelBuilder m;
    Value* x = m.input("x", {1, 4, 7, 8});
    m.g->add_output(m.conv(x, 4, 1, 1, {0, 0, 0, 0}, "a"));
    m.g->add_output(m.conv(x, 3, 3, 3, {1, 1, 1, 1}, "b"));
    m.g->add_output(m.conv(x, 2, 5, 5, {2, 2, 2, 2}, "c"));
    expect_exact_family(whole(*m.g), "merge-parallel-conv-padded");
  }
  {
    // Inception v3's 1x7 beside 7x1.
    ModelBuilder m;
    Value* x = m.input("x", {1, 4, 9, 9});
    m.g->add_output(m.conv(x, 4, 1, 7, {0, 3, 0, 3}, "a"));
    m.g->add_output(m.conv(x, 4, 7, 1, {3, 0, 3, 0}, "b"));
    expect_exact_family(whole(*m.g), "merge-parallel-conv-padded");
  }
}

TEST(PetMutants, MergeBatchedMatMuls) {
  {
    ModelBuilder m;  // Q/K/V of one input
    Value* x = m.input("x", {1, 8, 16});
    for (const char* n : {"q", "k", "v"}) m.g->add_output(m.op("MatMul", {x, m.weight(std::string(n) + ".w", {16, 16})}, n));
    expect_exact_family(whole(*m.g), "merge-batched-matmul");
  }
  {
    ModelBuilder m;  // two inputs of one shape by one weight
    Value* w = m.weight("w", {16, 12});
    m.g->add_output(m.op("MatMul", {m.input("a", {2, 8, 16}), w}, "p"));
    m.g->add_output(m.op("MatMul", {m.input("b", {2, 8, 16}), w}, "q"));
    expect_exact_family(whole(*m.g), "merge-batched-matmul");
  }
}

TEST(PetMutants, ChannelsIntoSpaceAreExact) {
  std::unique_ptr<Graph> g;
  Subprogram s = single_conv({1, 8, 6, 7}, 6, 3, {1, 1, 1, 1}, 1, 1, 1, &g);
  expect_exact_family(s, "C2H");
  expect_exact_family(s, "C2W");
}

TEST(PetMutants, DfsFindsMatMulTransposes) {
  ModelBuilder m;
  m.g->add_output(m.op("MatMul", {m.input("x", {2, 5, 16}), m.weight("w", {16, 12})}, "mm"));
  Subprogram s = whole(*m.g);
  auto ms = of_family(s, "dfs:T+mm_left+T");
  ASSERT_EQ(ms.size(), 1u);
  expect_same_outputs(*ms[0].graph, *s.graph, random_inputs(*s.graph, 8), 1e-5);
}

// N2H / N2W: images 2i and 2i+1 side by side. An output row of the first
// image is wrong where the conv's window reaches past its last row, one of
// the second where it starts above its first row: computed from the window,
// not from the generator.
void expect_seam_only(const std::string& family, bool rows) {
  SCOPED_TRACE(family);
  const int64_t N = 4, C = 3, H = 6, W = 5, K = 3, pad = 1;
  std::unique_ptr<Graph> g;
  Subprogram s = single_conv({N, C, H, W}, 4, K, {pad, pad, pad, pad}, 1, 1, 1, &g);
  auto ms = of_family(s, family);
  ASSERT_FALSE(ms.empty());
  const auto ins = random_inputs(*s.graph, 21);
  const Tensor want = interpret(*s.graph, ins)[0];
  for (const auto& mu : ms) {
    EXPECT_FALSE(mu.expect_equivalent);
    const Tensor got = interpret(*mu.graph, ins)[0];
    ASSERT_EQ(got.dims(), want.dims());
    const int64_t M = want.dim(1), OH = want.dim(2), OW = want.dim(3);
    int64_t wrong_inside = 0, region = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t o = rows ? oh : ow, extent = rows ? H : W;
            const bool first = n % 2 == 0;
            const int64_t lo = o - pad, hi = o - pad + K - 1;  // window rows read
            const bool in_region = first ? hi >= extent : lo < 0;
            const int64_t i = ((n * M + m) * OH + oh) * OW + ow;
            const double d = std::abs(got.get_double(i) - want.get_double(i));
            if (in_region) {
              ++region;
              wrong_inside += d > 1e-4;
            } else {
              EXPECT_LE(d, 1e-5 * (1 + std::abs(want.get_double(i)))) << "outside the seam at " << i;
            }
          }
    EXPECT_GT(region, 0);
    EXPECT_GT(wrong_inside, region / 2);  // random data: the seam really differs
  }
}

TEST(PetMutants, N2HAndN2WDifferOnlyAtTheSeam) {
  expect_seam_only("N2H", true);
  expect_seam_only("N2W", false);
}

TEST(PetMutants, DedupAndReciprocity) {
  std::unique_ptr<Graph> g;
  Subprogram s = single_conv({2, 8, 6, 6}, 8, 3, {1, 1, 1, 1}, 1, 1, 1, &g);
  MutantReport rep;
  auto ms = generate_mutants(s, {}, &rep);
  std::set<uint64_t> hashes;
  for (const auto& m : ms) {
    EXPECT_TRUE(hashes.insert(structural_hash(*m.graph)).second) << m.family;
    EXPECT_NE(structural_hash(*m.graph), s.hash) << m.family;
    // No recorded program holds an R/T right after its inverse.
    for (const char* pair : {"N2H+H2N", "H2N+N2H", "N2W+W2N", "W2N+N2W"})
      EXPECT_EQ(m.family.find(pair), std::string::npos) << m.family;
  }
  EXPECT_GT(rep.reciprocal_pruned, 0);
  // Running twice gives the same mutants (the search caches by hash).
  auto again = generate_mutants(s, {}, nullptr);
  ASSERT_EQ(again.size(), ms.size());
  for (size_t i = 0; i < ms.size(); ++i) EXPECT_EQ(again[i].hash, ms[i].hash);
  // The MatMul's T+T is pruned as well.
  ModelBuilder m;
  m.g->add_output(m.op("MatMul", {m.input("x", {5, 16}), m.weight("w", {16, 5})}, "mm"));
  MutantReport mrep;
  generate_mutants(whole(*m.g), {}, &mrep);
  EXPECT_GT(mrep.reciprocal_pruned, 0);
  // Duplicates are dropped: a 5x16 @ 16x5 product whose DFS reaches the same
  // program twice is counted, and never listed twice.
  std::printf("conv 2x8x6x6 3x3: %zu mutants, %d DFS programs, %d duplicates, %d pruned, %.2f ms\n", ms.size(),
              rep.dfs_programs, rep.duplicates, rep.reciprocal_pruned, rep.milliseconds);
  for (const auto& [f, n] : rep.per_family) std::printf("  %s: %d\n", f.c_str(), n);
}

TEST(PetMutants, UnknownOpIsSkippedWithAReason) {
  ModelBuilder m;
  Value* x = m.input("x", {1, 4, 5, 5});
  m.g->add_output(m.relu(m.conv(x, 4, 3, 3, {1, 1, 1, 1}, "c"), "r"));
  MutantReport rep;
  auto ms = generate_mutants(*m.g, 1, {}, &rep);
  EXPECT_TRUE(ms.empty());
  ASSERT_EQ(rep.skipped.size(), 1u);
  EXPECT_NE(rep.skipped[0].find("Relu node 'r'"), std::string::npos) << rep.skipped[0];
  // A 1-D conv: the 2-D families skip it, naming it.
  ModelBuilder m1;
  AttrMap a;
  a["pads"] = Attribute::of_ints({1, 1});
  m1.g->add_output(m1.op("Conv", {m1.input("x", {1, 4, 9}), m1.weight("w", {4, 4, 3})}, "c1", a));
  MutantReport rep1;
  EXPECT_NO_THROW(generate_mutants(whole(*m1.g), {}, &rep1));
  ASSERT_FALSE(rep1.skipped.empty());
  EXPECT_NE(rep1.skipped[0].find("Conv node 'c1'"), std::string::npos) << rep1.skipped[0];
}

// A merged mutant spliced into the model: the weight Concat folds into a
// constant at fold_constants, the outputs stay the model's.
TEST(PetMutants, SplicedMutantWeightsFold) {
  ModelBuilder m;
  Value* x = m.relu(m.input("x", {1, 6, 7, 7}), "r");
  Value* a = m.relu(m.conv(x, 4, 1, 1, {0, 0, 0, 0}, "a"), "ra");
  Value* b = m.relu(m.conv(x, 4, 3, 3, {1, 1, 1, 1}, "b"), "rb");
  m.g->add_output(m.op("Add", {a, b}, "sum"));
  auto ref = m.g->clone();
  auto subs = find_subprograms(*m.g);
  const Subprogram* grp = nullptr;
  for (const auto& s : subs)
    if (s.kind == Subprogram::Kind::Group) grp = &s;
  ASSERT_TRUE(grp);
  auto ms = of_family(*grp, "merge-parallel-conv-padded");
  ASSERT_EQ(ms.size(), 1u);
  splice(*m.g, *grp, *ms[0].graph);
  const auto ins = random_inputs(*ref, 2);
  expect_same_outputs(*m.g, *ref, ins, 1e-5);
  fold_constants(*m.g);
  int convs = 0;
  for (const auto& n : m.g->nodes()) {
    EXPECT_NE(n->op_type, "Concat");
    EXPECT_NE(n->op_type, "Pad");
    convs += n->op_type == "Conv";
  }
  EXPECT_EQ(convs, 1);
  expect_same_outputs(*m.g, *ref, ins, 1e-5);
}

// Inception's parallel 1x1 convs merged, spliced and folded, then put in the
// blocked layout: the merged conv's Split stays blocked (its parts are whole
// 16-lane blocks but the last, 24 channels), so no value is reordered between
// the merged conv and the branches' convs; interpreted and compiled, the
// outputs are the original model's.
TEST(PetMutants, MergedConvsKeepTheBlockedLayout) {
  auto build = [] {
    ModelBuilder m;
    Value* x = m.relu(m.input("x", {1, 24, 9, 8}), "r");
    int i = 0;
    for (int64_t M : {16, 32, 24}) {
      const std::string n = "b" + std::to_string(i++);
      m.g->add_output(m.conv(m.relu(m.conv(x, M, 1, 1, {0, 0, 0, 0}, n), n + ".r"), 8, 3, 3, {1, 1, 1, 1}, n + ".c"));
    }
    return std::move(m.g);
  };
  auto g = build();
  auto ref = build();
  const Subprogram* grp = nullptr;
  auto subs = find_subprograms(*g);
  for (const auto& s : subs)
    if (s.kind == Subprogram::Kind::Group && s.nodes.size() == 3) grp = &s;
  ASSERT_TRUE(grp);
  auto ms = of_family(*grp, "merge-parallel-conv");
  ASSERT_EQ(ms.size(), 1u);
  splice(*g, *grp, *ms[0].graph);
  fold_constants(*g);
  const auto ins = random_inputs(*ref, 4);
  auto mutated = g->clone();
  ASSERT_EQ(to_blocked_layout(*g, 16), 4);  // the merged conv and the three branch convs
  int blocked_splits = 0, to_blocked = 0;
  for (const auto& n : g->nodes()) {
    blocked_splits += n->op_type == "Split" && n->inputs[0]->type.rank() == 5;
    to_blocked += n->op_type == "ReorderToBlocked";
  }
  EXPECT_EQ(blocked_splits, 1);
  EXPECT_EQ(to_blocked, 1);  // the Relu of the input, once
  expect_same_outputs(*g, *ref, ins, 1e-5);
  runtime::Executor compiled(std::move(mutated), runtime::ExecutorOptions{});
  std::vector<Tensor> want = interpret(*ref, ins), got = compiled.run(ins);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_LT(max_scaled_diff(got[k], want[k]), 1e-5) << k;
}

// The DFS is bounded by a count of ops tried, not by a clock: the same
// subprogram gives the same mutants (by hash, in order) however loaded the
// machine, and the bound holds.
TEST(PetMutants, TheDfsBoundIsACountAndTheResultDeterministic) {
  std::unique_ptr<Graph> g;
  const Subprogram s = single_conv({1, 64, 16, 16}, 64, 3, {1, 1, 1, 1}, 1, 1, 1, &g);
  MutantOptions small;
  small.fixed = false;
  small.max_dfs_states = 40;
  MutantReport a, b, unbounded;
  const std::vector<Mutant> ma = generate_mutants(*s.graph, s.num_activations, small, &a);
  const std::vector<Mutant> mb = generate_mutants(*s.graph, s.num_activations, small, &b);
  EXPECT_TRUE(a.out_of_states);
  EXPECT_EQ(a.dfs_states, 40);
  ASSERT_EQ(ma.size(), mb.size());
  for (size_t i = 0; i < ma.size(); ++i) EXPECT_EQ(ma[i].hash, mb[i].hash) << i;
  MutantOptions all = small;
  all.max_dfs_states = 0;
  const std::vector<Mutant> mu = generate_mutants(*s.graph, s.num_activations, all, &unbounded);
  EXPECT_FALSE(unbounded.out_of_states);
  EXPECT_GT(unbounded.dfs_states, 40);
  EXPECT_GE(mu.size(), ma.size());
}

TEST(PetMutants, GenerationTakesMilliseconds) {
  std::unique_ptr<Graph> g1, g2;
  for (const Subprogram& s : {single_conv({8, 64, 28, 28}, 64, 3, {1, 1, 1, 1}, 1, 1, 1, &g1),
                              single_conv({1, 512, 32, 32}, 512, 3, {2, 2, 2, 2}, 1, 2, 1, &g2)}) {
    MutantReport rep;
    auto t0 = std::chrono::steady_clock::now();
    auto ms = generate_mutants(s, {}, &rep);
    double ms_taken = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %zu mutants in %.2f ms (%d DFS states)\n", s.describe().c_str(), ms.size(), ms_taken,
                rep.dfs_states);
    EXPECT_FALSE(ms.empty());
    EXPECT_LT(ms_taken, 1000);
  }
}

}  // namespace
}  // namespace tessera::pet
