// Signal processing (opset 17+): HannWindow, HammingWindow, BlackmanWindow,
// DFT (axis attribute in 17, axis input from 20; forward / inverse, onesided,
// and inverse+onesided as a real inverse transform of a half spectrum), STFT
// and MelWeightMatrix. Transforms are direct O(n^2) sums in double with
// exactly reduced twiddle angles.
#include <cmath>
#include <complex>
#include <numbers>

#include "ops/nn_extra.h"
#include "ops/nn_extra_util.h"
#include "ops/op_attrs.h"
#include "ops/signal.h"

namespace tessera {
namespace {

using cplx = std::complex<double>;

// e^{sign * 2 pi i k m / n}, with k*m reduced mod n for accuracy.
cplx twiddle(int64_t k, int64_t m, int64_t n, double sign) {
  int64_t r = (k % n) * (m % n) % n;
  double a = sign * 2.0 * std::numbers::pi * static_cast<double>(r) / static_cast<double>(n);
  return {std::cos(a), std::sin(a)};
}

DType output_datatype(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  int64_t code = attrs.i("output_datatype");
  TESSERA_CHECK(code > 0 && code <= 16 && dtype_supported(static_cast<int32_t>(code)) && code != 8 && code != 9,
                n.describe(), ": unsupported output_datatype ", code);
  return static_cast<DType>(code);
}

// Reads a scalar (or 1-element) integer input.
int64_t scalar_int(const Node& n, const Tensor& t, const char* what) {
  TESSERA_CHECK(t.numel() == 1, n.describe(), ": ", what, " must be a scalar, got shape ", dims_to_string(t.dims()));
  return t.get_int(0);
}

// ---- windows -----------------------------------------------------------------

enum class Window { Hann, Hamming, Blackman };

void infer_window(InferContext& c) {
  TESSERA_CHECK(c.in(0).dtype == DType::I32 || c.in(0).dtype == DType::I64, c.node.describe(),
                ": size must be int32 or int64");
  std::vector<int64_t> size;
  TensorType t{output_datatype(op_attrs(c)), {-1}};
  if (constant_ints(c, 0, size) && size.size() == 1) t.dims = {size[0]};
  c.out(0) = t;
}

std::vector<Tensor> run_window(const KernelContext& c, Window w) {
  const Node& n = c.node;
  const int64_t size = scalar_int(n, c.in(0), "size");
  TESSERA_CHECK(size >= 0, n.describe(), ": size must be non-negative, got ", size);
  const bool periodic = op_attrs(c).i("periodic") != 0;
  const double N = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> v(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    double a = 2.0 * std::numbers::pi * static_cast<double>(i) / N;
    double y;
    if (w == Window::Hann) y = 0.5 - 0.5 * std::cos(a);
    else if (w == Window::Hamming) y = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(a);
    else y = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
    v[static_cast<size_t>(i)] = y;
  }
  return {numeric_tensor(output_datatype(op_attrs(c)), {size}, v)};
}

// ---- DFT ---------------------------------------------------------------------

struct DftParams {
  int64_t axis = -1;        // normalized, -1 unknown
  int64_t length = -1;      // dft_length, -1 when not given / unknown
  bool length_given = false;
  bool inverse = false, onesided = false;
};

// Output dims given the input dims (-1 allowed) and parameters.
Dims dft_out_dims(const Dims& in, const DftParams& p) {
  Dims out = in;
  const bool irfft = p.inverse && p.onesided;
  out.back() = irfft ? 1 : 2;
  auto new_len = [&](int64_t L) -> int64_t {
    int64_t nn = p.length_given ? p.length : (irfft ? (L < 0 ? -1 : 2 * (L - 1)) : L);
    if (nn < 0) return -1;
    if (irfft) return nn;
    return p.onesided ? nn / 2 + 1 : nn;
  };
  if (p.axis >= 0) {
    out[static_cast<size_t>(p.axis)] = new_len(in[static_cast<size_t>(p.axis)]);
  } else if (p.length_given || p.onesided) {
    for (size_t d = 1; d + 1 < out.size(); ++d) out[d] = -1;
  }
  return out;
}

int64_t dft_axis(const Node& n, int64_t axis, int64_t rank) {
  TESSERA_CHECK(axis >= -rank && axis <= rank - 2 && axis != -1, n.describe(), ": axis ", axis,
                " is not a signal axis for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

void infer_dft(InferContext& c) {
  const Node& n = c.node;
  const TensorType& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype), n.describe(), ": input must be a float tensor");
  TESSERA_CHECK(x.rank() >= 2, n.describe(), ": input must have rank >= 2 (last dim 1 or 2)");
  TESSERA_CHECK(x.dims.back() < 0 || x.dims.back() == 1 || x.dims.back() == 2, n.describe(),
                ": input last dim must be 1 (real) or 2 (complex), got ", x.dims.back());
  DftParams p;
  p.inverse = op_attrs(c).i("inverse") != 0;
  p.onesided = op_attrs(c).i("onesided") != 0;
  std::vector<int64_t> v;
  if (c.opset >= 20) {
    if (!c.has_input(2)) p.axis = dft_axis(n, -2, x.rank());
    else if (constant_ints(c, 2, v) && v.size() == 1) p.axis = dft_axis(n, v[0], x.rank());
  } else {
    p.axis = dft_axis(n, op_attrs(c).i("axis"), x.rank());
  }
  if (c.has_input(1)) {
    p.length_given = true;
    if (constant_ints(c, 1, v) && v.size() == 1) p.length = v[0];
  }
  c.out(0) = TensorType{x.dtype, dft_out_dims(x.dims, p)};
}

// Transforms `x` (dims `in`, last dim 1 or 2) along `axis`.
std::vector<double> dft_along(const Dims& in, const std::vector<double>& x, const DftParams& p, Dims& out) {
  out = dft_out_dims(in, p);
  const bool irfft = p.inverse && p.onesided;
  const size_t ax = static_cast<size_t>(p.axis);
  const int64_t L = in[ax];
  const int64_t n = p.length_given ? p.length : (irfft ? 2 * (L - 1) : L);
  const int64_t ci = in.back(), co = out.back();
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < ax; ++d) outer *= in[d];
  for (size_t d = ax + 1; d + 1 < in.size(); ++d) inner *= in[d];
  const int64_t Lo = out[ax];
  std::vector<double> y(static_cast<size_t>(numel_of(out)));
  std::vector<cplx> sig(static_cast<size_t>(n));
  const double sign = p.inverse ? 1.0 : -1.0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto in_at = [&](int64_t j) {
        size_t base = static_cast<size_t>(((o * L + j) * inner + i) * ci);
        return cplx(x[base], ci == 2 ? x[base + 1] : 0.0);
      };
      if (irfft) {
        // Hermitian completion of the half spectrum (zero-padded / truncated to n/2+1).
        const int64_t half = n / 2 + 1;
        for (int64_t k = 0; k < n; ++k) {
          int64_t src = k < half ? k : n - k;
          cplx v = src < L && src < half ? in_at(src) : cplx(0, 0);
          sig[static_cast<size_t>(k)] = k < half ? v : std::conj(v);
        }
      } else {
        for (int64_t j = 0; j < n; ++j) sig[static_cast<size_t>(j)] = j < L ? in_at(j) : cplx(0, 0);
      }
      for (int64_t k = 0; k < Lo; ++k) {
        cplx acc(0, 0);
        for (int64_t j = 0; j < n; ++j) acc += sig[static_cast<size_t>(j)] * twiddle(j, k, n, sign);
        if (p.inverse) acc /= static_cast<double>(n);
        size_t base = static_cast<size_t>(((o * Lo + k) * inner + i) * co);
        y[base] = acc.real();
        if (co == 2) y[base + 1] = acc.imag();
      }
    }
  return y;
}

