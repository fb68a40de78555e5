// The Winograd pass: 3x3 stride-1 blocked convolutions (ConvBlocked, made
// by the blocked-layout pass) become WinogradInput -> WinogradGemm ->
// WinogradOutput (ops/winograd.h), F(4x4, 3x3) or F(2x2, 3x3), chosen per
// layer where a static estimate says it pays: the products take 1/4 (F4) or
// 4/9 (F2) of the direct convolution's multiply-adds, but the transformed
// weights are 4x (F4) or 1.8x (F2) the weights (read once per run) and the
// transformed input and product go through memory. Large images with few
// channels gain most; a 7x7 image with 512 channels would read 37 MB of
// transformed weights for 49 pixels.
//
// Accuracy decides between the tile sizes. F(2x2) rounds about as the
// direct form does; F(4x4) loses several times more per layer
// (support/winograd_transform.h; the figures are in bench/ACCURACY.md). In a
// residual branch that error lands on a stream the branch only perturbs and
// does not show at the output; in a plain chain every layer's error is
// carried forward, and F(4x4) on a VGG-16 chain exceeds the default
// compile's bound (1.5x ONNX Runtime's error). So F(4x4) is taken only by
// convolutions in a residual branch (their output reaches, through
// single-use nodes, an Add with a second, non-constant operand of the same
// shape) or in a branch that ends in a Concat (Inception's: a few layers
// each, within the bound), F(2x2) elsewhere. The one exception, in a chain:
// convolutions PET made (pet/subprogram.h's node prefix), which exist only
// on request (--pet) and are held to issue 19's bound (1e-4 of the largest
// output against the reference) rather than the default compile's; F(4x4)
// keeps a PET-relinearized chain (CSRNet's back end) well within it. The
// table kLargeTilePlaces lists the places. F(3x3, 3x3)
// (support/winograd_transform.h) is not chosen: though faster than F(2x2),
// it exceeds the default bound on a plain chain as F(4x4) does.
//
// A tuner may override the estimate per convolution geometry
// (opt/winograd.h): the pass takes the choices from its options.
//
// The transformed weights U = G g G^T are computed here once, in double.
#include "opt/winograd.h"

#include <algorithm>

#include "ops/registry.h"
#include "ops/blocked_conv.h"
#include "ops/winograd.h"
#include "opt/passes.h"
#include "pet/subprogram.h"
#include "support/error.h"

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
// A Winograd form must be estimated this much faster than the direct one.
constexpr double kRequiredGain = 0.85;
// Nodes followed from a convolution looking for the Add or Concat that ends its branch.
constexpr int kResidualSearchDepth = 6;

double direct_seconds(const BlockedConvGeom& g) {
  const double macs_per_s = kMacsPerLane * static_cast<double>(g.b);
  const double channels = static_cast<double>(g.R * g.b) * static_cast<double>(g.Mb * g.b);
  // Products: the arithmetic or the weights' stream, whichever is slower.
  return std::max(9.0 * channels * static_cast<double>(g.N * g.oh * g.ow) / macs_per_s,
                  4.0 * 9.0 * channels / kWeightBytesPerSecond);
}

double winograd_seconds(const BlockedConvGeom& g, const WinogradTransform& tf) {
  const double macs_per_s = kMacsPerLane * static_cast<double>(g.b);
  const double channels = static_cast<double>(g.R * g.b) * static_cast<double>(g.Mb * g.b);
  const double tiles = static_cast<double>(g.N * tf.tiles(g.oh) * tf.tiles(g.ow));
  const double points = tf.num_points();
  double s = std::max(points * channels * tiles / macs_per_s, 4.0 * points * channels / kWeightBytesPerSecond);
  // The transforms: V and M written once and read once, ~16 terms a point.
  const double planes = static_cast<double>(g.in_c + g.Mb) * static_cast<double>(g.b);
  s += 2.0 * 4.0 * points * tiles * planes / kActivationBytesPerSecond +
       16.0 * points * tiles * planes / static_cast<double>(g.b) / macs_per_s;
  return s;
}

