// ConvTranspose: the gradient of Conv with respect to its input, with groups,
// strides, dilations, pads, output_padding, output_shape and auto_pad.
#include "ops/nn_conv.h"
#include "ops/op_attrs.h"

namespace tessera {

ConvTShape convt_shape(const OpAttrs& attrs, const Dims& x, const Dims& w) {
  const Node& n = attrs.node();
  TESSERA_CHECK(x.size() >= 3, n.describe(), ": input X must have rank >= 3 (N, C, spatial...), got rank ", x.size());
  TESSERA_CHECK(w.size() == x.size(), n.describe(), ": weight W has rank ", w.size(), " but X has rank ", x.size());
  ConvTShape s;
  s.group = attrs.i("group");
  TESSERA_CHECK(s.group > 0, n.describe(), ": group must be positive");
  s.N = x[0];
  s.C = x[1];
  if (s.C >= 0 && w[0] >= 0)
    TESSERA_CHECK(s.C == w[0], n.describe(), ": X has ", s.C, " channels but W has ", w[0], " input channels");
  if (s.C >= 0)
    TESSERA_CHECK(s.C % s.group == 0, n.describe(), ": ", s.C, " input channels are not divisible by group ",
                  s.group);
  s.M = w[1] < 0 ? -1 : w[1] * s.group;
  const size_t ns = x.size() - 2;
  s.attrs = read_window_attrs(attrs, static_cast<int64_t>(ns), spatial_dims(w), false);
  s.out_padding = attrs.ints("output_padding");
  if (s.out_padding.empty()) s.out_padding.assign(ns, 0);  // absent or empty: 0 per axis
  TESSERA_CHECK(s.out_padding.size() == ns, n.describe(), ": output_padding has ", s.out_padding.size(),
                " values, expected ", ns);
  std::vector<int64_t> oshape = attrs.ints("output_shape");
  if (oshape.size() == ns + 2) oshape.erase(oshape.begin(), oshape.begin() + 2);
  TESSERA_CHECK(oshape.empty() || oshape.size() == ns, n.describe(), ": output_shape has ", oshape.size(),
                " values, expected ", ns);
  const bool same = s.attrs.auto_pad == "SAME_UPPER" || s.attrs.auto_pad == "SAME_LOWER";
  s.out_spatial.assign(ns, -1);
  s.pads = s.attrs.pads;
  Dims in = spatial_dims(x);
  for (size_t i = 0; i < ns; ++i) {
    const int64_t st = s.attrs.strides[i];
    const int64_t k = s.attrs.kernel[i];
    const int64_t op = s.out_padding[i];
    TESSERA_CHECK(op >= 0, n.describe(), ": output_padding must be non-negative");
    if (in[i] < 0 || k < 0) {
      if (!oshape.empty()) s.out_spatial[i] = oshape[i];
      continue;
    }
    const int64_t ek = (k - 1) * s.attrs.dilations[i] + 1;
    const int64_t full = st * (in[i] - 1) + op + ek;
    if (!oshape.empty() || same) {
      int64_t out = !oshape.empty() ? oshape[i] : in[i] * st;
      int64_t total = full - out;
      int64_t half = total / 2;
      if (total < 0) {  // output beyond the computed extent: like output_padding, at the end
        s.pads[i] = 0;
        s.pads[i + ns] = total;
      } else if (s.attrs.auto_pad == "SAME_UPPER") {
        s.pads[i] = half;
        s.pads[i + ns] = total - half;
      } else {
        s.pads[i] = total - half;
        s.pads[i + ns] = half;
      }
      s.out_spatial[i] = out;
    } else {
      s.out_spatial[i] = full - s.pads[i] - s.pads[i + ns];
    }
    TESSERA_CHECK(s.out_spatial[i] > 0, n.describe(), ": output spatial dim ", i, " would be ", s.out_spatial[i]);
  }
  return s;
}

namespace {

void infer_convt(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& w = c.in(1);
  check_same_dtype(c.node, {&x, &w, c.has_input(2) ? &c.in(2) : nullptr});
  TESSERA_CHECK(is_float(x.dtype), c.node.describe(), ": ConvTranspose needs float inputs, got ", dtype_name(x.dtype));
  ConvTShape s = convt_shape(op_attrs(c), x.dims, w.dims);
  if (c.has_input(2)) {
    const TensorType& b = c.in(2);
    TESSERA_CHECK(b.rank() == 1 && (b.dims[0] < 0 || s.M < 0 || b.dims[0] == s.M), c.node.describe(),
                  ": bias B must have shape [", s.M, "], got ", b.to_string());
  }
  c.out(0) = TensorType{x.dtype, s.out_dims()};
}

// y[n, g*Mg+m, i*s + k*d - p] += x[n, g*Cg+c, i] * w[g*Cg+c, m, k]
template <class A>
void convt_direct(const A* __restrict x, const A* __restrict w, A* __restrict y, int64_t N, int64_t C, int64_t M,
                  int64_t G, const Geom3& g) {
  const int64_t Cg = C / G, Mg = M / G;
  const int64_t in_plane = g.in_plane(), out_plane = g.out_plane(), ksz = g.k_size();
  std::vector<int64_t> lo(static_cast<size_t>(g.k[2])), hi(static_cast<size_t>(g.k[2]));
  for (int64_t kw = 0; kw < g.k[2]; ++kw)
    valid_range(g.in[2], g.s[2], kw * g.d[2] - g.pb[2], g.out[2], lo[static_cast<size_t>(kw)],
                hi[static_cast<size_t>(kw)]);
  const int64_t sw = g.s[2];
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t m = 0; m < M; ++m) {
      const int64_t grp = m / Mg, mm = m % Mg;
      A* yp = y + (n * M + m) * out_plane;
      for (int64_t c = 0; c < Cg; ++c) {
        const A* xp = x + (n * C + grp * Cg + c) * in_plane;
        const A* wp = w + ((grp * Cg + c) * Mg + mm) * ksz;
        for (int64_t kd = 0; kd < g.k[0]; ++kd)
          for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const A wv = wp[(kd * g.k[1] + kh) * g.k[2] + kw];
              const int64_t l = lo[static_cast<size_t>(kw)], h = hi[static_cast<size_t>(kw)];
              if (l >= h) continue;
              const int64_t woff = kw * g.d[2] - g.pb[2];
              for (int64_t id = 0; id < g.in[0]; ++id) {
                const int64_t od = id * g.s[0] + kd * g.d[0] - g.pb[0];
                if (od < 0 || od >= g.out[0]) continue;
                for (int64_t ih = 0; ih < g.in[1]; ++ih) {
                  const int64_t oh = ih * g.s[1] + kh * g.d[1] - g.pb[1];
                  if (oh < 0 || oh >= g.out[1]) continue;
                  const A* xr = xp + (id * g.in[1] + ih) * g.in[2];
                  A* yr = yp + (od * g.out[1] + oh) * g.out[2];
                  for (int64_t iw = l; iw < h; ++iw) yr[iw * sw + woff] += wv * xr[iw];
                }
              }
            }
      }
    }
  }
}

