// Conv: N-D (1-D, 2-D, 3-D) convolution with groups, strides, dilations,
// explicit pads and every auto_pad mode.
#include "ops/nn_conv.h"
#include "ops/op_attrs.h"

namespace tessera {

Dims ConvShape::out_dims() const {
  Dims d{N, M};
  d.insert(d.end(), out_spatial.begin(), out_spatial.end());
  return d;
}

ConvShape conv_shape(const OpAttrs& attrs, const Dims& x, const Dims& w) {
  const Node& n = attrs.node();
  TESSERA_CHECK(x.size() >= 3, n.describe(), ": input X must have rank >= 3 (N, C, spatial...), got rank ", x.size());
  TESSERA_CHECK(w.size() == x.size(), n.describe(), ": weight W has rank ", w.size(), " but X has rank ", x.size());
  ConvShape s;
  s.group = attrs.i("group");
  TESSERA_CHECK(s.group > 0, n.describe(), ": group must be positive");
  s.N = x[0];
  s.C = x[1];
  s.M = w[0];
  if (s.C >= 0 && w[1] >= 0)
    TESSERA_CHECK(s.C == w[1] * s.group, n.describe(), ": X has ", s.C, " channels but W expects ", w[1], " x group ",
                  s.group);
  if (s.M >= 0)
    TESSERA_CHECK(s.M % s.group == 0, n.describe(), ": ", s.M, " output channels are not divisible by group ",
                  s.group);
  s.attrs = read_window_attrs(attrs, static_cast<int64_t>(x.size()) - 2, spatial_dims(w), false);
  s.out_spatial = window_output_dims(n, s.attrs, spatial_dims(x), &s.pads);
  return s;
}

double conv_flops(const TensorType& x, const TensorType& w, const TensorType& y) {
  // Each output element takes C/group * prod(kernel) multiply-adds = W's per-filter size.
  return 2.0 * prod_dims(y.dims) * prod_dims(Dims(w.dims.begin() + 1, w.dims.end()));
}

namespace {

void infer_conv(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& w = c.in(1);
  check_same_dtype(c.node, {&x, &w, c.has_input(2) ? &c.in(2) : nullptr});
  TESSERA_CHECK(is_float(x.dtype), c.node.describe(), ": Conv needs float inputs, got ", dtype_name(x.dtype));
  ConvShape s = conv_shape(op_attrs(c), x.dims, w.dims);
  if (c.has_input(2)) {
    const TensorType& b = c.in(2);
    TESSERA_CHECK(b.rank() == 1 && (b.dims[0] < 0 || s.M < 0 || b.dims[0] == s.M), c.node.describe(),
                  ": bias B must have shape [", s.M, "], got ", b.to_string());
  }
  c.out(0) = TensorType{x.dtype, s.out_dims()};
}

std::vector<Tensor> run_conv(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  TESSERA_CHECK(x.dtype() == w.dtype(), c.node.describe(), ": X and W have different element types");
  ConvShape s = conv_shape(op_attrs(c), x.dims(), w.dims());
  Geom3 g = make_geom3(c.node, s.attrs, spatial_dims(x.dims()), s.out_spatial, s.pads);
  return {run_float_conv(c, s, g.out_plane(), [&]<class A>(const A* xa, const A* wa, A* ya) {
    conv_direct<A>(xa, wa, ya, s.N, s.C, s.M, s.group, g);
  }, "Conv")};
}

}  // namespace

void register_nn_conv_ops(OpRegistry& r) {
  r.add({.name = "Conv",
         .min_opset = 1,
         .mapping = MappingType::ManyToMany,
         .linear_inputs = {0, 1},
         .infer = infer_conv,
         .reference = run_conv,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
           return conv_flops(*ins[0], *ins[1], outs[0]) + (ins.size() > 2 && ins[2] ? prod_dims(outs[0].dims) : 0);
         },
         .attributes = {string_attr("auto_pad", "NOTSET"), ints_attr("dilations", {}), int_attr("group", 1),
                        ints_attr("kernel_shape"), ints_attr("pads", {}), ints_attr("strides", {})}});
}

}  // namespace tessera
