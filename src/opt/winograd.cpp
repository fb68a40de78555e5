// The Winograd pass: 3x3 stride-1 blocked convolutions (ConvBlocked, made
// by the blocked-layout pass) become WinogradInput -> WinogradGemm ->
// WinogradOutput (ops/winograd.h), F(4x4, 3x3), where a static estimate says
// it pays: the products take a quarter of the direct convolution's
// multiply-adds, but the transformed weights are four times the weights
// (read once per run) and the transformed input and product go through
// memory. Large images with few channels gain most; a 7x7 image with 512
// channels would read 37 MB of transformed weights for 49 pixels.
//
// The transformed weights U = G g G^T are computed here once, in double.
#include <algorithm>

#include "ops/registry.h"
#include "ops/blocked_conv.h"
#include "ops/winograd.h"
#include "opt/passes.h"

namespace tessera {

namespace {

// The machine as the estimate sees it (one core, measured on the 2-core
// AVX-512 machine of bench/RESULTS.md): multiply-adds per second per f32
// lane of a vector (direct blocked convolutions reach ~100 GMAC/s with 16
// lanes), bytes per second of weights streamed from memory (a run reads
// every weight once: they do not stay in cache between runs), and of the
// transformed activations (written and read back soon after, from cache).
constexpr double kMacsPerLane = 6e9;
constexpr double kWeightBytesPerSecond = 13e9;
constexpr double kActivationBytesPerSecond = 30e9;
// The Winograd form must be estimated this much faster than the direct one.
constexpr double kRequiredGain = 0.8;

struct Estimate {
  double direct = 0, winograd = 0;  // seconds
};

Estimate estimate(const BlockedConvGeom& g) {
  const double macs_per_s = kMacsPerLane * static_cast<double>(g.b);
  const double channels = static_cast<double>(g.R * g.b) * static_cast<double>(g.Mb * g.b);
  const double tiles = static_cast<double>(g.N * wino_tiles(g.oh) * wino_tiles(g.ow));
  Estimate e;
  // Products: the arithmetic or the weights' stream, whichever is slower.
  e.direct = std::max(9.0 * channels * static_cast<double>(g.N * g.oh * g.ow) / macs_per_s,
                      4.0 * 9.0 * channels / kWeightBytesPerSecond);
  e.winograd = std::max(kWinoPoints * channels * tiles / macs_per_s,
                        4.0 * kWinoPoints * channels / kWeightBytesPerSecond);
  // The transforms: V and M written once and read once, ~16 terms a point.
  const double planes = static_cast<double>(g.in_c + g.Mb) * static_cast<double>(g.b);
  e.winograd += 2.0 * 4.0 * kWinoPoints * tiles * planes / kActivationBytesPerSecond +
                16.0 * kWinoPoints * tiles * planes / static_cast<double>(g.b) / macs_per_s;
  return e;
}

// U [36, Mb, R, b, b] from the packed weights W [Mb, R, 3, 3, b, b].
Tensor transform_weights(const Tensor& w) {
  const int64_t Mb = w.dim(0), R = w.dim(1), b = w.dim(4);
  Tensor u(DType::F32, {kWinoPoints, Mb, R, b, b});
  const float* pw = w.data<float>();
  float* pu = u.data<float>();
  const int64_t planes = Mb * R, lanes = b * b;
  for (int64_t q = 0; q < planes; ++q)
    for (int64_t l = 0; l < lanes; ++l) {
      double k[3][3];
      for (int a = 0; a < 3; ++a)
        for (int c = 0; c < 3; ++c) k[a][c] = pw[((q * 3 + a) * 3 + c) * lanes + l];
      for (int pi = 0; pi < kWinoAlpha; ++pi)
        for (int pj = 0; pj < kWinoAlpha; ++pj) {
          double s = 0;
          for (int a = 0; a < 3; ++a)
            for (int c = 0; c < 3; ++c) s += kWinoG[pi][a] * k[a][c] * kWinoG[pj][c];
          pu[((pi * kWinoAlpha + pj) * planes + q) * lanes + l] = static_cast<float>(s);
        }
    }
  return u;
}

// True when `n` is a ConvBlocked the Winograd form computes and (unless
// `every`) pays for.
bool winograd_candidate(const Node& n, bool every, BlockedConvGeom& g) {
  if (n.op_type != "ConvBlocked" || n.domain != kBlockedDomain || n.num_inputs() < 2) return false;
  const Value* x = n.inputs[0];
  const Value* w = n.inputs[1];
  if (!x || !w || !w->constant || !x->type.fully_known() || x->type.dims.size() != 5) return false;
  if (n.has_input(2) && !n.inputs[2]->constant) return false;
  g = blocked_conv_geom(OpAttrs(n, kAnyOpset), x->type.dims, w->constant->dims());
  if (g.kh != 3 || g.kw != 3 || g.sh != 1 || g.sw != 1 || g.dh != 1 || g.dw != 1) return false;
  if (every) return true;
  const Estimate e = estimate(g);
  return e.winograd < kRequiredGain * e.direct;
}

}  // namespace

int to_winograd(Graph& g, bool every) {
  std::vector<Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  int rewritten = 0;
  for (Node* n : order) {
    BlockedConvGeom geom;
    if (!winograd_candidate(*n, every, geom)) continue;
    const std::string base = n->name.empty() ? n->outputs[0]->name : n->name;
    Value* out = n->outputs[0];
    auto insert = [&](const std::string& op, std::vector<Value*> ins, const std::string& suffix, AttrMap attrs,
                      const std::string& name) {
      Node* m = g.insert_node_before(n, op, std::move(ins), {g.unique_name(out->name + suffix)}, std::move(attrs), name);
      m->domain = kBlockedDomain;
      infer_node(*m, g.opset);
      return m->outputs[0];
    };
    Value* v = insert("WinogradInput", {n->inputs[0]}, ".wino_v",
                      {{"pads", Attribute::of_ints({geom.ph, geom.pw})},
                       {"tiles", Attribute::of_ints({wino_tiles(geom.oh), wino_tiles(geom.ow)})}},
                      base + "/winograd_in");
    Value* u = g.add_constant(g.unique_name(n->inputs[1]->name + ".wino_u"), transform_weights(*n->inputs[1]->constant));
    AttrMap groups;
    geom.groups.write(groups);
    Value* m = insert("WinogradGemm", {v, u}, ".wino_m", groups, base + "/winograd_gemm");
    std::vector<Value*> out_ins{m};
    if (n->has_input(2)) out_ins.push_back(n->inputs[2]);
    Value* y =
        insert("WinogradOutput", out_ins, ".wino", {{"output", Attribute::of_ints({geom.oh, geom.ow})}}, n->name);
    g.replace_all_uses(out, y);
    g.erase_node(n);
    ++rewritten;
  }
  if (rewritten > 0) g.remove_unused_values();
  return rewritten;
}

}  // namespace tessera
