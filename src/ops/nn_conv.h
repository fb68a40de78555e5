// Convolution shape rules and the direct-convolution loop nest shared by Conv,
// ConvInteger and QLinearConv.
#pragma once

#include "ops/nn_ops.h"

namespace tessera {

// Shape facts of one convolution: X [N, C, spatial...], W [M, C/group, k...].
struct ConvShape {
  int64_t N = -1, C = -1, M = -1, group = 1;
  WindowAttrs attrs;
  Dims out_spatial;           // -1 where unknown
  std::vector<int64_t> pads;  // resolved (2*nsp) when all spatial dims are known
  Dims out_dims() const;      // [N, M, out_spatial...]
};

// Checks X and W (ranks, channels vs group) and computes the output shape;
// unknown dims (-1) propagate.
ConvShape conv_shape(const OpAttrs& attrs, const Dims& x, const Dims& w);

// Shape facts of one ConvTranspose: X [N, C, in...], W [C, M/group, k...] ->
// Y [N, M, out...], with output_padding, output_shape and auto_pad resolved
// into the output size and the (possibly negative) pads.
struct ConvTShape {
  int64_t N = -1, C = -1, M = -1, group = 1;
  WindowAttrs attrs;
  std::vector<int64_t> out_padding;
  Dims out_spatial;           // -1 where unknown
  std::vector<int64_t> pads;  // resolved begins then ends (may be negative)
  Dims out_dims() const {
    Dims d{N, M};
    d.insert(d.end(), out_spatial.begin(), out_spatial.end());
    return d;
  }
};

// Checks X and W and computes the ConvTranspose output shape; unknown dims propagate.
ConvTShape convt_shape(const OpAttrs& attrs, const Dims& x, const Dims& w);

// Direct convolution: y[n, m, o] += sum_{c, k} w[m, c, k] * x[n, g*C/G + c, o*s - p + k*d].
// y must hold N*M*out_plane values, pre-filled (zero or bias). A is the
// accumulator / compute type; the innermost loop runs over the contiguous
// output width.
template <class A>
void conv_direct(const A* __restrict x, const A* __restrict w, A* __restrict y, int64_t N, int64_t C, int64_t M,
                 int64_t G, const Geom3& g) {
  const int64_t Cg = C / G, Mg = M / G;
  const int64_t in_plane = g.in_plane(), out_plane = g.out_plane(), ksz = g.k_size();
  // Valid output-width ranges per kernel column, shared by every row.
  std::vector<int64_t> lo(static_cast<size_t>(g.k[2])), hi(static_cast<size_t>(g.k[2]));
  for (int64_t kw = 0; kw < g.k[2]; ++kw)
    valid_range(g.out[2], g.s[2], kw * g.d[2] - g.pb[2], g.in[2], lo[static_cast<size_t>(kw)],
                hi[static_cast<size_t>(kw)]);
  const int64_t sw = g.s[2];
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t m = 0; m < M; ++m) {
      const int64_t grp = m / Mg;
      A* yp = y + (n * M + m) * out_plane;
      for (int64_t c = 0; c < Cg; ++c) {
        const A* xp = x + (n * C + grp * Cg + c) * in_plane;
        const A* wp = w + (m * Cg + c) * ksz;
        for (int64_t kd = 0; kd < g.k[0]; ++kd) {
          for (int64_t kh = 0; kh < g.k[1]; ++kh) {
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const A wv = wp[(kd * g.k[1] + kh) * g.k[2] + kw];
              const int64_t l = lo[static_cast<size_t>(kw)], h = hi[static_cast<size_t>(kw)];
              if (l >= h) continue;
              const int64_t woff = kw * g.d[2] - g.pb[2];
              for (int64_t od = 0; od < g.out[0]; ++od) {
                const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
                if (id < 0 || id >= g.in[0]) continue;
                for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                  const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                  if (ih < 0 || ih >= g.in[1]) continue;
                  const A* xr = xp + (id * g.in[1] + ih) * g.in[2];
                  A* yr = yp + (od * g.out[1] + oh) * g.out[2];
                  if (sw == 1) {
                    for (int64_t ow = l; ow < h; ++ow) yr[ow] += wv * xr[ow + woff];
                  } else {
                    for (int64_t ow = l; ow < h; ++ow) yr[ow] += wv * xr[ow * sw + woff];
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

// FLOPs of a convolution with the given X, W and Y types (2 per multiply-add).
double conv_flops(const TensorType& x, const TensorType& w, const TensorType& y);

// The float path shared by Conv and ConvTranspose: checks the optional bias
// (input 2), converts X and W to the compute type, pre-fills Y with the bias,
// runs loop.template operator()<A>(x, w, y) and converts Y back.
// Shape is ConvShape or ConvTranspose's equivalent (N, M, out_dims()).
template <class Shape, class Loop>
Tensor run_float_conv(const KernelContext& c, const Shape& s, int64_t out_plane, Loop&& loop, const char* what) {
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  const Tensor* b = c.has_input(2) ? &c.in(2) : nullptr;
  if (b)
    TESSERA_CHECK(b->dtype() == x.dtype() && b->numel() == s.M, c.node.describe(), ": bias B must have ", s.M,
                  " elements of X's type");
  Tensor y(x.dtype(), s.out_dims());
  dispatch_float(x.dtype(), [&]<class T>() {
    using A = compute_t<T>;
    std::vector<A> xa(static_cast<size_t>(x.numel())), wa(static_cast<size_t>(w.numel()));
    for (size_t i = 0; i < xa.size(); ++i) xa[i] = static_cast<A>(x.data<T>()[i]);
    for (size_t i = 0; i < wa.size(); ++i) wa[i] = static_cast<A>(w.data<T>()[i]);
    std::vector<A> ya(static_cast<size_t>(y.numel()), A(0));
    if (b)
      for (int64_t n = 0; n < s.N; ++n)
        for (int64_t m = 0; m < s.M; ++m)
          std::fill_n(ya.begin() + (n * s.M + m) * out_plane, out_plane, static_cast<A>(b->data<T>()[m]));
    loop.template operator()<A>(xa.data(), wa.data(), ya.data());
    T* o = y.data<T>();
    for (size_t i = 0; i < ya.size(); ++i) o[i] = to_storage<T>(ya[i]);
  }, what);
  return y;
}

}  // namespace tessera
