// DNNFusion's fusion planning and fused kernels: every cell of the fusion
// table decided as the table says (profile cells both ways) and the fused
// kernels checked against the reference interpreter; blocks that stay
// acyclic; the register-pressure bound; the profiling database (persisted,
// reused); epilogue scheduling of contraction + elementwise blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "compile/block_kernel.h"
#include "fusion/partition.h"
#include "interp/interpreter.h"
#include "ops/registry.h"
#include "runtime/executor.h"
#include "runtime/fusion_profiler.h"
#include "schedule/schedule.h"
#include "fusion_test_util.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using fusion::Decision;
using tessera::testing::expect_fused_matches_reference;
using tessera::testing::save_and_load;
using M = MappingType;

// Inputs and weights in [-1, 1).
Tensor rand_f32(const Dims& dims, uint32_t seed) { return tessera::testing::random_f32(dims, seed, -1, 1); }

// x [1, 8, 6, 6] (Reorganize producers: [1, 8, 36]) -> producer -> consumer
// -> Relu (the seed that reaches both). Each op is a representative of its
// mapping type with shapes that chain.
struct Pair {
  M producer, consumer;
};

Value* add_op(Graph& g, M type, Value* x, const std::string& name, bool consumer) {
  switch (type) {
    case M::OneToOne: return g.add_node(consumer ? "Sigmoid" : "Neg", {x}, {name + "_out"}, {}, name)->outputs[0];
    case M::OneToMany: {
      Value* b = g.add_constant(name + "_b", rand_f32({8, 1, 1}, 3));  // broadcast: one-to-many
      return g.add_node("Add", {x, b}, {name + "_out"}, {}, name)->outputs[0];
    }
    case M::ManyToMany: {
      AttrMap a;
      a["pads"] = Attribute::of_ints({1, 1, 1, 1});
      Value* w = g.add_constant(name + "_w", rand_f32({8, 8, 3, 3}, 4));
      return g.add_node("Conv", {x, w}, {name + "_out"}, a, name)->outputs[0];
    }
    case M::Reorganize: {
      Tensor shape(DType::I64, {4});
      Dims to = consumer ? Dims{1, 8, 36, 1} : Dims{1, 8, 6, 6};
      for (int i = 0; i < 4; ++i) shape.data<int64_t>()[i] = to[static_cast<size_t>(i)];
      return g.add_node("Reshape", {x, g.add_constant(name + "_shape", shape)}, {name + "_out"}, {}, name)->outputs[0];
    }
    case M::Shuffle: {
      AttrMap a;
      a["perm"] = Attribute::of_ints({0, 1, 3, 2});
      return g.add_node("Transpose", {x}, {name + "_out"}, a, name)->outputs[0];
    }
  }
  return nullptr;
}

std::unique_ptr<Graph> pair_graph(const Pair& p) {
  auto g = std::make_unique<Graph>();
  Dims in = p.producer == M::Reorganize ? Dims{1, 8, 36, 1} : Dims{1, 8, 6, 6};
  Value* x = g->add_input("x", {DType::F32, in, true});
  Value* a = add_op(*g, p.producer, x, "producer", false);
  Value* b = add_op(*g, p.consumer, a, "consumer", true);
  g->add_output(g->add_node("Relu", {b}, {"y"}, {}, "seed")->outputs[0]);
  infer_graph(*g);
  return g;
}

std::string pair_name(const Pair& p) {
  return std::string(mapping_type_name(p.producer)) + " -> " + std::string(mapping_type_name(p.consumer));
}

