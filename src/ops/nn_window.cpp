// Sliding-window geometry shared by Conv, ConvTranspose and the pooling ops:
// attribute parsing, output sizes for every auto_pad mode and ceil_mode, and
// the 3-D padded form the kernels loop over.
#include "ops/nn_ops.h"
#include "ops/op_attrs.h"
#include "support/int_div.h"

namespace tessera {

namespace {
std::vector<int64_t> ints_or(const OpAttrs& attrs, const char* key, size_t size, int64_t def) {
  const Node& n = attrs.node();
  // MaxUnpool declares no dilations: the default.
  std::vector<int64_t> v = attrs.declares(key) ? attrs.ints(key) : std::vector<int64_t>{};
  if (v.empty()) v.assign(size, def);  // absent or an explicitly empty list: `def` per axis
  TESSERA_CHECK(v.size() == size, n.describe(), ": attribute '", key, "' has ", v.size(), " values, expected ", size);
  return v;
}
}  // namespace

WindowAttrs read_window_attrs(const OpAttrs& attrs, int64_t nsp, const std::vector<int64_t>& kernel, bool pool) {
  const Node& n = attrs.node();
  TESSERA_CHECK(nsp >= 1, n.describe(), ": input needs at least one spatial dimension (rank >= 3)");
  WindowAttrs a;
  a.nsp = nsp;
  const size_t ns = static_cast<size_t>(nsp);
  if (attrs.declares("kernel_shape") && attrs.has("kernel_shape")) {
    a.kernel = attrs.ints("kernel_shape");
    TESSERA_CHECK(a.kernel.size() == ns, n.describe(), ": kernel_shape has ", a.kernel.size(),
                  " values but the input has ", nsp, " spatial dims");
    if (!kernel.empty())
      for (size_t i = 0; i < ns; ++i)
        TESSERA_CHECK(kernel[i] < 0 || kernel[i] == a.kernel[i], n.describe(), ": kernel_shape ",
                      dims_to_string(a.kernel), " does not match the weight's spatial dims ", dims_to_string(kernel));
  } else {
    TESSERA_CHECK(!kernel.empty(), n.describe(), ": attribute 'kernel_shape' is required");
    a.kernel = kernel;
  }
  for (int64_t k : a.kernel)
    TESSERA_CHECK(k > 0 || (k < 0 && !kernel.empty()), n.describe(), ": kernel_shape values must be positive");
  a.strides = ints_or(attrs, "strides", ns, 1);
  a.dilations = ints_or(attrs, "dilations", ns, 1);
  a.pads = ints_or(attrs, "pads", 2 * ns, 0);
  for (int64_t s : a.strides) TESSERA_CHECK(s > 0, n.describe(), ": strides must be positive");
  for (int64_t d : a.dilations) TESSERA_CHECK(d > 0, n.describe(), ": dilations must be positive");
  for (int64_t p : a.pads) TESSERA_CHECK(p >= 0, n.describe(), ": pads must be non-negative");
  if (attrs.declares("auto_pad")) a.auto_pad = attrs.s("auto_pad");
  TESSERA_CHECK(a.auto_pad == "NOTSET" || a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER" ||
                    a.auto_pad == "VALID",
                n.describe(), ": unsupported auto_pad '", a.auto_pad, "'");
  if (a.auto_pad == "VALID") a.pads.assign(2 * ns, 0);
  if (pool) {
    int64_t cm = attrs.i("ceil_mode");
    TESSERA_CHECK(cm == 0 || cm == 1, n.describe(), ": ceil_mode must be 0 or 1");
    a.ceil_mode = cm == 1;
  }
  return a;
}

Dims window_output_dims(const Node& n, const WindowAttrs& a, const Dims& in, std::vector<int64_t>* pads) {
  const size_t ns = static_cast<size_t>(a.nsp);
  TESSERA_CHECK(in.size() == ns, n.describe(), ": expected ", ns, " spatial dims, got ", in.size());
  Dims out(ns, -1);
  std::vector<int64_t> p = a.pads;
  bool known = true;
  for (size_t i = 0; i < ns; ++i) {
    if (in[i] < 0 || a.kernel[i] < 0) {
      known = false;
      continue;
    }
    const int64_t s = a.strides[i];
    const int64_t ek = (a.kernel[i] - 1) * a.dilations[i] + 1;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      out[i] = ceil_div(in[i], s);
      int64_t total = std::max<int64_t>(0, (out[i] - 1) * s + ek - in[i]);
      int64_t small = total / 2;
      p[i] = a.auto_pad == "SAME_UPPER" ? small : total - small;
      p[i + ns] = total - p[i];
      continue;
    }
    int64_t span = in[i] + p[i] + p[i + ns] - ek;
    TESSERA_CHECK(span >= 0, n.describe(), ": window of extent ", ek, " does not fit spatial dim ", i,
                  " of size ", in[i], " with pads ", p[i], "+", p[i + ns]);
    if (a.ceil_mode) {
      out[i] = ceil_div(span, s) + 1;
      // The last window must start inside the input or the leading padding.
      if ((out[i] - 1) * s >= in[i] + p[i]) --out[i];
    } else {
      out[i] = span / s + 1;
    }
  }
  if (pads && known) *pads = p;
  return out;
}

Geom3 make_geom3(const Node& n, const WindowAttrs& a, const Dims& in, const Dims& out,
                 const std::vector<int64_t>& pads) {
  TESSERA_CHECK(a.nsp >= 1 && a.nsp <= 3, n.describe(), ": ", a.nsp,
                "-D windows are not supported (1-D, 2-D and 3-D are)");
  Geom3 g;
  const size_t ns = static_cast<size_t>(a.nsp);
  const size_t off = 3 - ns;
  for (size_t i = 0; i < ns; ++i) {
    g.in[off + i] = in[i];
    g.out[off + i] = out[i];
    g.k[off + i] = a.kernel[i];
    g.s[off + i] = a.strides[i];
    g.d[off + i] = a.dilations[i];
    g.pb[off + i] = pads[i];
    g.pe[off + i] = pads[i + ns];
  }
  return g;
}

void valid_range(int64_t out, int64_t s, int64_t off, int64_t in, int64_t& lo, int64_t& hi) {
  lo = std::max<int64_t>(0, ceil_div(-off, s));
  hi = std::min<int64_t>(out, floor_div(in - 1 - off, s) + 1);
  if (hi < lo) hi = lo;
}

std::vector<double> nn_to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get_double(i);
  return v;
}

Tensor nn_from_doubles(DType t, const Dims& d, const std::vector<double>& v) {
  Tensor y(t, d);
  dispatch_float(t, [&]<class T>() {
    T* p = y.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = to_storage<T>(static_cast<compute_t<T>>(v[i]));
  }, "normalization");
  return y;
}

}  // namespace tessera
