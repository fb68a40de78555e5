// BatchNorm folding: the folded graph against the reference interpreter on
// the unfolded one (scaled weights and bias, with and without a Conv bias,
// grouped), output names kept, and the pairs that must stay as they are.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "interp/interpreter.h"
#include "ops/registry.h"
#include "opt/passes.h"

namespace tessera {
namespace {

Tensor rnd(const Dims& d, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DType::F32, d);
  for (float& v : t.span<float>()) v = u(rng);
  return t;
}

struct ConvBn {
  bool conv_bias = true;
  int64_t group = 1;
  bool conv_output_used_twice = false;
  bool stats_are_inputs = false;
  int64_t training_mode = 0;

  std::unique_ptr<Graph> build() const {
    auto g = std::make_unique<Graph>();
    const int64_t C = 4, M = 6;
    Value* x = g->add_input("x", {DType::F32, {1, C, 5, 5}, true});
    std::vector<Value*> cin{x, g->add_constant("w", rnd({M, C / group, 3, 3}, 1))};
    if (conv_bias) cin.push_back(g->add_constant("b", rnd({M}, 2)));
    AttrMap ca;
    ca["pads"] = Attribute::of_ints({1, 1, 1, 1});
    ca["group"] = Attribute::of_int(group);
    Value* y = g->add_node("Conv", cin, {"conv_out"}, ca, "conv")->outputs[0];
    Value* mean = stats_are_inputs ? g->add_input("mean", {DType::F32, {M}, true}) : g->add_constant("mean", rnd({M}, 3));
    std::vector<Value*> bin{y, g->add_constant("gamma", rnd({M}, 4, 0.5f, 2)), g->add_constant("beta", rnd({M}, 5)), mean,
                            g->add_constant("var", rnd({M}, 6, 0.1f, 3))};
    AttrMap ba;
    ba["epsilon"] = Attribute::of_float(1e-3f);
    if (training_mode) ba["training_mode"] = Attribute::of_int(training_mode);
    Value* z = g->add_node("BatchNormalization", bin, {"bn_out"}, ba, "bn")->outputs[0];
    g->add_output(g->add_node("Relu", {z}, {"out"}, {}, "relu")->outputs[0]);
    if (conv_output_used_twice) g->add_output(g->add_node("Neg", {y}, {"neg"}, {}, "neg")->outputs[0]);
    infer_graph(*g);
    return g;
  }
  std::vector<Tensor> inputs() const {
    std::vector<Tensor> in{rnd({1, 4, 5, 5}, 7)};
    if (stats_are_inputs) in.push_back(rnd({6}, 8));
    return in;
  }
};

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op;
  return n;
}

TEST(FoldBatchnorm, FoldedGraphMatchesTheInterpreter) {
  for (ConvBn c : {ConvBn{}, ConvBn{.conv_bias = false}, ConvBn{.group = 2}}) {
    SCOPED_TRACE("bias " + std::to_string(c.conv_bias) + " group " + std::to_string(c.group));
    auto g = c.build();
    std::vector<Tensor> want = interpret(*g, c.inputs());
    EXPECT_EQ(fold_batchnorm(*g), 1);
    EXPECT_EQ(count(*g, "BatchNormalization"), 0);
    ASSERT_EQ(count(*g, "Conv"), 1);
    EXPECT_EQ(g->outputs()[0]->name, "out");
    // The Conv now produces the BatchNorm's value, so its name is kept for consumers.
    EXPECT_EQ(g->nodes()[0]->outputs[0]->name, "bn_out");
    std::vector<Tensor> got = interpret(*g, c.inputs());
    ASSERT_EQ(got.size(), want.size());
    for (int64_t i = 0; i < want[0].numel(); ++i)
      ASSERT_NEAR(got[0].get_double(i), want[0].get_double(i), 1e-5 * (1 + std::fabs(want[0].get_double(i)))) << i;
  }
}

TEST(FoldBatchnorm, LeavesWhatItCannotFold) {
  for (ConvBn c : {ConvBn{.conv_output_used_twice = true}, ConvBn{.stats_are_inputs = true}, ConvBn{.training_mode = 1}}) {
    auto g = c.build();
    size_t nodes = g->nodes().size();
    EXPECT_EQ(fold_batchnorm(*g), 0);
    EXPECT_EQ(g->nodes().size(), nodes);
    EXPECT_EQ(count(*g, "BatchNormalization"), 1);
  }
}

}  // namespace
}  // namespace tessera
