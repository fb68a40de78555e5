// Tensor expressions of the signal ops: HannWindow / HammingWindow /
// BlackmanWindow, DFT, STFT and MelWeightMatrix. As the reference, values are
// computed in f64 (direct O(n^2) transforms with twiddle angles reduced
// exactly, (k * m) mod n) and rounded to the output type once.
#include <cmath>
#include <numbers>

#include "opexpr/expr_misc.h"
#include "ops/op_attrs.h"
#include "ops/signal.h"
#include "support/error.h"

namespace tessera::ops {

namespace {

using misc::f64;
using misc::to_f64;

int64_t scalar_value(ExprContext& c, int i, const char* what) {
  const Tensor& t = c.value(i);
  TESSERA_CHECK(t.numel() == 1, c.node.describe(), ": ", what, " must be a scalar, got shape ", dims_to_string(t.dims()));
  return t.get_int(0);
}

// ---------------------------------------------------------------- windows

enum class Window { Hann, Hamming, Blackman };

ExprFn window_expr(Window w) {
  return [w](ExprContext& c) {
    const TensorType& out = c.out(0);
    const int64_t size = out.dims.at(0);
    const bool periodic = op_attrs(c).i("periodic") != 0;
    const double N = static_cast<double>(periodic ? size : size - 1);
    return std::vector<te::Tensor>{te::compute(out.dims, [&](const Indices& i) {
      Expr a = (f64(2.0 * std::numbers::pi) * to_f64(i[0])) / f64(N);
      Expr y;
      if (w == Window::Hann) y = f64(0.5) - f64(0.5) * loop::call("cos", {a});
      else if (w == Window::Hamming) y = f64(25.0 / 46.0) - f64(21.0 / 46.0) * loop::call("cos", {a});
      else y = (f64(0.42) - f64(0.5) * loop::call("cos", {a})) + f64(0.08) * loop::call("cos", {f64(2.0) * a});
      return cast_to(y, out.dtype);
    }, c.stage_name(""), te::OpClass::Elementwise)};
  };
}

// The angle sign * 2 pi ((k * m) mod n) / n, as the reference's twiddle.
Expr twiddle_angle(const Expr& k, const Expr& m, int64_t n, double sign) {
  Expr r = ((k % n) * (m % n)) % n;
  return (f64(sign * 2.0 * std::numbers::pi) * to_f64(r)) / f64(static_cast<double>(n));
}

int64_t dft_axis(ExprContext& c, int64_t axis, int64_t rank) {
  TESSERA_CHECK(axis >= -rank && axis <= rank - 2 && axis != -1, c.node.describe(), ": axis ", axis,
                " is not a signal axis for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// ---------------------------------------------------------------- DFT

std::vector<te::Tensor> dft_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const int64_t rank = x.rank();
  const bool inverse = op_attrs(c).i("inverse") != 0;
  const bool onesided = op_attrs(c).i("onesided") != 0;
  const bool irfft = inverse && onesided;
  int64_t axis;
  if (c.opset >= 20) axis = dft_axis(c, c.has_input(2) ? scalar_value(c, 2, "axis") : -2, rank);
  else axis = dft_axis(c, op_attrs(c).i("axis"), rank);
  const size_t ax = static_cast<size_t>(axis);
  const int64_t L = x.dim(static_cast<int>(axis));
  int64_t n = irfft ? 2 * (L - 1) : L;
  if (c.has_input(1)) {
    n = scalar_value(c, 1, "dft_length");
    TESSERA_CHECK(n > 0, c.node.describe(), ": dft_length must be positive, got ", n);
  }
  TESSERA_CHECK(n > 0, c.node.describe(), ": empty signal axis");
  const int64_t ci = x.dim(static_cast<int>(rank - 1));
  const TensorType& out = c.out(0);
  const double sign = inverse ? 1.0 : -1.0;
  const int64_t half = n / 2 + 1;
  auto j = te::reduce_axis(n, "j");
  return {te::compute(out.dims, [&](const Indices& i) {
    std::vector<Expr> idx = as_exprs(i);
    Expr k = idx[ax];
    Expr part = idx.back();
    auto read = [&](const Expr& p, int comp) {
      std::vector<Expr> xi = idx;
      xi[ax] = p;
      xi.back() = loop::int_imm(comp);
      return to_f64(x(xi));
    };
    Expr jv = j.var;
    Expr src, valid, conj;
    if (irfft) {
      src = loop::select(jv < half, jv, n - jv);
      valid = src < L && src < half;
      conj = jv >= half;
    } else {
      src = jv;
      valid = jv < L;
    }
    Expr re = te::if_then_else(valid, read(src, 0), f64(0.0));
    Expr im = f64(0.0);
    if (ci == 2) {
      im = te::if_then_else(valid, read(src, 1), f64(0.0));
      if (conj.defined()) im = loop::select(conj, f64(0.0) - im, im);
    }
    Expr a = twiddle_angle(jv, k, n, sign);
    Expr cs = loop::call("cos", {a}), sn = loop::call("sin", {a});
    Expr term = loop::select(loop::eq(part, int64_t{0}), re * cs - im * sn, re * sn + im * cs);
    Expr acc = te::sum(term, {j});
    if (inverse) acc = acc / f64(static_cast<double>(n));
    return cast_to(acc, out.dtype);
  }, c.stage_name(""), "dft")};
}

// ---------------------------------------------------------------- STFT

std::vector<te::Tensor> stft_expr(ExprContext& c) {
  const te::Tensor& s = c.in(0);
  const int64_t step = scalar_value(c, 1, "frame_step");
  const bool has_win = c.has_input(2);
  int64_t fl = -1;
  if (c.has_input(3)) fl = scalar_value(c, 3, "frame_length");
  if (has_win) {
    TESSERA_CHECK(c.in(2).rank() == 1, c.node.describe(), ": window must be 1-D");
    TESSERA_CHECK(fl < 0 || fl == c.in(2).dim(0), c.node.describe(), ": frame_length ", fl,
                  " differs from the window length ", c.in(2).dim(0));
    fl = c.in(2).dim(0);
  }
  TESSERA_CHECK(fl > 0, c.node.describe(), ": frame_length (or a window) is required and must be positive");
  TESSERA_CHECK(step > 0, c.node.describe(), ": frame_step must be positive, got ", step);
  const int64_t ci = s.dim(2);
  const TensorType& out = c.out(0);
  auto j = te::reduce_axis(fl, "j");
  return {te::compute(out.dims, [&](const Indices& i) {
    Expr b = i[0], f = i[1], k = i[2], part = i[3];
    Expr pos = f * step + j.var;
    Expr w = has_win ? to_f64(c.in(2)(Expr(j.var))) : f64(1.0);
    Expr re = to_f64(s(b, pos, int64_t{0})) * w;
    Expr im = ci == 2 ? to_f64(s(b, pos, int64_t{1})) * w : f64(0.0) * w;
    Expr a = twiddle_angle(j.var, k, fl, -1.0);
    Expr cs = loop::call("cos", {a}), sn = loop::call("sin", {a});
    Expr term = loop::select(loop::eq(part, int64_t{0}), re * cs - im * sn, re * sn + im * cs);
    return cast_to(te::sum(term, {j}), out.dtype);
  }, c.stage_name(""), "dft")};
}

// ---------------------------------------------------------------- MelWeightMatrix
//
// The triangle edges (mel + 2 bin indices) depend only on the scalar inputs,
// whose values are compiled in: they are computed here exactly as the
// reference does and stored by a small extern stage; the matrix is an index
// formula of them.

std::vector<te::Tensor> mel_expr(ExprContext& c) {
  const int64_t mel = scalar_value(c, 0, "num_mel_bins");
  const int64_t dft = scalar_value(c, 1, "dft_length");
  const int64_t rate = scalar_value(c, 2, "sample_rate");
  const std::vector<int64_t> fb = mel_bin_edges(c.node, mel, dft, rate, c.value(3), c.value(4));
  const int64_t spec = dft / 2 + 1;
  auto check = [&](int64_t j) {
    TESSERA_CHECK(j >= 0 && j < spec, c.node.describe(), ": mel bin edge ", j, " falls outside the ", spec,
                  " spectrogram bins (upper_edge_hertz above the Nyquist frequency?)");
  };
  for (int64_t i = 0; i < mel; ++i) {
    const int64_t l = fb[static_cast<size_t>(i)], m = fb[static_cast<size_t>(i + 1)], h = fb[static_cast<size_t>(i + 2)];
    if (m == l) check(m);
    else if (l <= m) check(l), check(m);
    if (h > m) check(m), check(h - 1);
  }
  auto edges = te::extern_stage({{mel + 2}}, {DType::I64}, {}, [fb](const std::vector<loop::Buffer>&,
                                                                   const std::vector<loop::Buffer>& o) {
    std::vector<loop::Stmt> st;
    for (size_t i = 0; i < fb.size(); ++i)
      st.push_back(loop::store(o[0], loop::int_imm(fb[i]), loop::int_imm(static_cast<int64_t>(i))));
    return loop::block(st);
  }, c.stage_name("edges"));
  te::Tensor e = edges[0];
  const TensorType& out = c.out(0);
  return {te::compute(out.dims, [&](const Indices& ix) {
    Expr j = ix[0], i = ix[1];
    Expr l = e(i), m = e(i + int64_t{1}), h = e(i + int64_t{2});
    Expr down = to_f64(h - j) / to_f64(h - m);
    Expr up = to_f64(j - l) / to_f64(m - l);
    Expr first = loop::select(loop::eq(m, l), loop::select(loop::eq(j, m), f64(1.0), f64(0.0)),
                              loop::select(j >= l && j <= m, up, f64(0.0)));
    return cast_to(loop::select(h > m && j >= m && j < h, down, first), out.dtype);
  }, c.stage_name(""), te::OpClass::Elementwise)};
}

}  // namespace

void register_misc_signal_exprs(ExprRegistry& r) {
  r.set_expr("HannWindow", "", window_expr(Window::Hann));
  r.set_expr("HammingWindow", "", window_expr(Window::Hamming));
  r.set_expr("BlackmanWindow", "", window_expr(Window::Blackman));
  r.set_expr("DFT", "", dft_expr);
  r.set_expr("STFT", "", stft_expr);
  r.set_expr("MelWeightMatrix", "", mel_expr);
}

}  // namespace tessera::ops
