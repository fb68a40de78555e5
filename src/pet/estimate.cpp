// PET's static estimate (pet/estimate.h).
#include "pet/estimate.h"

#include <set>

#include "ops/registry.h"

namespace tessera::pet {

namespace {

bool all_equal(const Attribute* a, int64_t v) {
  if (!a) return v == 1;  // ONNX's default strides and dilations
  for (int64_t x : a->ints)
    if (x != v) return false;
  return true;
}

// A convolution the Winograd pass can take: 3x3, unit stride and dilation.
bool winograd_conv(const Node& n) {
  const Attribute* k = n.attr("kernel_shape");
  const Value* w = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
  const bool k3 = k ? all_equal(k, 3) : (w && w->type.dims.size() == 4 && w->type.dims[2] == 3 && w->type.dims[3] == 3);
  return k3 && all_equal(n.attr("strides"), 1) && all_equal(n.attr("dilations"), 1);
}

}  // namespace

double estimate_seconds(const Graph& g, size_t num_activations) {
  constexpr double kFlops = 40e9;         // FLOP/s of a direct convolution or product
  constexpr double kBytes = 20e9;         // bytes/s moved
  constexpr double kPerKernel = 20e-6;    // launch, loop setup
  std::set<const Value*> weight_only;
  for (size_t i = num_activations; i < g.inputs().size(); ++i) weight_only.insert(g.inputs()[i]);
  double s = 0;
  for (const auto& n : g.nodes()) {
    bool weights = true;
    for (const Value* v : n->inputs)
      if (v && !v->constant && !weight_only.count(v)) weights = false;
    if (weights) {
      for (const Value* v : n->outputs)
        if (v) weight_only.insert(v);
      continue;
    }
    const double rate = n->op_type == "Conv" && winograd_conv(*n) ? 2 * kFlops : kFlops;  // Winograd F(2x2) or better
    s += node_flops(*n) / rate + node_bytes(*n) / kBytes + kPerKernel;
  }
  return s;
}

}  // namespace tessera::pet