// The table, cell by cell: the seed's block reaches the consumer, then the
// producer is fused exactly when the cell says "fuse" (or "profile" and the
// measurement favours fusing); the plan, run fused, matches the interpreter.
TEST(FusionTable, EveryCellDecidesAndRunsCorrectly) {
  int cells = 0;
  for (M prod : fusion::kMappingTypes)
    for (M cons : fusion::kMappingTypes) {
      Pair p{prod, cons};
      SCOPED_TRACE(pair_name(p));
      auto g = pair_graph(p);
      ASSERT_EQ(node_mapping_type(*g->nodes()[0]), prod);
      ASSERT_EQ(node_mapping_type(*g->nodes()[1]), cons);
      fusion::FusionRule rule = fusion::fusion_rule(prod, cons);
      for (bool profile_says_fuse : {true, false}) {
        int measured = 0;
        fusion::PartitionOptions po;
        po.profile = [&](const std::vector<int>&, const std::vector<std::vector<int>>&) {
          ++measured;
          return std::optional<fusion::ProfileEntry>(
              fusion::ProfileEntry{profile_says_fuse ? 1.0 : 3.0, 2.0});
        };
        fusion::Partition plan = fusion::partition_graph(*g, po);
        bool together = plan.block_of[0] == plan.block_of[1];
        bool want = rule.decision == Decision::Fuse || (rule.decision == Decision::Profile && profile_says_fuse);
        EXPECT_EQ(together, want) << "profile says " << (profile_says_fuse ? "fuse" : "apart") << "\n"
                                  << fusion::print_fusion(*g, plan);
        if (together) {
          EXPECT_EQ(plan.blocks[static_cast<size_t>(plan.block_of[0])].type, rule.result) << fusion::print_fusion(*g, plan);
        }
        int fused = 0;
        for (const auto& b : plan.blocks) fused += b.nodes.size() > 1;
        expect_fused_matches_reference(*g, plan, fused);
      }
      ++cells;
    }
  EXPECT_EQ(cells, 25);
}

TEST(FusionTable, MatchesThePaper) {
  using fusion::fusion_rule;
  // One-to-One producers take the consumer's type and always fuse.
  for (M c : fusion::kMappingTypes) {
    EXPECT_EQ(fusion_rule(M::OneToOne, c).decision, Decision::Fuse);
    EXPECT_EQ(fusion_rule(M::OneToOne, c).result, c);
  }
  EXPECT_EQ(fusion_rule(M::OneToMany, M::ManyToMany).decision, Decision::Break);
  EXPECT_EQ(fusion_rule(M::ManyToMany, M::ManyToMany).decision, Decision::Break);
  EXPECT_EQ(fusion_rule(M::ManyToMany, M::OneToOne).decision, Decision::Fuse);
  EXPECT_EQ(fusion_rule(M::ManyToMany, M::Shuffle).decision, Decision::Profile);
  EXPECT_EQ(fusion_rule(M::Reorganize, M::ManyToMany).result, M::ManyToMany);
  EXPECT_EQ(fusion_rule(M::Shuffle, M::Reorganize).result, M::Reorganize);
  EXPECT_EQ(fusion_rule(M::Shuffle, M::Reorganize).decision, Decision::Fuse);
  EXPECT_EQ(fusion_rule(M::Reorganize, M::OneToMany).result, M::OneToMany);
}

// A diamond whose one branch leaves through a Many-to-Many op: fusing the
// join into the fork's block would make blocks depend on each other both
// ways, so the planner must keep them acyclic; the plan runs correctly.
TEST(Partition, BlocksStayAcyclic) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {1, 8, 6, 6}, true});
  Value* a = g->add_node("Relu", {x}, {"a"}, {}, "fork")->outputs[0];
  AttrMap ca;
  ca["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* c1 = g->add_node("Conv", {a, g->add_constant("w1", rand_f32({8, 8, 3, 3}, 1))}, {"c1"}, ca, "conv1")->outputs[0];
  Value* c2 = g->add_node("Conv", {c1, g->add_constant("w2", rand_f32({8, 8, 3, 3}, 2))}, {"c2"}, ca, "conv2")->outputs[0];
  Value* j = g->add_node("Add", {a, c2}, {"j"}, {}, "join")->outputs[0];
  g->add_output(g->add_node("Sigmoid", {j}, {"y"}, {}, "out")->outputs[0]);
  infer_graph(*g);
  fusion::Partition plan = fusion::partition_graph(*g);
  // Every block's inputs come from blocks earlier in the order.
  for (size_t bi = 0; bi < plan.blocks.size(); ++bi)
    for (const Value* v : fusion::block_inputs(*g, plan.blocks[bi]))
      if (v->producer) {
        int pi = -1;
        for (size_t k = 0; k < g->nodes().size(); ++k)
          if (g->nodes()[k].get() == v->producer) pi = static_cast<int>(k);
        EXPECT_LT(plan.block_of[static_cast<size_t>(pi)], static_cast<int>(bi)) << fusion::print_fusion(*g, plan);
      }
  int fused = 0;
  for (const auto& b : plan.blocks) fused += b.nodes.size() > 1;
  EXPECT_GE(fused, 1);
  expect_fused_matches_reference(*g, plan, fused);
}

