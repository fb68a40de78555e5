// Helpers of the tests of concats done in place (test_concat_in_place*.cpp):
// graph builders (a one-input node, a concat, a conv + ReLU), the fusion
// plan's placements and blocks by name, and the checks every compiled plan
// must pass (view steps at their channel prefixes, a sound arena), run on
// every host ISA with the blocked layout on and off against the interpreter.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "codegen/llvm/jit.h"
#include "fusion/concat_in_place.h"
#include "fusion/partition.h"
#include "interp/interpreter.h"
#include "ir/graph.h"
#include "runtime/executor.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera::testing {

// A one-input node `name` of op type `op`.
inline Value* unary(Graph& g, const std::string& op, Value* x, const std::string& name) {
  return g.add_node(op, {x}, {name}, {}, name)->outputs[0];
}

// conv (graph_test_util.h) `name`_conv, then a ReLU `name`.
inline Value* conv_relu(Graph& g, Value* x, int64_t M, int64_t C, int64_t k, const std::string& name,
                        uint32_t& seed) {
  return unary(g, "Relu", conv(g, x, M, C, k, name + "_conv", seed), name);
}

// A Concat `name` of xs along `axis`.
inline Value* concat(Graph& g, const std::vector<Value*>& xs, int64_t axis, const std::string& name) {
  AttrMap a;
  a["axis"] = Attribute::of_int(axis);
  return g.add_node("Concat", xs, {name}, std::move(a), name)->outputs[0];
}

// The fusion block of the node named `node` (a test failure if none).
inline int block_of(const Graph& g, const fusion::Partition& p, const std::string& node) {
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i]->name == node) return p.block_of[i];
  ADD_FAILURE() << "no node " << node;
  return -1;
}

// The placement of the concat named `name`, or null.
inline const fusion::ConcatPlacement* placement(const std::vector<fusion::ConcatPlacement>& ps,
                                                const std::string& name) {
  for (const auto& p : ps)
    if (p.concat->name == name) return &p;
  return nullptr;
}

// The concats of g done in place, on the graph's own types.
inline std::vector<fusion::ConcatPlacement> in_place(const Graph& g) {
  return fusion::in_place_concats(g, [](const Value* v) { return v->type; });
}

// Every view step's inputs lie inside its output at the channel prefix times
// the bytes per channel, computed from the graph's shapes, and fill it
// exactly; inputs and nested views hang directly under the root (the largest
// concat's output, which the arena places), which lives from its children's
// producers through every view step.
inline void expect_views_in_place(const runtime::Plan& p) {
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const runtime::Step& st = p.steps[si];
    if (!st.view) continue;
    EXPECT_FALSE(st.compiled);
    EXPECT_EQ(st.kernel, nullptr);
    const runtime::Slot& out = p.slots[static_cast<size_t>(st.outputs.at(0))];
    const int r = out.parent >= 0 ? out.parent : st.outputs[0];
    const runtime::Slot& root = p.slots[static_cast<size_t>(r)];
    EXPECT_LT(root.parent, 0) << st.node->name;
    EXPECT_LE(root.first_step, out.first_step);
    int64_t axis = st.node->attrs.at("axis").i;
    int64_t per = static_cast<int64_t>(dtype_size(out.dtype));
    for (size_t d = static_cast<size_t>(axis) + 1; d < out.dims.size(); ++d) per *= out.dims[d];
    int64_t prefix = 0;
    for (int s : st.inputs) {
      const runtime::Slot& in = p.slots[static_cast<size_t>(s)];
      EXPECT_EQ(in.parent, r) << st.node->name << " input " << in.value->name;
      EXPECT_EQ(in.offset, out.offset + prefix * per) << st.node->name << " input " << in.value->name;
      EXPECT_LE(root.first_step, in.first_step);
      EXPECT_GE(root.last_step, std::max(in.last_step, static_cast<int64_t>(si)));
      prefix += in.dims.at(static_cast<size_t>(axis));
    }
    EXPECT_EQ(prefix * per, out.bytes) << st.node->name;
  }
}

