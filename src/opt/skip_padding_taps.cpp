// Padding taps skipped: a Conv (1-D, 2-D or 3-D) computes, for every output
// position, every tap of its kernel, including those that land in the zero
// padding. With large dilations on small maps (DeepLab's atrous pyramid:
// rates 12-36 on 33x33 or 65x65 maps) most taps do; so do 3x3x3 video
// convolutions on the short time axes of a net's last stages (2 frames: each
// reads 2 of its 3 time taps; 1 frame: only the centre one). For one output
// position o along an axis (input size I, stride s, dilation d, leading pad
// p) the taps k that read the input are exactly the run lo(o)..hi(o) with
// 0 <= o*s - p + k*d < I; consecutive positions with the same run form a
// band. This pass rewrites such a Conv (constant weights, static shapes) as
// one Conv per region (one band of each spatial axis), each with only its
// valid taps (the weights sliced), no padding and the input window it reads
// sliced out, the regions concatenated back along the last axis first. Every
// output sums the same products of input and weight as before, only without
// the padding zeros.
//
// Which axes are split into bands is a rule table (kBandRules); the others
// keep one band whose taps are the union over the axis, so a tap no output
// reads is still dropped. When every off-centre tap of an axis is padding,
// the axis keeps only its centre tap, with no Slice and no Concat along it
// (a 3x3x3 Conv of one frame becomes a 1x3x3 Conv of the centre weights).
//
// When the regions' sliced weights would add up to several times the taps
// that read the input (kMinSlicesPerTap: a 2-D Conv dilated on both axes, e.g.
// rate 12 on a 20x20 map: 9 regions of 16-64 outputs reading 25 tap-sized
// slices of the weights), the Conv is instead split by tap: one 1x1 Conv per
// tap over the outputs that tap reads the input for (its window of the
// input sliced out), zero-padded back to the whole output and summed. The
// same products again, each weight tap read once, and every Conv as large
// as its tap's valid outputs (the centre's: all of them).
#include <algorithm>

#include "ops/nn_conv.h"
#include "ops/op_attrs.h"
#include "ops/registry.h"
#include "ir/producer_swap.h"
#include "opt/passes.h"
#include "support/int_div.h"