// An activation between two convolutions finishes the first (its epilogue),
// even when the second one's activation, with a smaller (strided) output,
// seeds first and grows back through the second convolution.
TEST(Partition, ActivationsJoinTheContractionBefore) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {1, 8, 12, 12}, true});
  AttrMap ca;
  ca["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* c1 = g->add_node("Conv", {x, g->add_constant("w1", rand_f32({8, 8, 3, 3}, 1))}, {"c1"}, ca, "conv1")->outputs[0];
  Value* r1 = g->add_node("Relu", {c1}, {"r1"}, {}, "act1")->outputs[0];
  AttrMap dw = ca;
  dw["group"] = Attribute::of_int(8);
  dw["strides"] = Attribute::of_ints({2, 2});
  Value* c2 = g->add_node("Conv", {r1, g->add_constant("w2", rand_f32({8, 1, 3, 3}, 2))}, {"c2"}, dw, "conv2")->outputs[0];
  g->add_output(g->add_node("Relu", {c2}, {"y"}, {}, "act2")->outputs[0]);
  infer_graph(*g);
  fusion::Partition plan = fusion::partition_graph(*g);
  auto block = [&](const char* name) {
    for (size_t k = 0; k < g->nodes().size(); ++k)
      if (g->nodes()[k]->name == name) return plan.block_of[k];
    return -1;
  };
  EXPECT_EQ(block("act1"), block("conv1")) << fusion::print_fusion(*g, plan);
  EXPECT_EQ(block("act2"), block("conv2")) << fusion::print_fusion(*g, plan);
  EXPECT_NE(block("conv1"), block("conv2"));
  expect_fused_matches_reference(*g, plan, 2);
}

// A node whose block would keep more live values than the register budget
// stays apart.
TEST(Partition, RegisterPressureBoundsBlocks) {
  auto g = std::make_unique<Graph>();
  std::vector<Value*> xs;
  for (int i = 0; i < 6; ++i) xs.push_back(g->add_input("x" + std::to_string(i), {DType::F32, {64}, true}));
  Value* acc = xs[0];
  for (int i = 1; i < 6; ++i) acc = g->add_node("Add", {acc, xs[static_cast<size_t>(i)]}, {"s" + std::to_string(i)}, {}, "add" + std::to_string(i))->outputs[0];
  g->add_output(acc);
  infer_graph(*g);
  fusion::PartitionOptions po;
  po.max_live = 100;
  EXPECT_EQ(fusion::partition_graph(*g, po).blocks.size(), 1u);
  po.max_live = 4;  // at most 4 distinct inputs per block
  fusion::Partition plan = fusion::partition_graph(*g, po);
  EXPECT_GT(plan.blocks.size(), 1u);
  for (const auto& b : plan.blocks) EXPECT_LE(fusion::block_inputs(*g, b).size(), 4u);
  int fused = 0;
  for (const auto& b : plan.blocks) fused += b.nodes.size() > 1;
  expect_fused_matches_reference(*g, plan, fused);
}

// Ops that cannot share a kernel stay alone with a reason.
TEST(Partition, UnfusableNodesStayAlone) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {4, 5}, true});
  Value* idx = g->add_input("i", {DType::I64, {3}, true});
  Value* a = g->add_node("Relu", {x}, {"a"}, {}, "relu")->outputs[0];
  Value* b = g->add_node("Gather", {a, idx}, {"b"}, {}, "gather")->outputs[0];  // checks its indices
  g->add_output(g->add_node("Neg", {b}, {"y"}, {}, "neg")->outputs[0]);
  infer_graph(*g);
  EXPECT_NE(fusion::unfusable_reason(*g->nodes()[1], g->opset), "");
  fusion::Partition plan = fusion::partition_graph(*g);
  EXPECT_EQ(plan.blocks.size(), 3u);
  EXPECT_NE(fusion::print_fusion(*g, plan).find("not fusible"), std::string::npos);
  fusion::PartitionOptions off;
  off.fuse = false;
  EXPECT_EQ(fusion::partition_graph(*g, off).blocks.size(), 3u);
}

