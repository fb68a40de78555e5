// Fixed rewrites of one convolution or average pool (PET's "preprocess"
// mutants and its single-operator swaps), each an exact equivalence:
// conv1x1-to-matmul, group-to-conv, conv-to-group (weight dependent),
// stride-to-unit, D2H / D2W / D2H+D2W, avgpool-to-depthwise.
#include <algorithm>
#include <numeric>

#include "pet/mutants_internal.h"
#include "support/error.h"
#include "support/int_div.h"

namespace tessera::pet::detail {
namespace {

// The largest group count conv-to-group and group-to-conv consider: a dense
// conv of a depthwise one does C times the work, never worth measuring.
constexpr int64_t kMaxGroups = 32;

// Pads (end may be negative: that many rows cropped) on axes 2 and 3.
Value* pad_or_crop(ProgramBuilder& b, Value* x, int64_t top, int64_t left, int64_t bottom, int64_t right) {
  Value* y = b.pad(x, {0, 0, std::max<int64_t>(top, 0), std::max<int64_t>(left, 0), 0, 0,
                       std::max<int64_t>(bottom, 0), std::max<int64_t>(right, 0)});
  if (bottom < 0 || right < 0) {
    const Dims& d = y->type.dims;
    y = b.slice(y, {0, 0}, {d[2] + std::min<int64_t>(bottom, 0), d[3] + std::min<int64_t>(right, 0)}, {2, 3});
  }
  return y;
}

}  // namespace

bool read_conv2d(const Node& n, Conv2D& c, std::string& why) {
  const Value* x = n.inputs.at(0);
  const Value* w = n.inputs.at(1);
  const Value* y = n.outputs.at(0);
  if (x->type.rank() != 4 || w->type.rank() != 4 || y->type.rank() != 4) {
    why = "not a 2-D convolution";
    return false;
  }
  const Attribute* ap = n.attr("auto_pad");
  if (ap && ap->s != "NOTSET" && ap->s != "VALID") {
    why = "auto_pad " + ap->s;
    return false;
  }
  c.N = x->type.dims[0], c.C = x->type.dims[1], c.H = x->type.dims[2], c.W = x->type.dims[3];
  c.M = w->type.dims[0], c.KH = w->type.dims[2], c.KW = w->type.dims[3];
  c.OH = y->type.dims[2], c.OW = y->type.dims[3];
  auto s = ints_attr_or(n, "strides", {1, 1});
  auto d = ints_attr_or(n, "dilations", {1, 1});
  auto p = ints_attr_or(n, "pads", {0, 0, 0, 0});
  if (s.size() != 2 || d.size() != 2 || p.size() != 4) {
    why = "malformed strides, dilations or pads";
    return false;
  }
  c.sh = s[0], c.sw = s[1], c.dh = d[0], c.dw = d[1];
  c.pt = p[0], c.pl = p[1], c.pb = p[2], c.pr = p[3];
  c.group = int_attr_or(n, "group", 1);
  c.bias = n.has_input(2);
  return true;
}

void conv_families(GenContext& ctx, const Node& n) {
  Conv2D c;
  std::string why;
  if (!read_conv2d(n, c, why)) {
    ctx.report.skipped.push_back(n.describe() + ": " + why);
    return;
  }
  const Node* np = &n;
  auto one = [&](const std::string& family, bool weight_dependent,
                 std::function<Value*(ProgramBuilder&, Value* x, Value* w, Value* b)> emit) {
    ctx.add(family, true, weight_dependent, [&] {
      return rewrite_nodes(ctx.sub, {np}, [&](ProgramBuilder& b, const std::vector<std::vector<Value*>>& ins) {
        const auto& in = ins[0];
        return std::vector<std::vector<Value*>>{{emit(b, in[0], in[1], in.size() > 2 ? in[2] : nullptr)}};
      });
    });
  };
  const bool unit_stride = c.sh == 1 && c.sw == 1;
  const bool no_dilation = c.dh == 1 && c.dw == 1;
  const bool no_pad = c.pt == 0 && c.pl == 0 && c.pb == 0 && c.pr == 0;

  // conv1x1-to-matmul: W[M, C] @ X[N, C, H*W] (+ B[M, 1]).
  if (c.KH == 1 && c.KW == 1 && unit_stride && no_pad && c.group == 1)
    one("conv1x1-to-matmul", false, [&](ProgramBuilder& b, Value* x, Value* w, Value* bias) {
      Value* y = b.op1("MatMul", {b.reshape(w, {c.M, c.C}), b.reshape(x, {c.N, c.C, c.H * c.W})});
      if (bias) y = b.op1("Add", {y, b.reshape(bias, {c.M, 1})});
      return b.reshape(y, {c.N, c.M, c.OH, c.OW});
    });

  // group-to-conv: the dense weight is G copies of W side by side along the
  // input channels, masked to the block diagonal.
  if (c.group > 1 && c.group <= kMaxGroups)
    one("group-to-conv", false, [&](ProgramBuilder& b, Value* x, Value* w, Value* bias) {
      const int64_t G = c.group, Mg = c.M / G, Cg = c.C / G;
      Tensor mask(DType::F32, {c.M, c.C, 1, 1});
      float* m = mask.data<float>();
      for (int64_t o = 0; o < c.M; ++o)
        for (int64_t i = 0; i < c.C; ++i) m[o * c.C + i] = (o / Mg == i / Cg) ? 1.0f : 0.0f;
      Value* dense = b.op1("Mul", {b.concat(std::vector<Value*>(static_cast<size_t>(G), w), 1), b.floats(mask)});
      return b.conv(x, dense, bias, {c.sh, c.sw}, {c.pt, c.pl, c.pb, c.pr}, {c.dh, c.dw}, 1);
    });

  // conv-to-group: only where these weights are zero off a block diagonal
  // (weight dependent: the verifier's random weights are not).
  if (c.group == 1 && ctx.wants("conv-to-group")) {
    const Tensor* wt = ctx.weight_of(n.inputs[1]);
    int64_t best = 1;
    if (wt && wt->dtype() == DType::F32) {
      const float* wd = wt->data<float>();
      const int64_t K = c.KH * c.KW;
      for (int64_t G = std::min<int64_t>(std::gcd(c.M, c.C), kMaxGroups); G > 1 && best == 1; --G) {
        if (c.M % G || c.C % G) continue;
        const int64_t Mg = c.M / G, Cg = c.C / G;
        bool block = true;
        for (int64_t o = 0; o < c.M && block; ++o)
          for (int64_t i = 0; i < c.C && block; ++i)
            if (o / Mg != i / Cg)
              for (int64_t k = 0; k < K && block; ++k) block = wd[(o * c.C + i) * K + k] == 0.0f;
        if (block) best = G;
      }
    }
    if (best > 1)
      one("conv-to-group", true, [&](ProgramBuilder& b, Value* x, Value* w, Value* bias) {
        const int64_t G = best, Mg = c.M / G, Cg = c.C / G;
        std::vector<Value*> blocks;
        for (int64_t g = 0; g < G; ++g)
          blocks.push_back(b.slice(w, {g * Mg, g * Cg}, {(g + 1) * Mg, (g + 1) * Cg}, {0, 1}));
        return b.conv(x, b.concat(blocks, 0), bias, {c.sh, c.sw}, {c.pt, c.pl, c.pb, c.pr}, {c.dh, c.dw}, G);
      });
  }

  // stride-to-unit: the padded input split into its s x s phases
  // (SpaceToDepth), a unit-stride conv with kernel ceil(K/s) whose weights
  // are W zero-padded to a multiple of s and split the same way.
  if (c.sh == c.sw && c.sh > 1 && no_dilation && c.group == 1)
    one("stride-to-unit", false, [&](ProgramBuilder& b, Value* x, Value* w, Value* bias) {
      const int64_t s = c.sh, kh = ceil_div(c.KH, s), kw = ceil_div(c.KW, s);
      const int64_t Hp = (c.OH + kh - 1) * s, Wp = (c.OW + kw - 1) * s;
      Value* xp = pad_or_crop(b, x, c.pt, c.pl, Hp - c.H - c.pt, Wp - c.W - c.pl);
      Value* xs = b.op1("SpaceToDepth", {xp}, {{"blocksize", Attribute::of_int(s)}});
      Value* wp = b.pad(w, {0, 0, 0, 0, 0, 0, kh * s - c.KH, kw * s - c.KW});
      Value* ws = b.rt(wp, {c.M, c.C, kh, s, kw, s}, {0, 3, 5, 1, 2, 4}, {c.M, s * s * c.C, kh, kw});
      return b.conv(xs, ws, bias, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
    });

  // D2H / D2W: a dilated unit-stride conv reads, for outputs o = a*d + r,
  // only phase r of the padded input; the phases go into the batch, a conv
  // with dilation 1 runs on them, the output phases are interleaved back.
  // Where the size and pads are multiples of d the phases need no explicit
  // padding (the conv pads them by p/d); otherwise the input is padded to
  // equal phases and the output sliced back: exact either way.
  if (unit_stride && (c.dh > 1 || c.dw > 1) && c.group >= 1) {
    auto d2 = [&](bool do_h, bool do_w, const std::string& family) {
      one(family, false, [&, do_h, do_w](ProgramBuilder& b, Value* x, Value* w, Value* bias) {
        const int64_t dh = do_h ? c.dh : 1, dw = do_w ? c.dw : 1;
        const bool exact_h = !do_h || (c.H % dh == 0 && c.pt % dh == 0 && c.pb % dh == 0);
        const bool exact_w = !do_w || (c.W % dw == 0 && c.pl % dw == 0 && c.pr % dw == 0);
        // Per axis: the input extent after explicit padding and the phase conv's pads.
        int64_t Hp = c.H, Wp = c.W, pt = c.pt, pb = c.pb, pl = c.pl, pr = c.pr;
        int64_t xt = 0, xb = 0, xl = 0, xr = 0;  // explicit pads
        if (do_h && exact_h) pt /= dh, pb /= dh;
        if (do_h && !exact_h) {
          Hp = (ceil_div(c.OH, dh) + c.KH - 1) * dh, xt = c.pt, xb = Hp - c.H - c.pt, pt = pb = 0;
        }
        if (do_w && exact_w) pl /= dw, pr /= dw;
        if (do_w && !exact_w) {
          Wp = (ceil_div(c.OW, dw) + c.KW - 1) * dw, xl = c.pl, xr = Wp - c.W - c.pl, pl = pr = 0;
        }
        Value* xp = pad_or_crop(b, x, xt, xl, xb, xr);
        const int64_t Lh = Hp / dh, Lw = Wp / dw;
        Value* xs = b.rt(xp, {c.N, c.C, Lh, dh, Lw, dw}, {3, 5, 0, 1, 2, 4}, {dh * dw * c.N, c.C, Lh, Lw});
        Value* y = b.conv(xs, w, bias, {1, 1}, {pt, pl, pb, pr}, {do_h ? 1 : c.dh, do_w ? 1 : c.dw}, c.group);
        const int64_t A = y->type.dims[2], B = y->type.dims[3];
        y = b.rt(y, {dh, dw, c.N, c.M, A, B}, {2, 3, 4, 0, 5, 1}, {c.N, c.M, A * dh, B * dw});
        if (A * dh != c.OH || B * dw != c.OW) y = b.slice(y, {0, 0}, {c.OH, c.OW}, {2, 3});
        return y;
      });
    };
    if (c.dh > 1) d2(true, false, "D2H");
    if (c.dw > 1) d2(false, true, "D2W");
    if (c.dh > 1 && c.dw > 1) d2(true, true, "D2H+D2W");
  }
}

// avgpool-to-depthwise: a depthwise conv of all-ones kernels times 1/count
// per output position, count as ONNX defines it (the window's elements inside
// the padded input with count_include_pad, inside the input without); where
// every count is equal the 1/count goes into the kernel instead.
void avgpool_families(GenContext& ctx, const Node& n) {
  if (!ctx.wants("avgpool-to-depthwise")) return;
  const Value* x = n.inputs.at(0);
  const Value* y = n.outputs.at(0);
  auto k = ints_attr_or(n, "kernel_shape", {});
  auto s = ints_attr_or(n, "strides", {1, 1});
  auto p = ints_attr_or(n, "pads", {0, 0, 0, 0});
  auto dil = ints_attr_or(n, "dilations", {1, 1});
  const bool include_pad = int_attr_or(n, "count_include_pad", 0) != 0;
  const Attribute* ap = n.attr("auto_pad");
  std::string why;
  if (x->type.rank() != 4 || k.size() != 2 || s.size() != 2 || p.size() != 4) why = "not a 2-D average pool";
  else if (int_attr_or(n, "ceil_mode", 0) != 0) why = "ceil_mode";
  else if (dil != std::vector<int64_t>{1, 1}) why = "dilated pool";
  else if (ap && ap->s != "NOTSET" && ap->s != "VALID") why = "auto_pad " + ap->s;
  if (!why.empty()) {
    ctx.report.skipped.push_back(n.describe() + ": avgpool-to-depthwise: " + why);
    return;
  }
  const int64_t N = x->type.dims[0], C = x->type.dims[1], H = x->type.dims[2], W = x->type.dims[3];
  const int64_t OH = y->type.dims[2], OW = y->type.dims[3];
  (void)N;
  Tensor inv(DType::F32, {1, 1, OH, OW});
  bool uniform = true;
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ++ow) {
      auto extent = [&](int64_t o, int64_t stride, int64_t pad, int64_t kk, int64_t size, int64_t pad_end) {
        int64_t lo = o * stride - pad, hi = lo + kk;
        if (include_pad) return std::min(hi, size + pad_end) - std::max(lo, -pad);
        return std::min(hi, size) - std::max<int64_t>(lo, 0);
      };
      int64_t cnt = extent(oh, s[0], p[0], k[0], H, p[2]) * extent(ow, s[1], p[1], k[1], W, p[3]);
      inv.data<float>()[oh * OW + ow] = 1.0f / static_cast<float>(cnt);
      uniform &= inv.data<float>()[oh * OW + ow] == inv.data<float>()[0];
    }
  const Node* np = &n;
  ctx.add("avgpool-to-depthwise", true, false, [&] {
    return rewrite_nodes(ctx.sub, {np}, [&](ProgramBuilder& b, const std::vector<std::vector<Value*>>& ins) {
      Tensor kernel(DType::F32, {C, 1, k[0], k[1]});
      for (float& v : kernel.span<float>()) v = uniform ? inv.data<float>()[0] : 1.0f;
      Value* out = b.conv(ins[0][0], b.floats(kernel), nullptr, s, p, {1, 1}, C);
      if (!uniform) out = b.op1("Mul", {out, b.floats(inv)});
      return std::vector<std::vector<Value*>>{{out}};
    });
  });
}

}  // namespace tessera::pet::detail