std::vector<Tensor> run_convt(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  TESSERA_CHECK(x.dtype() == w.dtype(), c.node.describe(), ": X and W have different element types");
  ConvTShape s = convt_shape(op_attrs(c), x.dims(), w.dims());
  TESSERA_CHECK(s.attrs.nsp <= 3, c.node.describe(), ": ", s.attrs.nsp, "-D ConvTranspose is not supported");
  // Geometry in "input = X, output = Y" terms; pads may be negative here.
  Geom3 g;
  const size_t ns = static_cast<size_t>(s.attrs.nsp), off = 3 - ns;
  Dims in = spatial_dims(x.dims());
  for (size_t i = 0; i < ns; ++i) {
    g.in[off + i] = in[i];
    g.out[off + i] = s.out_spatial[i];
    g.k[off + i] = s.attrs.kernel[i];
    g.s[off + i] = s.attrs.strides[i];
    g.d[off + i] = s.attrs.dilations[i];
    g.pb[off + i] = s.pads[i];
    g.pe[off + i] = s.pads[i + ns];
  }
  return {run_float_conv(c, s, g.out_plane(), [&]<class A>(const A* xa, const A* wa, A* ya) {
    convt_direct<A>(xa, wa, ya, s.N, s.C, s.M, s.group, g);
  }, "ConvTranspose")};
}

}  // namespace

void register_nn_conv_transpose_ops(OpRegistry& r) {
  r.add({.name = "ConvTranspose",
         .min_opset = 1,
         .mapping = MappingType::ManyToMany,
         .linear_inputs = {0, 1},
         .infer = infer_convt,
         .reference = run_convt,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
           // Every input element meets every tap of M/group filters: 2 * |X| * (M/g) * prod(k).
           const TensorType& x = *ins[0];
           const TensorType& w = *ins[1];
           return 2.0 * prod_dims(x.dims) * prod_dims(Dims(w.dims.begin() + 1, w.dims.end())) +
                  (ins.size() > 2 && ins[2] ? prod_dims(outs[0].dims) : 0);
         },
         .attributes = {string_attr("auto_pad", "NOTSET"), ints_attr("dilations", {}), int_attr("group", 1),
                        ints_attr("kernel_shape"), ints_attr("output_padding", {}), ints_attr("output_shape", {}),
                        ints_attr("pads", {}), ints_attr("strides", {})}});
}

}  // namespace tessera