TEST(ProfileDb, PersistsAndIsReused) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tessera_profile_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::string path = (dir / "sub" / "fusion_profile.tsv").string();
  {
    fusion::ProfileDb db(path);
    EXPECT_FALSE(db.find("k1"));
    db.record("k1", {1e-5, 2e-5});
    db.record("k2", {3e-5, 2e-5});
    db.record("k1", {4e-5, 2e-5});  // later entries win
  }
  fusion::ProfileDb again(path);
  ASSERT_EQ(again.size(), 2u);
  ASSERT_TRUE(again.find("k1"));
  EXPECT_DOUBLE_EQ(again.find("k1")->fused_seconds, 4e-5);
  EXPECT_FALSE(again.find("k1")->fuse());
  EXPECT_FALSE(again.find("k2")->fuse());
  fs::remove_all(dir);
}

TEST(ProfileDb, DefaultPathFollowsTheEnvironment) {
  // The variables as they were, restored at the end (ctest sets TESSERA_CACHE_DIR).
  std::vector<std::pair<const char*, std::optional<std::string>>> saved;
  for (const char* name : {"TESSERA_CACHE_DIR", "XDG_CACHE_HOME"}) {
    const char* v = std::getenv(name);
    saved.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
  }
  setenv("TESSERA_CACHE_DIR", "/tmp/tessera-cache-test", 1);
  EXPECT_EQ(fusion::ProfileDb::default_path(), "/tmp/tessera-cache-test/fusion_profile.tsv");
  unsetenv("TESSERA_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(fusion::ProfileDb::default_path(), "/tmp/xdg/tessera/fusion_profile.tsv");
  for (const auto& [name, v] : saved) {
    if (v) setenv(name, v->c_str(), 1);
    else unsetenv(name);
  }
}

// The real profiler measures a profile cell once; planning again takes the
// decision from the database without measuring.
TEST(Partition, ProfileDecisionsAreMeasuredOnceThenCached) {
  auto g = pair_graph({M::ManyToMany, M::Shuffle});  // Conv -> Transpose: a profile cell
  runtime::ExecutorOptions eo;
  fusion::ProfileDb db;
  fusion::PartitionOptions po;
  po.db = &db;
  int calls = 0;
  fusion::ProfileFn real = runtime::make_fusion_profiler(*g, eo);
  po.profile = [&](const std::vector<int>& f, const std::vector<std::vector<int>>& parts) {
    ++calls;
    return real(f, parts);
  };
  fusion::Partition first = fusion::partition_graph(*g, po);
  ASSERT_EQ(first.profiled.size(), 1u) << fusion::print_fusion(*g, first);
  EXPECT_FALSE(first.profiled[0].cached);
  EXPECT_GT(first.profiled[0].entry.fused_seconds, 0);
  EXPECT_GT(first.profiled[0].entry.parts_seconds, 0);
  EXPECT_EQ(calls, 1);
  fusion::Partition second = fusion::partition_graph(*g, po);
  ASSERT_EQ(second.profiled.size(), 1u);
  EXPECT_TRUE(second.profiled[0].cached);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(first.blocks.size(), second.blocks.size());
  int fused = 0;
  for (const auto& b : second.blocks) fused += b.nodes.size() > 1;
  expect_fused_matches_reference(*g, second, fused);
}

// Conv + bias + residual Add + Relu as one block: the convolution is
// computed tile by tile inside the epilogue's loops (no whole intermediate),
// and the result matches the interpreter.
TEST(FusedKernel, ContractionEpilogueIsTiled) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {1, 16, 10, 10}, true});
  Value* r = g->add_input("r", {DType::F32, {1, 32, 10, 10}, true});
  AttrMap ca;
  ca["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* c = g->add_node("Conv", {x, g->add_constant("w", rand_f32({32, 16, 3, 3}, 1)), g->add_constant("b", rand_f32({32}, 2))},
                         {"c"}, ca, "conv")->outputs[0];
  Value* s = g->add_node("Add", {c, r}, {"s"}, {}, "add")->outputs[0];
  g->add_output(g->add_node("Relu", {s}, {"y"}, {}, "relu")->outputs[0]);
  infer_graph(*g);
  fusion::Partition plan = fusion::partition_graph(*g);
  ASSERT_EQ(plan.blocks.size(), 1u) << fusion::print_fusion(*g, plan);
  std::vector<const Node*> nodes;
  for (const auto& n : g->nodes()) nodes.push_back(n.get());
  Tensor xv = rand_f32({1, 16, 10, 10}, 3), rv = rand_f32({1, 32, 10, 10}, 4);
  auto input = [&](const Value* v) -> const Tensor* {
    if (v->constant) return &*v->constant;
    return v->name == "x" ? &xv : &rv;
  };
  compile::BlockKernel bk = compile::compile_block(g->opset, nodes, input, {g->outputs()[0]});
  std::string text = schedule::to_text(bk.schedule);
  EXPECT_NE(text.find("compute_at conv.conv "), std::string::npos) << text << bk.expr_text;
  EXPECT_EQ(text.find("cache_write conv.conv"), std::string::npos) << text;
  // Only the padded input is materialized whole, not the convolution's output.
  EXPECT_EQ(bk.internal_bytes, 16 * 12 * 12 * 4) << text;
  expect_fused_matches_reference(*g, plan, 1);
}

