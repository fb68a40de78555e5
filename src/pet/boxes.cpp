#include "pet/boxes.h"

#include <algorithm>
#include <limits>

#include "support/error.h"

namespace tessera::pet {

namespace {

constexpr int64_t kNoRead = std::numeric_limits<int64_t>::min();

Points trivial(int64_t size) { return size > 0 ? Points{0, size} : Points{0}; }

SplitPoints trivial_all(const Dims& d) {
  SplitPoints s;
  for (int64_t v : d) s.push_back(trivial(v));
  return s;
}

void normalize(Points& p, int64_t size) {
  p.push_back(0);
  p.push_back(size);
  std::erase_if(p, [&](int64_t v) { return v < 0 || v > size; });
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
}

// Adds the positions j in [1, n) where read(j) changes class: reading or not
// (kNoRead: padding), which interval of `in` it reads, or the step
// read(j) - read(j-1) (the read must stay affine inside a box).
template <class F>
void scan(int64_t n, const Points& in, F read, Points& out) {
  auto cls = [&](int64_t r) -> int64_t {
    if (r == kNoRead) return -1;
    return std::upper_bound(in.begin(), in.end(), r) - in.begin();
  };
  int64_t prev = n > 0 ? read(0) : 0, pc = cls(prev), delta = 0;
  bool have_delta = false;
  for (int64_t j = 1; j < n; ++j) {
    const int64_t r = read(j), c = cls(r);
    bool cut = c != pc;
    if (!cut && c >= 0) {
      if (have_delta && r - prev != delta) cut = true;
      else {
        delta = r - prev;
        have_delta = true;
      }
    }
    if (cut) {
      out.push_back(j);
      have_delta = false;
    }
    prev = r;
    pc = c;
  }
}

// Points of a reshape of a value that is not a graph input: see boxes.h.
SplitPoints reshape_points(const Dims& in, const SplitPoints& ip, const Dims& out) {
  SplitPoints op = trivial_all(out);
  if (numel_of(in) == 0) return op;
  std::vector<size_t> a, b;  // dims of size > 1
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1) a.push_back(i);
  for (size_t j = 0; j < out.size(); ++j)
    if (out[j] != 1) b.push_back(j);
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const size_t i0 = i, j0 = j;
    int64_t pa = in[a[i]], pb = out[b[j]];
    while (pa != pb) {
      if (pa < pb) pa *= in[a[++i]];
      else pb *= out[b[++j]];
    }
    ++i;
    ++j;
    // Points of the merged (flat) group.
    Points flat;
    if (i - i0 == 1) {
      flat = ip[a[i0]];
    } else {
      const size_t inner = a[i - 1];
      const int64_t rows = pa / in[inner];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t p : ip[inner]) flat.push_back(r * in[inner] + p);
    }
    if (j - j0 == 1) {
      op[b[j0]] = flat;
      normalize(op[b[j0]], out[b[j0]]);
      continue;
    }
    // Split the flat points into the group's output dims by mixed radix.
    std::vector<int64_t> st(j - j0, 1);
    for (size_t t = j - j0 - 1; t-- > 0;) st[t] = st[t + 1] * out[b[j0 + t + 1]];
    for (int64_t q : flat) {
      if (q <= 0 || q >= pa) continue;
      std::vector<int64_t> dg(j - j0);
      int64_t r = q;
      size_t last = 0;
      for (size_t t = 0; t < dg.size(); ++t) {
        dg[t] = r / st[t];
        r -= dg[t] * st[t];
        if (dg[t]) last = t;
      }
      for (size_t t = 0; t <= last; ++t) {
        op[b[j0 + t]].push_back(dg[t]);
        if (t < last) op[b[j0 + t]].push_back(dg[t] + 1);
      }
    }
  }
  for (size_t d = 0; d < out.size(); ++d) normalize(op[d], out[d]);
  return op;
}

// A constant read as data: a point at p on a dim where any element differs
// from its neighbour at p-1.
SplitPoints constant_points(const Dims& d, const std::vector<uint32_t>& v) {
  SplitPoints s = trivial_all(d);
  const Dims st = strides_of(d);
  const int64_t n = numel_of(d);
  for (size_t k = 0; k < d.size(); ++k) {
    std::vector<char> cut(static_cast<size_t>(std::max<int64_t>(d[k], 1)), 0);
    for (int64_t f = 0; f < n; ++f) {
      const int64_t i = (f / st[k]) % d[k];
      if (i > 0 && v[static_cast<size_t>(f)] != v[static_cast<size_t>(f - st[k])]) cut[static_cast<size_t>(i)] = 1;
    }
    for (int64_t i = 1; i < d[k]; ++i)
      if (cut[static_cast<size_t>(i)]) s[k].push_back(i);
    normalize(s[k], d[k]);
  }
  return s;
}

