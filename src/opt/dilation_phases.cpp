// Dilated convolutions on their phases. A 2-D blocked convolution
// (ConvBlocked) with stride 1 and dilation d on an axis reads, for the
// outputs o = a*d + r of that axis, only the rows of one phase of its padded
// input (every d-th row, from row r), one apart within the phase. With
// the phases of both axes moved into the batch ([N, Cb, H, W, b] ->
// [dh*dw*N, Cb, H/dh, W/dw, b]: a reshape and a transpose that keep each
// pixel's vector of channel lanes whole) it is the same convolution with
// dilation 1 and the pads divided by d; its output phases are interleaved
// back the same way. The Winograd pass computes no dilation, so the atrous
// backbone of DeepLab and FCN (3x3 convolutions at dilation 2 and 4 on the
// 1/8 map, the weights of ResNet's layer3 and layer4) ran direct; on its
// phases Winograd takes it.
//
// Where the input size or a pad is not a multiple of d (a 65x65 map at
// dilation 2), the input is first padded explicitly to whole phases:
// (ceil(OH/d) + k - 1) * d rows, the phase convolution unpadded, and the
// output sliced back to OH rows. Exact either way: every output sums the
// same products in the same order, the padding taps adding zeros as before.
#include <string>
#include <tuple>
#include <vector>

#include "ops/blocked_conv.h"
#include "ops/op_attrs.h"
#include "ops/registry.h"
#include "opt/passes.h"
#include "opt/rt_form.h"
#include "support/int_div.h"