// Conv -> x * sigmoid(x) (SiLU): the convolution is read twice, by the
// Sigmoid and by the Mul; both are inlined into the one output, so the
// convolution is still tiled inside it.
TEST(FusedKernel, SiluEpilogueReadingTheContractionTwiceIsTiled) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {1, 16, 8, 8}, true});
  Value* c = g->add_node("Conv", {x, g->add_constant("w", rand_f32({32, 16, 1, 1}, 1))}, {"c"}, {}, "conv")->outputs[0];
  Value* sg = g->add_node("Sigmoid", {c}, {"s"}, {}, "sig")->outputs[0];
  g->add_output(g->add_node("Mul", {c, sg}, {"y"}, {}, "mul")->outputs[0]);
  infer_graph(*g);
  fusion::Partition plan = fusion::partition_graph(*g);
  ASSERT_EQ(plan.blocks.size(), 1u) << fusion::print_fusion(*g, plan);
  std::vector<const Node*> nodes;
  for (const auto& n : g->nodes()) nodes.push_back(n.get());
  Tensor xv = rand_f32({1, 16, 8, 8}, 3);
  auto input = [&](const Value* v) -> const Tensor* { return v->constant ? &*v->constant : &xv; };
  compile::BlockKernel bk = compile::compile_block(g->opset, nodes, input, {g->outputs()[0]});
  std::string text = schedule::to_text(bk.schedule);
  EXPECT_NE(text.find("compute_at conv.conv mul "), std::string::npos) << text;
  EXPECT_EQ(bk.internal_bytes, 0) << text;
  expect_fused_matches_reference(*g, plan, 1);
}

// Inside a block, a value read by two ops (an Exp) and a concatenation read
// through another concatenation are computed once into scratch, not
// recomputed in every reader; the block still matches the interpreter.
TEST(FusedKernel, SharedAndNestedPicksAreMaterialized) {
  auto g = std::make_unique<Graph>();
  Value* a = g->add_input("a", {DType::F32, {1, 4, 64}, true});
  Value* b = g->add_input("b", {DType::F32, {1, 4, 64}, true});
  Value* c = g->add_input("c", {DType::F32, {1, 8, 64}, true});
  AttrMap ax1;
  ax1["axis"] = Attribute::of_int(1);
  Value* e = g->add_node("Exp", {a}, {"e"}, {}, "exp")->outputs[0];
  Value* m = g->add_node("Mul", {e, b}, {"m"}, {}, "mul")->outputs[0];
  Value* d = g->add_node("Add", {e, m}, {"d"}, {}, "add")->outputs[0];
  Value* inner = g->add_node("Concat", {d, b}, {"inner"}, ax1, "inner_concat")->outputs[0];
  Value* outer = g->add_node("Concat", {inner, c}, {"outer"}, ax1, "outer_concat")->outputs[0];
  g->add_output(g->add_node("Relu", {outer}, {"y"}, {}, "relu")->outputs[0]);
  infer_graph(*g);
  fusion::Partition plan = fusion::partition_graph(*g);
  ASSERT_EQ(plan.blocks.size(), 1u) << fusion::print_fusion(*g, plan);
  std::vector<const Node*> nodes;
  for (const auto& n : g->nodes()) nodes.push_back(n.get());
  Tensor av = rand_f32({1, 4, 64}, 1), bv = rand_f32({1, 4, 64}, 2), cv = rand_f32({1, 8, 64}, 3);
  auto input = [&](const Value* v) -> const Tensor* { return v->name == "a" ? &av : v->name == "b" ? &bv : &cv; };
  compile::BlockKernel bk = compile::compile_block(g->opset, nodes, input, {g->outputs()[0]});
  std::string text = schedule::to_text(bk.schedule);
  EXPECT_NE(text.find("compute_root exp"), std::string::npos) << text;
  EXPECT_NE(text.find("compute_root inner_concat"), std::string::npos) << text;
  expect_fused_matches_reference(*g, plan, 1);
}