std::vector<Tensor> run_dft(const KernelContext& c) {
  const Node& n = c.node;
  const Tensor& X = c.in(0);
  TESSERA_CHECK(X.rank() >= 2 && (X.dim(-1) == 1 || X.dim(-1) == 2), n.describe(),
                ": input must have rank >= 2 and last dim 1 or 2, got ", dims_to_string(X.dims()));
  DftParams p;
  p.inverse = op_attrs(c).i("inverse") != 0;
  p.onesided = op_attrs(c).i("onesided") != 0;
  if (c.opset >= 20)
    p.axis = dft_axis(n, c.has_input(2) ? scalar_int(n, c.in(2), "axis") : -2, X.rank());
  else
    p.axis = dft_axis(n, op_attrs(c).i("axis"), X.rank());
  if (c.has_input(1)) {
    p.length_given = true;
    p.length = scalar_int(n, c.in(1), "dft_length");
    TESSERA_CHECK(p.length > 0, n.describe(), ": dft_length must be positive, got ", p.length);
  }
  const int64_t L = X.dim(p.axis);
  TESSERA_CHECK(p.length_given || L > (p.inverse && p.onesided ? 1 : 0), n.describe(), ": empty signal axis");
  Dims out;
  std::vector<double> y = dft_along(X.dims(), float_values(X, "DFT"), p, out);
  return {float_tensor(X.dtype(), out, y, "DFT")};
}

// ---- STFT --------------------------------------------------------------------

