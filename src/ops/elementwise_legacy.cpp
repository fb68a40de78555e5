// Semantics of the elementwise family before opset 7/8, as wrappers around an
// op's current inference and kernel (see elementwise_common.h):
// - legacy broadcasting of the binary ops (opsets 1-6): attributes
//   `broadcast` (0/1) and `axis`; the output has A's shape;
// - Max/Min/Sum/Mean before opset 8 require equal input shapes;
// - `consumed_inputs` (opsets 1-5), an in-place hint with no effect on values.
#include "ops/elementwise_common.h"
#include "ops/op_attrs.h"

namespace tessera::ew {

namespace {

// Runs `f` on a copy of the inference context whose input types are `ins`,
// and stores its outputs back into `c`.
void infer_with(InferContext& c, const InferFn& f, const std::vector<const TensorType*>& ins) {
  InferContext sub{c.node, c.opset, ins, c.input_values, {}};
  f(sub);
  c.output_types = std::move(sub.output_types);
}

std::vector<Tensor> run_with(const KernelContext& c, const KernelFn& f, std::vector<const Tensor*> ins) {
  KernelContext sub{c.node, c.opset, std::move(ins), c.outer};
  return f(sub);
}

bool dims_compatible(const Dims& a, const Dims& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  return true;
}

}  // namespace

void check_removed_attr(const Node& n, int64_t opset, const char* attr, int64_t removed_in) {
  TESSERA_CHECK(opset < removed_in || !n.has_attr(attr), n.describe(), ": attribute '", attr,
                "' exists only before opset ", removed_in, " (the model has opset ", opset, ")");
}

Dims legacy_broadcast_b_dims(const OpAttrs& attrs, const Dims& a, const Dims& b) {
  const Node& n = attrs.node();
  int64_t bc = attrs.i("broadcast");
  TESSERA_CHECK(bc == 0 || bc == 1, n.describe(), ": broadcast must be 0 or 1, got ", bc);
  const auto ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (bc == 0) {
    TESSERA_CHECK(dims_compatible(a, b), n.describe(), ": without broadcast=1 the inputs must have equal shapes, got ",
                  dims_to_string(a), " and ", dims_to_string(b));
    return b;
  }
  TESSERA_CHECK(rb <= ra, n.describe(), ": with legacy broadcasting B ", dims_to_string(b),
                " must not have a higher rank than A ", dims_to_string(a));
  int64_t axis = ra - rb;  // suffix matching
  if (n.has_attr("axis")) {
    axis = attrs.i("axis");
    if (axis < 0) axis += ra;
    TESSERA_CHECK(axis >= 0 && axis + rb <= ra, n.describe(), ": axis ", attrs.i("axis"), " does not fit B ",
                  dims_to_string(b), " into A ", dims_to_string(a));
  }
  Dims out(a.size(), 1);
  for (int64_t i = 0; i < rb; ++i) {
    int64_t bd = b[static_cast<size_t>(i)], ad = a[static_cast<size_t>(axis + i)];
    TESSERA_CHECK(bd < 0 || ad < 0 || bd == ad || bd == 1, n.describe(), ": B ", dims_to_string(b),
                  " does not broadcast to A ", dims_to_string(a), " at axis ", axis);
    out[static_cast<size_t>(axis + i)] = bd;
  }
  return out;
}

OpDef with_legacy_broadcast(OpDef d) {
  d.min_opset = 1;
  d.attributes.insert(d.attributes.end(),
                      {int_attr("broadcast", 0), int_attr("axis", 0), ints_attr("consumed_inputs")});
  auto check_attrs = [](const Node& n, int64_t opset) {
    check_removed_attr(n, opset, "consumed_inputs", 6);
    check_removed_attr(n, opset, "broadcast", 7);
    check_removed_attr(n, opset, "axis", 7);
  };
  d.infer = [f = d.infer, check_attrs](InferContext& c) {
    check_attrs(c.node, c.opset);
    if (c.opset >= 7) return f(c);
    TESSERA_CHECK(c.num_inputs() == 2, c.node.describe(), ": needs 2 inputs, got ", c.num_inputs());
    const TensorType& a = c.in(0);
    TensorType b = c.in(1);
    b.dims = legacy_broadcast_b_dims(op_attrs(c), a.dims, b.dims);
    infer_with(c, f, {&a, &b});
    // The output has exactly A's shape.
    TensorType& o = c.out(0);
    for (size_t i = 0; i < a.dims.size() && i < o.dims.size(); ++i)
      if (a.dims[i] >= 0) o.dims[i] = a.dims[i];
  };
  d.reference = [f = d.reference, check_attrs](const KernelContext& c) {
    check_attrs(c.node, c.opset);
    if (c.opset >= 7) return f(c);
    TESSERA_CHECK(c.num_inputs() == 2, c.node.describe(), ": needs 2 inputs, got ", c.num_inputs());
    const Tensor& a = c.in(0);
    Tensor b = c.in(1).reshaped(legacy_broadcast_b_dims(op_attrs(c), a.dims(), c.in(1).dims()));
    return run_with(c, f, {&a, &b});
  };
  return d;
}

OpDef with_equal_shapes_before(OpDef d, int64_t numpy_opset) {
  d.min_opset = 1;
  d.attributes.push_back(ints_attr("consumed_inputs"));
  auto check = [numpy_opset](const Node& n, int64_t opset, const std::vector<const Dims*>& dims) {
    check_removed_attr(n, opset, "consumed_inputs", 6);
    if (opset >= numpy_opset) return;
    for (size_t i = 1; i < dims.size(); ++i)
      TESSERA_CHECK(dims_compatible(*dims[0], *dims[i]), n.describe(), ": before opset ", numpy_opset,
                    " all inputs must have the same shape, got ", dims_to_string(*dims[0]), " and ",
                    dims_to_string(*dims[i]));
  };
  d.infer = [f = d.infer, check](InferContext& c) {
    std::vector<const Dims*> dims;
    for (const TensorType* t : c.input_types)
      if (t && t->rank_known) dims.push_back(&t->dims);
    check(c.node, c.opset, dims);
    f(c);
  };
  d.reference = [f = d.reference, check](const KernelContext& c) {
    std::vector<const Dims*> dims;
    for (const Tensor* t : c.inputs)
      if (t) dims.push_back(&t->dims());
    check(c.node, c.opset, dims);
    return f(c);
  };
  return d;
}

OpDef with_consumed_inputs(OpDef d) {
  d.min_opset = 1;
  d.attributes.push_back(ints_attr("consumed_inputs"));
  d.infer = [f = d.infer](InferContext& c) {
    check_removed_attr(c.node, c.opset, "consumed_inputs", 6);
    f(c);
  };
  d.reference = [f = d.reference](const KernelContext& c) {
    check_removed_attr(c.node, c.opset, "consumed_inputs", 6);
    return f(c);
  };
  return d;
}

}  // namespace tessera::ew