// U [P, Mb, R, b, b] from the packed weights W [Mb, R, 3, 3, b, b].
Tensor transform_weights(const Tensor& w, const WinogradTransform& tf) {
  const int64_t Mb = w.dim(0), R = w.dim(1), b = w.dim(4);
  const int a = tf.alpha;
  Tensor u(DType::F32, {tf.num_points(), Mb, R, b, b});
  const float* pw = w.data<float>();
  float* pu = u.data<float>();
  const int64_t planes = Mb * R, lanes = b * b;
  for (int64_t q = 0; q < planes; ++q)
    for (int64_t l = 0; l < lanes; ++l) {
      double k[3][3];
      for (int i = 0; i < 3; ++i)
        for (int c = 0; c < 3; ++c) k[i][c] = pw[((q * 3 + i) * 3 + c) * lanes + l];
      for (int pi = 0; pi < a; ++pi)
        for (int pj = 0; pj < a; ++pj) {
          double s = 0;
          for (int i = 0; i < 3; ++i)
            for (int c = 0; c < 3; ++c) s += tf.G(pi, i) * k[i][c] * tf.G(pj, c);
          pu[((pi * a + pj) * planes + q) * lanes + l] = static_cast<float>(s);
        }
    }
  return u;
}

bool winograd_shape(const Node& n, BlockedConvGeom& g) {
  if (n.op_type != "ConvBlocked" || n.domain != kBlockedDomain || n.num_inputs() < 2) return false;
  const Value* x = n.inputs[0];
  const Value* w = n.inputs[1];
  if (!x || !w || !w->constant || !x->type.fully_known() || x->type.dims.size() != 5) return false;
  if (n.has_input(2) && !n.inputs[2]->constant) return false;
  g = blocked_conv_geom(OpAttrs(n, kAnyOpset), x->type.dims, w->constant->dims());
  return g.spatial == 2 && !g.plain_input && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 &&
         g.dw == 1;
}

// True when `n`'s output reaches, through nodes whose output has one use, a
// merge of branches: an Add whose other operand is a computed value of the
// same shape (`n` is in a residual branch), or a Concat (an Inception-style
// branch, whose few layers end in the concatenation instead of feeding a
// long chain: Inception v3 with F(4x4) on every such layer stays within
// ONNX Runtime's error, bench/ACCURACY.md).
bool in_branch(const Graph& g, const Node& n) {
  const Value* v = n.outputs[0];
  for (int depth = 0; depth < kResidualSearchDepth; ++depth) {
    if (v->uses.size() != 1 || g.is_output(v)) return false;
    const Node* next = v->uses[0].node;
    if ((next->op_type == "Add" || next->op_type == "Sum") && next->num_inputs() == 2) {
      const Value* other = next->inputs[1 - v->uses[0].input_index];
      return other && !other->is_constant() && other->type.dims == v->type.dims;
    }
    if (next->op_type == "Concat" && next->num_inputs() >= 2) return true;
    if (next->outputs.size() != 1) return false;
    v = next->outputs[0];
  }
  return false;
}

// True when PET made `n` (its blocked twin keeps the name splice gave it).
bool made_by_pet(const Graph&, const Node& n) { return n.name.rfind(pet::kPetNodePrefix, 0) == 0; }

// Where F(4x4)'s error is within its bound (the header comment's evidence):
// a convolution in one of these places may take it.
struct LargeTilePlace {
  const char* what;
  bool (*holds)(const Graph&, const Node&);
};
constexpr LargeTilePlace kLargeTilePlaces[] = {
    {"in a residual or concatenated branch", in_branch},
    {"made by PET (on request, bound 1e-4 of the output)", made_by_pet},
};

bool large_tile_allowed(const Graph& g, const Node& n) {
  return std::any_of(std::begin(kLargeTilePlaces), std::end(kLargeTilePlaces),
                     [&](const LargeTilePlace& p) { return p.holds(g, n); });
}

// The estimate's tile: F(4x4) where it is allowed, pays and beats F(2x2),
// else F(2x2) where it pays, else the direct form (0).
int estimated_tile(const BlockedConvGeom& geom, bool large_allowed) {
  const double direct = direct_seconds(geom), f2 = winograd_seconds(geom, winograd_transform(2)),
               f4 = winograd_seconds(geom, winograd_transform(4));
  const bool f2_pays = f2 < kRequiredGain * direct, f4_pays = f4 < kRequiredGain * direct;
  int tile = f2_pays ? 2 : 0;
  if (f4_pays && (!f2_pays || f4 < f2) && large_allowed) tile = 4;
  return tile;
}

