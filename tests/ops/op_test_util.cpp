// One-node graph runner for op tests.
#include "ops/op_test_util.h"

#include <algorithm>
#include <cmath>

namespace tessera::testing {

std::unique_ptr<Graph> build_op_graph(const OpCase& c) {
  auto g = std::make_unique<Graph>();
  g->opset = c.opset;
  std::vector<Value*> ins;
  std::vector<Tensor> feed;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Tensor& t = c.inputs[i];
    if (!t.defined()) {
      ins.push_back(nullptr);
      continue;
    }
    bool is_const = std::find(c.constant_inputs.begin(), c.constant_inputs.end(), static_cast<int>(i)) !=
                    c.constant_inputs.end();
    std::string name = "in" + std::to_string(i);
    ins.push_back(is_const ? g->add_constant(name, t) : g->add_input(name, {t.dtype(), t.dims(), true}));
  }
  std::vector<std::string> outs;
  for (int i = 0; i < c.num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  Node* n = g->add_node(c.op, ins, outs, c.attrs, "node");
  for (Value* o : n->outputs) g->add_output(o);
  infer_graph(*g);
  return g;
}

namespace {
std::unique_ptr<Graph> build(const OpCase& c) { return build_op_graph(c); }

std::vector<Tensor> feeds(const OpCase& c) {
  std::vector<Tensor> f;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    bool is_const = std::find(c.constant_inputs.begin(), c.constant_inputs.end(), static_cast<int>(i)) !=
                    c.constant_inputs.end();
    if (c.inputs[i].defined() && !is_const) f.push_back(c.inputs[i]);
  }
  return f;
}
}  // namespace

std::vector<Tensor> run_op(const OpCase& c) {
  auto g = build(c);
  return interpret(*g, feeds(c));
}

std::vector<TensorType> infer_op(const OpCase& c) {
  auto g = build(c);
  std::vector<TensorType> t;
  for (const Value* o : g->outputs()) t.push_back(o->type);
  return t;
}

std::vector<TensorType> infer_types(const std::string& op, const std::vector<TensorType>& ins, AttrMap attrs,
                                    int outputs, int64_t opset) {
  Graph g;
  g.opset = opset;
  std::vector<Value*> vs;
  for (size_t i = 0; i < ins.size(); ++i) vs.push_back(g.add_input("in" + std::to_string(i), ins[i]));
  std::vector<std::string> names;
  for (int i = 0; i < outputs; ++i) names.push_back("y" + std::to_string(i));
  Node* n = g.add_node(op, vs, names, std::move(attrs), "node");
  infer_graph(g);
  std::vector<TensorType> t;
  for (Value* v : n->outputs) t.push_back(v->type);
  return t;
}

void expect_near(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  ASSERT_EQ(dtype_name(actual.dtype()), dtype_name(expected.dtype()));
  ASSERT_EQ(dims_to_string(actual.dims()), dims_to_string(expected.dims()));
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double a = actual.get_double(i), e = expected.get_double(i);
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(a)) << "element " << i;
      continue;
    }
    if (std::isinf(e)) {
      EXPECT_EQ(a, e) << "element " << i;
      continue;
    }
    EXPECT_NEAR(a, e, atol + rtol * std::fabs(e)) << "element " << i;
  }
}

}  // namespace tessera::testing