void infer_stft(InferContext& c) {
  const Node& n = c.node;
  const TensorType& s = c.in(0);
  TESSERA_CHECK(is_float(s.dtype), n.describe(), ": signal must be a float tensor");
  TESSERA_CHECK(s.rank() == 3, n.describe(), ": signal must be [batch, length, 1 or 2]");
  const bool onesided = op_attrs(c).i("onesided") != 0;
  int64_t fl = -1, step = -1;
  std::vector<int64_t> v;
  if (c.has_input(2) && c.in(2).rank() == 1) fl = c.in(2).dims[0];
  if (fl < 0 && c.has_input(3) && constant_ints(c, 3, v) && v.size() == 1) fl = v[0];
  if (constant_ints(c, 1, v) && v.size() == 1) step = v[0];
  int64_t frames = fl > 0 && step > 0 && s.dims[1] >= 0 ? (s.dims[1] - fl) / step + 1 : -1;
  int64_t bins = fl < 0 ? -1 : onesided ? fl / 2 + 1 : fl;
  c.out(0) = TensorType{s.dtype, {s.dims[0], frames, bins, 2}};
}

std::vector<Tensor> run_stft(const KernelContext& c) {
  const Node& n = c.node;
  const Tensor& S = c.in(0);
  TESSERA_CHECK(S.rank() == 3 && (S.dim(2) == 1 || S.dim(2) == 2), n.describe(),
                ": signal must be [batch, length, 1 or 2], got ", dims_to_string(S.dims()));
  const int64_t step = scalar_int(n, c.in(1), "frame_step");
  const Tensor* win = c.has_input(2) ? c.inputs[2] : nullptr;
  int64_t fl = -1;
  if (c.has_input(3)) fl = scalar_int(n, c.in(3), "frame_length");
  if (win) {
    TESSERA_CHECK(win->rank() == 1, n.describe(), ": window must be 1-D");
    TESSERA_CHECK(fl < 0 || fl == win->dim(0), n.describe(), ": frame_length ", fl, " differs from the window length ",
                  win->dim(0));
    fl = win->dim(0);
  }
  TESSERA_CHECK(fl > 0, n.describe(), ": frame_length (or a window) is required and must be positive");
  TESSERA_CHECK(step > 0, n.describe(), ": frame_step must be positive, got ", step);
  const int64_t B = S.dim(0), len = S.dim(1), ci = S.dim(2);
  TESSERA_CHECK(len >= fl, n.describe(), ": signal length ", len, " is shorter than the frame length ", fl);
  const bool onesided = op_attrs(c).i("onesided") != 0;
  const int64_t frames = (len - fl) / step + 1, bins = onesided ? fl / 2 + 1 : fl;
  std::vector<double> s = float_values(S, "STFT");
  std::vector<double> w = win ? float_values(*win, "STFT") : std::vector<double>(static_cast<size_t>(fl), 1.0);
  std::vector<double> y(static_cast<size_t>(B * frames * bins * 2));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t k = 0; k < bins; ++k) {
        cplx acc(0, 0);
        for (int64_t j = 0; j < fl; ++j) {
          size_t base = static_cast<size_t>((b * len + f * step + j) * ci);
          cplx v(s[base], ci == 2 ? s[base + 1] : 0.0);
          acc += v * w[static_cast<size_t>(j)] * twiddle(j, k, fl, -1.0);
        }
        size_t o = static_cast<size_t>(((b * frames + f) * bins + k) * 2);
        y[o] = acc.real();
        y[o + 1] = acc.imag();
      }
  return {float_tensor(S.dtype(), {B, frames, bins, 2}, y, "STFT")};
}

// ---- MelWeightMatrix -------------------------------------------------------------

void infer_mel(InferContext& c) {
  std::vector<int64_t> bins, dft;
  Dims d = {-1, -1};
  if (constant_ints(c, 1, dft) && dft.size() == 1) d[0] = dft[0] / 2 + 1;
  if (constant_ints(c, 0, bins) && bins.size() == 1) d[1] = bins[0];
  c.out(0) = TensorType{output_datatype(op_attrs(c)), d};
}

}  // namespace