// The geometry a choice is keyed by: batch, input and output channels as
// blocks x lanes, the input channels an output block sums, the groups'
// attributes when grouped, the image and output sizes and the pads.
// "n1 c4x16 m4x16 r64 50x50->50x50 pads1,1,1,1".
std::string geometry_text(const BlockedConvGeom& g) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string t = "n" + s(g.N) + " c" + s(g.in_c) + "x" + s(g.b) + " m" + s(g.Mb) + "x" + s(g.b) + " r" + s(g.rin);
  if (g.groups.mul != 0) t += " groups" + s(g.groups.div) + "/" + s(g.groups.mul) + "/" + s(g.groups.last);
  return t + " " + s(g.ih) + "x" + s(g.iw) + "->" + s(g.oh) + "x" + s(g.ow) + " pads" + s(g.ph) + "," + s(g.pw) + "," +
         s(g.ph_end) + "," + s(g.pw_end);
}

// A site with the geometry the rewrite needs.
struct Candidate {
  WinogradSite site;
  BlockedConvGeom geom;
};

std::vector<Candidate> candidates(const Graph& g) {
  std::vector<Candidate> cs;
  for (const auto& n : g.nodes()) {
    Candidate c;
    if (!winograd_shape(*n, c.geom)) continue;
    c.site.node = n.get();
    c.site.geometry = geometry_text(c.geom);
    c.site.large_tile_allowed = large_tile_allowed(g, *n);
    c.site.estimated_tile = estimated_tile(c.geom, c.site.large_tile_allowed);
    c.site.macs = 9.0 * static_cast<double>(c.geom.N * c.geom.oh * c.geom.ow) * static_cast<double>(c.geom.rin) *
                  static_cast<double>(c.geom.Mb * c.geom.b);
    cs.push_back(std::move(c));
  }
  return cs;
}

void rewrite(Graph& g, Node* n, const BlockedConvGeom& geom, int tile) {
  const WinogradTransform& tf = winograd_transform(tile);
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
                     {"tiles", Attribute::of_ints({tf.tiles(geom.oh), tf.tiles(geom.ow)})},
                     {"tile", Attribute::of_int(tile)}},
                    base + "/winograd_in");
  Value* u = g.add_constant(g.unique_name(n->inputs[1]->name + ".wino_u"), transform_weights(*n->inputs[1]->constant, tf));
  AttrMap groups;
  geom.groups.write(groups);
  Value* m = insert("WinogradGemm", {v, u}, ".wino_m", groups, base + "/winograd_gemm");
  std::vector<Value*> out_ins{m};
  if (n->has_input(2)) out_ins.push_back(n->inputs[2]);
  Value* y = insert("WinogradOutput", out_ins, ".wino",
                    {{"output", Attribute::of_ints({geom.oh, geom.ow})}, {"tile", Attribute::of_int(tile)}}, n->name);
  Value* w = n->inputs[1];
  g.replace_all_uses(out, y);
  g.erase_node(n);
  g.erase_value_if_unused(w);  // the direct weights go before the next layer's are transformed
}

}  // namespace

std::vector<WinogradSite> winograd_sites(const Graph& g) {
  std::vector<WinogradSite> sites;
  for (Candidate& c : candidates(g)) sites.push_back(std::move(c.site));
  return sites;
}

int winograd_tile_for(const WinogradSite& site, const std::map<std::string, int>& choices) {
  auto it = choices.find(site.geometry);
  if (it == choices.end()) return site.estimated_tile;
  TESSERA_CHECK(std::count(std::begin(kWinogradChoiceTiles), std::end(kWinogradChoiceTiles), it->second),
                "Winograd choice for ", site.node->op_type, " '", site.node->name, "' (geometry ", site.geometry,
                "): tile ", it->second, " is not 0 (direct), 2 or 4");
  if (it->second == 4 && !site.large_tile_allowed) return site.estimated_tile;  // F(4x4)'s error bound first
  return it->second;
}

int to_winograd(Graph& g, int every_tile, const std::map<std::string, int>& choices) {
  std::vector<Candidate> cs = candidates(g);
  int rewritten = 0;
  for (const Candidate& c : cs) {
    const int tile = every_tile ? every_tile : winograd_tile_for(c.site, choices);
    if (tile) {
      rewrite(g, c.site.node, c.geom, tile);
      ++rewritten;
    }
  }
  if (rewritten > 0) g.remove_unused_values();
  return rewritten;
}

}  // namespace tessera
