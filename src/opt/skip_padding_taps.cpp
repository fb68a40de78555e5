// Padding taps skipped: a 2-D Conv computes, for every output pixel, every
// tap of its kernel, including those that land in the zero padding. With
// large dilations on small maps (DeepLab's atrous pyramid: rates 12-36 on
// 33x33 or 65x65 maps) most taps do. For one output position o along an axis
// (input size I, stride s, dilation d, leading pad p) the taps k that read
// the input are exactly the run lo(o)..hi(o) with 0 <= o*s - p + k*d < I;
// consecutive positions with the same run form a band. This pass rewrites
// such a Conv (constant weights, static shapes) as one Conv per band pair
// (H band x W band), each with only its valid taps (the weights sliced), no
// padding and the input window it reads sliced out, the regions concatenated
// back along W then H. Every output sums the same products of input and
// weight as before, only without the padding zeros.
//
// Axes without dilation are not banded (their padding taps are a thin border
// and bands would only multiply kernels): they keep one band whose taps are
// the union over the axis, so a tap no output reads is still dropped. When
// every off-centre tap is padding the Conv becomes a 1x1 Conv of the centre
// weights, with no Slice and no Concat.
#include <algorithm>

#include "ops/nn_conv.h"
#include "ops/op_attrs.h"
#include "ops/registry.h"
#include "opt/passes.h"

namespace tessera {

namespace {

// When a rewrite pays, as data: the rewritten Conv must skip at least this
// share of the original's multiply-adds, in at most this many regions (and,
// per region, the skipped multiply-adds the caller asks for: each region is
// a kernel of its own).
constexpr double kMinSkippedShare = 0.2;
constexpr int64_t kMaxRegions = 25;

// One band of output positions [o0, o1) along an axis, reading taps lo..hi
// from the input window [start, end) (which may reach into the padding only
// on unbanded axes).
struct Band {
  int64_t o0, o1, lo, hi;
  int64_t start = 0, end = 0;
  int64_t taps() const { return hi - lo + 1; }
};

struct Axis {
  int64_t in, out, k, s, d, pb;
};

// The taps of output position o that read the input: lo > hi when none do.
void valid_taps(const Axis& a, int64_t o, int64_t& lo, int64_t& hi) {
  const int64_t base = o * a.s - a.pb;  // input position of tap 0
  lo = base >= 0 ? 0 : (-base + a.d - 1) / a.d;
  hi = base > a.in - 1 ? -1 : std::min(a.k - 1, (a.in - 1 - base) / a.d);
}

// The bands of one axis (banded: one per run of equal tap ranges; else one
// band over the axis with the union of the ranges). Empty when some output
// position reads no input at all (it is bias only: left to the Conv).
std::vector<Band> bands_of(const Axis& a, bool banded) {
  std::vector<Band> bands;
  for (int64_t o = 0; o < a.out; ++o) {
    int64_t lo, hi;
    valid_taps(a, o, lo, hi);
    if (lo > hi) return {};
    if (!bands.empty() && (!banded || (bands.back().lo == lo && bands.back().hi == hi))) {
      Band& b = bands.back();
      b.o1 = o + 1;
      b.lo = std::min(b.lo, lo);
      b.hi = std::max(b.hi, hi);
    } else {
      bands.push_back({o, o + 1, lo, hi});
    }
  }
  for (Band& b : bands) {
    b.start = b.o0 * a.s - a.pb + b.lo * a.d;
    b.end = (b.o1 - 1) * a.s - a.pb + b.hi * a.d + 1;
  }
  return bands;
}

// Multiply-adds per output channel and input channel of the bands' convolutions.
double band_taps(const std::vector<Band>& bands) {
  double t = 0;
  for (const Band& b : bands) t += static_cast<double>((b.o1 - b.o0) * b.taps());
  return t;
}

Value* i64_constant(Graph& g, const std::string& name, std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return g.add_constant(g.unique_name(name), Tensor::from<int64_t>({n}, v));
}

// W[:, :, lo_h..hi_h, lo_w..hi_w] of a constant weight [M, Cg, kh, kw].
Tensor sliced_weights(const Tensor& w, const Band& h, const Band& wb) {
  const int64_t rows = w.dim(0) * w.dim(1), kh = w.dim(2), kw = w.dim(3);
  Tensor out(w.dtype(), {w.dim(0), w.dim(1), h.taps(), wb.taps()});
  const size_t es = dtype_size(w.dtype());
  const auto* src = static_cast<const unsigned char*>(w.raw());
  auto* dst = static_cast<unsigned char*>(out.raw());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t y = 0; y < h.taps(); ++y)
      std::copy_n(src + static_cast<size_t>((r * kh + h.lo + y) * kw + wb.lo) * es, static_cast<size_t>(wb.taps()) * es,
                  dst + static_cast<size_t>((r * h.taps() + y) * wb.taps()) * es);
  return out;
}

struct Rewrite {
  Graph& g;
  Node* conv;
  Axis ah, aw;
  std::vector<Band> bh, bw;

