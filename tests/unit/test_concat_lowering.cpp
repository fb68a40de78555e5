// Concatenations lowered per input (schedule/unswitch_guards.*, the generic
// rule's partition): a Concat kernel's loops split at the inputs'
// boundaries, each part a plain copy — no select and no guarded read left —
// checked in the lowered loop IR of one-node kernels (NCHW and blocked
// shapes, channel, H and batch axes, 2 to 28 inputs); the guard chains
// decided around loops by hand-built IR; and whole graphs compiled on both
// ISAs, blocked layout on and off, batch 1 and 8, concats done in place or
// copied, as graph outputs and fused with the convolution that reads them,
// against the reference interpreter.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

#include "codegen/llvm/jit.h"
#include "compile/node_kernel.h"
#include "fusion/partition.h"
#include "interp/interpreter.h"
#include "loop/evaluate.h"
#include "loop/printer.h"
#include "loop/visitor.h"
#include "runtime/executor.h"
#include "schedule/lower.h"
#include "schedule/stage_queries.h"
#include "te/tensor_expr.h"
#include "graph_test_util.h"
#include "random_tensor.h"
#include "schedule_rule_tester.h"

namespace tessera {
namespace {

using runtime::Executor;
using runtime::ExecutorOptions;
using testing::conv;
using testing::expect_near_scaled;
using testing::random_f32;

// What a lowered kernel does with its selects, branches and input reads.
struct KernelShape {
  int selects = 0;           // select nodes
  int branches = 0;          // ifs with an else (the unswitched tree's tests)
  int guarded_reads = 0;     // loads of an input under a predicate other than a vector tail's mask
  int scalar_reads = 0;      // loads of an input of one element (not vectorized)
  std::map<std::string, int> reads;  // loads per input buffer
};

KernelShape shape_of(const loop::Kernel& k) {
  struct V : loop::IRVisitor {
    KernelShape s;
    std::set<const loop::BufferNode*> inputs;
    using IRVisitor::visit;
    void visit(const loop::SelectNode* op) override {
      ++s.selects;
      IRVisitor::visit(op);
    }
    void visit(const loop::IfThenElseNode* op) override {
      s.branches += op->else_case.defined();
      IRVisitor::visit(op);
    }
    void visit(const loop::LoadNode* op) override {
      if (inputs.count(op->buffer.get())) {
        ++s.reads[op->buffer.name()];
        s.scalar_reads += op->type.is_scalar();
        // A tail's mask is a let-bound variable; anything else is a guard.
        if (op->predicate.defined() && op->predicate.kind() != loop::ExprKind::Var) ++s.guarded_reads;
      }
      IRVisitor::visit(op);
    }
  } v;
  for (const loop::Buffer& b : k.inputs) v.inputs.insert(b.get());
  v.visit(k.body);
  return v.s;
}

// A one-node Concat graph over inputs of the given dims.
struct OneConcat {
  Graph g;
  Node* node = nullptr;
  OneConcat(const std::vector<Dims>& ins, int64_t axis) {
    std::vector<Value*> vs;
    for (size_t i = 0; i < ins.size(); ++i)
      vs.push_back(g.add_input("x" + std::to_string(i), {DType::F32, ins[i], true}));
    node = g.add_node("Concat", vs, {"y"}, {{"axis", Attribute::of_int(axis)}}, "cat");
    g.add_output(node->outputs[0]);
    infer_graph(g);
  }
};

std::vector<Dims> along(Dims base, size_t axis, const std::vector<int64_t>& sizes) {
  std::vector<Dims> r;
  for (int64_t s : sizes) {
    base[axis] = s;
    r.push_back(base);
  }
  return r;
}

// The kernel of a one-node Concat for `isa` run on random inputs, against the reference.
void expect_concat_kernel_matches(const OneConcat& c, const loop::Kernel& k, Isa isa) {
  std::vector<Tensor> args, ins;
  for (size_t i = 0; i < c.node->inputs.size(); ++i) ins.push_back(random_f32(c.node->inputs[i]->type.dims, 11 + i));
  for (const Tensor& t : ins) args.push_back(t.clone());
  args.emplace_back(DType::F32, c.node->outputs[0]->type.dims);
  codegen::JitOptions jo;
  jo.isa = isa;
  codegen::jit_compile(k, jo)->run(args);
  std::vector<const Tensor*> ref;
  for (const Tensor& t : ins) ref.push_back(&t);
  expect_near_scaled({args.back()}, run_reference(*c.node, c.g.opset, ref), 0);
}

class ConcatLowering : public testing::PerIsa {};

// Channel concats of 2, 3, 7 and 28 inputs, NCHW (counts off and on a
// vector) and blocked ([N, Cb, H, W, b]: whole blocks), batch 1 and 8, and
// concats along H and along the batch: every input is read once, unguarded,
// in one copy loop; the tree has one test per boundary; no select is left.
TEST_P(ConcatLowering, EachInputIsAPlainCopy) {
  const int64_t b = lanes();
  struct Case {
    Dims base;
    size_t axis;
    std::vector<int64_t> sizes;
  };
  std::vector<int64_t> c28(28);
  std::iota(c28.begin(), c28.end(), 1);
  const std::vector<Case> cases = {
      {{8, 0, 14, 14}, 1, {32, 32}},
      {{1, 0, 7, 7}, 1, {5, 7, 9}},
      {{8, 0, 5, 5}, 1, {3, 1, 4, 1, 5, 9, 2}},
      {{8, 0, 6, 6}, 1, c28},
      {{8, 0, 7, 7, b}, 1, {2, 2, 2}},          // blocked: whole blocks
      {{1, 0, 17, 17, b}, 1, std::vector<int64_t>(28, 2)},
      {{8, 3, 0, 5, b}, 2, {1, 2, 3}},          // blocked, along H
      {{2, 6, 0, 20}, 2, {3, 4, 5, 6, 7, 8, 9}},  // NCHW along H
      {{0, 16, 3, 3}, 0, {3, 4, 5}},              // along the batch
  };
  for (const Case& cs : cases) {
    OneConcat c(along(cs.base, cs.axis, cs.sizes), static_cast<int64_t>(cs.axis));
    SCOPED_TRACE(print_graph(c.g));
    compile::NodeKernelOptions o;
    o.target = Target::for_isa(isa());
    compile::NodeKernel nk = compile::compile_node(*c.node, c.g.opset, std::nullopt, o);
    KernelShape s = shape_of(nk.kernel);
    const int k = static_cast<int>(cs.sizes.size());
    EXPECT_EQ(s.selects, 0);
    EXPECT_EQ(s.guarded_reads, 0);
    EXPECT_EQ(s.scalar_reads, 0) << loop::to_string(nk.kernel);
    EXPECT_EQ(s.branches, k - 1);
    ASSERT_EQ(static_cast<int>(s.reads.size()), k);
    for (const auto& [name, n] : s.reads) EXPECT_EQ(n, 1) << name;
    expect_concat_kernel_matches(c, nk.kernel, isa());
  }
}

// A concat along the last axis (its boundaries fall inside vectors) keeps
// its selects, and still matches.
TEST_P(ConcatLowering, LastAxisKeepsItsSelects) {
  OneConcat c(along({2, 3, 4, 0}, 3, {5, 20, 9}), 3);
  compile::NodeKernelOptions o;
  o.target = Target::for_isa(isa());
  compile::NodeKernel nk = compile::compile_node(*c.node, c.g.opset, std::nullopt, o);
  EXPECT_GT(shape_of(nk.kernel).selects, 0);
  expect_concat_kernel_matches(c, nk.kernel, isa());
}

// The generic rule's knobs on a concat, partition on and off among them,
// each point against the reference.
TEST_P(ConcatLowering, KnobSweep) {
  for (int64_t axis : {1, 2}) {
    testing::RuleTester t("Concat");
    t.input(axis == 1 ? Dims{3, 5, 4, 9} : Dims{3, 2, 5, 17})
        .input(axis == 1 ? Dims{3, 7, 4, 9} : Dims{3, 2, 1, 17})
        .input(axis == 1 ? Dims{3, 2, 4, 9} : Dims{3, 2, 4, 17})
        .attr("axis", Attribute::of_int(axis));
    bool has = false;
    for (const auto& st : t.space(isa(), "generic"))
      for (const auto& k : st.knobs) has |= k.name == "partition";
    EXPECT_TRUE(has) << "axis " << axis;
    EXPECT_GT(t.sweep(isa(), "generic"), 2);
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, ConcatLowering, ::testing::Values(Isa::AVX512, Isa::AVX2),
                         [](const auto& i) { return std::string(isa_name(i.param)); });

// A hand-written program: a chain of guards on the row index is decided
// around the row's loop (one copy per interval, each its own branch), a
// padding-like conjunction is left as it is, and the kernel computes what
// the formulas say, element for element, computed here.
TEST(UnswitchGuards, DecidesAChainAroundTheLoop) {
  te::Tensor a = te::placeholder({5}, DType::F32, "a");
  const loop::Type f32{DType::F32, 1};
  // out[i, j] = i < 2 ? a[j] : (i >= 5 ? 100 : i * 10 + j); i over [0, 8), j over [0, 5).
  te::Tensor out = te::compute({8, 5}, [&](const te::Indices& x) {
    loop::Expr i = x[0], j = x[1];
    return te::if_then_else(i < 2, a(j), te::if_then_else(i >= 5, loop::float_imm(100), loop::cast(f32, i * 10 + j)));
  }, "out");
  // pad[i, j] = 1 <= i < 7 ? a[j] : 0: one select, no copies.
  te::Tensor pad = te::compute({8, 5}, [&](const te::Indices& x) {
    loop::Expr i = x[0], j = x[1];
    return te::if_then_else(i >= 1 && i < 7, a(j), loop::float_imm(0));
  }, "pad");
  loop::Kernel k = schedule::lower("k", {a}, {out}), kp = schedule::lower("kp", {a}, {pad});
  KernelShape s = shape_of(k), sp = shape_of(kp);
  EXPECT_EQ(s.selects, 0) << loop::to_string(k);
  EXPECT_EQ(s.branches, 2) << loop::to_string(k);  // three intervals: [.., 2), [2, 5), [5, ..)
  EXPECT_EQ(s.guarded_reads, 0) << loop::to_string(k);
  EXPECT_EQ(sp.selects, 1) << loop::to_string(kp);
  EXPECT_EQ(sp.branches, 0) << loop::to_string(kp);
  Tensor av = random_f32({5}, 3), o(DType::F32, {8, 5}), op(DType::F32, {8, 5});
  loop::run_kernel(k, {av, o});
  loop::run_kernel(kp, {av, op});
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      double want = i < 2 ? av.get_double(j) : i >= 5 ? 100.0 : static_cast<double>(i * 10 + j);
      EXPECT_EQ(o.get_double(i * 5 + j), want) << i << ", " << j;
      EXPECT_EQ(op.get_double(i * 5 + j), i >= 1 && i < 7 ? av.get_double(j) : 0.0) << i << ", " << j;
    }
}

// A channel read back through a reorder tests (c * 16 + lane) / 16: with
// the loops' bounds that is c, so the chain is still decided around the
// lanes' loop, and the stage's cut axis is the channel block's, not the
// lanes' (a cut every position passes — a reorder's padding-lane test on
// a dim without padding — counts for nothing).
TEST(UnswitchGuards, CutsSimplifiedWithTheLoopBounds) {
  te::Tensor a = te::placeholder({2, 16}, DType::F32, "a"), b = te::placeholder({2, 16}, DType::F32, "b");
  te::Tensor out = te::compute({4, 16}, [&](const te::Indices& x) {
    loop::Expr c = x[0], l = x[1], ch = c * 16 + l;
    return te::if_then_else(ch < 64, te::if_then_else(ch / 16 < 2, a(ch / 16, ch % 16), b(ch / 16 - 2, ch % 16)),
                            loop::float_imm(0));
  }, "out");
  EXPECT_EQ(schedule::guard_cut_axis(out.stage()), 0);
  loop::Kernel k = schedule::lower("k", {a, b}, {out});
  KernelShape s = shape_of(k);
  EXPECT_EQ(s.branches, 1) << loop::to_string(k);
  EXPECT_EQ(s.guarded_reads, 0) << loop::to_string(k);
  Tensor av = random_f32({2, 16}, 5), bv = random_f32({2, 16}, 6), o(DType::F32, {4, 16});
  loop::run_kernel(k, {av, bv, o});
  for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(o.get_double(i), i < 32 ? av.get_double(i) : bv.get_double(i - 32)) << i;
}

// The cut axis of concat-like stages: the innermost axis a single
// comparison tests; none for a conjunction (padding) or no guard.
TEST(UnswitchGuards, CutAxis) {
  te::Tensor a = te::placeholder({3, 4, 5}, DType::F32, "a");
  auto stage = [&](const std::function<loop::Expr(const te::Indices&)>& f) {
    return te::compute({3, 4, 5}, f, "s");
  };
  EXPECT_EQ(schedule::guard_cut_axis(stage([&](const te::Indices& x) {
              return te::if_then_else(loop::Expr(x[1]) < 2, a(x[0], x[1], x[2]), loop::float_imm(1));
            }).stage()), 1);
  EXPECT_EQ(schedule::guard_cut_axis(stage([&](const te::Indices& x) {
              return te::if_then_else(3 <= loop::Expr(x[2]), a(x[0], x[1], x[2]), loop::float_imm(1));
            }).stage()), 2);
  EXPECT_EQ(schedule::guard_cut_axis(stage([&](const te::Indices& x) {
              loop::Expr h = x[1];
              return te::if_then_else(h >= 1 && h < 3, a(x[0], x[1], x[2]), loop::float_imm(0));
            }).stage()), -1);
  EXPECT_EQ(schedule::guard_cut_axis(stage([&](const te::Indices& x) { return a(x[0], x[1], x[2]); }).stage()), -1);
}

// ---------------------------------------------------------------- whole graphs

uint32_t seed_ = 1;

// Branch i: input x_i [n, 4, h_i, w_i] -> 1x1 convolution to c_i channels ->
// ReLU; the branches concatenated along `axis` ("cat"); with `head`, a 3x3
// convolution reads the concat ("head", an output); with `output`, the
// concat is an output too. `dims` holds each branch's {c, h, w}.
std::unique_ptr<Graph> branches(int64_t n, const std::vector<Dims>& dims, int64_t axis, bool head, bool output) {
  seed_ = 1;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  std::vector<Value*> parts;
  int64_t channels = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    const std::string b = "b" + std::to_string(i);
    Value* x = g->add_input("x" + std::to_string(i), {DType::F32, {n, 4, dims[i][1], dims[i][2]}, true});
    Value* c = conv(*g, x, dims[i][0], 4, 1, b + "_conv", seed_);
    parts.push_back(g->add_node("Relu", {c}, {b}, {}, b)->outputs[0]);
    channels = axis == 1 ? channels + dims[i][0] : dims[i][0];
  }
  Value* y = g->add_node("Concat", parts, {"cat"}, {{"axis", Attribute::of_int(axis)}}, "cat")->outputs[0];
  if (output) g->add_output(y);
  if (head) g->add_output(conv(*g, y, 8, channels, 3, "head", seed_));
  infer_graph(*g);
  return g;
}

std::vector<Dims> channel_branches(const std::vector<int64_t>& cs, int64_t h, int64_t w) {
  std::vector<Dims> r;
  for (int64_t c : cs) r.push_back({c, h, w});
  return r;
}

// The graph compiled on both ISAs, blocked layout on and off (at batch 1
// also with concats copied instead of done in place), run on two sets of
// random inputs, against the interpreter.
void expect_graph_matches(const std::function<std::unique_ptr<Graph>()>& build) {
  const int64_t batch = build()->inputs()[0]->type.dims[0];
  for (ExecutorOptions o : tessera::testing::host_isa_options())
    for (bool blocked : {true, false})
      for (bool in_place : batch == 1 ? std::vector<bool>{true, false} : std::vector<bool>{true}) {
        SCOPED_TRACE(std::string(isa_name(o.isa)) + (blocked ? " blocked" : " NCHW") + (in_place ? "" : " copied"));
        if (!blocked) o.passes.disable("blocked-layout");
        o.concat_in_place = in_place;
        Executor m(build(), o);
        for (uint32_t s : {3u, 4u}) {
          std::vector<Tensor> ins;
          for (const Value* v : m.graph().inputs()) ins.push_back(random_f32(v->type.dims, s++));
          expect_near_scaled(m.run(ins), interpret(*build(), ins), 1e-5);
        }
      }
}

TEST(ConcatLoweringGraphs, ChannelConcats) {
  for (int64_t n : {1, 8}) {
    SCOPED_TRACE("batch " + std::to_string(n));
    expect_graph_matches([&] { return branches(n, channel_branches({16, 32}, 6, 5), 1, true, false); });
    expect_graph_matches([&] { return branches(n, channel_branches({5, 7, 3}, 5, 7), 1, true, true); });
    expect_graph_matches([&] { return branches(n, channel_branches({16, 16, 8, 16, 32, 16, 5}, 4, 4), 1, true, false); });
  }
  // 28 inputs of whole blocks (a dense block's last concat), graph output and read by a conv.
  expect_graph_matches([&] { return branches(8, channel_branches(std::vector<int64_t>(28, 16), 4, 4), 1, true, true); });
}

TEST(ConcatLoweringGraphs, SpatialConcats) {
  for (int64_t n : {1, 8}) {
    SCOPED_TRACE("batch " + std::to_string(n));
    expect_graph_matches([&] { return branches(n, {{16, 3, 6}, {16, 4, 6}, {16, 2, 6}}, 2, true, true); });  // H
    expect_graph_matches([&] { return branches(n, {{16, 5, 3}, {16, 5, 4}, {16, 5, 2}}, 3, true, false); });  // W
  }
}

// At batch 8 the channel concat is computed inside a fused block with a
// convolution (the plan puts it with one of its producers, which writes
// its branch as a second output), and still matches.
TEST(ConcatLoweringGraphs, FusedWithAConvolution) {
  auto build = [] { return branches(8, channel_branches({16, 32, 16}, 6, 6), 1, true, false); };
  for (ExecutorOptions o : tessera::testing::host_isa_options()) {
    Executor m(build(), o);
    const Graph& g = m.graph();
    const fusion::Partition& p = m.partition();
    int cat = -1;
    for (size_t i = 0; i < g.nodes().size(); ++i)
      if (g.nodes()[i]->op_type == "Concat") cat = p.block_of[i];
    ASSERT_GE(cat, 0) << print_graph(g);
    bool with_conv = false;
    for (size_t i = 0; i < g.nodes().size(); ++i)
      with_conv |= p.block_of[i] == cat && g.nodes()[i]->op_type.find("Conv") != std::string::npos;
    EXPECT_TRUE(with_conv) << fusion::print_fusion(g, p);
    std::vector<Tensor> ins;
    for (const Value* v : g.inputs()) ins.push_back(random_f32(v->type.dims, 5));
    expect_near_scaled(m.run(ins), interpret(*build(), ins), 1e-5);
  }
}

}  // namespace
}  // namespace tessera
