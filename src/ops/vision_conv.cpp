// Convolution-shaped vision ops: Col2Im (opset 18, N-D; sums sliding blocks
// back into an image) and DeformConv (opset 19, 2-D; convolution sampling the
// input bilinearly at offset positions, optionally modulated by a mask).
#include <algorithm>
#include <cmath>

#include "ops/nn_extra.h"
#include "ops/nn_extra_util.h"
#include "ops/op_attrs.h"
#include "ops/vision_conv.h"

namespace tessera {
namespace {

// Per-spatial-axis attribute with a default; checks its length.
std::vector<int64_t> axis_attr(const OpAttrs& attrs, const char* name, size_t count, int64_t def) {
  const Node& n = attrs.node();
  std::vector<int64_t> v = attrs.ints(name);
  if (v.empty()) v.assign(count, def);
  TESSERA_CHECK(v.size() == count, n.describe(), ": ", name, " has ", v.size(), " values, expected ", count);
  return v;
}

// ---- Col2Im ------------------------------------------------------------------

void infer_col2im(InferContext& c) {
  const Node& n = c.node;
  const TensorType& x = c.in(0);
  TESSERA_CHECK(x.rank() == 3, n.describe(), ": input must be 3-D [N, C*prod(block_shape), L]");
  std::vector<int64_t> image, block;
  bool have_image = constant_ints(c, 1, image), have_block = constant_ints(c, 2, block);
  int64_t r = have_image ? static_cast<int64_t>(image.size())
              : c.in(1).rank_known && c.in(1).rank() == 1 ? c.in(1).dims[0] : -1;
  TensorType t{x.dtype, {}};
  if (r < 0) {
    t.rank_known = false;
    c.out(0) = t;
    return;
  }
  int64_t ch = -1;
  if (have_block && x.dims[1] >= 0) {
    int64_t bp = 1;
    for (int64_t b : block) bp *= b;
    TESSERA_CHECK(bp > 0 && x.dims[1] % bp == 0, n.describe(), ": input dim 1 (", x.dims[1],
                  ") is not a multiple of prod(block_shape) = ", bp);
    ch = x.dims[1] / bp;
  }
  t.dims = {x.dims[0], ch};
  for (int64_t i = 0; i < r; ++i) t.dims.push_back(have_image ? image[static_cast<size_t>(i)] : -1);
  c.out(0) = t;
}

std::vector<Tensor> run_col2im(const KernelContext& c) {
  const Tensor& X = c.in(0);
  const Col2ImShape g = col2im_shape(op_attrs(c), X.dims(), c.in(1).to_int_vector(), c.in(2).to_int_vector());
  const size_t r = g.rank();
  const int64_t N = g.N, C = g.C, L = g.L, bp = g.bp;
  Dims od = {N, C};
  od.insert(od.end(), g.image.begin(), g.image.end());
  std::vector<double> x = numeric_values(X);
  std::vector<double> y(static_cast<size_t>(numel_of(od)));
  const int64_t img_sz = numel_of(Dims(g.image.begin(), g.image.end()));
  Dims bstr = strides_of(Dims(g.block.begin(), g.block.end())), lstr = strides_of(Dims(g.nb.begin(), g.nb.end())),
       istr = strides_of(Dims(g.image.begin(), g.image.end()));
  for (int64_t b = 0; b < N; ++b)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t k = 0; k < bp; ++k)
        for (int64_t l = 0; l < L; ++l) {
          int64_t off = 0;
          bool inside = true;
          for (size_t d = 0; d < r && inside; ++d) {
            int64_t kd = (k / bstr[d]) % g.block[d], ld = (l / lstr[d]) % g.nb[d];
            int64_t pos = ld * g.str[d] - g.pads[d] + kd * g.dil[d];
            inside = pos >= 0 && pos < g.image[d];
            off += pos * istr[d];
          }
          if (inside)
            y[static_cast<size_t>((b * C + ch) * img_sz + off)] += x[static_cast<size_t>((b * X.dim(1) + ch * bp + k) * L + l)];
        }
  return {numeric_tensor(X.dtype(), od, y)};
}

}  // namespace

