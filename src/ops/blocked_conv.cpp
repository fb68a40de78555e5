// The channel-blocked (NCHWc) ops of domain "tessera": layout reorders and
// the blocked convolutions (semantics in blocked_conv.h). Their reference
// kernels are plain loops in the reference Conv's summation order; they are
// what the interpreter runs for a graph the blocked-layout pass rewrote.
#include "ops/blocked_conv.h"

#include <cstring>

#include "ops/nn_ops.h"
#include "ops/op_attrs.h"

namespace tessera {

BlockGroups BlockGroups::read(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  BlockGroups g{attrs.i("group_div"), attrs.i("group_mul"), attrs.i("group_last")};
  TESSERA_CHECK(g.div > 0 && g.mul >= 0 && g.last >= -1, n.describe(),
                ": group_div must be positive, group_mul >= 0, group_last >= -1");
  return g;
}

void BlockGroups::write(AttrMap& attrs) const {
  if (mul == 0) return;
  attrs["group_div"] = Attribute::of_int(div);
  attrs["group_mul"] = Attribute::of_int(mul);
  if (last >= 0) attrs["group_last"] = Attribute::of_int(last);
}

std::vector<AttrSpec> BlockGroups::attr_specs() {
  return {int_attr("group_div", 1), int_attr("group_mul", 0), int_attr("group_last", -1)};
}

BlockedConvGeom blocked_conv_geom(const OpAttrs& attrs, const Dims& x, const Dims& w) {
  const Node& n = attrs.node();
  BlockedConvGeom g;
  g.depthwise = n.op_type == "DepthwiseConvBlocked";
  const bool plain_video = !g.depthwise && attrs.i("plain_input") != 0;
  TESSERA_CHECK(!plain_video || x.size() == 5, n.describe(), ": plain_input needs X [N, C, D, H, W], got rank ",
                x.size());
  g.plain_input = !g.depthwise && (x.size() == 4 || plain_video);
  TESSERA_CHECK(x.size() == 5 || x.size() == 6 || g.plain_input, n.describe(),
                ": X must be [N, Cb, H, W, b] or [N, Cb, D, H, W, b]", g.depthwise ? "" : " or [N, C, H, W]",
                ", got rank ", x.size());
  g.spatial = x.size() == 6 || plain_video ? 3 : 2;
  const size_t s = static_cast<size_t>(g.spatial);
  const size_t wrank = g.depthwise ? s + 2 : g.plain_input ? s + 3 : s + 4;
  TESSERA_CHECK(w.size() == wrank, n.describe(), ": W must have rank ", wrank, " for this X, got ", w.size());
  g.b = w.back();
  g.N = x[0], g.in_c = x[1];
  if (g.spatial == 3) g.id = x[2];
  g.ih = x[s], g.iw = x[s + 1];  // after N, C (and the depth)
  TESSERA_CHECK(g.plain_input || x.back() == g.b, n.describe(), ": X's block (", x.back(), ") differs from W's (", g.b,
                ")");
  // The kernel's spatial extents: W's dims after its leading block dims.
  const size_t k0 = g.depthwise ? 1 : 2;
  if (g.spatial == 3) g.kd = w[k0];
  g.kh = w[k0 + s - 2], g.kw = w[k0 + s - 1];
  if (g.depthwise) {
    g.Mb = w[0], g.R = 1, g.rin = 1;
    TESSERA_CHECK(g.Mb == g.in_c, n.describe(), ": W has ", g.Mb, " channel blocks but X ", g.in_c);
  } else {
    g.Mb = w[0], g.R = w[1];
    g.groups = BlockGroups::read(attrs);
    TESSERA_CHECK(g.plain_input || w[wrank - 2] == g.b, n.describe(), ": W's input block (", w[wrank - 2],
                  ") differs from X's (", g.b, ")");
    TESSERA_CHECK(!g.plain_input || g.groups.mul == 0, n.describe(), ": an NCHW input cannot be grouped");
    TESSERA_CHECK(g.first_block(g.Mb - 1) + g.R <= g.in_c, n.describe(), ": output block ", g.Mb - 1,
                  " reads input blocks up to ", g.first_block(g.Mb - 1) + g.R, " but X has ", g.in_c);
    g.rin = g.plain_input ? g.R : g.R * g.b;
    if (const int64_t ic = attrs.i("in_channels"); ic != 0) {
      TESSERA_CHECK(!g.plain_input && g.groups.mul == 0, n.describe(),
                    ": in_channels applies to a dense convolution of a blocked input");
      TESSERA_CHECK(ic > (g.R - 1) * g.b && ic <= g.rin, n.describe(), ": in_channels ", ic, " must lie in (",
                    (g.R - 1) * g.b, ", ", g.rin, "] for ", g.R, " input blocks of ", g.b);
      g.rin = ic;
    }
  }
  // Strides, dilations and pads (begins, then ends) as a Conv's.
  Dims in{g.ih, g.iw}, kernel{g.kh, g.kw};
  if (g.spatial == 3) in.insert(in.begin(), g.id), kernel.insert(kernel.begin(), g.kd);
  WindowAttrs a = read_window_attrs(attrs, g.spatial, kernel, false);
  Dims out = window_output_dims(n, a, in);
  const size_t o = s - 2;  // the height's index among the spatial dims
  if (g.spatial == 3) {
    g.od = out[0], g.sd = a.strides[0], g.dd = a.dilations[0], g.pd = a.pads[0], g.pd_end = a.pads[s];
  }
  g.oh = out[o], g.ow = out[o + 1];
  g.sh = a.strides[o], g.sw = a.strides[o + 1], g.dh = a.dilations[o], g.dw = a.dilations[o + 1];
  g.ph = a.pads[o], g.pw = a.pads[o + 1], g.ph_end = a.pads[s + o], g.pw_end = a.pads[s + o + 1];
  return g;
}

namespace {

void infer_blocked_conv(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& w = c.in(1);
  TESSERA_CHECK(x.dtype == DType::F32 && w.dtype == DType::F32, c.node.describe(), ": X and W must be float32");
  TESSERA_CHECK(x.rank_known && w.fully_known() && x.fully_known(), c.node.describe(),
                ": blocked convolutions need static shapes");
  BlockedConvGeom g = blocked_conv_geom(op_attrs(c), x.dims, w.dims);
  if (c.has_input(2)) {
    const TensorType& b = c.in(2);
    TESSERA_CHECK(b.dtype == DType::F32 && b.dims == Dims({g.Mb, g.b}), c.node.describe(),
                  ": B must be float32 [", g.Mb, ", ", g.b, "], got ", b.to_string());
  }
  c.out(0) = TensorType{DType::F32, g.out_dims()};
}

std::vector<Tensor> run_blocked_conv(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  TESSERA_CHECK(x.dtype() == DType::F32 && w.dtype() == DType::F32, c.node.describe(), ": X and W must be float32");
  const BlockedConvGeom g = blocked_conv_geom(op_attrs(c), x.dims(), w.dims());
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  const float* pb = c.has_input(2) ? c.in(2).data<float>() : nullptr;
  Tensor y(DType::F32, g.out_dims());
  float* py = y.data<float>();
  const int64_t b = g.b;
  // Input element (n, channel row `cr`, h, w, lane): blocked rows are blocks
  // with `b` lanes, plain rows are channels with one.
  const int64_t lanes = g.plain_input ? 1 : b;
  auto xat = [&](int64_t n, int64_t cr, int64_t z, int64_t h, int64_t wi, int64_t lane) {
    return px[((((n * g.in_c + cr) * g.id + z) * g.ih + h) * g.iw + wi) * lanes + lane];
  };
  const int64_t rin = g.rin;  // reduction channels per output block
  const int64_t taps = g.kd * g.kh * g.kw;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t kb = 0; kb < g.Mb; ++kb)
      for (int64_t od = 0; od < g.od; ++od)
        for (int64_t oh = 0; oh < g.oh; ++oh)
          for (int64_t ow = 0; ow < g.ow; ++ow)
            for (int64_t kc = 0; kc < b; ++kc) {
              float acc = pb ? pb[kb * b + kc] : 0.0f;
              for (int64_t r = 0; r < rin; ++r)
                for (int64_t rz = 0; rz < g.kd; ++rz) {
                  const int64_t z = od * g.sd - g.pd + rz * g.dd;
                  if (z < 0 || z >= g.id) continue;
                  for (int64_t ry = 0; ry < g.kh; ++ry) {
                    const int64_t h = oh * g.sh - g.ph + ry * g.dh;
                    if (h < 0 || h >= g.ih) continue;
                    for (int64_t rx = 0; rx < g.kw; ++rx) {
                      const int64_t wi = ow * g.sw - g.pw + rx * g.dw;
                      if (wi < 0 || wi >= g.iw) continue;
                      const int64_t t = (rz * g.kh + ry) * g.kw + rx;  // the tap, row-major over the kernel
                      float xv, wv;
                      if (g.depthwise) {
                        xv = xat(n, kb, z, h, wi, kc);
                        wv = pw[(kb * taps + t) * b + kc];
                      } else if (g.plain_input) {
                        xv = xat(n, r, z, h, wi, 0);
                        wv = pw[((kb * g.R + r) * taps + t) * b + kc];
                      } else {
                        xv = xat(n, g.first_block(kb) + r / b, z, h, wi, r % b);
                        wv = pw[(((kb * g.R + r / b) * taps + t) * b + r % b) * b + kc];
                      }
                      acc += wv * xv;
                    }
                  }
                }
              py[((((n * g.Mb + kb) * g.od + od) * g.oh + oh) * g.ow + ow) * b + kc] = acc;
            }
  return {y};
}

double blocked_conv_flops(const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
  if (ins.size() < 2 || !ins[0] || !ins[1] || !ins[0]->fully_known() || !ins[1]->fully_known()) return 0;
  BlockedConvGeom g = blocked_conv_geom(OpAttrs(n, kAnyOpset), ins[0]->dims, ins[1]->dims);
  double taps = static_cast<double>(g.kd * g.kh * g.kw * g.rin);
  return 2.0 * taps * static_cast<double>(g.N * g.Mb * g.od * g.oh * g.ow * g.b);
}

// ---------------------------------------------------------------- reorders

int64_t block_attr(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  int64_t b = attrs.i("block");
  TESSERA_CHECK(b > 0, n.describe(), ": block must be positive, got ", b);
  return b;
}

void infer_to_blocked(InferContext& c) {
  const TensorType& x = c.in(0);
  const int64_t b = block_attr(op_attrs(c));
  TESSERA_CHECK(x.rank_known && x.rank() >= 3, c.node.describe(), ": X must be [N, C, spatial...], got ",
                x.to_string());
  TensorType t = x;
  t.dims[1] = x.dims[1] < 0 ? -1 : channel_blocks(x.dims[1], b);
  t.dims.push_back(b);
  c.out(0) = t;
}

void infer_from_blocked(InferContext& c) {
  const TensorType& x = c.in(0);
  const int64_t ch = op_attrs(c).i("channels");
  TESSERA_CHECK(x.rank_known && x.rank() >= 4, c.node.describe(), ": X must be [N, Cb, spatial..., b], got ",
                x.to_string());
  const int64_t b = x.dims.back();
  TESSERA_CHECK(b < 0 || x.dims[1] < 0 || (ch > (x.dims[1] - 1) * b && ch <= x.dims[1] * b), c.node.describe(),
                ": ", ch, " channels do not fill ", x.dims[1], " blocks of ", b);
  TensorType t = x;
  t.dims.pop_back();
  t.dims[1] = ch;
  c.out(0) = t;
}

// Copies between [N, C, P] and [N, ceil(C/b), P, b] (P: the spatial plane),
// element by element; `to` chooses the direction. Padding lanes stay zero.
void reorder_copy(const Tensor& src, Tensor& dst, int64_t N, int64_t C, int64_t P, int64_t b, bool to) {
  const size_t es = dtype_size(src.dtype());
  const auto* s = static_cast<const unsigned char*>(src.raw());
  auto* d = static_cast<unsigned char*>(dst.raw());
  const int64_t Cb = channel_blocks(C, b);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) {
        int64_t plain = (n * C + c) * P + p, blocked = ((n * Cb + c / b) * P + p) * b + c % b;
        int64_t from = to ? plain : blocked, into = to ? blocked : plain;
        std::memcpy(d + static_cast<size_t>(into) * es, s + static_cast<size_t>(from) * es, es);
      }
}

