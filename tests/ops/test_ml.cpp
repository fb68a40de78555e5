// ai.onnx.ml ops on hand-computed cases: Binarizer, ArrayFeatureExtractor,
// LabelEncoder, TreeEnsemble.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {

// Like run_op, with the node in the ai.onnx.ml domain.
std::vector<Tensor> run_ml(const std::string& op, std::vector<Tensor> inputs, AttrMap attrs) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(g.add_input("in" + std::to_string(i), {inputs[i].dtype(), inputs[i].dims(), true}));
  Node* n = g.add_node(op, ins, {"out0"}, std::move(attrs), "node");
  n->domain = "ai.onnx.ml";
  g.add_output(n->outputs[0]);
  infer_graph(g);
  return interpret(g, inputs);
}

TensorType infer_ml(const std::string& op, std::vector<TensorType> types, AttrMap attrs) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < types.size(); ++i) ins.push_back(g.add_input("in" + std::to_string(i), types[i]));
  Node* n = g.add_node(op, ins, {"out0"}, std::move(attrs), "node");
  n->domain = "ai.onnx.ml";
  g.add_output(n->outputs[0]);
  infer_graph(g);
  return n->outputs[0]->type;
}

Tensor str(Dims d, std::vector<std::string> v) {
  Tensor t(DType::String, std::move(d));
  t.strings() = std::move(v);
  return t;
}
template <class T>
Tensor t(Dims d, std::vector<T> v) { return Tensor::from<T>(std::move(d), v); }
Attribute ai(int64_t v) { return Attribute::of_int(v); }
Attribute af(float v) { return Attribute::of_float(v); }
Attribute as(std::string v) { return Attribute::of_string(std::move(v)); }
Attribute ais(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
Attribute afs(std::vector<float> v) { return Attribute::of_floats(std::move(v)); }
Attribute atensor(Tensor v) { return Attribute::of_tensor(std::move(v)); }
Attribute astrs(std::vector<std::string> v) { return Attribute::of_strings(std::move(v)); }

}  // namespace

// ---------------------------------------------------------------- Binarizer

TEST(MlBinarizer, ThresholdIsStrict) {
  auto out = run_ml("Binarizer", {f32({5}, {-1, 0.5f, 1, 1.5f, NAN})}, {{"threshold", af(1)}});
  expect_near(out[0], f32({5}, {0, 0, 0, 1, 0}));
  auto i = run_ml("Binarizer", {t<int64_t>({3}, {-2, 0, 7})}, {});  // default threshold 0
  expect_near(i[0], t<int64_t>({3}, {0, 0, 1}));
  auto d = run_ml("Binarizer", {t<double>({2}, {0.25, 0.75})}, {{"threshold", af(0.5f)}});
  expect_near(d[0], t<double>({2}, {0, 1}));
  EXPECT_THROW(run_ml("Binarizer", {str({1}, {"a"})}, {}), Error);
}

// ---------------------------------------------------------------- ArrayFeatureExtractor

TEST(MlArrayFeatureExtractor, GathersLastAxis) {
  auto out = run_ml("ArrayFeatureExtractor", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i64({3}, {2, 0, 2})}, {});
  expect_near(out[0], f32({2, 3}, {3, 1, 3, 6, 4, 6}));
  // 1-D data gives [1, K]; string data is supported.
  auto s = run_ml("ArrayFeatureExtractor", {str({3}, {"a", "b", "c"}), i64({1, 2}, {1, 2})}, {});
  ASSERT_EQ(s[0].dims(), (Dims{1, 2}));
  EXPECT_EQ(s[0].strings(), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(infer_ml("ArrayFeatureExtractor", {{DType::I32, {-1, 4, 5}, true}, {DType::I64, {2}, true}}, {}).dims,
            (Dims{-1, 4, 2}));
}

TEST(MlArrayFeatureExtractor, Errors) {
  EXPECT_THROW(run_ml("ArrayFeatureExtractor", {f32({2}, {1, 2}), i64({1}, {2})}, {}), Error);
  EXPECT_THROW(run_ml("ArrayFeatureExtractor", {f32({2}, {1, 2}), i64({1}, {-1})}, {}), Error);
  EXPECT_THROW(run_ml("ArrayFeatureExtractor", {f32({2}, {1, 2}), f32({1}, {0})}, {}), Error);
}

// ---------------------------------------------------------------- LabelEncoder

TEST(MlLabelEncoder, StringToIntWithDefault) {
  auto out = run_ml("LabelEncoder", {str({2, 2}, {"b", "z", "a", "b"})},
                    {{"keys_strings", astrs({"a", "b"})}, {"values_int64s", ais({7, 9})}});
  expect_near(out[0], i64({2, 2}, {9, -1, 7, 9}));  // default_int64 = -1
}