// Col2Im's geometry, shared with its tensor expression.
Col2ImShape col2im_shape(const OpAttrs& attrs, const Dims& x, std::vector<int64_t> image, std::vector<int64_t> block) {
  const Node& n = attrs.node();
  TESSERA_CHECK(x.size() == 3, n.describe(), ": input must be 3-D");
  TESSERA_CHECK(!image.empty() && image.size() == block.size(), n.describe(),
                ": image_shape and block_shape must have the same non-zero length");
  const size_t r = image.size();
  Col2ImShape g;
  g.dil = axis_attr(attrs, "dilations", r, 1);
  g.str = axis_attr(attrs, "strides", r, 1);
  g.pads = axis_attr(attrs, "pads", 2 * r, 0);
  for (int64_t p : g.pads) TESSERA_CHECK(p >= 0, n.describe(), ": pads must be non-negative");
  for (int64_t b : block) {
    TESSERA_CHECK(b > 0, n.describe(), ": block_shape values must be positive");
    g.bp *= b;
  }
  TESSERA_CHECK(x[1] % g.bp == 0, n.describe(), ": input dim 1 (", x[1], ") is not a multiple of ", g.bp);
  g.N = x[0], g.C = x[1] / g.bp, g.L = x[2];
  g.nb.resize(r);
  int64_t total = 1;
  for (size_t d = 0; d < r; ++d) {
    TESSERA_CHECK(image[d] > 0 && g.dil[d] > 0 && g.str[d] > 0, n.describe(),
                  ": image_shape, dilations and strides must be positive");
    int64_t span = image[d] + g.pads[d] + g.pads[d + r] - g.dil[d] * (block[d] - 1) - 1;
    g.nb[d] = span < 0 ? 0 : span / g.str[d] + 1;
    total *= g.nb[d];
  }
  TESSERA_CHECK(total == g.L, n.describe(), ": input has ", g.L, " blocks but the image, block and attributes give ",
                total);
  g.image = std::move(image);
  g.block = std::move(block);
  return g;
}

// ---- DeformConv --------------------------------------------------------------