// The residual sum s = x + r ([2, 5, 40]) and a layer norm of it over the
// last axis in ONNX's pieces: x - mean, its square (Pow(d, 2) "pow" or
// Mul(d, d) "square", `square_op`), the variance's mean, + eps, Sqrt, Div,
// then the scale and shift by constant gamma and beta. Outputs: the norm
// ("shift_out"), then, with `sum_is_output`, the sum ("add_out").
std::unique_ptr<Graph> residual_layer_norm(const std::string& square_op, bool sum_is_output) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {2, 5, 40}, true});
  Value* r = g->add_input("r", {DType::F32, {2, 5, 40}, true});
  AttrMap last;
  last["axes"] = Attribute::of_ints({-1});
  auto op = [&](const char* type, std::vector<Value*> ins, const char* name, AttrMap a = {}) {
    return g->add_node(type, ins, {std::string(name) + "_out"}, a, name)->outputs[0];
  };
  auto scalar = [&](const char* name, float v) { return g->add_constant(name, Tensor::scalar<float>(v)); };
  Value* s = op("Add", {x, r}, "add");
  Value* d = op("Sub", {s, op("ReduceMean", {s}, "mean", last)}, "sub");
  Value* sq = square_op == "Pow" ? op("Pow", {d, scalar("two", 2.0f)}, "pow") : op("Mul", {d, d}, "square");
  Value* var = op("ReduceMean", {sq}, "var", last);
  Value* n = op("Div", {d, op("Sqrt", {op("Add", {var, scalar("eps", 1e-5f)}, "add_eps")}, "sqrt")}, "div");
  Value* y = op("Add", {op("Mul", {n, g->add_constant("gamma", rand_f32({40}, 5))}, "scale"),
                        g->add_constant("beta", rand_f32({40}, 6))}, "shift");
  g->add_output(y);
  if (sum_is_output) g->add_output(s);
  infer_graph(*g);
  return g;
}

// A residual add and a decomposed layer norm (two row reductions) as one
// block: one parallel loop over the rows, each row's reductions computed
// inside it (compute_at), no whole intermediate; rows of 40 leave a vector
// tail. Matches the interpreter on both the row schedule and its parts.
TEST(FusedKernel, LayerNormBlockRunsRowByRow) {
  auto g = residual_layer_norm("Pow", false);
  const Value* y = g->outputs()[0];
  fusion::Partition one;
  one.blocks.push_back({{}, MappingType::ManyToMany, 0});
  for (size_t i = 0; i < g->nodes().size(); ++i) one.blocks[0].nodes.push_back(static_cast<int>(i));
  std::vector<const Node*> nodes;
  for (const auto& nd : g->nodes()) nodes.push_back(nd.get());
  Tensor xv = rand_f32({2, 5, 40}, 3), rv = rand_f32({2, 5, 40}, 4);
  auto input = [&](const Value* v) -> const Tensor* {
    if (v->constant) return &*v->constant;
    return v->name == "x" ? &xv : &rv;
  };
  compile::BlockKernelOptions bo;
  bo.target = Target::for_isa(Isa::AVX512);
  compile::BlockKernel bk = compile::compile_block(g->opset, nodes, input, {y}, std::nullopt, bo);
  std::string text = schedule::to_text(bk.schedule);
  EXPECT_NE(text.find("compute_at mean.acc shift i0_i1"), std::string::npos) << text;
  EXPECT_NE(text.find("compute_at var.acc shift i0_i1"), std::string::npos) << text;
  EXPECT_EQ(text.find("compute_root"), std::string::npos) << text;
  EXPECT_EQ(bk.internal_bytes, 0) << text;
  expect_fused_matches_reference(*g, one, 1);
  // The planner's own blocks, without a profiler: the op rules join the
  // centring, the variance and the scale and shift, so the planner makes
  // that very block.
  fusion::Partition planned = fusion::partition_graph(*g);
  EXPECT_EQ(planned.blocks.size(), 1u) << fusion::print_fusion(*g, planned);
  expect_fused_matches_reference(*g, planned, 1);
}

