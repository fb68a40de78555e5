// Tensor expressions of the recurrent nets RNN, GRU and LSTM: one extern
// stage whose loop IR runs the time loop (per direction and batch row, up to
// that row's sequence length) with the gate GEMVs inside, in f64 as the
// reference. Supports every direction, activation (with alpha / beta), clip,
// GRU's linear_before_reset, LSTM peepholes and input_forget, sequence_lens,
// initial states, both layouts and any subset of the outputs.
#include <algorithm>

#include "opexpr/expr_misc.h"
#include "ops/op_attrs.h"
#include "ops/rnn_common.h"
#include "support/error.h"

namespace tessera::ops {

namespace {

using loop::Buffer;
using loop::Stmt;
using loop::Var;
using misc::f64;
using misc::serial;
using misc::to_f64;

using Cell = RnnCell;
using Activation = RnnActivation;

// log1p(u) for u >= 0, accurate for small u: u * log(w) / (w - 1), w = 1 + u.
Expr log1p(const Expr& u) {
  Var uv("u", u.type());
  Var w("w1p", u.type());
  Expr body = loop::select(loop::eq(w, 1.0), Expr(uv), loop::call("log", {w}) * uv / (w - f64(1.0)));
  return loop::let(uv, u, loop::let(w, f64(1.0) + uv, body));
}

// The activation applied to the f64 value x (bound once).
Expr activate(const Activation& f, const Expr& x0) {
  Var x("ax", x0.type());
  const Expr a = f64(f.alpha), b = f64(f.beta), zero = f64(0.0), one = f64(1.0);
  Expr y;
  if (f.name == "sigmoid") y = one / (one + loop::call("exp", {zero - x}));
  else if (f.name == "tanh") y = loop::call("tanh", {x});
  else if (f.name == "relu") y = loop::select(x > zero, Expr(x), zero);
  else if (f.name == "affine") y = a * x + b;
  else if (f.name == "leakyrelu") y = loop::select(x >= zero, Expr(x), a * x);
  else if (f.name == "thresholdedrelu") y = loop::select(x > a, Expr(x), zero);
  else if (f.name == "scaledtanh") y = a * loop::call("tanh", {b * x});
  else if (f.name == "hardsigmoid") {
    Expr v = a * x + b;
    Var vv("hs", v.type());
    y = loop::let(vv, v, loop::select(vv < zero, zero, loop::select(one < vv, one, Expr(vv))));
  } else if (f.name == "elu") y = loop::select(x >= zero, Expr(x), a * (loop::call("exp", {x}) - one));
  else if (f.name == "softsign") y = x / (one + loop::call("abs", {x}));
  else  // softplus
    y = loop::select(x > zero, x + log1p(loop::call("exp", {zero - x})), log1p(loop::call("exp", {x})));
  return loop::let(x, x0, y);
}


ExprFn rnn_expr(Cell cell) {
  return [cell](ExprContext& c) {
    const Node& n = c.node;
    const te::Tensor& X = c.in(0);
    const te::Tensor& Wt = c.in(1);
    const te::Tensor& Rt = c.in(2);
    TESSERA_CHECK(X.rank() == 3 && Wt.rank() == 3 && Rt.rank() == 3, n.describe(), ": X, W and R must be 3-D");
    const DType dt = X.dtype();
    const int64_t layout = c.opset >= 14 ? op_attrs(c).i("layout") : 0;
    const std::string dir = op_attrs(c).s("direction");
    TESSERA_CHECK(dir == "forward" || dir == "reverse" || dir == "bidirectional", n.describe(),
                  ": unsupported direction '", dir, "'");
    const int64_t D = dir == "bidirectional" ? 2 : 1;
    const bool reverse_only = dir == "reverse";
    const int64_t G = rnn_num_gates(cell);
    const int64_t S = layout ? X.dim(1) : X.dim(0);
    const int64_t Bt = layout ? X.dim(0) : X.dim(1);
    const int64_t I = X.dim(2);
    const int64_t H = n.has_attr("hidden_size") ? op_attrs(c).i("hidden_size") : Rt.dim(2);
    TESSERA_CHECK(H > 0, n.describe(), ": hidden_size must be positive");
    TESSERA_CHECK(Wt.shape() == Dims({D, G * H, I}) && Rt.shape() == Dims({D, G * H, H}), n.describe(),
                  ": W and R must be [", D, ", ", G * H, ", ", I, "] and [", D, ", ", G * H, ", ", H, "]");
    // Optional inputs: absent or empty means the default.
    auto opt = [&](int i) { return c.has_input(i) && numel_of(c.in(i).shape()) > 0; };
    const bool has_b = opt(3), has_len = opt(4), has_h0 = opt(5);
    const bool has_c0 = cell == Cell::LSTM && opt(6), has_p = cell == Cell::LSTM && opt(7);
    const Dims state_dims = layout ? Dims{Bt, D, H} : Dims{D, Bt, H};
    if (has_b) TESSERA_CHECK(c.in(3).shape() == Dims({D, 2 * G * H}), n.describe(), ": B must be [", D, ", ", 2 * G * H, "]");
    if (has_len) TESSERA_CHECK(numel_of(c.in(4).shape()) == Bt, n.describe(), ": sequence_lens must have ", Bt, " values");
    if (has_h0) TESSERA_CHECK(c.in(5).shape() == state_dims, n.describe(), ": initial_h must be ", dims_to_string(state_dims));
    if (has_c0) TESSERA_CHECK(c.in(6).shape() == state_dims, n.describe(), ": initial_c must be ", dims_to_string(state_dims));
    if (has_p) TESSERA_CHECK(c.in(7).shape() == Dims({D, 3 * H}), n.describe(), ": P must be [", D, ", ", 3 * H, "]");
    const std::vector<Activation> acts = read_rnn_activations(op_attrs(c), cell, D);
    const bool has_clip = n.has_attr("clip");
    const double clip = has_clip ? op_attrs(c).f("clip") : 0.0;
    TESSERA_CHECK(!has_clip || clip > 0, n.describe(), ": clip must be positive");
    const bool lbr = cell == Cell::GRU && op_attrs(c).i("linear_before_reset") != 0;
    const bool input_forget = cell == Cell::LSTM && op_attrs(c).i("input_forget") != 0;
    const int nout = c.num_outputs();

    // Extern inputs: X, W, R, then the present optional ones (positions recorded).
    std::vector<te::Tensor> ins = {X, Wt, Rt};
    int ib = -1, ilen = -1, ih0 = -1, ic0 = -1, ip = -1;
    auto add = [&](bool has, int i, int& pos) {
      if (!has) return;
      pos = static_cast<int>(ins.size());
      ins.push_back(c.in(i));
    };
    add(has_b, 3, ib);
    add(has_len, 4, ilen);
    add(has_h0, 5, ih0);
    add(has_c0, 6, ic0);
    add(has_p, 7, ip);
    std::vector<Dims> shapes;
    std::vector<DType> dtypes;
    for (int o = 0; o < nout; ++o) {
      shapes.push_back(c.out(o).dims);
      dtypes.push_back(dt);
    }

    auto build = [=](const std::vector<Buffer>& in, const std::vector<Buffer>& out) {
      const DType F = DType::F64;
      Buffer h("rnn_h", F, {H}), cs("rnn_c", F, {H}), nh("rnn_nh", F, {H}), nc("rnn_nc", F, {H}),
          xw("rnn_xw", F, {G * H}), hr("rnn_hr", F, {G * H}), rg("rnn_rgate", F, {H}), acc("rnn_acc", F, {1});
      auto ld = [](const Buffer& b, const Expr& i) { return loop::load(b, i); };
      auto ldf = [](const Buffer& b, const Expr& i) { return to_f64(loop::load(b, i)); };
      auto cl = [&](const Expr& v) {
        if (!has_clip) return v;
        Var cv("clipv", v.type());
        return loop::let(cv, v, loop::select(cv < f64(-clip), f64(-clip), loop::select(f64(clip) < cv, f64(clip), Expr(cv))));
      };
      auto state_index = [&](int64_t d, const Expr& b, const Expr& k) {
        return layout ? (b * D + d) * H + k : (b + d * Bt) * H + k;
      };
      auto x_index = [&](const Expr& t, const Expr& b, const Expr& i) {
        return layout ? (b * S + t) * I + i : (t * Bt + b) * I + i;
      };
      auto y_index = [&](const Expr& t, int64_t d, const Expr& b, const Expr& k) {
        return layout ? ((b * S + t) * D + d) * H + k : ((t * D + d) * Bt + b) * H + k;
      };
      const Expr zero = f64(0.0), one = f64(1.0);
      std::vector<Stmt> top;
      // Y is zero past each row's sequence length.
      if (nout > 0) {
        Var e("e");
        top.push_back(serial(e, numel_of(shapes[0]), loop::store(out[0], cast_to(zero, dt), e)));
      }
      for (int64_t d = 0; d < D; ++d) {
        const bool backward = reverse_only || d == 1;
        const Activation* f = &acts[static_cast<size_t>(d * rnn_num_activations(cell))];
        Var b("b"), k("k"), step("step"), g("g"), i("i"), j("j");
        Expr wofs = loop::int_imm(d * G * H * I), rofs = loop::int_imm(d * G * H * H);
        auto wb = [&](const Expr& e) { return ib < 0 ? zero : ldf(in[static_cast<size_t>(ib)], e + d * 2 * G * H); };
        auto rb = [&](const Expr& e) {
          return ib < 0 ? zero : ldf(in[static_cast<size_t>(ib)], e + (d * 2 * G * H + G * H));
        };
        auto pd = [&](const Expr& e) { return ip < 0 ? zero : ldf(in[static_cast<size_t>(ip)], e + d * 3 * H); };
        std::vector<Stmt> row;
        // Initial state.
        row.push_back(serial(k, H, loop::block({
            loop::store(h, ih0 < 0 ? zero : ldf(in[static_cast<size_t>(ih0)], state_index(d, b, k)), k),
            loop::store(cs, ic0 < 0 ? zero : ldf(in[static_cast<size_t>(ic0)], state_index(d, b, k)), k)})));
        Var len("len"), t("t");
        Expr len_v = ilen < 0 ? loop::int_imm(S)
                              : loop::min(loop::max(cast_to(ld(in[static_cast<size_t>(ilen)], b), DType::I64), int64_t{0}), S);
        std::vector<Stmt> st;
        // xw = W x + Wb ; hr = R h + Rb, per gate row.
        st.push_back(serial(g, G * H, loop::block({
            loop::store(xw, wb(g), g),
            serial(i, I, loop::store(xw, ld(xw, g) + ldf(in[1], wofs + g * I + i) * ldf(in[0], x_index(t, b, i)), g)),
            loop::store(hr, rb(g), g),
            serial(j, H, loop::store(hr, ld(hr, g) + ldf(in[2], rofs + g * H + j) * ld(h, j), g))})));
        auto at = [&](const Buffer& v, int gate) { return ld(v, k + gate * H); };
        if (cell == Cell::GRU)
          st.push_back(serial(j, H, loop::store(rg, activate(f[0], cl(ld(xw, j + H) + ld(hr, j + H))), j)));
        std::vector<Stmt> upd;
        if (cell == Cell::RNN) {
          upd.push_back(loop::store(nh, activate(f[0], cl(at(xw, 0) + at(hr, 0))), k));
        } else if (cell == Cell::GRU) {
          const loop::Type f64t{DType::F64, 1};
          Var z("z", f64t), cand("cand", f64t);
          Expr cand_v;
          std::vector<Stmt> pre;
          if (lbr) {
            cand_v = activate(f[1], cl(at(xw, 2) + ld(rg, k) * at(hr, 2)));
          } else {
            // R_h (r . h) + Rb_h
            pre.push_back(loop::store(acc, rb(k + 2 * H), loop::int_imm(0)));
            pre.push_back(serial(j, H, loop::store(acc, ld(acc, loop::int_imm(0)) +
                                                            (ldf(in[2], rofs + (k + 2 * H) * H + j) * ld(rg, j)) * ld(h, j),
                                                   loop::int_imm(0))));
            cand_v = activate(f[1], cl(at(xw, 2) + ld(acc, loop::int_imm(0))));
          }
          Stmt s = loop::store(nh, (one - z) * cand + z * ld(h, k), k);
          s = loop::let_stmt(cand, cand_v, s);
          s = loop::let_stmt(z, activate(f[0], cl(at(xw, 0) + at(hr, 0))), s);
          pre.push_back(s);
          upd.push_back(loop::block(pre));
        } else {
          const loop::Type f64t{DType::F64, 1};
          Var ig("ig", f64t), fg("fg", f64t), cc("cc", f64t), ncv("ncv", f64t), og("og", f64t);
          Expr c_old = ld(cs, k);
          Expr ig_v = activate(f[0], cl(at(xw, 0) + at(hr, 0) + pd(k) * c_old));
          Expr fg_v = input_forget ? one - ig : activate(f[0], cl(at(xw, 2) + at(hr, 2) + pd(k + 2 * H) * c_old));
          Expr cc_v = activate(f[1], cl(at(xw, 3) + at(hr, 3)));
          Expr og_v = activate(f[0], cl(at(xw, 1) + at(hr, 1) + pd(k + H) * ncv));
          Stmt s = loop::block({loop::store(nc, ncv, k), loop::store(nh, og * activate(f[2], ncv), k)});
          s = loop::let_stmt(og, og_v, s);
          s = loop::let_stmt(ncv, fg * c_old + ig * cc, s);
          s = loop::let_stmt(cc, cc_v, s);
          s = loop::let_stmt(fg, fg_v, s);
          s = loop::let_stmt(ig, ig_v, s);
          upd.push_back(s);
        }
        st.push_back(serial(k, H, loop::block(upd)));
        std::vector<Stmt> copy = {loop::store(h, ld(nh, k), k)};
        if (cell == Cell::LSTM) copy.push_back(loop::store(cs, ld(nc, k), k));
        if (nout > 0) copy.push_back(loop::store(out[0], cast_to(ld(nh, k), dt), y_index(t, d, b, k)));
        st.push_back(serial(k, H, loop::block(copy)));
        Expr t_v = backward ? Expr(len - int64_t{1} - step) : Expr(step);
        row.push_back(loop::let_stmt(len, len_v, serial(step, len, loop::let_stmt(t, t_v, loop::block(st)))));
        // Final states.
        std::vector<Stmt> fin;
        if (nout > 1) fin.push_back(loop::store(out[1], cast_to(ld(h, k), dt), state_index(d, b, k)));
        if (nout > 2) fin.push_back(loop::store(out[2], cast_to(ld(cs, k), dt), state_index(d, b, k)));
        if (!fin.empty()) row.push_back(serial(k, H, loop::block(fin)));
        top.push_back(serial(b, Bt, loop::block(row)));
      }
      Stmt body = loop::block(top);
      for (const Buffer& buf : {h, cs, nh, nc, xw, hr, rg, acc})
        body = loop::allocate(buf, loop::int_imm(numel_of(buf.dims())), body);
      return body;
    };
    return te::extern_stage(shapes, dtypes, ins, build, c.stage_name(n.op_type == "LSTM" ? "lstm" : n.op_type == "GRU" ? "gru" : "rnn"));
  };
}

}  // namespace

void register_misc_rnn_exprs(ExprRegistry& r) {
  r.set_expr("RNN", "", rnn_expr(Cell::RNN));
  r.set_expr("GRU", "", rnn_expr(Cell::GRU));
  r.set_expr("LSTM", "", rnn_expr(Cell::LSTM));
}

}  // namespace tessera::ops
