// Helpers for PET's tests: small models built node by node (convs, matmuls
// with random constant weights), random inputs for a graph's signature, and
// outputs compared by the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "ir/graph.h"
#include "ops/registry.h"
#include "random_tensor.h"

namespace tessera::testing::pet {

struct ModelBuilder {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();
  uint32_t seed = 11;

  ModelBuilder() { g->opset = 17; }
  Value* input(const std::string& name, Dims dims) { return g->add_input(name, {DType::F32, std::move(dims), true}); }
  Value* weight(const std::string& name, Dims dims) { return g->add_constant(name, random_f32(dims, seed++, -1, 1)); }
  Value* ints(const std::string& name, std::vector<int64_t> v) {
    return g->add_constant(name, Tensor::from<int64_t>({static_cast<int64_t>(v.size())}, v));
  }
  Value* node(const std::string& op, std::vector<Value*> ins, const std::string& name, AttrMap a = {}) {
    return g->add_node(op, std::move(ins), {name}, std::move(a), name)->outputs[0];
  }
  Value* conv(Value* x, int64_t M, int64_t kh, int64_t kw, std::vector<int64_t> pads, const std::string& name,
              int64_t stride = 1, int64_t dil = 1, int64_t group = 1, bool bias = true) {
    const int64_t C = x->type.dims.empty() ? 0 : x->type.dims[1];
    AttrMap a;
    a["pads"] = Attribute::of_ints(std::move(pads));
    a["strides"] = Attribute::of_ints({stride, stride});
    a["dilations"] = Attribute::of_ints({dil, dil});
    a["group"] = Attribute::of_int(group);
    std::vector<Value*> ins{x, weight(name + ".w", {M, C / group, kh, kw})};
    if (bias) ins.push_back(weight(name + ".b", {M}));
    Value* y = node("Conv", ins, name, a);
    infer_node(*y->producer, g->opset);
    return y;
  }
  Value* relu(Value* x, const std::string& name) {
    Value* y = node("Relu", {x}, name);
    infer_node(*y->producer, g->opset);
    return y;
  }
  Value* op(const std::string& op, std::vector<Value*> ins, const std::string& name, AttrMap a = {}) {
    Value* y = node(op, std::move(ins), name, std::move(a));
    infer_node(*y->producer, g->opset);
    return y;
  }
};

// Random f32 inputs for every graph input (uniform in [-1, 1)).
inline std::vector<Tensor> random_inputs(const Graph& g, uint32_t seed) {
  std::vector<Tensor> ins;
  for (const Value* v : g.inputs()) ins.push_back(random_f32(v->type.dims, seed++, -1, 1));
  return ins;
}

// Largest |a - b| relative to the output's scale (1 + max |b|).
inline double max_scaled_diff(const Tensor& a, const Tensor& b) {
  double scale = 1, diff = 0;
  for (int64_t i = 0; i < b.numel(); ++i) scale = std::max(scale, 1 + std::abs(b.get_double(i)));
  for (int64_t i = 0; i < b.numel(); ++i) diff = std::max(diff, std::abs(a.get_double(i) - b.get_double(i)));
  return diff / scale;
}

inline void expect_same_outputs(const Graph& a, const Graph& b, const std::vector<Tensor>& ins, double tol) {
  auto ya = interpret(a, ins), yb = interpret(b, ins);
  ASSERT_EQ(ya.size(), yb.size());
  for (size_t i = 0; i < ya.size(); ++i) {
    ASSERT_EQ(ya[i].dims(), yb[i].dims()) << "output " << i;
    EXPECT_LE(max_scaled_diff(ya[i], yb[i]), tol) << "output " << i;
  }
}

// --- graph building by free functions (names from the graph's counter) -----

inline Value* ints(Graph& g, std::vector<int64_t> v) {
  return g.add_constant(g.unique_name("k"), Tensor::from<int64_t>({static_cast<int64_t>(v.size())}, v));
}
inline Value* op(Graph& g, const std::string& type, std::vector<Value*> ins, AttrMap a = {}) {
  return g.add_node(type, std::move(ins), {g.unique_name(type)}, std::move(a))->outputs[0];
}
inline Value* slice(Graph& g, Value* x, std::vector<int64_t> s, std::vector<int64_t> e, std::vector<int64_t> axes) {
  return op(g, "Slice", {x, ints(g, std::move(s)), ints(g, std::move(e)), ints(g, std::move(axes))});
}
inline Value* concat(Graph& g, std::vector<Value*> xs, int64_t axis) {
  AttrMap a;
  a["axis"] = Attribute::of_int(axis);
  return op(g, "Concat", std::move(xs), a);
}
inline Value* pad(Graph& g, Value* x, std::vector<int64_t> pads) { return op(g, "Pad", {x, ints(g, std::move(pads))}); }
inline AttrMap conv_attrs(std::vector<int64_t> pads, std::vector<int64_t> strides = {1, 1},
                          std::vector<int64_t> dil = {1, 1}, int64_t group = 1) {
  AttrMap a;
  a["pads"] = Attribute::of_ints(std::move(pads));
  a["strides"] = Attribute::of_ints(std::move(strides));
  a["dilations"] = Attribute::of_ints(std::move(dil));
  a["group"] = Attribute::of_int(group);
  return a;
}


// Whether `g` has a convolution with a dilation above 1.
inline bool has_dilated_conv(const Graph& g) {
  for (const auto& n : g.nodes())
    if (n->op_type == "Conv")
      if (const Attribute* d = n->attr("dilations"))
        for (int64_t v : d->ints)
          if (v > 1) return true;
  return false;
}

// A cost that makes dilated convolutions expensive and every node cost a
// little: the D2H family (a dilated conv as a regular one on the phases)
// must win, and a chain of R/T around it is worth it.
inline double dilation_averse(const Graph& g) {
  return static_cast<double>(g.nodes().size()) + (has_dilated_conv(g) ? 100 : 0);
}

}  // namespace tessera::testing::pet