class Inference {
 public:
  explicit Inference(const LinearPlan& p) : p_(p), pts_(p.values.size()), flat_(p.values.size(), 0) {
    for (int id : p.inputs) {
      pts_[static_cast<size_t>(id)] = trivial_all(dims(id));
      flat_[static_cast<size_t>(id)] = 1;
    }
    for (const auto& [id, v] : p.constants) {
      pts_[static_cast<size_t>(id)] = constant_points(dims(id), v);
      bool uniform = std::all_of(v.begin(), v.end(), [&](uint32_t e) { return e == v[0]; });
      flat_[static_cast<size_t>(id)] = uniform;
    }
    for (const LinNode& n : p.nodes) run(n);
  }

  const SplitPoints& of(int id) const { return pts_[static_cast<size_t>(id)]; }

 private:
  const Dims& dims(int id) const { return p_.dims[static_cast<size_t>(id)]; }
  // Points of data input `id` on dim d, or nothing when `id` is absent.
  void take(int id, size_t d, Points& out) const {
    if (id < 0) return;
    const Points& q = of(id)[d];
    out.insert(out.end(), q.begin(), q.end());
  }
  // Elementwise operand `id` broadcast to `y` dims.
  void take_broadcast(int id, const Dims& y, SplitPoints& out) const {
    if (id < 0) return;
    const Dims& d = dims(id);
    const size_t off = y.size() - d.size();
    for (size_t i = 0; i < d.size(); ++i)
      if (d[i] == y[i + off]) take(id, i, out[i + off]);
  }
  void window(const LinNode& n, SplitPoints& y, const Dims& yd, bool transpose);
  void run(const LinNode& n);

  const LinearPlan& p_;
  std::vector<SplitPoints> pts_;
  std::vector<char> flat_;  // reads every graph input at its own flat index
};

void Inference::window(const LinNode& n, SplitPoints& y, const Dims& yd, bool transpose) {
  const int x = n.in[0];
  const Dims& xd = dims(x);
  for (size_t d = 0; d + 2 < xd.size(); ++d) {
    const int64_t in = xd[d + 2], s = n.win.s[d], pb = n.win.pb[d], dil = n.win.d[d];
    for (int64_t k = 0; k < n.win.k[d]; ++k) {
      if (transpose)
        scan(yd[d + 2], of(x)[d + 2], [&](int64_t j) {
          const int64_t t = j + pb - k * dil;
          return t < 0 || t % s != 0 || t / s >= in ? kNoRead : t / s;
        }, y[d + 2]);
      else
        scan(yd[d + 2], of(x)[d + 2], [&](int64_t j) {
          const int64_t i = j * s - pb + k * dil;
          return i < 0 || i >= in ? kNoRead : i;
        }, y[d + 2]);
      if (n.op == LinOp::AvgPool && n.win.count_include_pad)  // the padded count changes
        scan(yd[d + 2], Points{0, 1}, [&](int64_t j) {
          const int64_t i = j * s - pb + k * dil;
          return i < -pb || i >= in + n.win.pe[d] ? kNoRead : 0;
        }, y[d + 2]);
    }
  }
}