  Node* add(const std::string& op, std::vector<Value*> ins, const std::string& out, AttrMap attrs,
            const std::string& suffix) {
    Node* n = g.insert_node_before(conv, op, std::move(ins), {g.unique_name(out)}, std::move(attrs),
                                   conv->name.empty() ? "" : conv->name + suffix);
    infer_node(*n, g.opset);
    return n;
  }

  // Whether band b's input window covers its axis (no Slice along it).
  static bool whole(const Band& b, const Axis& a) { return b.start <= 0 && b.end >= a.in; }

  // The input window of one region, sliced only along the axes it does not cover.
  Value* window(const Band& h, const Band& w, const std::string& tag) {
    Value* x = conv->inputs[0];
    std::vector<int64_t> starts, ends, axes;
    auto clip = [&](const Band& b, const Axis& a, int64_t axis) {
      if (whole(b, a)) return;
      const int64_t s = std::max<int64_t>(b.start, 0), e = std::min(b.end, a.in);
      starts.push_back(s);
      ends.push_back(e);
      axes.push_back(axis);
    };
    clip(h, ah, 2);
    clip(w, aw, 3);
    if (axes.empty()) return x;
    const std::string base = conv->name + tag;
    return add("Slice",
               {x, i64_constant(g, base + ".starts", starts), i64_constant(g, base + ".ends", ends),
                i64_constant(g, base + ".axes", axes)},
               x->name + tag, {}, tag + "/window")
        ->outputs[0];
  }

  Value* region(const Band& h, const Band& w, int64_t group) {
    const std::string tag = "/region" + std::to_string(h.o0) + "_" + std::to_string(w.o0);
    Value* x = window(h, w, tag);
    Value* wv = g.add_constant(g.unique_name(conv->inputs[1]->name + tag), sliced_weights(*conv->inputs[1]->constant, h, w));
    std::vector<Value*> ins{x, wv};
    if (conv->has_input(2)) ins.push_back(conv->inputs[2]);
    auto before = [](const Band& b) { return std::max<int64_t>(-b.start, 0); };
    auto after = [](const Band& b, const Axis& a) { return std::max<int64_t>(b.end - a.in, 0); };
    AttrMap attrs{{"kernel_shape", Attribute::of_ints({h.taps(), w.taps()})},
                  {"strides", Attribute::of_ints({ah.s, aw.s})},
                  {"dilations", Attribute::of_ints({ah.d, aw.d})},
                  {"pads", Attribute::of_ints({before(h), before(w), after(h, ah), after(w, aw)})},
                  {"group", Attribute::of_int(group)}};
    return add("Conv", std::move(ins), conv->outputs[0]->name + tag, std::move(attrs), tag)->outputs[0];
  }

  Value* concat(std::vector<Value*> parts, int64_t axis, const std::string& name, const std::string& suffix) {
    if (parts.size() == 1) return parts[0];
    return add("Concat", std::move(parts), name, {{"axis", Attribute::of_int(axis)}}, suffix)->outputs[0];
  }

