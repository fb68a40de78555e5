#include "pet/layout_context.h"

#include "support/error.h"
#include "support/hash.h"

namespace tessera::pet {

namespace {

constexpr int kOutputBit = 32;  // bits [0, 32): inputs; [32, 64): outputs

// An image or video map the target can hold blocked.
bool blockable(const TensorType& t) {
  return t.dtype == DType::F32 && (t.rank() == 4 || t.rank() == 5) && t.fully_known();
}

// An identity depthwise 1x1 Conv's attributes and weight for maps of type `t`.
AttrMap identity_attrs(const TensorType& t) {
  const size_t spatial = t.dims.size() - 2;
  AttrMap a;
  a["group"] = Attribute::of_int(t.dims[1]);
  a["kernel_shape"] = Attribute::of_ints(std::vector<int64_t>(spatial, 1));
  a["strides"] = Attribute::of_ints(std::vector<int64_t>(spatial, 1));
  a["dilations"] = Attribute::of_ints(std::vector<int64_t>(spatial, 1));
  a["pads"] = Attribute::of_ints(std::vector<int64_t>(2 * spatial, 0));
  return a;
}

Value* identity_weight(Graph& g, const TensorType& t) {
  Dims dims(t.dims.size(), 1);
  dims[0] = t.dims[1];
  Tensor w(DType::F32, dims);
  float* p = w.data<float>();
  for (int64_t i = 0; i < w.numel(); ++i) p[i] = 1.0f;
  return g.add_constant(g.unique_name("pet_context_w"), std::move(w));
}

}  // namespace

uint64_t layout_context(const Subprogram& sp, const std::set<std::string>& blocked) {
  uint64_t bits = 0;
  for (size_t i = 0; i < sp.activations.size() && i < kOutputBit; ++i)
    if (blockable(sp.activations[i]->type) && blocked.count(sp.activations[i]->name)) bits |= uint64_t{1} << i;
  for (size_t j = 0; j < sp.outputs.size() && j < kOutputBit; ++j)
    if (blockable(sp.outputs[j]->type) && blocked.count(sp.outputs[j]->name)) bits |= uint64_t{1} << (kOutputBit + j);
  return bits;
}

void add_layout_context(Graph& g, uint64_t context) {
  if (!context) return;
  for (size_t i = 0; i < g.inputs().size() && i < kOutputBit; ++i) {
    Value* old = g.inputs()[i];
    if (!(context >> i & 1) || !blockable(old->type)) continue;
    TESSERA_CHECK(!g.nodes().empty(), "pet: layout context of an empty graph");
    Value* x = g.add_input(g.unique_name(old->name + ".context"), old->type);
    Value* w = identity_weight(g, old->type);
    Node* dw = g.insert_node_before(g.nodes().front().get(), "Conv", {x, w}, {g.unique_name(old->name + ".blocked")},
                                    identity_attrs(old->type), g.unique_name("pet_context_in"));
    dw->outputs[0]->type = old->type;
    g.replace_all_uses(old, dw->outputs[0]);
    std::vector<Value*>& inputs = g.mutable_inputs();
    inputs.pop_back();  // x, appended by add_input, takes old's place
    inputs[i] = x;
    old->is_graph_input = false;
    g.erase_value_if_unused(old);
  }
  for (size_t j = 0; j < g.outputs().size() && j < kOutputBit; ++j) {
    Value* y = g.outputs()[j];
    if (!(context >> (kOutputBit + j) & 1) || !blockable(y->type)) continue;
    Value* w = identity_weight(g, y->type);
    Node* dw = g.add_node("Conv", {y, w}, {g.unique_name(y->name + ".consumed")}, identity_attrs(y->type),
                          g.unique_name("pet_context_out"));
    dw->outputs[0]->type = y->type;
    g.mutable_outputs()[j] = dw->outputs[0];
  }
}

uint64_t context_outputs(uint64_t context) { return context >> kOutputBit; }

uint64_t hash_with_context(uint64_t hash, uint64_t context) {
  return context ? hash_combine(hash, context ^ 0x9e3779b97f4a7c15ull) : hash;
}

}  // namespace tessera::pet