void Inference::run(const LinNode& n) {
  const int x = n.in[0];
  const Dims& xd = dims(x);
  for (size_t k = 0; k < n.out.size(); ++k) {
    const int out = n.out[k];
    const Dims& yd = dims(out);
    SplitPoints y(yd.size());
    switch (n.op) {
      case LinOp::Copy:
        if (flat_[static_cast<size_t>(x)]) {
          flat_[static_cast<size_t>(out)] = 1;
        } else if (xd == yd) {
          y = of(x);
        } else {
          y = reshape_points(xd, of(x), yd);
        }
        break;
      case LinOp::Transpose:
        for (size_t i = 0; i < yd.size(); ++i) take(x, static_cast<size_t>(n.perm[i]), y[i]);
        break;
      case LinOp::Add: case LinOp::Sub: case LinOp::Mul:
        take_broadcast(n.in[0], yd, y);
        take_broadcast(n.in[1], yd, y);
        if (flat_[static_cast<size_t>(n.in[0])] && flat_[static_cast<size_t>(n.in[1])] && dims(n.in[0]) == yd &&
            dims(n.in[1]) == yd)
          flat_[static_cast<size_t>(out)] = 1;
        break;
      case LinOp::Conv: case LinOp::ConvTranspose: {
        const int w = n.in[1];
        take(x, 0, y[0]);
        const int64_t M = yd[1], Mg = M / n.win.group;
        for (int64_t g = 0; g <= n.win.group; ++g) y[1].push_back(g * Mg);
        if (n.op == LinOp::Conv) {
          take(w, 0, y[1]);
        } else {
          for (int64_t g = 0; g < n.win.group; ++g)
            for (int64_t q : of(w)[1]) y[1].push_back(g * Mg + q);
        }
        take(n.in[2], 0, y[1]);
        window(n, y, yd, n.op == LinOp::ConvTranspose);
        break;
      }
      case LinOp::AvgPool:
        take(x, 0, y[0]);
        take(x, 1, y[1]);
        window(n, y, yd, false);
        break;
      case LinOp::MatMul: {
        const int b = n.in[1];
        const Dims& ad = dims(x);
        const Dims& bd = dims(b);
        const bool a1 = ad.size() == 1, b1 = bd.size() == 1;
        const size_t nbatch = yd.size() - (a1 ? 0 : 1) - (b1 ? 0 : 1);
        if (!a1) take(x, ad.size() - 2, y[nbatch]);
        if (!b1) take(b, bd.size() - 1, y[yd.size() - 1]);
        for (int id : {x, b}) {
          const Dims& d = dims(id);
          if (d.size() < 2) continue;
          const size_t nb = d.size() - 2;
          for (size_t t = 0; t < nb; ++t)
            if (d[t] == yd[nbatch - nb + t]) take(id, t, y[nbatch - nb + t]);
        }
        break;
      }
      case LinOp::Gemm:
        take(x, n.trans_a ? 1 : 0, y[0]);
        take(n.in[1], n.trans_b ? 0 : 1, y[1]);
        if (n.in.size() > 2) take_broadcast(n.in[2], yd, y);
        break;
      case LinOp::Pad: case LinOp::Slice:
        for (size_t d = 0; d < yd.size(); ++d)
          scan(yd[d], of(x)[d], [&](int64_t j) {
            const int64_t i = n.start[d] + j * n.step[d];
            return i < 0 || i >= xd[d] ? kNoRead : i;
          }, y[d]);
        break;
      case LinOp::Concat:
        for (size_t i = 0; i < n.in.size(); ++i)
          for (size_t d = 0; d < yd.size(); ++d) {
            if (d != static_cast<size_t>(n.axis)) {
              take(n.in[i], d, y[d]);
              continue;
            }
            for (int64_t q : of(n.in[i])[d]) y[d].push_back(n.offsets[i] + q);
          }
        break;
      case LinOp::Split:
        for (size_t d = 0; d < yd.size(); ++d) {
          if (d != static_cast<size_t>(n.axis)) {
            take(x, d, y[d]);
            continue;
          }
          for (int64_t q : of(x)[d]) y[d].push_back(q - n.offsets[k]);
        }
        break;
      case LinOp::Reduce:
        for (size_t d = 0, o = 0; d < xd.size(); ++d) {
          if (!n.reduced[d]) take(x, d, y[o++]);
          else if (n.keepdims) ++o;
        }
        break;
      case LinOp::DepthToSpace: {
        const int64_t b = n.block, C = yd[1];
        take(x, 0, y[0]);
        for (int64_t i = 0; i < b; ++i)
          for (int64_t j = 0; j < b; ++j)
            scan(C, of(x)[1], [&](int64_t c) { return n.dcr ? (i * b + j) * C + c : c * b * b + i * b + j; }, y[1]);
        for (size_t d = 2; d < 4; ++d) {
          if (b == 1) take(x, d, y[d]);
          else
            for (int64_t v = 1; v < yd[d]; ++v) y[d].push_back(v);
        }
        break;
      }
      case LinOp::SpaceToDepth: {
        const int64_t b = n.block, C = xd[1];
        take(x, 0, y[0]);
        for (int64_t q = 0; q < b * b; ++q)
          for (int64_t c : of(x)[1]) y[1].push_back(q * C + c);
        for (size_t d = 2; d < 4; ++d)
          for (int64_t o = 0; o < b; ++o)
            scan(yd[d], of(x)[d], [&](int64_t j) { return j * b + o; }, y[d]);
        break;
      }
    }
    for (size_t d = 0; d < yd.size(); ++d) normalize(y[d], yd[d]);
    pts_[static_cast<size_t>(out)] = std::move(y);
  }
}

}  // namespace

std::vector<SplitPoints> infer_splitting_points(const LinearPlan& plan) {
  Inference inf(plan);
  std::vector<SplitPoints> r;
  for (int id : plan.outputs) r.push_back(inf.of(id));
  return r;
}

std::vector<SplitPoints> infer_splitting_points(const Graph& g) { return infer_splitting_points(plan_linear(g)); }

SplitPoints union_points(const SplitPoints& a, const SplitPoints& b) {
  TESSERA_CHECK(a.size() == b.size(), "pet: split points of ranks ", a.size(), " and ", b.size());
  SplitPoints r(a.size());
  for (size_t d = 0; d < a.size(); ++d) {
    std::set_union(a[d].begin(), a[d].end(), b[d].begin(), b[d].end(), std::back_inserter(r[d]));
  }
  return r;
}

int64_t box_count(const SplitPoints& s) {
  int64_t n = 1;
  for (const Points& p : s) n *= std::max<int64_t>(0, static_cast<int64_t>(p.size()) - 1);
  return n;
}

std::vector<Box> boxes(const SplitPoints& s) {
  std::vector<Box> r;
  const int64_t n = box_count(s);
  if (n == 0) return r;
  r.reserve(static_cast<size_t>(n));
  std::vector<size_t> cell(s.size(), 0);
  for (int64_t b = 0; b < n; ++b) {
    Box box;
    for (size_t d = 0; d < s.size(); ++d) {
      box.lo.push_back(s[d][cell[d]]);
      box.hi.push_back(s[d][cell[d] + 1]);
    }
    r.push_back(std::move(box));
    for (size_t d = s.size(); d-- > 0;) {
      if (++cell[d] + 1 < s[d].size()) break;
      cell[d] = 0;
    }
  }
  return r;
}

}  // namespace tessera::pet