// Reads kernel_shape (default W's), strides, dilations and pads; oh / ow stay -1 where X's dims are unknown.
DeformConvShape deform_conv_geom(const OpAttrs& attrs, const Dims& x, const Dims& w) {
  const Node& n = attrs.node();
  std::vector<int64_t> k = attrs.ints("kernel_shape");
  if (k.empty()) k = {w[2], w[3]};
  TESSERA_CHECK(k.size() == 2, n.describe(), ": kernel_shape must have 2 values");
  std::vector<int64_t> s = axis_attr(attrs, "strides", 2, 1), d = axis_attr(attrs, "dilations", 2, 1),
                       p = axis_attr(attrs, "pads", 4, 0);
  DeformConvShape g{k[0], k[1], s[0], s[1], d[0], d[1], p[0], p[1], p[2], p[3]};
  TESSERA_CHECK(g.sh > 0 && g.sw > 0 && g.dh > 0 && g.dw > 0, n.describe(), ": strides and dilations must be positive");
  if (x[2] >= 0 && g.kh >= 0) g.oh = (x[2] + g.pt + g.pb - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  if (x[3] >= 0 && g.kw >= 0) g.ow = (x[3] + g.pl + g.pr - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  return g;
}

// The geometry with N, C, H, W, OC and the groups, after checking every input's dims against it.
DeformConvShape deform_conv_shape(const OpAttrs& attrs, const Dims& x, const Dims& w, const Dims& offset,
                                  const Dims* mask, const Dims* bias) {
  const Node& n = attrs.node();
  TESSERA_CHECK(x.size() == 4 && w.size() == 4, n.describe(), ": only 2-D DeformConv is supported");
  DeformConvShape g = deform_conv_geom(attrs, x, w);
  TESSERA_CHECK(g.kh > 0 && g.kw > 0 && g.oh > 0 && g.ow > 0, n.describe(), ": kernel ", g.kh, "x", g.kw,
                " gives an empty output");
  g.N = x[0], g.C = x[1], g.H = x[2], g.W = x[3], g.OC = w[0];
  g.group = attrs.i("group"), g.offset_group = attrs.i("offset_group");
  const int64_t C = g.C, group = g.group, og = g.offset_group, K = g.taps();
  TESSERA_CHECK(group > 0 && C % group == 0 && g.OC % group == 0 && w[1] == C / group, n.describe(),
                ": W shape ", dims_to_string(w), " does not fit ", C, " channels in ", group, " groups");
  TESSERA_CHECK(og > 0 && C % og == 0, n.describe(), ": offset_group ", og, " does not divide ", C, " channels");
  TESSERA_CHECK(w[2] == g.kh && w[3] == g.kw, n.describe(), ": kernel_shape does not match W");
  TESSERA_CHECK(offset == Dims({g.N, og * 2 * K, g.oh, g.ow}), n.describe(), ": offset must be ",
                dims_to_string({g.N, og * 2 * K, g.oh, g.ow}), ", got ", dims_to_string(offset));
  if (mask)
    TESSERA_CHECK(*mask == Dims({g.N, og * K, g.oh, g.ow}), n.describe(), ": mask must be ",
                  dims_to_string({g.N, og * K, g.oh, g.ow}));
  if (bias) TESSERA_CHECK(*bias == Dims({g.OC}), n.describe(), ": B must be [", g.OC, "]");
  return g;
}

namespace {

void infer_deform_conv(InferContext& c) {
  const Node& n = c.node;
  const TensorType& x = c.in(0);
  const TensorType& w = c.in(1);
  TESSERA_CHECK(is_float(x.dtype), n.describe(), ": X must be a float tensor");
  TESSERA_CHECK(x.rank() == 4 && w.rank() == 4, n.describe(), ": only 2-D DeformConv is supported (X and W 4-D)");
  DeformConvShape g = deform_conv_geom(op_attrs(c), x.dims, w.dims);
  c.out(0) = TensorType{x.dtype, {x.dims[0], w.dims[0], g.oh, g.ow}};
}

std::vector<Tensor> run_deform_conv(const KernelContext& c) {
  const Tensor& X = c.in(0);
  const Tensor& W = c.in(1);
  const Tensor& O = c.in(2);
  const Tensor* Bs = c.has_input(3) ? c.inputs[3] : nullptr;
  const Tensor* M = c.has_input(4) ? c.inputs[4] : nullptr;
  const DeformConvShape g = deform_conv_shape(op_attrs(c), X.dims(), W.dims(), O.dims(), M ? &M->dims() : nullptr,
                                              Bs ? &Bs->dims() : nullptr);
  const int64_t N = g.N, C = g.C, H = g.H, Wd = g.W, OC = g.OC, group = g.group, og = g.offset_group, K = g.taps();
  const char* what = "DeformConv";
  std::vector<double> x = float_values(X, what), w = float_values(W, what), off = float_values(O, what);
  std::vector<double> mask = M ? float_values(*M, what) : std::vector<double>();
  std::vector<double> bias = Bs ? float_values(*Bs, what) : std::vector<double>(static_cast<size_t>(OC));
  const int64_t cpg = C / group, ocpg = OC / group, cpo = C / og, P = g.oh * g.ow;
  // Sampled (and mask-modulated) input columns: [C, K, P] per batch.
  std::vector<double> cols(static_cast<size_t>(C * K * P));
  std::vector<double> y(static_cast<size_t>(N * OC * P));
  auto pixel = [&](const double* img, int64_t yy, int64_t xx) {
    return yy >= 0 && yy < H && xx >= 0 && xx < Wd ? img[yy * Wd + xx] : 0.0;
  };
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t ch = 0; ch < C; ++ch) {
      const double* img = &x[static_cast<size_t>((b * C + ch) * H * Wd)];
      const int64_t o = ch / cpo;
      for (int64_t k = 0; k < K; ++k)
        for (int64_t p = 0; p < P; ++p) {
          const int64_t ki = k / g.kw, kj = k % g.kw, oy = p / g.ow, ox = p % g.ow;
          const int64_t dyc = b * og * 2 * K + g.offset_channel(o, k);
          double dy = off[static_cast<size_t>(dyc * P + p)], dx = off[static_cast<size_t>((dyc + 1) * P + p)];
          double yy = static_cast<double>(g.sample_y(oy, ki)) + dy;
          double xx = static_cast<double>(g.sample_x(ox, kj)) + dx;
          double v = 0;
          if (yy > -1 && yy < static_cast<double>(H) && xx > -1 && xx < static_cast<double>(Wd)) {
            double fy = std::floor(yy), fx = std::floor(xx), ly = yy - fy, lx = xx - fx;
            int64_t y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
            v = (1 - ly) * (1 - lx) * pixel(img, y0, x0) + (1 - ly) * lx * pixel(img, y0, x0 + 1) +
                ly * (1 - lx) * pixel(img, y0 + 1, x0) + ly * lx * pixel(img, y0 + 1, x0 + 1);
          }
          if (M) v *= mask[static_cast<size_t>((b * og * K + g.mask_channel(o, k)) * P + p)];
          cols[static_cast<size_t>((ch * K + k) * P + p)] = v;
        }
    }
    for (int64_t oc = 0; oc < OC; ++oc) {
      const int64_t gi = oc / ocpg;
      for (int64_t p = 0; p < P; ++p) {
        double acc = bias[static_cast<size_t>(oc)];
        for (int64_t ci = 0; ci < cpg; ++ci)
          for (int64_t k = 0; k < K; ++k)
            acc += w[static_cast<size_t>((oc * cpg + ci) * K + k)] *
                   cols[static_cast<size_t>(((gi * cpg + ci) * K + k) * P + p)];
        y[static_cast<size_t>((b * OC + oc) * P + p)] = acc;
      }
    }
  }
  return {float_tensor(X.dtype(), {N, OC, g.oh, g.ow}, y, what)};
}

}  // namespace