std::vector<int64_t> mel_bin_edges(const Node& n, int64_t mel, int64_t dft, int64_t rate, const Tensor& lo,
                                   const Tensor& hi) {
  TESSERA_CHECK(mel > 0 && dft > 0 && rate > 0, n.describe(), ": num_mel_bins, dft_length and sample_rate must be positive");
  TESSERA_CHECK(lo.numel() == 1 && hi.numel() == 1, n.describe(), ": edge frequencies must be scalars");
  const float lo_hz = static_cast<float>(lo.get_double(0)), hi_hz = static_cast<float>(hi.get_double(0));
  TESSERA_CHECK(lo_hz >= 0 && hi_hz > lo_hz, n.describe(), ": need 0 <= lower_edge_hertz < upper_edge_hertz");
  const float lo_mel = 2595.0f * std::log10(1.0f + lo_hz / 700.0f);
  const float hi_mel = 2595.0f * std::log10(1.0f + hi_hz / 700.0f);
  const float step = (hi_mel - lo_mel) / static_cast<float>(mel + 2);
  std::vector<int64_t> fb(static_cast<size_t>(mel + 2));
  for (int64_t i = 0; i < mel + 2; ++i) {
    double m = static_cast<double>(i) * static_cast<double>(step) + static_cast<double>(lo_mel);
    double hz = 700.0 * (std::pow(10.0, m / 2595.0) - 1.0);
    fb[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
  }
  return fb;
}

namespace {

std::vector<Tensor> run_mel(const KernelContext& c) {
  const Node& n = c.node;
  const int64_t mel = scalar_int(n, c.in(0), "num_mel_bins");
  const int64_t dft = scalar_int(n, c.in(1), "dft_length");
  const int64_t rate = scalar_int(n, c.in(2), "sample_rate");
  const std::vector<int64_t> fb = mel_bin_edges(n, mel, dft, rate, c.in(3), c.in(4));
  const int64_t spec = dft / 2 + 1;
  std::vector<double> out(static_cast<size_t>(spec * mel));
  auto at = [&](int64_t j, int64_t i) -> double& {
    TESSERA_CHECK(j >= 0 && j < spec, n.describe(), ": mel bin edge ", j, " falls outside the ", spec,
                  " spectrogram bins (upper_edge_hertz above the Nyquist frequency?)");
    return out[static_cast<size_t>(j * mel + i)];
  };
  for (int64_t i = 0; i < mel; ++i) {
    const int64_t l = fb[static_cast<size_t>(i)], m = fb[static_cast<size_t>(i + 1)], h = fb[static_cast<size_t>(i + 2)];
    if (m == l) {
      at(m, i) = 1;
    } else {
      for (int64_t j = l; j <= m; ++j) at(j, i) = static_cast<double>(j - l) / static_cast<double>(m - l);
    }
    if (h > m)
      for (int64_t j = m; j < h; ++j) at(j, i) = static_cast<double>(h - j) / static_cast<double>(h - m);
  }
  return {numeric_tensor(output_datatype(op_attrs(c)), {spec, mel}, out)};
}

double dft_flops(const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
  if (!ins[0] || outs.empty()) return 0;
  double n = 1;
  for (size_t d = 1; d + 1 < ins[0]->dims.size(); ++d) n = std::max(n, static_cast<double>(ins[0]->dims[d]));
  return 8.0 * n * static_cast<double>(numel_of(outs[0].dims));
}

}  // namespace

void register_signal_ops(OpRegistry& r) {
  const std::vector<AttrSpec> wattrs = {int_attr("output_datatype", 1), int_attr("periodic", 1)};
  r.add({.name = "HannWindow", .min_opset = 17, .mapping = MappingType::OneToOne, .infer = infer_window,
         .reference = [](const KernelContext& c) { return run_window(c, Window::Hann); }, .attributes = wattrs});
  r.add({.name = "HammingWindow", .min_opset = 17, .mapping = MappingType::OneToOne, .infer = infer_window,
         .reference = [](const KernelContext& c) { return run_window(c, Window::Hamming); }, .attributes = wattrs});
  r.add({.name = "BlackmanWindow", .min_opset = 17, .mapping = MappingType::OneToOne, .infer = infer_window,
         .reference = [](const KernelContext& c) { return run_window(c, Window::Blackman); }, .attributes = wattrs});
  r.add({.name = "DFT", .min_opset = 17, .mapping = MappingType::ManyToMany, .linear_inputs = {0},
         .infer = infer_dft, .reference = run_dft, .flops = dft_flops,
         .attributes = {int_attr("axis", 1), int_attr("inverse", 0), int_attr("onesided", 0)}});
  r.add({.name = "STFT", .min_opset = 17, .mapping = MappingType::ManyToMany, .linear_inputs = {0},
         .infer = infer_stft, .reference = run_stft,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
           return outs.empty() ? 0.0 : 8.0 * static_cast<double>(numel_of(outs[0].dims)) * static_cast<double>(outs[0].dims[2]);
         },
         .attributes = {int_attr("onesided", 1)}});
  r.add({.name = "MelWeightMatrix", .min_opset = 17, .mapping = MappingType::OneToOne, .infer = infer_mel,
         .reference = run_mel, .attributes = {int_attr("output_datatype", 1)}});
}

}  // namespace tessera