std::vector<Tensor> run_to_blocked(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(x.rank() >= 3 && x.dtype() != DType::String, c.node.describe(), ": X must be a numeric [N, C, ...]");
  const int64_t b = block_attr(op_attrs(c));
  Dims d = x.dims();
  d[1] = channel_blocks(x.dim(1), b);
  d.push_back(b);
  Tensor y(x.dtype(), d);
  reorder_copy(x, y, x.dim(0), x.dim(1), x.numel() / std::max<int64_t>(x.dim(0) * x.dim(1), 1), b, true);
  return {y};
}

std::vector<Tensor> run_from_blocked(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(x.rank() >= 4 && x.dtype() != DType::String, c.node.describe(), ": X must be a numeric [N, Cb, ..., b]");
  const int64_t ch = op_attrs(c).i("channels"), b = x.dims().back();
  TESSERA_CHECK(ch > (x.dim(1) - 1) * b && ch <= x.dim(1) * b, c.node.describe(), ": ", ch,
                " channels do not fill ", x.dim(1), " blocks of ", b);
  Dims d = x.dims();
  d.pop_back();
  d[1] = ch;
  Tensor y(x.dtype(), d);
  reorder_copy(x, y, x.dim(0), ch, y.numel() / std::max<int64_t>(x.dim(0) * ch, 1), b, false);
  return {y};
}

}  // namespace