namespace tessera {

namespace {

// When a rewrite pays, as data: the rewritten Conv must skip at least this
// share of the original's multiply-adds, in at most this many regions (and,
// per region, the skipped multiply-adds the caller asks for: each region is
// a kernel of its own).
constexpr double kMinSkippedShare = 0.2;
constexpr int64_t kMaxRegions = 25;

// When a Conv is split by tap instead of by region, as data: 2-D, every
// spatial axis dilated and split into bands, and the regions' weights (in
// tap-sized slices) at least this many times the taps that read the input.
constexpr double kMinSlicesPerTap = 2;

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
  lo = base >= 0 ? 0 : ceil_div(-base, a.d);
  hi = base > a.in - 1 ? -1 : std::min(a.k - 1, (a.in - 1 - base) / a.d);
}

// The runs of output positions with equal tap ranges along one axis. Empty
// when some output position reads no input at all (it is bias only: left to
// the Conv).
std::vector<Band> runs_of(const Axis& a) {
  std::vector<Band> runs;
  for (int64_t o = 0; o < a.out; ++o) {
    int64_t lo, hi;
    valid_taps(a, o, lo, hi);
    if (lo > hi) return {};
    if (!runs.empty() && runs.back().lo == lo && runs.back().hi == hi) runs.back().o1 = o + 1;
    else runs.push_back({o, o + 1, lo, hi});
  }
  return runs;
}

// When an axis is split into its runs, as data (otherwise it keeps one band
// whose taps are the union of the runs', so a tap no output reads is still
// dropped): dilated axes, whose padding taps are many; and short time axes
// of 3-D convolutions, where no output frame reads every time tap of the
// union (2 frames of a 3-tap kernel: each reads 2 of the 3), so the union
// would keep them all. Undilated spatial axes are not split: their padding
// taps are a thin border, and on tiny maps, where they are not, the regions'
// sliced weights would add up to more than the whole kernel's, which such
// maps stream rather than compute on.
struct AxisRuns {
  const Axis& a;
  size_t index, count;  // which spatial axis of how many
  const std::vector<Band>& runs;
  const Band& all;  // the union of the runs' taps
};
struct BandRule {
  const char* name;
  bool (*applies)(const AxisRuns& r);
};
const BandRule kBandRules[] = {
    {"dilated", [](const AxisRuns& r) { return r.a.d > 1; }},
    {"short time axis",
     [](const AxisRuns& r) {
       return r.count == 3 && r.index == 0 && std::none_of(r.runs.begin(), r.runs.end(), [&](const Band& b) {
                return b.lo == r.all.lo && b.hi == r.all.hi;
              });
     }},
};

// The bands of one axis (its runs where a rule says so, else one band over
// the axis), with the input window each reads. Empty as runs_of.
std::vector<Band> bands_of(const Axis& a, size_t index, size_t count) {
  std::vector<Band> runs = runs_of(a);
  if (runs.empty()) return runs;
  Band all{0, a.out, runs[0].lo, runs[0].hi};
  for (const Band& r : runs) {
    all.lo = std::min(all.lo, r.lo);
    all.hi = std::max(all.hi, r.hi);
  }
  const bool split = std::any_of(std::begin(kBandRules), std::end(kBandRules),
                                 [&](const BandRule& rule) { return rule.applies({a, index, count, runs, all}); });
  std::vector<Band> bands = split ? runs : std::vector<Band>{all};
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

// W[:, :, lo..hi of each spatial axis] of a constant weight [M, Cg, k...]:
// one copy per run of the innermost axis.
Tensor sliced_weights(const Tensor& w, const std::vector<const Band*>& region) {
  const size_t nsp = region.size();
  Dims dims{w.dim(0), w.dim(1)};
  for (const Band* b : region) dims.push_back(b->taps());
  Tensor out(w.dtype(), dims);
  const size_t es = dtype_size(w.dtype());
  const auto* src = static_cast<const unsigned char*>(w.raw());
  auto* dst = static_cast<unsigned char*>(out.raw());
  const int64_t inner = region.back()->taps();
  int64_t lead = 1;  // positions of the leading spatial axes
  for (size_t i = 0; i + 1 < nsp; ++i) lead *= region[i]->taps();
  int64_t r = 0;  // run of the sliced weight
  for (int64_t c = 0; c < w.dim(0) * w.dim(1); ++c) {
    std::vector<int64_t> idx(nsp, 0);  // index of the leading axes in the slice (the last stays 0)
    for (int64_t l = 0; l < lead; ++l, ++r) {
      int64_t off = c;
      for (size_t i = 0; i < nsp; ++i) off = off * w.dim(static_cast<int>(i) + 2) + region[i]->lo + idx[i];
      std::copy_n(src + static_cast<size_t>(off) * es, static_cast<size_t>(inner) * es,
                  dst + static_cast<size_t>(r * inner) * es);
      for (size_t i = nsp - 1; i-- > 0;) {  // next index, the last leading axis fastest
        if (++idx[i] < region[i]->taps()) break;
        idx[i] = 0;
      }
    }
  }
  return out;
}

// Letters of the spatial axes, for node names: W; H, W; D, H, W.
std::string axis_letter(size_t axis, size_t nsp) { return std::string(1, "DHW"[axis + 3 - nsp]); }

struct Rewrite {
  Graph& g;
  Node* conv;
  std::vector<Axis> axes;                // per spatial axis
  std::vector<std::vector<Band>> bands;  // per spatial axis
  bool by_tap = false;                   // split by tap (run_taps), not by region

  Node* add(const std::string& op, std::vector<Value*> ins, const std::string& out, AttrMap attrs,
            const std::string& suffix) {
    Node* n = g.insert_node_before(conv, op, std::move(ins), {g.unique_name(out)}, std::move(attrs),
                                   conv->name.empty() ? "" : conv->name + suffix);
    infer_node(*n, g.opset);
    return n;
  }

  // Whether band b's input window covers its axis (no Slice along it).
  static bool whole(const Band& b, const Axis& a) { return b.start <= 0 && b.end >= a.in; }

  bool whole(const std::vector<const Band*>& region) const {
    for (size_t i = 0; i < region.size(); ++i)
      if (!whole(*region[i], axes[i])) return false;
    return true;
  }

  // The input window of one region, sliced only along the axes it does not cover.
  Value* window(const std::vector<const Band*>& region, const std::string& tag) {
    Value* x = conv->inputs[0];
    std::vector<int64_t> starts, ends, axis_ids;
    for (size_t i = 0; i < region.size(); ++i) {
      const Band& b = *region[i];
      if (whole(b, axes[i])) continue;
      starts.push_back(std::max<int64_t>(b.start, 0));
      ends.push_back(std::min(b.end, axes[i].in));
      axis_ids.push_back(static_cast<int64_t>(i) + 2);
    }
    if (axis_ids.empty()) return x;
    const std::string base = conv->name + tag;
    return add("Slice",
               {x, g.add_int64s(base + ".starts", starts), g.add_int64s(base + ".ends", ends),
                g.add_int64s(base + ".axes", axis_ids)},
               x->name + tag, {}, tag + "/window")
        ->outputs[0];
  }

  static std::string tag_of(const std::vector<const Band*>& region) {
    std::string tag = "/region";
    for (size_t i = 0; i < region.size(); ++i) tag += (i ? "_" : "") + std::to_string(region[i]->o0);
    return tag;
  }

  // The Conv of one region (its bands' taps over its bands' outputs), with
  // the bias unless told otherwise.
  Value* conv_of(const std::vector<const Band*>& region, int64_t group, const std::string& tag, bool bias = true) {
    Value* x = window(region, tag);
    Value* wv = g.add_constant(g.unique_name(conv->inputs[1]->name + tag), sliced_weights(*conv->inputs[1]->constant, region));
    std::vector<Value*> ins{x, wv};
    if (bias && conv->has_input(2)) ins.push_back(conv->inputs[2]);
    std::vector<int64_t> kernel, strides, dilations, pads(2 * region.size());
    for (size_t i = 0; i < region.size(); ++i) {
      const Band& b = *region[i];
      kernel.push_back(b.taps());
      strides.push_back(axes[i].s);
      dilations.push_back(axes[i].d);
      pads[i] = std::max<int64_t>(-b.start, 0);
      pads[i + region.size()] = std::max<int64_t>(b.end - axes[i].in, 0);
    }
    AttrMap attrs{{"kernel_shape", Attribute::of_ints(kernel)},
                  {"strides", Attribute::of_ints(strides)},
                  {"dilations", Attribute::of_ints(dilations)},
                  {"pads", Attribute::of_ints(pads)},
                  {"group", Attribute::of_int(group)}};
    return add("Conv", std::move(ins), conv->outputs[0]->name + tag, std::move(attrs), tag)->outputs[0];
  }

  Value* concat(std::vector<Value*> parts, int64_t axis, const std::string& name, const std::string& suffix) {
    if (parts.size() == 1) return parts[0];
    return add("Concat", std::move(parts), name, {{"axis", Attribute::of_int(axis)}}, suffix)->outputs[0];
  }

  // The regions (one band per axis), the first axis slowest.
  std::vector<std::vector<const Band*>> regions() const { return combinations(bands); }
  static std::vector<std::vector<const Band*>> combinations(const std::vector<std::vector<Band>>& per_axis) {
    std::vector<std::vector<const Band*>> all{{}};
    for (const auto& axis_bands : per_axis) {
      std::vector<std::vector<const Band*>> next;
      for (const auto& r : all)
        for (const Band& b : axis_bands) {
          next.push_back(r);
          next.back().push_back(&b);
        }
      all = std::move(next);
    }
    return all;
  }

  // The outputs of regions [first, first + count) concatenated along
  // spatial axis `axis` and the ones after it (the regions' first band
  // indices fixed before it).
  Value* joined(const std::vector<Value*>& outs, size_t first, size_t count, size_t axis, const std::string& name) {
    if (axis == bands.size()) return outs[first];
    const size_t n = bands[axis].size(), each = count / n;
    std::vector<Value*> parts;
    for (size_t i = 0; i < n; ++i)
      parts.push_back(joined(outs, first + i * each, each, axis + 1, name + "." + std::to_string(bands[axis][i].o0)));
    return concat(std::move(parts), static_cast<int64_t>(axis) + 2, name,
                  "/concat_" + axis_letter(axis, bands.size()));
  }

  void run(int64_t group) {
    const std::string y = conv->outputs[0]->name;
    // A region reading the whole input goes first: the blocked-layout pass,
    // walking the graph in order, then reorders the input for its Conv and
    // takes the other regions' Slices in the blocked layout too.
    const std::vector<std::vector<const Band*>> all = regions();
    std::vector<size_t> order(all.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_partition(order.begin(), order.end(), [&](size_t i) { return whole(all[i]); });
    std::vector<Value*> outs(all.size());
    for (size_t i : order) outs[i] = conv_of(all[i], group, tag_of(all[i]));
    take_output(joined(outs, 0, outs.size(), 0, y + ".regions"));
  }

  // The outputs [o0, o1) along an axis for which tap t reads the input
  // (0 <= o*s - pb + t*d < in), as a band of that one tap with its input
  // window; o0 == o1 when there are none.
  static Band tap_band(const Axis& a, int64_t t) {
    const int64_t first = a.pb - t * a.d, last = a.in - 1 + a.pb - t * a.d;  // o*s must lie in [first, last]
    const int64_t o0 = std::min(first <= 0 ? 0 : ceil_div(first, a.s), a.out);
    const int64_t o1 = std::max(o0, std::min(last < 0 ? 0 : last / a.s + 1, a.out));
    Band b{o0, o1, t, t};
    b.start = o0 * a.s - a.pb + t * a.d;
    b.end = (o1 - 1) * a.s - a.pb + t * a.d + 1;
    return b;
  }

  // Split by tap: per tap reading the input for some output, a 1x1 Conv
  // over those outputs (its input window sliced out), zero-padded back to
  // the whole output; the partial outputs summed. The bias goes with a tap
  // valid everywhere (the first such), else is added at the end.
  void run_taps(int64_t group) {
    const std::string y = conv->outputs[0]->name;
    const size_t nsp = axes.size();
    std::vector<std::vector<Band>> per_axis(nsp);  // each axis's taps that read the input
    for (size_t i = 0; i < nsp; ++i) {
      int64_t lo = bands[i][0].lo, hi = bands[i][0].hi;
      for (const Band& b : bands[i]) lo = std::min(lo, b.lo), hi = std::max(hi, b.hi);
      for (int64_t t = lo; t <= hi; ++t) per_axis[i].push_back(tap_band(axes[i], t));
    }
    auto everywhere = [&](const std::vector<const Band*>& tap) {
      for (size_t i = 0; i < nsp; ++i)
        if (tap[i]->o0 != 0 || tap[i]->o1 != axes[i].out) return false;
      return true;
    };
    // As with regions, a tap reading the whole input first.
    std::vector<std::vector<const Band*>> taps = combinations(per_axis);
    std::stable_partition(taps.begin(), taps.end(), [&](const auto& t) { return whole(t); });
    const Dims& ydims = conv->outputs[0]->type.dims;
    Value* sum = nullptr;
    bool biased = !conv->has_input(2);
    for (const std::vector<const Band*>& tap : taps) {
      bool empty = false;
      for (const Band* b : tap) empty |= b->o0 == b->o1;
      if (empty) continue;
      std::string tag = "/tap";
      for (size_t i = 0; i < nsp; ++i) tag += (i ? "_" : "") + std::to_string(tap[i]->lo);
      const bool full = everywhere(tap), bias = full && !biased;
      biased |= bias;
      Value* z = conv_of(tap, group, tag, bias);
      if (!full) {
        std::vector<int64_t> pads(2 * ydims.size(), 0);
        for (size_t i = 0; i < nsp; ++i) {
          pads[i + 2] = tap[i]->o0;
          pads[i + 2 + ydims.size()] = axes[i].out - tap[i]->o1;
        }
        z = add("Pad", {z, g.add_int64s(conv->name + tag + ".pads", pads)}, y + tag + ".padded",
                {{"mode", Attribute::of_string("constant")}}, tag + "/pad")->outputs[0];
      }
      sum = sum ? add("Add", {sum, z}, y + tag + ".sum", {}, tag + "/sum")->outputs[0] : z;
    }
    if (!biased) {  // no tap reads the input for every output: the bias [M] added as [M, 1, ...]
      Dims bd{ydims[1]};
      bd.resize(ydims.size() - 1, 1);
      Value* b = g.add_constant(g.unique_name(conv->inputs[2]->name + ".spatial"), conv->inputs[2]->constant->reshaped(bd));
      sum = add("Add", {sum, b}, y + ".bias", {}, "/bias")->outputs[0];
    }
    take_output(sum);
  }

  // The last new node takes over the Conv's output value (its name may be a
  // graph output), and the Conv goes.
  void take_output(Value* out) {
    swap_producers(conv->outputs[0], out);
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
  if (!x->type.rank_known || !x->type.fully_known()) return false;
  const size_t rank = x->type.rank();
  if (rank < 3 || rank > 5 || static_cast<size_t>(w->constant->rank()) != rank) return false;  // 1-D, 2-D and 3-D convolutions
  if (n.has_input(2) && !n.inputs[2]->constant) return false;
  ConvShape cs = conv_shape(OpAttrs(n, g.opset), x->type.dims, w->constant->dims());
  const size_t nsp = rank - 2;
  if (cs.pads.size() != 2 * nsp) return false;
  const WindowAttrs& a = cs.attrs;
  double full = 1, kept = 1, regions = 1;
  double slices = 1, taps = 1;  // the regions' weights in tap-sized slices; the taps that read the input
  bool dilated = true;
  for (size_t i = 0; i < nsp; ++i) {
    const Axis axis{x->type.dims[i + 2], cs.out_spatial[i], w->constant->dim(static_cast<int>(i) + 2),
                    a.strides[i], a.dilations[i], cs.pads[i]};
    if (axis.out <= 0) return false;
    r.axes.push_back(axis);
    r.bands.push_back(bands_of(axis, i, nsp));
    if (r.bands.back().empty()) return false;
    full *= static_cast<double>(axis.out * axis.k);
    kept *= band_taps(r.bands.back());
    regions *= static_cast<double>(r.bands.back().size());
    int64_t lo = axis.k, hi = -1, axis_slices = 0;
    for (const Band& b : r.bands.back()) lo = std::min(lo, b.lo), hi = std::max(hi, b.hi), axis_slices += b.taps();
    slices *= static_cast<double>(axis_slices);
    taps *= static_cast<double>(hi - lo + 1);
    dilated = dilated && axis.d > 1;
  }
  r.by_tap = nsp == 2 && dilated && g.opset >= 11 && slices >= kMinSlicesPerTap * taps;
  const double convs = r.by_tap ? taps : regions;
  if (convs > kMaxRegions) return false;
  const double per_tap = static_cast<double>(cs.N * cs.M * (cs.C / cs.group));  // multiply-adds of one (position, tap)
  return kept <= (1 - kMinSkippedShare) * full && (full - kept) * per_tap >= min_skipped_per_region * convs;
}

}  // namespace

int skip_padding_taps(Graph& g, double min_skipped_per_region) {
  std::vector<Node*> convs;
  for (const auto& n : g.nodes()) convs.push_back(n.get());
  int rewritten = 0;
  for (Node* n : convs) {
    Rewrite r{g, n, {}, {}, false};
    if (!plan(g, *n, min_skipped_per_region, r)) continue;
    const int64_t group = OpAttrs(*n, g.opset).i("group");
    if (r.by_tap) r.run_taps(group);
    else r.run(group);
    ++rewritten;
  }
  if (rewritten) g.remove_unused_values();
  return rewritten;
}

}  // namespace tessera