// Arena slots that are not one inside the other and live at the same step
// never share bytes, unless one is handed over to the other in place at the
// step where one dies and the other is born; inside one root only a view
// (a concat done in place) shares bytes with other slots.
inline void expect_arena_sound(const runtime::Plan& p) {
  std::set<size_t> views;
  for (const runtime::Step& st : p.steps)
    if (st.view) views.insert(static_cast<size_t>(st.outputs.at(0)));
  auto root = [&](size_t s) {
    while (p.slots[s].parent >= 0) s = static_cast<size_t>(p.slots[s].parent);
    return s;
  };
  auto inside = [&](size_t a, size_t b) {  // a is b or lies inside it
    for (int s = static_cast<int>(a); s >= 0; s = p.slots[static_cast<size_t>(s)].parent)
      if (static_cast<size_t>(s) == b) return true;
    return false;
  };
  for (size_t a = 0; a < p.slots.size(); ++a)
    for (size_t b = a + 1; b < p.slots.size(); ++b) {
      const runtime::Slot &s = p.slots[a], &t = p.slots[b];
      if (s.kind != runtime::SlotKind::Arena || t.kind != runtime::SlotKind::Arena) continue;
      if (s.bytes == 0 || t.bytes == 0) continue;
      bool overlap = s.offset < t.offset + t.bytes && t.offset < s.offset + s.bytes;
      if (!overlap || inside(a, b) || inside(b, a)) continue;
      const runtime::Slot &rs = p.slots[root(a)], &rt = p.slots[root(b)];
      if (root(a) == root(b)) {
        if (!views.count(a) && !views.count(b))
          ADD_FAILURE() << "slots " << a << " and " << b << " overlap inside one concat";
        continue;
      }
      bool live_together = rs.first_step <= rt.last_step && rt.first_step <= rs.last_step;
      bool handover = rs.last_step == rt.first_step || rt.last_step == rs.first_step;
      EXPECT_TRUE(!live_together || handover) << "slots " << a << " and " << b;
    }
}

// Runs `build()` compiled on every ISA, blocked layout on and off, twice with
// different inputs, against the interpreter; each plan has `views_blocked`
// (`views_nchw`) view steps (-1: the concats the fusion plan put in place),
// and passes `also`.
inline void expect_runs_in_place(const std::function<std::unique_ptr<Graph>()>& build, int views_blocked,
                                 int views_nchw, bool fusion = true,
                                 const std::function<void(const runtime::Executor&)>& also = {}) {
  for (runtime::ExecutorOptions o : host_isa_options())
    for (bool blocked : {true, false}) {
      SCOPED_TRACE(std::string(codegen::isa_name(o.isa)) + (blocked ? " blocked" : " NCHW"));
      if (!blocked) o.passes.disable("blocked-layout");
      o.fusion = fusion;
      runtime::Executor m(build(), o);
      for (uint32_t s : {3u, 4u}) {
        std::vector<Tensor> ins;
        for (const Value* v : m.graph().inputs()) ins.push_back(random_f32(v->type.dims, s++));
        auto ref = build();
        expect_near_scaled(m.run(ins), interpret(*ref, ins), 1e-5);
      }
      const runtime::Plan& p = *m.last_plan();
      int views = blocked ? views_blocked : views_nchw;
      if (views < 0) views = static_cast<int>(m.partition().concats_in_place.size());
      EXPECT_EQ(p.concat_views, views) << print_graph(m.graph()) << fusion::print_fusion(m.graph(), m.partition());
      EXPECT_EQ(m.report().find("concats in place") != std::string::npos, views > 0);
      expect_views_in_place(p);
      expect_arena_sound(p);
      if (also) also(m);
    }
}

}  // namespace tessera::testing