void register_blocked_conv_ops(OpRegistry& r) {
  // kernel_shape and auto_pad are never set (the weight gives the window and
  // pads are explicit) but the shared window reader asks for them.
  const std::vector<AttrSpec> window = {ints_attr("strides", {}), ints_attr("pads", {}), ints_attr("dilations", {}),
                                        ints_attr("kernel_shape"), string_attr("auto_pad", "NOTSET")};
  std::vector<AttrSpec> grouped = window;
  for (AttrSpec& a : BlockGroups::attr_specs()) grouped.push_back(std::move(a));
  grouped.push_back(int_attr("in_channels", 0));
  grouped.push_back(int_attr("plain_input", 0));
  r.add({.name = "ConvBlocked", .domain = kBlockedDomain, .mapping = MappingType::ManyToMany, .linear_inputs = {0, 1},
         .infer = infer_blocked_conv, .reference = run_blocked_conv, .flops = blocked_conv_flops,
         .attributes = grouped, .signatures = {{1, "11?", "1"}}});
  r.add({.name = "DepthwiseConvBlocked", .domain = kBlockedDomain, .mapping = MappingType::ManyToMany,
         .linear_inputs = {0, 1}, .infer = infer_blocked_conv, .reference = run_blocked_conv,
         .flops = blocked_conv_flops, .attributes = window, .signatures = {{1, "11?", "1"}}});
  // Pure data movement (a transpose with padding): no arithmetic.
  auto no_flops = [](const Node&, const std::vector<const TensorType*>&, const std::vector<TensorType>&) { return 0.0; };
  r.add({.name = "ReorderToBlocked", .domain = kBlockedDomain, .mapping = MappingType::Shuffle,
         .linear_inputs = {0}, .infer = infer_to_blocked, .reference = run_to_blocked, .flops = no_flops,
         .attributes = {int_attr("block").required()}, .signatures = {{1, "1", "1"}}});
  r.add({.name = "ReorderFromBlocked", .domain = kBlockedDomain, .mapping = MappingType::Shuffle,
         .linear_inputs = {0}, .infer = infer_from_blocked, .reference = run_from_blocked, .flops = no_flops,
         .attributes = {int_attr("channels").required()}, .signatures = {{1, "1", "1"}}});
}

}  // namespace tessera