TEST(MlLabelEncoder, IntToStringAndFloatToFloat) {
  auto s = run_ml("LabelEncoder", {i64({3}, {3, 1, 5})},
                  {{"keys_int64s", ais({1, 3})}, {"values_strings", astrs({"one", "three"})}});
  EXPECT_EQ(s[0].strings(), (std::vector<std::string>{"three", "one", "_Unused"}));
  auto f = run_ml("LabelEncoder", {f32({4}, {NAN, 2, 0.5f, -0.0f})},
                  {{"keys_floats", afs({0.5f, NAN, 0})}, {"values_floats", afs({10, 20, 30})},
                   {"default_float", af(-5)}});
  // NaN finds the NaN key; -0.0 equals key 0.
  expect_near(f[0], f32({4}, {20, -5, 10, 30}));
}

TEST(MlLabelEncoder, TensorAttributes) {
  auto out = run_ml("LabelEncoder", {t<int32_t>({3}, {4, 8, 6})},
                    {{"keys_tensor", atensor(t<int32_t>({2}, {4, 6}))},
                     {"values_tensor", atensor(t<double>({2}, {0.5, 1.5}))},
                     {"default_tensor", atensor(t<double>({}, {-2.5}))}});
  expect_near(out[0], t<double>({3}, {0.5, -2.5, 1.5}));
  // values_tensor without a default: integral values default to -1.
  auto d = run_ml("LabelEncoder", {str({2}, {"x", "q"})},
                  {{"keys_strings", astrs({"x"})}, {"values_tensor", atensor(t<int16_t>({1}, {3}))}});
  expect_near(d[0], t<int16_t>({2}, {3, -1}));
}

TEST(MlLabelEncoder, Version1ClassesStrings) {
  AttrMap a = {{"classes_strings", astrs({"x", "y"})}, {"default_string", as("?")}};
  auto idx = run_ml("LabelEncoder", {str({3}, {"y", "w", "x"})}, a);
  expect_near(idx[0], i64({3}, {1, -1, 0}));
  auto back = run_ml("LabelEncoder", {i64({3}, {1, 0, 2})}, a);
  EXPECT_EQ(back[0].strings(), (std::vector<std::string>{"y", "x", "?"}));
}

TEST(MlLabelEncoder, Errors) {
  // Input type differs from the keys.
  EXPECT_THROW(run_ml("LabelEncoder", {i64({1}, {1})}, {{"keys_strings", astrs({"a"})}, {"values_int64s", ais({1})}}),
               Error);
  // Two key lists, length mismatch, missing values.
  EXPECT_THROW(run_ml("LabelEncoder", {str({1}, {"a"})},
                      {{"keys_strings", astrs({"a"})}, {"keys_int64s", ais({1})}, {"values_int64s", ais({1})}}),
               Error);
  EXPECT_THROW(run_ml("LabelEncoder", {str({1}, {"a"})}, {{"keys_strings", astrs({"a"})}, {"values_int64s", ais({1, 2})}}),
               Error);
  EXPECT_THROW(run_ml("LabelEncoder", {str({1}, {"a"})}, {{"keys_strings", astrs({"a"})}}), Error);
  // Default of the wrong type.
  EXPECT_THROW(run_ml("LabelEncoder", {str({1}, {"a"})},
                      {{"keys_strings", astrs({"a"})}, {"values_tensor", atensor(t<int16_t>({1}, {1}))},
                       {"default_tensor", atensor(t<int32_t>({1}, {0}))}}),
               Error);
}

// ---------------------------------------------------------------- TreeEnsemble

namespace {
// Two trees, two targets.
// Tree A (root node 0): x0 <= 1 ? leaf 0 (target 0, w 1) : node 1;
//   node 1: x1 < 5 ? leaf 1 (target 1, w 2) : leaf 2 (target 0, w 4).
// Tree B (root node 2): x1 in {2, 7} ? leaf 3 (target 1, w 10) : leaf 4 (target 0, w -3).
AttrMap two_trees(int64_t aggregate, int64_t post) {
  return {{"n_targets", ai(2)},
          {"aggregate_function", ai(aggregate)},
          {"post_transform", ai(post)},
          {"tree_roots", ais({0, 2})},
          {"nodes_featureids", ais({0, 1, 1})},
          {"nodes_modes", atensor(t<uint8_t>({3}, {0, 1, 6}))},
          {"nodes_splits", atensor(f32({3}, {1, 5, NAN}))},
          {"nodes_truenodeids", ais({0, 1, 3})},
          {"nodes_trueleafs", ais({1, 1, 1})},
          {"nodes_falsenodeids", ais({1, 2, 4})},
          {"nodes_falseleafs", ais({0, 1, 1})},
          {"membership_values", atensor(f32({3}, {2, 7, NAN}))},
          {"leaf_targetids", ais({0, 1, 0, 1, 0})},
          {"leaf_weights", atensor(f32({5}, {1, 2, 4, 10, -3}))}};
}
// Rows: (0, 2): A leaf 0 (t0 +1), B leaf 3 (t1 +10)
//       (3, 4): A leaf 1 (t1 +2), B leaf 4 (t0 -3)
//       (3, 9): A leaf 2 (t0 +4), B leaf 4 (t0 -3)
Tensor rows() { return f32({3, 2}, {0, 2, 3, 4, 3, 9}); }
}  // namespace