// A pre-norm transformer's residual sum is stored (the next residual add
// reads it too) and normalized in the same block: the sum is one pass of its
// own, then the norm runs row by row as above (its reductions computed per
// row, no whole intermediate) instead of a pass per stage. Matches the
// interpreter.
TEST(FusedKernel, LayerNormBesideAStoredSumRunsRowByRow) {
  auto g = residual_layer_norm("Mul", true);
  const Value* y = g->outputs()[0];
  const Value* s = g->outputs()[1];
  fusion::Partition planned = fusion::partition_graph(*g);
  ASSERT_EQ(planned.blocks.size(), 1u) << fusion::print_fusion(*g, planned);
  std::vector<const Node*> nodes;
  for (const auto& nd : g->nodes()) nodes.push_back(nd.get());
  Tensor xv = rand_f32({2, 5, 40}, 3), rv = rand_f32({2, 5, 40}, 4);
  auto input = [&](const Value* v) -> const Tensor* {
    if (v->constant) return &*v->constant;
    return v->name == "x" ? &xv : &rv;
  };
  for (Isa isa : {Isa::AVX512, Isa::AVX2}) {
    compile::BlockKernelOptions bo;
    bo.target = Target::for_isa(isa);
    compile::BlockKernel bk = compile::compile_block(g->opset, nodes, input, {y, s}, std::nullopt, bo);
    std::string text = schedule::to_text(bk.schedule);
    EXPECT_NE(text.find("compute_at mean.acc shift i0_i1"), std::string::npos) << text;
    EXPECT_NE(text.find("compute_at var.acc shift i0_i1"), std::string::npos) << text;
    EXPECT_NE(text.find("compute_at sub shift i0_i1"), std::string::npos) << text;
    EXPECT_NE(text.find("fuse add i0 i1"), std::string::npos) << text;  // the stored sum, its own rows
    EXPECT_EQ(text.find("compute_root"), std::string::npos) << text;
    EXPECT_EQ(bk.internal_bytes, 0) << text;
  }
  expect_fused_matches_reference(*g, planned, 1);
}

// An artifact keeps the fused steps: loading traces the same blocks with
// their saved schedules, and the outputs stay the interpreter's.
TEST(FusedKernel, ArtifactKeepsTheBlocks) {
  auto build = [] {
    auto g = std::make_unique<Graph>();
    Value* x = g->add_input("x", {DType::F32, {1, 8, 6, 6}, true});
    AttrMap ca;
    ca["pads"] = Attribute::of_ints({1, 1, 1, 1});
    Value* c = g->add_node("Conv", {x, g->add_constant("w", rand_f32({8, 8, 3, 3}, 1))}, {"c"}, ca, "conv")->outputs[0];
    Value* r = g->add_node("Relu", {c}, {"r"}, {}, "relu")->outputs[0];
    g->add_output(g->add_node("Sigmoid", {r}, {"y"}, {}, "sig")->outputs[0]);
    infer_graph(*g);
    return g;
  };
  runtime::ExecutorOptions opts;
  opts.passes.disable("blocked-layout");  // one step: the NCHW convolution and its epilogue
  runtime::Executor m(build(), opts);
  Tensor x = rand_f32({1, 8, 6, 6}, 9);
  std::vector<Tensor> got = m.run({x});
  ASSERT_EQ(m.last_plan()->steps.size(), 1u);
  EXPECT_EQ(m.last_plan()->fused_steps, 1);
  auto l = save_and_load(m, "fused");
  ASSERT_EQ(l->plans().size(), 1u);
  EXPECT_EQ(l->plans()[0]->steps.size(), 1u);
  EXPECT_EQ(l->plans()[0]->steps[0].nodes.size(), 3u);
  EXPECT_EQ(l->plans()[0]->steps[0].schedule, m.last_plan()->steps[0].schedule);
  std::vector<Tensor> again = l->run({x});
  std::vector<Tensor> want = interpret(m.graph(), {x});
  for (int64_t k = 0; k < want[0].numel(); ++k) {
    EXPECT_EQ(again[0].get_double(k), got[0].get_double(k));
    EXPECT_NEAR(got[0].get_double(k), want[0].get_double(k), 1e-5);
  }
}

}  // namespace
}  // namespace tessera
