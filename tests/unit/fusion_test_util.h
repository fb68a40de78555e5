// Helpers for the fusion tests (test_fusion.cpp, test_fusion_op_rules.cpp):
// a graph run through the compiled runtime with given fusion blocks, checked
// against the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fusion/partition.h"
#include "interp/interpreter.h"
#include "runtime/executor.h"
#include "random_tensor.h"

namespace tessera::testing {

// Runs `g` compiled with the blocks of `plan` (inputs in [-1, 1), seeds from
// 17) and compares every output with the interpreter's, elementwise within
// 1e-5 relative (`tolerance` when given); the plan must compile every block as
// one kernel and have `want_fused_steps` steps of two or more nodes. Returns
// the plan's step count.
inline size_t expect_fused_matches_reference(const Graph& g, const fusion::Partition& plan, int want_fused_steps,
                                             double tolerance = 1e-5) {
  std::vector<Tensor> ins;
  uint32_t seed = 17;
  for (const Value* v : g.inputs()) ins.push_back(random_f32(v->type.dims, seed++, -1, 1));
  std::vector<std::vector<int>> blocks;
  for (const auto& b : plan.blocks) blocks.push_back(b.nodes);
  runtime::ExecutorOptions opts;
  auto p = runtime::compile_plan(g, ins, opts, nullptr, &blocks);
  EXPECT_TRUE(p->fusion_fallbacks.empty()) << p->fusion_fallbacks.front();
  EXPECT_EQ(p->fused_steps, want_fused_steps);
  std::vector<Tensor> got = runtime::run_plan(g, *p, ins);
  std::vector<Tensor> want = interpret(g, ins);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].dims(), want[i].dims());
    if (got[i].dims() != want[i].dims()) continue;
    for (int64_t k = 0; k < got[i].numel(); ++k) {
      const double w = want[i].get_double(k);
      if (std::fabs(got[i].get_double(k) - w) > tolerance * (1 + std::fabs(w))) {
        ADD_FAILURE() << "output " << i << " element " << k << ": " << got[i].get_double(k) << " vs " << w;
        break;
      }
    }
  }
  return p->steps.size();
}

}  // namespace tessera::testing