TEST(MlTreeEnsemble, SumAverageMinMax) {
  auto sum = run_ml("TreeEnsemble", {rows()}, two_trees(1, 0));
  expect_near(sum[0], f32({3, 2}, {1, 10, -3, 2, 1, 0}));
  auto avg = run_ml("TreeEnsemble", {rows()}, two_trees(0, 0));
  expect_near(avg[0], f32({3, 2}, {0.5f, 5, -1.5f, 1, 0.5f, 0}));
  auto mn = run_ml("TreeEnsemble", {rows()}, two_trees(2, 0));
  expect_near(mn[0], f32({3, 2}, {1, 10, -3, 2, -3, 0}));  // untouched targets stay 0
  auto mx = run_ml("TreeEnsemble", {rows()}, two_trees(3, 0));
  expect_near(mx[0], f32({3, 2}, {1, 10, -3, 2, 4, 0}));
}

TEST(MlTreeEnsemble, PostTransforms) {
  Tensor x = f32({1, 2}, {0, 2});  // sums (1, 10)
  auto lg = run_ml("TreeEnsemble", {x}, two_trees(1, 2));
  expect_near(lg[0], f32({1, 2}, {0.7310586f, 0.9999546f}));  // 1 / (1 + e^-v)
  auto sm = run_ml("TreeEnsemble", {x}, two_trees(1, 1));
  expect_near(sm[0], f32({1, 2}, {1.2339458e-4f, 0.9998766f}));  // e^-9 / (1 + e^-9)
  auto sz = run_ml("TreeEnsemble", {f32({1, 2}, {3, 9})}, two_trees(1, 3));  // sums (1, 0)
  expect_near(sz[0], f32({1, 2}, {1, 0}));
  AttrMap probit = two_trees(3, 4);
  probit["leaf_weights"] = atensor(f32({5}, {0.975f, 0.5f, 0.5f, 0.8413447f, 0.5f}));
  auto pr = run_ml("TreeEnsemble", {x}, probit);  // max (0.975, 0.8413447)
  expect_near(pr[0], f32({1, 2}, {1.959964f, 1.0f}), 1e-5, 1e-5);
}

TEST(MlTreeEnsemble, DoubleInputAndMissingValues) {
  AttrMap a = two_trees(1, 0);
  a["nodes_splits"] = atensor(t<double>({3}, {1, 5, NAN}));
  a["leaf_weights"] = atensor(t<double>({5}, {1, 2, 4, 10, -3}));
  a["nodes_missing_value_tracks_true"] = ais({1, 0, 0});
  // x0 = NaN: tracks true at node 0 (leaf 0). x1 = NaN: x1 < 5 false (leaf 2), not a member (leaf 4).
  auto out = run_ml("TreeEnsemble", {t<double>({2, 2}, {NAN, 7, 2, NAN})}, a);
  expect_near(out[0], t<double>({2, 2}, {1, 10, 1, 0}));
  EXPECT_EQ(infer_ml("TreeEnsemble", {{DType::F64, {-1, 2}, true}}, a).dims, (Dims{-1, 2}));
}

TEST(MlTreeEnsemble, Errors) {
  AttrMap cyc = two_trees(1, 0);
  cyc["nodes_falseleafs"] = ais({0, 0, 1});
  cyc["nodes_falsenodeids"] = ais({1, 0, 4});  // node 1 -> node 0 -> node 1 ...
  EXPECT_THROW(run_ml("TreeEnsemble", {f32({1, 2}, {3, 9})}, cyc), Error);
  AttrMap bad_leaf = two_trees(1, 0);
  bad_leaf["leaf_targetids"] = ais({0, 1, 0, 2, 0});
  EXPECT_THROW(run_ml("TreeEnsemble", {rows()}, bad_leaf), Error);
  AttrMap bad_child = two_trees(1, 0);
  bad_child["nodes_truenodeids"] = ais({0, 1, 5});
  EXPECT_THROW(run_ml("TreeEnsemble", {rows()}, bad_child), Error);
  EXPECT_THROW(run_ml("TreeEnsemble", {f32({1, 1}, {0})}, two_trees(1, 0)), Error);  // feature 1 missing
  EXPECT_THROW(run_ml("TreeEnsemble", {rows()}, two_trees(4, 0)), Error);
  EXPECT_THROW(run_ml("TreeEnsemble", {i64({1, 2}, {0, 1})}, two_trees(1, 0)), Error);
}

}  // namespace tessera::testing
