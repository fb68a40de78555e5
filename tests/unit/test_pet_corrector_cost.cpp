// What PET's corrections cost when compiled (pet/corrector.h): the original,
// the mutant alone and the mutant with its corrections merged each way, at
// realistic sizes, timed interleaved (the machine is shared) and reported as
// medians and ratios. A measurement, not a check: DISABLED_, run with
//   build/tests/tessera_tests --gtest_also_run_disabled_tests --gtest_filter='PetCorrectorCost.*'
// Weights are bound back to constants first and constant-folded, as the
// compiler does after PET (the mutant's and the corrections' weight slices
// become constants).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "interp/interpreter.h"
#include "ops/registry.h"
#include "opt/passes.h"
#include "pet/corrector.h"
#include "runtime/executor.h"
#include "pet_test_util.h"
#include "random_tensor.h"

namespace tessera::pet {
namespace {

using tessera::testing::random_f32;

using tessera::testing::pet::concat;
using tessera::testing::pet::ints;
using tessera::testing::pet::op;
using tessera::testing::pet::slice;

// Conv attributes with one stride for both spatial dims.
AttrMap conv_attrs(std::vector<int64_t> pads, int64_t stride = 1) {
  return tessera::testing::pet::conv_attrs(std::move(pads), {stride, stride});
}

// The two images of a batch side by side along W, one 3x3 conv (C -> C,
// pads 1) then split back, followed by a ReLU (the next, non-linear op):
// wrong in the seam columns.
void n2w(int64_t C, int64_t H, std::unique_ptr<Graph>& original, std::unique_ptr<Graph>& mutant,
         std::vector<Box>& boxes) {
  for (int m = 0; m < 2; ++m) {
    auto g = std::make_unique<Graph>();
    Value* x = g->add_input("x", {DType::F32, {2, C, H, H}, true});
    Value* w = g->add_input("w", {DType::F32, {C, C, 3, 3}, true});
    Value* b = g->add_input("b", {DType::F32, {C}, true});
    if (m == 0) {
      g->add_output(op(*g, "Conv", {x, w, b}, conv_attrs({1, 1, 1, 1})));
      original = std::move(g);
    } else {
      Value* xs = concat(*g, {slice(*g, x, {0}, {1}, {0}), slice(*g, x, {1}, {2}, {0})}, 3);
      Value* y = op(*g, "Conv", {xs, w, b}, conv_attrs({1, 1, 1, 1}));
      g->add_output(concat(*g, {slice(*g, y, {0}, {H}, {3}), slice(*g, y, {H}, {2 * H}, {3})}, 0));
      mutant = std::move(g);
    }
  }
  boxes = {Box{{0, 0, 0, H - 1}, {1, C, H, H}}, Box{{1, 0, 0, 0}, {2, C, H, 1}}};
}

// The whole model for timing: the subprogram's graph with its weights bound
// to constants, a ReLU after each output (what follows a conv in a model),
// constants folded.
std::unique_ptr<Graph> bind_weights(const Graph& sub, const std::vector<Tensor>& weights, size_t activations) {
  auto g = sub.clone();
  for (size_t i = 0; i < weights.size(); ++i) {
    Value* in = g->inputs()[activations + i];
    g->replace_all_uses(in, g->add_constant(in->name + "_const", weights[i]));
  }
  g->mutable_inputs().resize(activations);
  for (auto& o : g->mutable_outputs()) o = op(*g, "Relu", {o});
  g->remove_unused_values();
  infer_graph(*g);
  fold_constants(*g);
  return g;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST(PetCorrectorCost, DISABLED_MergeForms) {
  for (auto [C, H] : {std::pair<int64_t, int64_t>{64, 56}, {128, 28}, {32, 112}}) {
    std::unique_ptr<Graph> original, mutant;
    std::vector<Box> boxes;
    n2w(C, H, original, mutant, boxes);
    infer_graph(*original);
    infer_graph(*mutant);
    const std::vector<Tensor> weights = {random_f32({C, C, 3, 3}, 2, -0.1f, 0.1f), random_f32({C}, 3)};
    const std::vector<Tensor> ins = {random_f32({2, C, H, H}, 1)};
    std::vector<std::pair<std::string, std::unique_ptr<Graph>>> variants;
    variants.emplace_back("original", bind_weights(*original, weights, 1));
    variants.emplace_back("mutant alone", bind_weights(*mutant, weights, 1));
    CorrectReport rep;
    variants.emplace_back("mutant + Where", bind_weights(*correct(*original, *mutant, {boxes}, {Merge::Where, true}, &rep),
                                                 weights, 1));
    variants.emplace_back("mutant + Slice/Concat",
                          bind_weights(*correct(*original, *mutant, {boxes}, {Merge::SliceConcat, true}), weights, 1));
    variants.emplace_back("mutant + Where, unbatched",
                          bind_weights(*correct(*original, *mutant, {boxes}, {Merge::Where, false}), weights, 1));
    std::printf("N2W conv 3x3 %lldx%lld, %lldx%lld, batch 2: %s\n", static_cast<long long>(C),
                static_cast<long long>(C), static_cast<long long>(H), static_cast<long long>(H),
                rep.to_string().c_str());
    const std::string db = (std::filesystem::temp_directory_path() / "tessera_pet_cost_fusion.db").string();
    std::vector<std::unique_ptr<runtime::Executor>> ex;
    const std::vector<Tensor> want = interpret(*variants[0].second, ins);
    for (auto& [name, g] : variants) {
      runtime::ExecutorOptions o;
      o.fusion_db = db;
      ex.push_back(std::make_unique<runtime::Executor>(g->clone(), o));
      const std::vector<Tensor> got = ex.back()->run(ins);
      double err = 0;
      for (int64_t k = 0; k < got[0].numel(); ++k)
        err = std::max(err, std::abs(got[0].get_double(k) - want[0].get_double(k)));
      auto plan = ex.back()->last_plan();
      std::printf("  %-26s %3zu nodes, %3zu steps (%d fused), max |diff| vs original %.2g\n", name.c_str(),
                  g->nodes().size(), plan->steps.size(), plan->fused_steps, err);
    }
    std::vector<std::vector<double>> times(variants.size());
    for (int round = 0; round < 15; ++round)
      for (size_t v = 0; v < variants.size(); ++v) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < 5; ++k) ex[v]->run(ins);
        times[v].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 5);
      }
    const double base = median(times[0]);
    for (size_t v = 0; v < variants.size(); ++v)
      std::printf("  %-26s median %7.3f ms  (x%.3f of the original)\n", variants[v].first.c_str(), median(times[v]),
                  median(times[v]) / base);
    std::filesystem::remove(db);
  }
}

}  // namespace
}  // namespace tessera::pet
