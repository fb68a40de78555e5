// Fixed rewrites of parallel nodes (PET's multi-operator merges): convs
// reading one value become one conv with their output channels concatenated
// and a Split (merge-parallel-conv), also with different kernel sizes by
// zero-padding the smaller kernels so every output reads the same input rows
// (merge-parallel-conv-padded, PET's MAX mode); MatMuls of one activation by
// different weights, or of same-shaped activations by one weight, become one
// MatMul and a Split (merge-batched-matmul). All exact.
#include <algorithm>
#include <map>

#include "pet/mutants_internal.h"
#include "support/error.h"

namespace tessera::pet::detail {
namespace {

// The kernel padding that aligns the convs on one spatial axis: the merged
// conv pads `begin` and `end` with kernel `K`; conv i's kernel is padded by
// `before[i]` and K - k_i - before[i]. False when no such alignment exists.
struct AxisMerge {
  int64_t begin = 0, end = 0, K = 0;
  std::vector<int64_t> before;
};
bool merge_axis(const std::vector<int64_t>& k, const std::vector<int64_t>& pb, const std::vector<int64_t>& pe,
                AxisMerge& m) {
  m.begin = *std::max_element(pb.begin(), pb.end());
  m.K = 0;
  m.before.clear();
  for (size_t i = 0; i < k.size(); ++i) {
    m.before.push_back(m.begin - pb[i]);
    m.K = std::max(m.K, m.before[i] + k[i]);
  }
  for (size_t i = 0; i < k.size(); ++i) {
    // Output o of conv i reads input rows o*s - pb_i + t; the merged conv reads
    // o*s - begin + t + before_i: the same. Equal output sizes need equal
    // (pb_i + pe_i - k_i) = (begin + end - K).
    int64_t end = pb[i] + pe[i] - k[i] - m.begin + m.K;
    if (i == 0) m.end = end;
    if (end != m.end || end < 0) return false;
  }
  return true;
}

void merge_convs(GenContext& ctx, const std::vector<const Node*>& convs) {
  std::vector<Conv2D> cs;
  for (const Node* n : convs) {
    Conv2D c;
    std::string why;
    if (!read_conv2d(*n, c, why) || c.group != 1) return;
    cs.push_back(c);
  }
  for (const Conv2D& c : cs)
    if (c.sh != cs[0].sh || c.sw != cs[0].sw || c.dh != cs[0].dh || c.dw != cs[0].dw) return;
  bool same = true;
  for (const Conv2D& c : cs)
    same &= c.KH == cs[0].KH && c.KW == cs[0].KW && c.pt == cs[0].pt && c.pl == cs[0].pl && c.pb == cs[0].pb &&
            c.pr == cs[0].pr;
  AxisMerge mh, mw;
  if (!same) {
    if (cs[0].dh != 1 || cs[0].dw != 1) return;
    std::vector<int64_t> kh, kw, pt, pl, pb, pr;
    for (const Conv2D& c : cs) {
      kh.push_back(c.KH), kw.push_back(c.KW), pt.push_back(c.pt), pl.push_back(c.pl), pb.push_back(c.pb),
          pr.push_back(c.pr);
    }
    if (!merge_axis(kh, pt, pb, mh) || !merge_axis(kw, pl, pr, mw)) {
      ctx.report.skipped.push_back("merge-parallel-conv-padded: the convs' outputs cannot be aligned");
      return;
    }
  }
  const bool any_bias = std::any_of(cs.begin(), cs.end(), [](const Conv2D& c) { return c.bias; });
  ctx.add(same ? "merge-parallel-conv" : "merge-parallel-conv-padded", true, false, [&] {
    return rewrite_nodes(ctx.sub, convs, [&](ProgramBuilder& b, const std::vector<std::vector<Value*>>& ins) {
      std::vector<Value*> ws, bs;
      std::vector<int64_t> sizes;
      for (size_t i = 0; i < cs.size(); ++i) {
        const Conv2D& c = cs[i];
        Value* w = ins[i][1];
        if (!same)
          w = b.pad(w, {0, 0, mh.before[i], mw.before[i], 0, 0, mh.K - c.KH - mh.before[i], mw.K - c.KW - mw.before[i]});
        ws.push_back(w);
        if (any_bias) bs.push_back(c.bias ? ins[i][2] : b.floats(Tensor(DType::F32, {c.M})));
        sizes.push_back(c.M);
      }
      const Conv2D& c0 = cs[0];
      std::vector<int64_t> pads = same ? std::vector<int64_t>{c0.pt, c0.pl, c0.pb, c0.pr}
                                       : std::vector<int64_t>{mh.begin, mw.begin, mh.end, mw.end};
      Value* y = b.conv(ins[0][0], b.concat(ws, 0), any_bias ? b.concat(bs, 0) : nullptr, {c0.sh, c0.sw}, pads,
                        {c0.dh, c0.dw}, 1);
      std::vector<std::vector<Value*>> outs;
      for (Value* v : b.split(y, 1, sizes)) outs.push_back({v});
      return outs;
    });
  });
}

// MatMuls reading one activation with weights [K, N_i]: concatenated weights.
void merge_matmuls_shared_input(GenContext& ctx, const std::vector<const Node*>& mms) {
  std::vector<int64_t> sizes;
  for (const Node* n : mms) {
    const TensorType& w = n->inputs[1]->type;
    if (w.rank() != 2) return;
    sizes.push_back(w.dims[1]);
  }
  const int64_t axis = mms[0]->outputs[0]->type.rank() - 1;
  ctx.add("merge-batched-matmul", true, false, [&] {
    return rewrite_nodes(ctx.sub, mms, [&](ProgramBuilder& b, const std::vector<std::vector<Value*>>& ins) {
      std::vector<Value*> ws;
      for (const auto& in : ins) ws.push_back(in[1]);
      Value* y = b.op1("MatMul", {ins[0][0], b.concat(ws, 1)});
      std::vector<std::vector<Value*>> outs;
      for (Value* v : b.split(y, axis, sizes)) outs.push_back({v});
      return outs;
    });
  });
}

// MatMuls of same-shaped activations by one weight: activations stacked on
// their first axis.
void merge_matmuls_shared_weight(GenContext& ctx, const std::vector<const Node*>& mms) {
  const TensorType& a0 = mms[0]->inputs[0]->type;
  if (a0.rank() < 2) return;
  std::vector<int64_t> sizes;
  for (const Node* n : mms) {
    if (n->inputs[0]->type != a0) return;
    sizes.push_back(a0.dims[0]);
  }
  ctx.add("merge-batched-matmul", true, false, [&] {
    return rewrite_nodes(ctx.sub, mms, [&](ProgramBuilder& b, const std::vector<std::vector<Value*>>& ins) {
      std::vector<Value*> as;
      for (const auto& in : ins) as.push_back(in[0]);
      Value* y = b.op1("MatMul", {b.concat(as, 0), ins[0][1]});
      std::vector<std::vector<Value*>> outs;
      for (Value* v : b.split(y, 0, sizes)) outs.push_back({v});
      return outs;
    });
  });
}

bool is_weight(const GenContext& ctx, const Value* v) {
  for (size_t i = ctx.num_activations; i < ctx.sub.inputs().size(); ++i)
    if (ctx.sub.inputs()[i] == v) return true;
  return false;
}

}  // namespace

void merge_families(GenContext& ctx) {
  if (!ctx.wants("merge-parallel-conv") && !ctx.wants("merge-parallel-conv-padded") &&
      !ctx.wants("merge-batched-matmul"))
    return;
  // Convs by the value they convolve; MatMuls (activation @ weight) by
  // activation and by weight. A node consuming another's output is never in
  // the same group: members read one value, so none depends on another unless
  // through the subprogram, which rewrite_nodes then refuses.
  std::map<const Value*, std::vector<const Node*>> convs, mm_by_act, mm_by_weight;
  std::vector<const Value*> conv_order, act_order, weight_order;
  auto push = [](auto& m, auto& order, const Value* key, const Node* n) {
    if (!m.count(key)) order.push_back(key);
    m[key].push_back(n);
  };
  for (const auto& np : ctx.sub.nodes()) {
    const Node* n = np.get();
    if (n->op_type == "Conv" && is_weight(ctx, n->inputs[1]) && (!n->has_input(2) || is_weight(ctx, n->inputs[2])))
      push(convs, conv_order, n->inputs[0], n);
    if (n->op_type == "MatMul" && is_weight(ctx, n->inputs[1]) && !is_weight(ctx, n->inputs[0])) {
      push(mm_by_act, act_order, n->inputs[0], n);
      push(mm_by_weight, weight_order, n->inputs[1], n);
    }
  }
  for (const Value* v : conv_order)
    if (convs[v].size() > 1) merge_convs(ctx, convs[v]);
  if (!ctx.wants("merge-batched-matmul")) return;
  for (const Value* v : act_order)
    if (mm_by_act[v].size() > 1) merge_matmuls_shared_input(ctx, mm_by_act[v]);
  for (const Value* v : weight_order)
    if (mm_by_weight[v].size() > 1) merge_matmuls_shared_weight(ctx, mm_by_weight[v]);
}

}  // namespace tessera::pet::detail