  void run(int64_t group) {
    const std::string y = conv->outputs[0]->name;
    // A region reading the whole input goes first: the blocked-layout pass,
    // walking the graph in order, then reorders the input for its Conv and
    // takes the other regions' Slices in the blocked layout too.
    std::vector<std::pair<size_t, size_t>> order;
    for (size_t i = 0; i < bh.size(); ++i)
      for (size_t j = 0; j < bw.size(); ++j) order.emplace_back(i, j);
    std::stable_partition(order.begin(), order.end(),
                          [&](const auto& ij) { return whole(bh[ij.first], ah) && whole(bw[ij.second], aw); });
    std::vector<std::vector<Value*>> parts(bh.size(), std::vector<Value*>(bw.size()));
    for (const auto& [i, j] : order) parts[i][j] = region(bh[i], bw[j], group);
    std::vector<Value*> rows;
    for (size_t i = 0; i < bh.size(); ++i)
      rows.push_back(concat(parts[i], 3, y + ".row" + std::to_string(bh[i].o0), "/concat_w"));
    Value* out = concat(rows, 2, y + ".regions", "/concat_h");
    // The last new node takes over the Conv's output value (its name may be a graph output).
    Value* old = conv->outputs[0];
    Node* p = out->producer;
    const int idx = out->producer_output;
    p->outputs[static_cast<size_t>(idx)] = old;
    old->producer = p;
    old->producer_output = idx;
    conv->outputs[0] = out;
    out->producer = conv;
    out->producer_output = 0;
    Value* wv = conv->inputs[1];
    for (size_t i = 0; i < conv->inputs.size(); ++i) g.set_input(conv, static_cast<int>(i), nullptr);
    g.erase_node(conv);
    g.erase_value_if_unused(wv);
  }
};

// The rewrite of `n` when it applies and pays, with its bands.
bool plan(const Graph& g, Node& n, double min_skipped_per_region, Rewrite& r) {
  if (n.op_type != "Conv" || !n.domain.empty() || n.num_inputs() < 2 || g.opset < 10) return false;
  const Value* x = n.inputs[0];
  const Value* w = n.inputs[1];
  const Value* y = n.outputs[0];
  if (!x || !w || !w->constant || !y) return false;
  if (!x->type.rank_known || x->type.rank() != 4 || !x->type.fully_known() || w->constant->rank() != 4) return false;
  if (n.has_input(2) && !n.inputs[2]->constant) return false;
  ConvShape cs = conv_shape(OpAttrs(n, g.opset), x->type.dims, w->constant->dims());
  if (cs.pads.size() != 4) return false;
  const WindowAttrs& a = cs.attrs;
  r.ah = {x->type.dims[2], cs.out_spatial[0], w->constant->dim(2), a.strides[0], a.dilations[0], cs.pads[0]};
  r.aw = {x->type.dims[3], cs.out_spatial[1], w->constant->dim(3), a.strides[1], a.dilations[1], cs.pads[1]};
  if (r.ah.out <= 0 || r.aw.out <= 0) return false;
  r.bh = bands_of(r.ah, r.ah.d > 1);
  r.bw = bands_of(r.aw, r.aw.d > 1);
  if (r.bh.empty() || r.bw.empty()) return false;
  if (static_cast<int64_t>(r.bh.size() * r.bw.size()) > kMaxRegions) return false;
  const double full = static_cast<double>(r.ah.out * r.ah.k) * static_cast<double>(r.aw.out * r.aw.k);
  const double kept = band_taps(r.bh) * band_taps(r.bw);
  const double per_tap = static_cast<double>(cs.N * cs.M * (cs.C / cs.group));  // multiply-adds of one (pixel, tap)
  const double regions = static_cast<double>(r.bh.size() * r.bw.size());
  return kept <= (1 - kMinSkippedShare) * full && (full - kept) * per_tap >= min_skipped_per_region * regions;
}

}  // namespace

int skip_padding_taps(Graph& g, double min_skipped_per_region) {
  std::vector<Node*> convs;
  for (const auto& n : g.nodes()) convs.push_back(n.get());
  int rewritten = 0;
  for (Node* n : convs) {
    Rewrite r{g, n, {}, {}, {}, {}};
    if (!plan(g, *n, min_skipped_per_region, r)) continue;
    r.run(OpAttrs(*n, g.opset).i("group"));
    ++rewritten;
  }
  if (rewritten) g.remove_unused_values();
  return rewritten;
}

}  // namespace tessera