void register_col2im_ops(OpRegistry& r) {
  r.add({.name = "Col2Im", .min_opset = 18, .mapping = MappingType::ManyToMany, .linear_inputs = {0},
         .infer = infer_col2im, .reference = run_col2im,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           return ins[0] ? static_cast<double>(numel_of(ins[0]->dims)) : 0.0;
         },
         .attributes = {ints_attr("dilations", {}), ints_attr("pads", {}), ints_attr("strides", {})}});
  r.add({.name = "DeformConv", .min_opset = 19, .mapping = MappingType::ManyToMany, .linear_inputs = {0, 1},
         .infer = infer_deform_conv, .reference = run_deform_conv,
         .flops = [](const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
           if (!ins[1] || outs.empty()) return 0.0;
           const Dims& w = ins[1]->dims;
           return 2.0 * static_cast<double>(numel_of(outs[0].dims)) * static_cast<double>(w[1] * w[2] * w[3]) +
                  10.0 * static_cast<double>(ins[0]->dims[1] * w[2] * w[3]) * static_cast<double>(outs[0].dims[2] * outs[0].dims[3]);
         },
         .attributes = {ints_attr("dilations", {}), int_attr("group", 1), ints_attr("kernel_shape", {}),
                        int_attr("offset_group", 1), ints_attr("pads", {}), ints_attr("strides", {})}});
}

}  // namespace tessera
