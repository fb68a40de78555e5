// The Winograd F(m x m, 3x3) ops of domain "tessera" (semantics in winograd.h):
// shape checks, inference, and reference kernels as plain loops over the
// definitions — what the interpreter runs for a graph the Winograd pass
// rewrote.
#include "ops/winograd.h"

#include <tuple>

#include "ops/blocked_conv.h"
#include "ops/op_attrs.h"
#include "support/error.h"

namespace tessera {

namespace {

// A two-element attribute (rows, columns), checked non-negative.
std::pair<int64_t, int64_t> pair_attr(const OpAttrs& attrs, const std::string& key, bool positive) {
  const Node& n = attrs.node();
  std::vector<int64_t> v = attrs.ints(key);
  TESSERA_CHECK(v.size() == 2, n.describe(), ": ", key, " must have 2 values, got ", v.size());
  const int64_t lo = positive ? 1 : 0;
  TESSERA_CHECK(v[0] >= lo && v[1] >= lo, n.describe(), ": ", key, " must be ", positive ? "positive" : "non-negative",
                ", got [", v[0], ", ", v[1], "]");
  return {v[0], v[1]};
}

// The attribute `tile` (m), checked against the transforms there are.
int tile_attr(const OpAttrs& attrs) {
  const int64_t m = attrs.i("tile");
  bool known = false;
  for (int t : kWinogradTiles) known = known || t == m;
  TESSERA_CHECK(known, attrs.node().describe(), ": tile must be 2, 3 or 4 (F(2x2, 3x3), F(3x3, 3x3) or F(4x4, 3x3)), got ", m);
  return static_cast<int>(m);
}

// V or M: [P, blocks, tiles, b] with P = 16, 25 or 36; returns P's tile size.
int check_domain(const Node& n, const char* what, const Dims& d) {
  const int m = d.size() == 4 ? winograd_tile_of_points(d[0]) : 0;
  TESSERA_CHECK(m != 0, n.describe(), ": ", what, " must be [16, 25 or 36, blocks, tiles, b], got [", dims_to_string(d), "]");
  return m;
}

}  // namespace

WinogradGeom winograd_input_geom(const OpAttrs& attrs, const Dims& x) {
  const Node& n = attrs.node();
  TESSERA_CHECK(x.size() == 5, n.describe(), ": X must be [N, Cb, H, W, b], got [", dims_to_string(x), "]");
  WinogradGeom g;
  g.m = tile_attr(attrs);
  g.N = x[0], g.Cb = x[1], g.H = x[2], g.W = x[3], g.b = x[4];
  std::tie(g.ph, g.pw) = pair_attr(attrs, "pads", false);
  std::tie(g.TH, g.TW) = pair_attr(attrs, "tiles", true);
  g.T = g.N * g.TH * g.TW;
  return g;
}

WinogradGeom winograd_gemm_geom(const OpAttrs& attrs, const Dims& v, const Dims& u) {
  const Node& n = attrs.node();
  WinogradGeom g;
  g.m = check_domain(n, "V", v);
  TESSERA_CHECK(u.size() == 5 && u[0] == v[0], n.describe(), ": U must be [", v[0], ", Mb, R, b, b] as V, got [",
                dims_to_string(u), "]");
  g.Cb = v[1], g.T = v[2], g.b = v[3];
  g.Mb = u[1], g.R = u[2];
  TESSERA_CHECK(u[3] == g.b && u[4] == g.b, n.describe(), ": U's blocks (", u[3], ", ", u[4], ") differ from V's (",
                g.b, ")");
  g.groups = BlockGroups::read(attrs);
  TESSERA_CHECK(g.Mb > 0 && g.first_block(g.Mb - 1) + g.R <= g.Cb, n.describe(), ": output block ", g.Mb - 1,
                " reads input blocks up to ", g.first_block(std::max<int64_t>(g.Mb - 1, 0)) + g.R, " but V has ", g.Cb);
  return g;
}

WinogradGeom winograd_output_geom(const OpAttrs& attrs, const Dims& m) {
  const Node& n = attrs.node();
  WinogradGeom g;
  g.m = tile_attr(attrs);
  TESSERA_CHECK(check_domain(n, "M", m) == g.m, n.describe(), ": M has ", m[0], " points, F(", g.m, "x", g.m,
                ", 3x3) has ", g.transform().num_points());
  g.Mb = m[1], g.T = m[2], g.b = m[3];
  std::tie(g.OH, g.OW) = pair_attr(attrs, "output", true);
  g.TH = g.transform().tiles(g.OH), g.TW = g.transform().tiles(g.OW);
  TESSERA_CHECK(g.T % (g.TH * g.TW) == 0, n.describe(), ": M has ", g.T, " tiles, not a multiple of the ", g.TH, " x ",
                g.TW, " of an output of ", g.OH, " x ", g.OW);
  g.N = g.T / (g.TH * g.TW);
  return g;
}

namespace {

void require_f32(const Node& n, const TensorType& t, const char* what) {
  TESSERA_CHECK(t.dtype == DType::F32 && t.fully_known(), n.describe(), ": ", what,
                " must be float32 with a static shape, got ", t.to_string());
}

void infer_input(InferContext& c) {
  require_f32(c.node, c.in(0), "X");
  WinogradGeom g = winograd_input_geom(op_attrs(c), c.in(0).dims);
  c.out(0) = TensorType{DType::F32, {g.transform().num_points(), g.Cb, g.T, g.b}};
}

void infer_gemm(InferContext& c) {
  require_f32(c.node, c.in(0), "V");
  require_f32(c.node, c.in(1), "U");
  WinogradGeom g = winograd_gemm_geom(op_attrs(c), c.in(0).dims, c.in(1).dims);
  c.out(0) = TensorType{DType::F32, {g.transform().num_points(), g.Mb, g.T, g.b}};
}

void infer_output(InferContext& c) {
  require_f32(c.node, c.in(0), "M");
  WinogradGeom g = winograd_output_geom(op_attrs(c), c.in(0).dims);
  if (c.has_input(1))
    TESSERA_CHECK(c.in(1).dtype == DType::F32 && c.in(1).dims == Dims({g.Mb, g.b}), c.node.describe(),
                  ": B must be float32 [", g.Mb, ", ", g.b, "], got ", c.in(1).to_string());
  c.out(0) = TensorType{DType::F32, {g.N, g.Mb, g.OH, g.OW, g.b}};
}

const float* f32_data(const KernelContext& c, int i, const char* what) {
  TESSERA_CHECK(c.in(i).dtype() == DType::F32, c.node.describe(), ": ", what, " must be float32");
  return c.in(i).data<float>();
}

std::vector<Tensor> run_input(const KernelContext& c) {
  const float* x = f32_data(c, 0, "X");
  const WinogradGeom g = winograd_input_geom(op_attrs(c), c.in(0).dims());
  const WinogradTransform& tf = g.transform();
  const int a = tf.alpha;
  Tensor v(DType::F32, {tf.num_points(), g.Cb, g.T, g.b});
  float* pv = v.data<float>();
  for (int p = 0; p < tf.num_points(); ++p)
    for (int64_t cb = 0; cb < g.Cb; ++cb)
      for (int64_t t = 0; t < g.T; ++t)
        for (int64_t l = 0; l < g.b; ++l) {
            const int64_t n = t / (g.TH * g.TW), th = t / g.TW % g.TH, tw = t % g.TW;
            float acc = 0.0f;
            for (int i = 0; i < a; ++i)
              for (int j = 0; j < a; ++j) {
                const float coef = tf.BT(p / a, i) * tf.BT(p % a, j);
                const int64_t h = g.m * th - g.ph + i, w = g.m * tw - g.pw + j;
                if (coef == 0.0f || h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
                acc += coef * x[(((n * g.Cb + cb) * g.H + h) * g.W + w) * g.b + l];
              }
            pv[((p * g.Cb + cb) * g.T + t) * g.b + l] = acc;
          }
  return {v};
}

std::vector<Tensor> run_gemm(const KernelContext& c) {
  const float* v = f32_data(c, 0, "V");
  const float* u = f32_data(c, 1, "U");
  const WinogradGeom g = winograd_gemm_geom(op_attrs(c), c.in(0).dims(), c.in(1).dims());
  const int64_t b = g.b;
  const int64_t points = c.in(0).dim(0);
  Tensor m(DType::F32, {points, g.Mb, g.T, b});
  float* pm = m.data<float>();
  for (int64_t p = 0; p < points; ++p)
    for (int64_t kb = 0; kb < g.Mb; ++kb)
      for (int64_t t = 0; t < g.T; ++t)
        for (int64_t kc = 0; kc < b; ++kc) {
          float acc = 0.0f;
          for (int64_t rb = 0; rb < g.R; ++rb)
            for (int64_t ri = 0; ri < b; ++ri)
              acc += u[(((p * g.Mb + kb) * g.R + rb) * b + ri) * b + kc] *
                     v[((p * g.Cb + g.first_block(kb) + rb) * g.T + t) * b + ri];
          pm[((p * g.Mb + kb) * g.T + t) * b + kc] = acc;
        }
  return {m};
}

std::vector<Tensor> run_output(const KernelContext& c) {
  const float* m = f32_data(c, 0, "M");
  const float* bias = c.has_input(1) ? f32_data(c, 1, "B") : nullptr;
  const WinogradGeom g = winograd_output_geom(op_attrs(c), c.in(0).dims());
  const WinogradTransform& tf = g.transform();
  const int a = tf.alpha;
  const int64_t b = g.b;
  Tensor y(DType::F32, {g.N, g.Mb, g.OH, g.OW, b});
  float* py = y.data<float>();
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t kb = 0; kb < g.Mb; ++kb)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow)
          for (int64_t kc = 0; kc < b; ++kc) {
            const int64_t t = (n * g.TH + oh / g.m) * g.TW + ow / g.m;
            float acc = bias ? bias[kb * b + kc] : 0.0f;
            for (int i = 0; i < a; ++i)
              for (int j = 0; j < a; ++j) {
                const float coef = tf.AT(static_cast<int>(oh % g.m), i) * tf.AT(static_cast<int>(ow % g.m), j);
                if (coef == 0.0f) continue;
                acc += coef * m[(((i * a + j) * g.Mb + kb) * g.T + t) * b + kc];
              }
            py[(((n * g.Mb + kb) * g.OH + oh) * g.OW + ow) * b + kc] = acc;
          }
  return {y};
}

// Arithmetic actually done: nonzero transform terms (one multiply-add each)
// and the contraction's multiply-adds.
double input_flops(const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
  if (ins.empty() || !ins[0] || !ins[0]->fully_known()) return 0;
  WinogradGeom g = winograd_input_geom(OpAttrs(n, kAnyOpset), ins[0]->dims);
  const double nonzeros = g.transform().bt_nonzeros();  // nonzero (BT row, BT row) pairs: its square
  return 2.0 * nonzeros * nonzeros * static_cast<double>(g.Cb * g.T * g.b);
}

double gemm_flops(const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
  if (ins.size() < 2 || !ins[0] || !ins[1] || !ins[0]->fully_known() || !ins[1]->fully_known()) return 0;
  WinogradGeom g = winograd_gemm_geom(OpAttrs(n, kAnyOpset), ins[0]->dims, ins[1]->dims);
  return 2.0 * g.transform().num_points() * static_cast<double>(g.Mb * g.R * g.b * g.b * g.T);
}

double output_flops(const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
  if (ins.empty() || !ins[0] || !ins[0]->fully_known()) return 0;
  WinogradGeom g = winograd_output_geom(OpAttrs(n, kAnyOpset), ins[0]->dims);
  const double nonzeros = g.transform().at_nonzeros();  // nonzero pairs per m x m outputs: its square
  return 2.0 * nonzeros * nonzeros / (g.m * g.m) * static_cast<double>(g.N * g.Mb * g.OH * g.OW * g.b);
}

}  // namespace

void register_winograd_ops(OpRegistry& r) {
  r.add({.name = "WinogradInput", .domain = kBlockedDomain, .mapping = MappingType::ManyToMany, .linear_inputs = {0},
         .infer = infer_input, .reference = run_input, .flops = input_flops,
         .attributes = {ints_attr("pads").required(), ints_attr("tiles").required(), int_attr("tile", 4)},
         .signatures = {{1, "1", "1"}}});
  r.add({.name = "WinogradGemm", .domain = kBlockedDomain, .mapping = MappingType::ManyToMany,
         .linear_inputs = {0, 1}, .infer = infer_gemm, .reference = run_gemm, .flops = gemm_flops,
         .attributes = BlockGroups::attr_specs(), .signatures = {{1, "11", "1"}}});
  r.add({.name = "WinogradOutput", .domain = kBlockedDomain, .mapping = MappingType::ManyToMany,
         .linear_inputs = {0}, .infer = infer_output, .reference = run_output, .flops = output_flops,
         .attributes = {ints_attr("output").required(), int_attr("tile", 4)}, .signatures = {{1, "1?", "1"}}});
}

}  // namespace tessera
