// Tensor-expression definitions of the attention family: Attention (opset 23
// / 24) and RotaryEmbedding (attention.cpp), LinearAttention, FlexAttention
// and CausalConvWithState.
//
// Attention as stages, like the reference (all arithmetic in double):
//   present_key / present_value  past ++ current, [B, Hkv, T, D]
//   dot     [B, Hq, Sq, T]  sum_d q * k               (reduce)
//   biased  [B, Hq, Sq, T]  softcap(scale * dot) + mask + causal + padding
//   max     [B, Hq, Sq, 1]  NaN-ignoring row maximum  (reduce)
//   sum     [B, Hq, Sq, 1]  sum_j exp(biased - max)   (reduce)
//   prob    [B, Hq, Sq, T]  normalized (an all-masked row is all zero)
//   Y       sum_j prob * v                            (reduce)
#include <cmath>

#include "opexpr/expr_reduce.h"
#include "ops/op_attrs.h"
#include "support/error.h"

namespace tessera::ops {

namespace {

using loop::ReduceOp;
using red::f64;
using red::fconst;
using red::is_nan;
using Idx = std::vector<Expr>;

Expr d64(double v) { return fconst(DType::F64, v); }

// ---------------------------------------------------------------- Attention

std::vector<te::Tensor> attention_expr(ExprContext& c) {
  const Node& n = c.node;
  const te::Tensor &Q = c.in(0), &K = c.in(1), &V = c.in(2);
  const DType dt = Q.dtype();
  TESSERA_CHECK(is_float(dt) && K.dtype() == dt && V.dtype() == dt, n.describe(), ": Q, K and V must share a float dtype");
  TESSERA_CHECK(Q.rank() == K.rank() && Q.rank() == V.rank() && (Q.rank() == 3 || Q.rank() == 4), n.describe(),
                ": Q, K and V must all be 3-D or all be 4-D");
  const bool three = Q.rank() == 3;
  const te::Tensor* mask = c.has_input(3) ? &c.in(3) : nullptr;
  const te::Tensor* past_k = c.has_input(4) ? &c.in(4) : nullptr;
  const te::Tensor* past_v = c.has_input(5) ? &c.in(5) : nullptr;
  const te::Tensor* nonpad = c.has_input(6) ? &c.in(6) : nullptr;
  TESSERA_CHECK((past_k == nullptr) == (past_v == nullptr), n.describe(), ": past_key and past_value must be given together");
  const int64_t B = Q.dim(0);
  int64_t Hq, Hkv, Sq, Skv, D, Dv;
  if (!three) {
    Hq = Q.dim(1), Sq = Q.dim(2), D = Q.dim(3), Hkv = K.dim(1), Skv = K.dim(2), Dv = V.dim(3);
  } else {
    Hq = op_attrs(c).i("q_num_heads"), Hkv = op_attrs(c).i("kv_num_heads");
    TESSERA_CHECK(Hq > 0 && Hkv > 0 && Q.dim(2) % Hq == 0 && K.dim(2) % Hkv == 0 && V.dim(2) % Hkv == 0, n.describe(),
                  ": hidden sizes are not divisible by the numbers of heads");
    Sq = Q.dim(1), Skv = K.dim(1), D = Q.dim(2) / Hq, Dv = V.dim(2) / Hkv;
  }
  TESSERA_CHECK(Hq > 0 && Hkv > 0 && Hq % Hkv == 0, n.describe(), ": ", Hq, " query heads cannot be grouped over ", Hkv,
                " key/value heads");
  const int64_t P = past_k ? past_k->dim(2) : 0, T = P + Skv, group = Hq / Hkv;
  const bool causal = op_attrs(c).i("is_causal") != 0;
  const double scale = n.has_attr("scale") ? op_attrs(c).f("scale") : 1.0 / std::sqrt(static_cast<double>(D));
  const double softcap = op_attrs(c).f("softcap");
  const int64_t mode = op_attrs(c).i("qk_matmul_output_mode");
  TESSERA_CHECK(mode >= 0 && mode <= 3, n.describe(), ": qk_matmul_output_mode must be 0..3, got ", mode);

  // Element (b, h, s, d) of a Q/K/V input in either layout.
  auto qkv = [&](const te::Tensor& t, int64_t dh, const Expr& b, const Expr& h, const Expr& s, const Expr& d) {
    return three ? t({b, s, h * dh + d}) : t({b, h, s, d});
  };
  auto present = [&](const te::Tensor& cur, const te::Tensor* past, int64_t dh, const std::string& nm) {
    return te::compute({B, Hkv, T, dh}, [&](const Indices& i) {
      Expr cv = qkv(cur, dh, i[0], i[1], i[2] - P, i[3]);
      if (!past) return cv;
      return te::if_then_else(i[2] < P, (*past)({i[0], i[1], i[2], i[3]}), cv);
    }, c.stage_name(nm), te::OpClass::Elementwise);
  };
  te::Tensor pk = present(K, past_k, D, "present_key"), pv = present(V, past_v, Dv, "present_value");

  const Dims sdims{B, Hq, Sq, T};
  te::Tensor dot = te::compute(sdims, [&](const Indices& i) {
    loop::ReduceAxis r = te::reduce_axis(D, "r");
    Expr kh = group == 1 ? Expr(i[1]) : i[1] / group;
    return loop::reduce(ReduceOp::Sum, f64(qkv(Q, D, i[0], i[1], i[2], r.var)) * f64(pk({i[0], kh, i[3], r.var})), {r});
  }, c.stage_name("dot"), te::OpClass::Reduce);
  // Mask dims right-aligned against [B, Hq, Sq, T].
  Dims md(4, 1);
  if (mask) {
    TESSERA_CHECK(mask->rank() >= 1 && mask->rank() <= 4, n.describe(), ": attn_mask must have rank 1 to 4");
    for (int i = 0; i < mask->rank(); ++i) md[static_cast<size_t>(4 - mask->rank() + i)] = mask->dim(i);
    TESSERA_CHECK(md[3] <= T, n.describe(), ": attn_mask last dim exceeds the total sequence length");
  }
  auto raw_at = [&](const Idx& i) { return dot(i) * d64(scale); };
  auto capped_at = [&](const Idx& i) {
    Expr r = raw_at(i);
    return softcap > 0 ? d64(softcap) * loop::call("tanh", {r / d64(softcap)}) : r;
  };
  te::Tensor biased = red::materialize(sdims, [&](const Idx& i) {
    Expr bias = d64(0);
    if (mask) {
      Idx mi;
      for (int d = 4 - mask->rank(); d < 4; ++d) mi.push_back(md[static_cast<size_t>(d)] == 1 ? loop::int_imm(0) : i[static_cast<size_t>(d)]);
      Expr mv = (*mask)(mi);
      mv = mask->dtype() == DType::Bool ? loop::select(mv, d64(0), d64(-INFINITY)) : f64(mv);
      Expr term = md[3] < T ? te::if_then_else(i[3] < md[3], mv, d64(-INFINITY)) : mv;
      bias = bias + term;
    }
    if (causal) {
      Expr offset = loop::int_imm(P);
      if (!past_k && nonpad) offset = cast_to((*nonpad)({i[0]}), DType::I64) - Sq;
      bias = bias + loop::select(i[3] > i[2] + offset, d64(-INFINITY), d64(0));
    }
    if (nonpad) bias = bias + loop::select(i[3] >= cast_to((*nonpad)({i[0]}), DType::I64), d64(-INFINITY), d64(0));
    return capped_at(i) + bias;
  }, c.stage_name("biased"), "attention");
  red::AxisPlan row{sdims, {3}, true};
  te::Tensor mx = red::reduce_stage(row, ReduceOp::Max, [&](const Idx& i) {
    Expr v = biased(i);
    return loop::select(is_nan(v), d64(-INFINITY), v);
  }, c.stage_name("max"));
  auto e_at = [&](const Idx& i) {
    Expr m = mx(row.stat_index(i));
    return loop::select(loop::eq(m, d64(-INFINITY)), d64(0), loop::call("exp", {biased(i) - m}));
  };
  te::Tensor sum = red::reduce_stage(row, ReduceOp::Sum, e_at, c.stage_name("sum"));
  te::Tensor prob = red::materialize(sdims, [&](const Idx& i) {
    Expr s = sum(row.stat_index(i));
    Expr e = e_at(i);
    return loop::select(s > d64(0), e / s, e);
  }, c.stage_name("prob"), "softmax");
  te::Tensor yacc = te::compute({B, Hq, Sq, Dv}, [&](const Indices& i) {
    loop::ReduceAxis r = te::reduce_axis(T, "j");
    Expr kh = group == 1 ? Expr(i[1]) : i[1] / group;
    return loop::reduce(ReduceOp::Sum, prob({i[0], i[1], i[2], r.var}) * f64(pv({i[0], kh, r.var, i[3]})), {r});
  }, c.stage_name("pv"), te::OpClass::Reduce);
  std::vector<te::Tensor> outs;
  Dims yd = three ? Dims{B, Sq, Hq * Dv} : Dims{B, Hq, Sq, Dv};
  outs.push_back(te::compute(yd, [&](const Indices& i) {
    Expr v = three ? yacc({i[0], i[2] / Dv, i[1], i[2] % Dv}) : yacc(as_exprs(i));
    return cast_to(v, dt);
  }, c.stage_name(""), "attention"));
  if (c.num_outputs() > 1) outs.push_back(pk);
  if (c.num_outputs() > 2) outs.push_back(pv);
  if (c.num_outputs() > 3)
    outs.push_back(te::compute(sdims, [&](const Indices& ii) {
      Idx i = as_exprs(ii);
      Expr v = mode == 0 ? raw_at(i) : mode == 1 ? capped_at(i) : mode == 2 ? Expr(biased(i)) : Expr(prob(i));
      return cast_to(v, dt);
    }, c.stage_name("qk"), "attention"));
  return outs;
}

// ---------------------------------------------------------------- RotaryEmbedding

std::vector<te::Tensor> rotary_expr(ExprContext& c) {
  const Node& n = c.node;
  const te::Tensor &X = c.in(0), &Cc = c.in(1), &Sc = c.in(2);
  const te::Tensor* pos = c.has_input(3) ? &c.in(3) : nullptr;
  TESSERA_CHECK(X.rank() == 3 || X.rank() == 4, n.describe(), ": X must be 3-D or 4-D");
  TESSERA_CHECK(Cc.shape() == Sc.shape(), n.describe(), ": cos_cache and sin_cache shapes differ");
  const bool four = X.rank() == 4;
  const int64_t B = X.dim(0);
  int64_t H, Sq, D;
  if (four) {
    H = X.dim(1), Sq = X.dim(2), D = X.dim(3);
  } else {
    H = op_attrs(c).i("num_heads");
    TESSERA_CHECK(H > 0 && X.dim(2) % H == 0, n.describe(), ": 3-D input needs a num_heads dividing the hidden size");
    Sq = X.dim(1), D = X.dim(2) / H;
  }
  int64_t rot = op_attrs(c).i("rotary_embedding_dim");
  if (rot == 0) rot = D;
  TESSERA_CHECK(rot > 0 && rot <= D && rot % 2 == 0, n.describe(), ": rotary_embedding_dim ", rot,
                " must be even and at most the head size ", D);
  const int64_t half = rot / 2;
  const bool inter = op_attrs(c).i("interleaved") != 0;
  if (pos)
    TESSERA_CHECK(Cc.rank() == 2 && Cc.dim(1) >= half && pos->shape() == Dims({B, Sq}), n.describe(),
                  ": with position_ids the caches must be [max_position, >= ", half, "]");
  else
    TESSERA_CHECK(Cc.rank() == 3 && Cc.dim(0) == B && Cc.dim(1) == Sq && Cc.dim(2) >= half, n.describe(),
                  ": without position_ids the caches must be [", B, ", ", Sq, ", >= ", half, "]");
  return {te::compute(X.shape(), [&](const Indices& ii) {
    Idx i = as_exprs(ii);
    Expr b = i[0], s = four ? i[2] : i[1], d = four ? i[3] : i[2] % D;
    // x at head position dd of the same head.
    auto xat = [&](const Expr& dd) {
      Idx j = i;
      if (four) j[3] = dd;
      else j[2] = i[2] - d + dd;
      return f64(X(j));
    };
    auto cache = [&](const te::Tensor& t, const Expr& k) {
      if (!pos) return f64(t({b, s, k}));
      Expr row = cast_to((*pos)({b, s}), DType::I64);
      return f64(te::if_then_else(row >= 0 && row < t.dim(0), t({row, k}), fconst(t.dtype(), 0)));
    };
    Expr in_rot = d < rot;
    Expr first = inter ? loop::eq(d % 2, loop::int_imm(0)) : d < half;
    Expr k = inter ? d / 2 : loop::select(first, d, d - half);
    Expr kc = loop::select(in_rot, k, loop::int_imm(0));  // a safe cache column outside the rotated part
    Expr i1 = inter ? 2 * kc : kc, i2 = inter ? 2 * kc + 1 : kc + half;
    Expr co = cache(Cc, kc), si = cache(Sc, kc);
    Expr x1 = xat(loop::select(in_rot, i1, d)), x2 = xat(loop::select(in_rot, i2, d));
    Expr y = loop::select(first, co * x1 - si * x2, si * x1 + co * x2);
    return cast_to(loop::select(in_rot, y, f64(X(i))), X.dtype());
  }, c.stage_name(""), "rotary")};
}

// ---------------------------------------------------------------- LinearAttention

// The recurrence over time as an extern stage (loop IR) with the per-KV-head
// state in a double buffer, step for step as linear_attention.cpp.
std::vector<te::Tensor> linear_attention_expr(ExprContext& c) {
  const Node& n = c.node;
  const std::string rs = op_attrs(c).s("update_rule");
  TESSERA_CHECK(rs == "linear" || rs == "gated" || rs == "delta" || rs == "gated_delta", n.describe(),
                ": update_rule must be 'linear', 'gated', 'delta' or 'gated_delta', got '", rs, "'");
  const bool decay = rs == "gated" || rs == "gated_delta", use_beta = rs == "delta" || rs == "gated_delta";
  const int64_t Hq = op_attrs(c).i("q_num_heads"), Hkv = op_attrs(c).i("kv_num_heads");
  TESSERA_CHECK(Hq > 0 && Hkv > 0 && Hq % Hkv == 0, n.describe(), ": q_num_heads must be a positive multiple of kv_num_heads");
  const te::Tensor &Q = c.in(0), &K = c.in(1), &V = c.in(2);
  const DType dt = Q.dtype();
  TESSERA_CHECK(is_float(dt), n.describe(), ": query must be a float tensor");
  for (int i = 1; i < 6; ++i)
    if (c.has_input(i)) TESSERA_CHECK(c.in(i).dtype() == dt, n.describe(), ": input ", i, " has another dtype");
  TESSERA_CHECK(Q.rank() == 3 && K.rank() == 3 && V.rank() == 3, n.describe(), ": query, key and value must be 3-D");
  const int64_t B = Q.dim(0), T = Q.dim(1), G = Hq / Hkv;
  TESSERA_CHECK(Q.dim(2) % Hq == 0 && V.dim(2) % Hkv == 0, n.describe(), ": hidden sizes are not divisible by the heads");
  const int64_t dk = Q.dim(2) / Hq, dv = V.dim(2) / Hkv;
  TESSERA_CHECK(K.dim(2) == Hkv * dk, n.describe(), ": key hidden size must be kv_num_heads * ", dk);
  TESSERA_CHECK(!decay || c.has_input(4), n.describe(), ": this update_rule needs the decay input");
  TESSERA_CHECK(!use_beta || c.has_input(5), n.describe(), ": this update_rule needs the beta input");
  const bool past = c.has_input(3);
  if (past) TESSERA_CHECK(c.in(3).shape() == Dims({B, Hkv, dk, dv}), n.describe(), ": past_state has the wrong shape");
  const int64_t gw = decay ? c.in(4).dim(2) : 0, bw = use_beta ? c.in(5).dim(2) : 0;
  if (decay) TESSERA_CHECK(c.in(4).rank() == 3 && (gw == Hkv * dk || gw == Hkv), n.describe(), ": bad decay shape");
  if (use_beta) TESSERA_CHECK(c.in(5).rank() == 3 && (bw == Hkv || bw == 1), n.describe(), ": bad beta shape");
  const float sa = n.has_attr("scale") ? op_attrs(c).f("scale") : 0.0f;  // 0: 1/sqrt(head size)
  const double scale = sa != 0.0f ? static_cast<double>(sa) : 1.0 / std::sqrt(static_cast<double>(dk));
  std::vector<te::Tensor> ins{Q, K, V};
  int ip = past ? static_cast<int>(ins.size()) : -1;
  if (past) ins.push_back(c.in(3));
  int ig = decay ? static_cast<int>(ins.size()) : -1;
  if (decay) ins.push_back(c.in(4));
  int ib = use_beta ? static_cast<int>(ins.size()) : -1;
  if (use_beta) ins.push_back(c.in(5));
  const bool want_state = c.num_outputs() > 1;
  const std::string base = c.stage_name("");
  auto build = [=](const std::vector<loop::Buffer>& in, const std::vector<loop::Buffer>& out) -> loop::Stmt {
    using loop::ForKind;
    using loop::Stmt;
    using loop::Var;
    const int64_t ssize = B * Hkv * dk * dv;
    loop::Buffer S(base + ".state", DType::F64, {ssize}), R(base + ".ret", DType::F64, {std::max<int64_t>(dv, 1)}),
        A(base + ".acc", DType::F64, {1});
    Var e("e"), b("b"), t("t"), hk("hk"), i("i"), j("j"), gq("gq"), i2("i2"), j2("j2"), i3("i3"), j3("j3"), i4("i4"),
        j4("j4"), e2("e2");
    Var ev("ev", {DType::F64, 1}), bb("bb", {DType::F64, 1});
    auto I = [](int64_t v) { return loop::int_imm(v); };
    auto ld = [](const loop::Buffer& buf, Expr at) { return f64(loop::load(buf, std::move(at))); };
    auto loop_ = [&](const Var& v, int64_t ext, Stmt body) { return loop::for_loop(v, I(0), I(ext), ForKind::Serial, body); };
    Expr z = I(0);
    Stmt init = loop_(e, ssize, loop::store(S, past ? ld(in[static_cast<size_t>(ip)], e) : d64(0), e));
    Expr bt = b * T + t;
    Expr sb = (b * Hkv + hk) * (dk * dv), kb = (bt * Hkv + hk) * dk, vb = (bt * Hkv + hk) * dv;
    std::vector<Stmt> step;
    if (decay) {
      Expr gi = gw == Hkv ? ld(in[static_cast<size_t>(ig)], bt * Hkv + hk) : ld(in[static_cast<size_t>(ig)], kb + i);
      step.push_back(loop_(i, dk, loop::let_stmt(ev, loop::call("exp", {gi}),
          loop_(j, dv, loop::store(S, loop::load(S, sb + i * dv + j) * ev, sb + i * dv + j)))));
    }
    if (use_beta) {
      Expr bi = ld(in[static_cast<size_t>(ib)], bt * bw + (bw == 1 ? z : Expr(hk)));
      Stmt ret = loop_(j2, dv, loop::block({
          loop::store(A, d64(0), z),
          loop_(i2, dk, loop::store(A, loop::load(A, z) + loop::load(S, sb + i2 * dv + j2) * ld(in[1], kb + i2), z)),
          loop::store(R, bb * (ld(in[2], vb + j2) - loop::load(A, z)), j2)}));
      Stmt upd = loop_(i3, dk, loop_(j3, dv, loop::store(S, loop::load(S, sb + i3 * dv + j3) +
                                                                 ld(in[1], kb + i3) * loop::load(R, j3), sb + i3 * dv + j3)));
      step.push_back(loop::let_stmt(bb, bi, loop::block({ret, upd})));
    } else {
      step.push_back(loop_(i3, dk, loop_(j3, dv, loop::store(S, loop::load(S, sb + i3 * dv + j3) +
                                                                    ld(in[1], kb + i3) * ld(in[2], vb + j3), sb + i3 * dv + j3))));
    }
    Expr hq = hk * G + gq;
    Expr qb = (bt * Hq + hq) * dk, ob = (bt * Hq + hq) * dv;
    step.push_back(loop_(gq, G, loop_(j4, dv, loop::block({
        loop::store(A, d64(0), z),
        loop_(i4, dk, loop::store(A, loop::load(A, z) + ld(in[0], qb + i4) * loop::load(S, sb + i4 * dv + j4), z)),
        loop::store(out[0], cast_to(d64(scale) * loop::load(A, z), dt), ob + j4)}))));
    Stmt body = loop::block({init, loop_(b, B, loop_(t, T, loop_(hk, Hkv, loop::block(step))))});
    if (want_state) body = loop::block({body, loop_(e2, ssize, loop::store(out[1], cast_to(loop::load(S, e2), dt), e2))});
    body = loop::allocate(A, I(1), body);
    body = loop::allocate(R, I(std::max<int64_t>(dv, 1)), body);
    return loop::allocate(S, I(std::max<int64_t>(ssize, 1)), body);
  };
  std::vector<Dims> shapes{{B, T, Hq * dv}};
  std::vector<DType> types{dt};
  if (want_state) {
    shapes.push_back({B, Hkv, dk, dv});
    types.push_back(dt);
  }
  return te::extern_stage(shapes, types, ins, build, base, "linear_attention");
}

// ---------------------------------------------------------------- FlexAttention

std::vector<te::Tensor> flex_attention_expr(ExprContext& c) {
  const Node& n = c.node;
  TESSERA_CHECK(!n.has_attr("score_mod") && !n.has_attr("prob_mod"), n.describe(),
                ": score_mod / prob_mod subgraphs are not supported by the compiled kernel");
  const te::Tensor &Q = c.in(0), &K = c.in(1), &V = c.in(2);
  const DType dt = Q.dtype();
  TESSERA_CHECK(Q.rank() == 4 && K.rank() == 4 && V.rank() == 4 && K.dtype() == dt && V.dtype() == dt && is_float(dt),
                n.describe(), ": Q, K and V must be 4-D float tensors of one type");
  const int64_t B = Q.dim(0), Hq = Q.dim(1), L = Q.dim(2), E = Q.dim(3), Hkv = K.dim(1), S = K.dim(2), Ev = V.dim(3);
  TESSERA_CHECK(K.dim(3) == E && V.dim(1) == Hkv && V.dim(2) == S && Hkv > 0 && Hq % Hkv == 0, n.describe(),
                ": Q, K and V shapes do not agree");
  const int64_t G = Hq / Hkv;
  const float sa = n.has_attr("scale") ? op_attrs(c).f("scale") : 0.0f;  // 0: 1/sqrt(head size)
  const double scale = n.has_attr("scale") && sa != 0.0f ? static_cast<double>(sa) : 1.0 / std::sqrt(static_cast<double>(E));
  const Dims sd{B, Hq, L, S};
  auto kh = [&](const Expr& h) { return G == 1 ? h : h / G; };
  te::Tensor dot = te::compute(sd, [&](const Indices& i) {
    loop::ReduceAxis r = te::reduce_axis(E, "r");
    return loop::reduce(ReduceOp::Sum, f64(Q({i[0], i[1], i[2], r.var})) * f64(K({i[0], kh(i[1]), i[3], r.var})), {r});
  }, c.stage_name("dot"), te::OpClass::Reduce);
  auto score = [&](const Idx& i) { return dot(i) * d64(scale); };
  red::AxisPlan row{sd, {3}, true};
  te::Tensor mx = red::reduce_stage(row, ReduceOp::Max, [&](const Idx& i) {
    Expr v = score(i);
    return loop::select(is_nan(v), d64(-INFINITY), v);
  }, c.stage_name("max"));
  auto e_at = [&](const Idx& i) { return loop::call("exp", {score(i) - mx(row.stat_index(i))}); };
  te::Tensor sum = red::reduce_stage(row, ReduceOp::Sum, e_at, c.stage_name("sum"));
  te::Tensor prob = red::materialize(sd, [&](const Idx& i) { return e_at(i) / sum(row.stat_index(i)); },
                                     c.stage_name("prob"), "softmax");
  te::Tensor y = te::compute({B, Hq, L, Ev}, [&](const Indices& i) {
    loop::ReduceAxis r = te::reduce_axis(S, "j");
    return loop::reduce(ReduceOp::Sum, prob({i[0], i[1], i[2], r.var}) * f64(V({i[0], kh(i[1]), r.var, i[3]})), {r});
  }, c.stage_name(dt == DType::F64 ? "" : "acc"), te::OpClass::Reduce);
  if (dt == DType::F64) return {y};
  return {te::compute(y.shape(), [&](const Indices& i) { return cast_to(y(as_exprs(i)), dt); }, c.stage_name(""),
                      te::OpClass::Elementwise)};
}

// ---------------------------------------------------------------- CausalConvWithState

std::vector<te::Tensor> causal_conv_expr(ExprContext& c) {
  const Node& n = c.node;
  const std::string act = op_attrs(c).s("activation");
  TESSERA_CHECK(act == "none" || act == "silu" || act == "swish", n.describe(), ": bad activation '", act, "'");
  const bool silu = act != "none";
  const te::Tensor &X = c.in(0), &W = c.in(1);
  const DType dt = X.dtype();
  TESSERA_CHECK(X.rank() == 3 && is_float(dt), n.describe(), ": input must be a 3-D float tensor");
  const int64_t B = X.dim(0), C = X.dim(1), L = X.dim(2);
  TESSERA_CHECK(W.rank() == 3 && W.dim(0) == C && W.dim(1) == 1 && W.dim(2) >= 1, n.describe(), ": weight must be [", C,
                ", 1, k]");
  const int64_t K = W.dim(2), S = K - 1;
  const te::Tensor* bias = c.has_input(2) ? &c.in(2) : nullptr;
  const te::Tensor* past = c.has_input(3) ? &c.in(3) : nullptr;
  if (past) TESSERA_CHECK(past->shape() == Dims({B, C, S}), n.describe(), ": past_state must be [", B, ", ", C, ", ", S, "]");
  // The sequence past ++ x at position p.
  auto seq = [&](const Expr& b, const Expr& ch, const Expr& p) {
    Expr xv = f64(X({b, ch, p - S}));
    if (S == 0) return xv;
    Expr pv = past ? f64((*past)({b, ch, p})) : d64(0);
    return te::if_then_else(p < S, pv, xv);
  };
  te::Tensor acc = te::compute({B, C, L}, [&](const Indices& i) {
    loop::ReduceAxis r = te::reduce_axis(K, "k");
    Expr init = bias ? f64((*bias)({i[1]})) : d64(0);
    return loop::reduce(ReduceOp::Sum, f64(W({i[1], loop::int_imm(0), r.var})) * seq(i[0], i[1], i[2] + r.var), {r},
                        Expr(), init);
  }, c.stage_name("acc"), te::OpClass::Reduce);
  std::vector<te::Tensor> outs{te::compute({B, C, L}, [&](const Indices& i) {
    Expr v = acc(as_exprs(i));
    if (silu) v = v / (d64(1) + loop::call("exp", {-v}));
    return cast_to(v, dt);
  }, c.stage_name(""), te::OpClass::Elementwise)};
  if (c.num_outputs() > 1)
    outs.push_back(te::compute({B, C, S}, [&](const Indices& i) { return cast_to(seq(i[0], i[1], i[2] + L), dt); },
                               c.stage_name("state"), te::OpClass::Elementwise));
  return outs;
}

}  // namespace

void register_attention_exprs(ExprRegistry& r) {
  r.set_expr("Attention", "", attention_expr);
  r.set_expr("RotaryEmbedding", "", rotary_expr);
  r.set_expr("LinearAttention", "", linear_attention_expr);
  r.set_expr("FlexAttention", "ai.onnx.preview", flex_attention_expr);
  r.set_expr("CausalConvWithState", "", causal_conv_expr);
}

}  // namespace tessera::ops