namespace tessera {

namespace {

// Which dilated convolutions move to their phases, as data: the kernel the
// Winograd pass computes, and the fewest rows and columns of a phase (its
// 4x4 or 2x2 output tiles waste little on the phase's edges; DeepLab's
// atrous pyramid, rates 12-36 on a 20x20 to 65x65 map, has phases of 1-5
// rows and is left to skip-padding-taps).
struct PhaseRule {
  int64_t kernel;
  int64_t min_phase_extent;
};
constexpr PhaseRule kPhaseRule{3, 8};

// One spatial axis of the rewrite.
struct AxisPhases {
  int64_t d = 1;
  int64_t pad_begin = 0, pad_end = 0;  // explicit padding of the input
  int64_t extent = 0;                  // rows of one phase (after that padding)
  int64_t conv_begin = 0, conv_end = 0;  // the phase convolution's pads
  int64_t out = 0;                     // the original output's rows
};

AxisPhases phases_of(int64_t in, int64_t out, int64_t k, int64_t d, int64_t pb, int64_t pe) {
  AxisPhases a;
  a.d = d, a.out = out;
  if (in % d == 0 && pb % d == 0 && pe % d == 0) {
    a.extent = in / d, a.conv_begin = pb / d, a.conv_end = pe / d;
  } else {
    const int64_t rows = (ceil_div(out, d) + k - 1) * d;  // >= in + pb + pe
    a.pad_begin = pb, a.pad_end = rows - in - pb, a.extent = rows / d;
  }
  return a;
}

bool padded(const AxisPhases& a) { return a.pad_begin != 0 || a.pad_end != 0; }

// The convolution's axes when the rule takes it.
bool phase_shape(const Graph& g, const Node& n, AxisPhases& h, AxisPhases& w) {
  if (n.op_type != "ConvBlocked" || n.domain != kBlockedDomain || n.num_inputs() < 2) return false;
  const Value* x = n.inputs[0];
  const Value* wt = n.inputs[1];
  if (!x || !wt || !wt->constant || !x->type.fully_known() || x->type.dims.size() != 5) return false;
  if (!n.outputs[0] || !n.outputs[0]->type.fully_known()) return false;
  const BlockedConvGeom geom = blocked_conv_geom(OpAttrs(n, kAnyOpset), x->type.dims, wt->constant->dims());
  if (geom.spatial != 2 || geom.plain_input || geom.depthwise) return false;
  if (geom.kh != kPhaseRule.kernel || geom.kw != kPhaseRule.kernel || geom.sh != 1 || geom.sw != 1) return false;
  if (geom.dh < 2 || geom.dw < 2) return false;
  h = phases_of(geom.ih, geom.oh, geom.kh, geom.dh, geom.ph, geom.ph_end);
  w = phases_of(geom.iw, geom.ow, geom.kw, geom.dw, geom.pw, geom.pw_end);
  if (h.extent < kPhaseRule.min_phase_extent || w.extent < kPhaseRule.min_phase_extent) return false;
  // Explicit padding is a Pad and a Slice with their operands as inputs.
  return (!padded(h) && !padded(w)) || g.opset >= 11;
}

void rewrite(Graph& g, Node* n, const AxisPhases& h, const AxisPhases& w) {
  const std::string base = n->name.empty() ? n->outputs[0]->name : n->name;
  Value* y = n->outputs[0];
  auto add = [&](const std::string& op, std::vector<Value*> ins, const std::string& suffix, AttrMap attrs) {
    Node* m = g.insert_node_before(n, op, std::move(ins), {g.unique_name(y->name + suffix)}, std::move(attrs),
                                   g.unique_name(base + suffix));
    infer_node(*m, g.opset);
    return m->outputs[0];
  };
  Value* x = n->inputs[0];
  if (padded(h) || padded(w))
    x = add("Pad",
            {x, g.add_int64s(base + ".phase_pads", {0, 0, h.pad_begin, w.pad_begin, 0, 0, 0, h.pad_end, w.pad_end, 0})},
            ".phase_padded", {{"mode", Attribute::of_string("constant")}});
  const Dims& xd = x->type.dims;  // [N, Cb, Hp, Wp, b]
  const int64_t N = xd[0], Cb = xd[1], b = xd[4];
  Value* xs = rt::emit(g, n, x,
                       rt::Form{xd, {N, Cb, h.extent, h.d, w.extent, w.d, b}, {3, 5, 0, 1, 2, 4, 6},
                                {h.d * w.d * N, Cb, h.extent, w.extent, b}},
                       base + "/phases");
  AttrMap attrs = n->attrs;
  attrs["dilations"] = Attribute::of_ints({1, 1});
  attrs["pads"] = Attribute::of_ints({h.conv_begin, w.conv_begin, h.conv_end, w.conv_end});
  std::vector<Value*> ins = n->inputs;
  ins[0] = xs;
  Node* c = g.insert_node_before(n, "ConvBlocked", std::move(ins), {g.unique_name(y->name + ".phases")},
                                 std::move(attrs), n->name);
  c->domain = kBlockedDomain;
  infer_node(*c, g.opset);
  const Dims& cd = c->outputs[0]->type.dims;  // [dh*dw*N, Mb, A, B, b]
  const int64_t Mb = cd[1], A = cd[2], B = cd[3];
  Value* out = rt::emit(g, n, c->outputs[0],
                        rt::Form{cd, {h.d, w.d, N, Mb, A, B, b}, {2, 3, 4, 0, 5, 1, 6}, {N, Mb, A * h.d, B * w.d, b}},
                        base + "/unphased");
  if (A * h.d != h.out || B * w.d != w.out)
    out = add("Slice",
              {out, g.add_int64s(base + ".phase_starts", {0, 0}), g.add_int64s(base + ".phase_ends", {h.out, w.out}),
               g.add_int64s(base + ".phase_axes", {2, 3})},
              ".unphased", {});
  g.replace_all_uses(y, out);
  g.erase_node(n);
}

}  // namespace

int dilations_to_phases(Graph& g) {
  std::vector<std::tuple<Node*, AxisPhases, AxisPhases>> todo;
  for (const auto& n : g.nodes()) {
    AxisPhases h, w;
    if (phase_shape(g, *n, h, w)) todo.emplace_back(n.get(), h, w);
  }
  for (auto& [n, h, w] : todo) rewrite(g, n, h, w);
  if (!todo.empty()) g.remove_unused_values();
  return static_cast<int>(todo.size());
}

}  // namespace tessera
