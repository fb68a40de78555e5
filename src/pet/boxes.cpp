#include "pet/boxes.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "support/error.h"

namespace tessera::pet {

namespace {

constexpr int64_t kNoRead = std::numeric_limits<int64_t>::min();

void normalize(Points& p, int64_t size) {
  p.push_back(0);
  p.push_back(size);
  std::erase_if(p, [&](int64_t v) { return v < 0 || v > size; });
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
}

Atom atom(int64_t size, Points p = {}) {
  normalize(p, size);
  return Atom{size, std::move(p)};
}

DimSplit trivial_dim(int64_t size) { return {atom(size)}; }

Splits trivial_all(const Dims& d) {
  Splits s;
  for (int64_t v : d) s.push_back(trivial_dim(v));
  return s;
}

int64_t dim_size(const DimSplit& d) {
  int64_t n = 1;
  for (const Atom& a : d) n *= a.size;
  return n;
}

// The atoms of size > 1 (a size-1 atom has no inside to split).
DimSplit nontrivial(const DimSplit& d) {
  DimSplit r;
  for (const Atom& a : d)
    if (a.size != 1) r.push_back(a);
  return r;
}

// An atom of `inner` * k elements as (k, inner): a point q becomes its digits
// (q / inner, q % inner), and q / inner + 1 on the outer atom when q cuts a row.
std::pair<Atom, Atom> split_atom(const Atom& a, int64_t inner) {
  Points o, i;
  for (int64_t q : a.points) {
    o.push_back(q / inner);
    if (q % inner) {
      o.push_back(q / inner + 1);
      i.push_back(q % inner);
    }
  }
  return {atom(a.size / inner, o), atom(inner, i)};
}

// Sizes of the common refinement of two factorizations of one size (outer to
// inner), or nothing when their row lengths do not divide one another.
std::optional<std::vector<int64_t>> common_sizes(const DimSplit& a, const DimSplit& b) {
  std::vector<int64_t> cuts{1};
  for (const DimSplit* d : {&a, &b}) {
    int64_t p = 1;
    for (size_t t = d->size(); t-- > 0;) {
      p *= (*d)[t].size;
      cuts.push_back(p);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<int64_t> sizes;
  for (size_t t = cuts.size() - 1; t > 0; --t) {
    if (cuts[t] % cuts[t - 1]) return std::nullopt;
    sizes.push_back(cuts[t] / cuts[t - 1]);
  }
  return sizes;
}

// `d` (no size-1 atoms) split into the finer factorization `sizes`.
DimSplit refine(const DimSplit& d, const std::vector<int64_t>& sizes) {
  DimSplit r;
  size_t t = 0;
  for (const Atom& a : d) {
    Atom cur = a;
    while (cur.size != sizes[t]) {
      auto [outer, inner] = split_atom(cur, cur.size / sizes[t]);
      r.push_back(outer);
      cur = inner;
      ++t;
    }
    r.push_back(cur);
    ++t;
  }
  return r;
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

// The conservative reshape of flattened dims (see boxes.h): per group of dims
// whose sizes match, the group's merged points, split into its output dims.
Splits reshape_flat(const Dims& in, const Splits& is, const Dims& out) {
  std::vector<Points> op(out.size());
  std::vector<size_t> a, b;  // dims of size > 1
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1) a.push_back(i);
  for (size_t j = 0; j < out.size(); ++j)
    if (out[j] != 1) b.push_back(j);
  size_t i = 0, j = 0;
  while (numel_of(in) > 0 && i < a.size() && j < b.size()) {
    const size_t i0 = i, j0 = j;
    int64_t pa = in[a[i]], pb = out[b[j]];
    while (pa != pb) {
      if (pa < pb) pa *= in[a[++i]];
      else pb *= out[b[++j]];
    }
    ++i;
    ++j;
    Points flat;
    if (i - i0 == 1) {
      flat = dim_points(is[a[i0]]);
    } else {  // merged: a point at every row of the innermost dim
      const Points inner = dim_points(is[a[i - 1]]);
      const int64_t len = in[a[i - 1]];
      for (int64_t r = 0; r < pa / len; ++r)
        for (int64_t p : inner) flat.push_back(r * len + p);
    }
    Atom cur = atom(pa, flat);  // split into the group's output dims, outer first
    for (size_t t = j0; t + 1 < j; ++t) {
      auto [outer, inner] = split_atom(cur, cur.size / out[b[t]]);
      op[b[t]] = outer.points;
      cur = inner;
    }
    op[b[j - 1]] = cur.points;
  }
  Splits r;
  for (size_t d = 0; d < out.size(); ++d) r.push_back({atom(out[d], op[d])});
  return r;
}

// A reshape as a relabelling of atoms, or the conservative rule when the
// sizes do not factor into one another.
Splits reshape(const Dims& in, const Splits& is, const Dims& out) {
  if (numel_of(in) == 0) return trivial_all(out);
  DimSplit q;  // every atom of the input, outer to inner
  for (const DimSplit& d : is)
    for (const Atom& a : nontrivial(d)) q.push_back(a);
  std::reverse(q.begin(), q.end());  // a stack: the outermost atom at the back
  Splits r;
  for (int64_t size : out) {
    DimSplit d;
    int64_t p = 1;
    while (p < size) {
      if (q.empty()) return reshape_flat(in, is, out);
      Atom a = q.back();
      q.pop_back();
      if (size % (p * a.size) == 0) {
        d.push_back(a);
        p *= a.size;
      } else if (size % p == 0 && a.size % (size / p) == 0) {
        auto [outer, inner] = split_atom(a, a.size / (size / p));
        d.push_back(outer);
        q.push_back(inner);
        p = size;
      } else {
        return reshape_flat(in, is, out);
      }
    }
    r.push_back(d.empty() ? trivial_dim(size) : d);
  }
  return r;
}

DimSplit unify(const DimSplit& a, const DimSplit& b) {
  const DimSplit na = nontrivial(a), nb = nontrivial(b);
  if (na.empty()) return b;
  if (nb.empty()) return a;
  if (auto sizes = common_sizes(na, nb)) {
    DimSplit ra = refine(na, *sizes), rb = refine(nb, *sizes);
    for (size_t t = 0; t < ra.size(); ++t) {
      ra[t].points.insert(ra[t].points.end(), rb[t].points.begin(), rb[t].points.end());
      normalize(ra[t].points, ra[t].size);
    }
    return ra;
  }
  Points p = dim_points(a), pb = dim_points(b);
  p.insert(p.end(), pb.begin(), pb.end());
  return {atom(dim_size(a), p)};
}

// A constant read as data: a point at p on a dim where any element differs
// from its neighbour at p-1.
Splits constant_splits(const Dims& d, const std::vector<uint32_t>& v) {
  Splits s;
  const Dims st = strides_of(d);
  const int64_t n = numel_of(d);
  for (size_t k = 0; k < d.size(); ++k) {
    Points p;
    std::vector<char> cut(static_cast<size_t>(std::max<int64_t>(d[k], 1)), 0);
    for (int64_t f = 0; f < n; ++f) {
      const int64_t i = (f / st[k]) % d[k];
      if (i > 0 && v[static_cast<size_t>(f)] != v[static_cast<size_t>(f - st[k])]) cut[static_cast<size_t>(i)] = 1;
    }
    for (int64_t i = 1; i < d[k]; ++i)
      if (cut[static_cast<size_t>(i)]) p.push_back(i);
    s.push_back({atom(d[k], p)});
  }
  return s;
}

Splits transpose(const Splits& s, const std::vector<int64_t>& perm) {
  Splits r;
  for (int64_t p : perm) r.push_back(s[static_cast<size_t>(p)]);
  return r;
}

class Inference {
 public:
  explicit Inference(const LinearPlan& p) : p_(p), s_(p.values.size()), flat_(p.values.size(), 0) {
    for (int id : p.inputs) {
      s_[static_cast<size_t>(id)] = trivial_all(dims(id));
      flat_[static_cast<size_t>(id)] = 1;
    }
    for (const auto& [id, data] : p.constants) {
      const auto& v = data;  // a structured binding cannot be captured by a lambda (clang)
      s_[static_cast<size_t>(id)] = constant_splits(dims(id), v);
      flat_[static_cast<size_t>(id)] = std::all_of(v.begin(), v.end(), [&](uint32_t e) { return e == v[0]; });
    }
    for (const LinNode& n : p.nodes) run(n);
  }

  const Splits& of(int id) const { return s_[static_cast<size_t>(id)]; }

 private:
  const Dims& dims(int id) const { return p_.dims[static_cast<size_t>(id)]; }
  Points flat_points(int id, size_t d) const { return dim_points(of(id)[d]); }
  // Unifies dim d of `y` with each non-broadcast dim of elementwise operand `id`.
  void take_broadcast(int id, const Dims& yd, Splits& y) const {
    if (id < 0) return;
    const Dims& d = dims(id);
    const size_t off = yd.size() - d.size();
    for (size_t i = 0; i < d.size(); ++i)
      if (d[i] == yd[i + off]) y[i + off] = unify(y[i + off], of(id)[i]);
  }
  void window(const LinNode& n, Splits& y, const Dims& yd);
  Splits relabel(int x, const Dims& mid, const std::vector<int64_t>& perm, const Dims& out) const {
    const Dims& xd = dims(x);
    Dims tdims;
    for (int64_t p : perm) tdims.push_back(mid[static_cast<size_t>(p)]);
    return reshape(tdims, transpose(reshape(xd, of(x), mid), perm), out);
  }
  void run(const LinNode& n);

  const LinearPlan& p_;
  std::vector<Splits> s_;
  std::vector<char> flat_;  // reads every graph input at its own flat index
};

void Inference::window(const LinNode& n, Splits& y, const Dims& yd) {
  const int x = n.in[0];
  const Dims& xd = dims(x);
  const bool transposed = n.op == LinOp::ConvTranspose;
  for (size_t d = 0; d + 2 < xd.size(); ++d) {
    const int64_t in = xd[d + 2], s = n.win.s[d], pb = n.win.pb[d], dil = n.win.d[d];
    const Points ip = flat_points(x, d + 2);
    Points out;
    for (int64_t k = 0; k < n.win.k[d]; ++k) {
      if (transposed)
        scan(yd[d + 2], ip, [&](int64_t j) {
          const int64_t t = j + pb - k * dil;
          return t < 0 || t % s != 0 || t / s >= in ? kNoRead : t / s;
        }, out);
      else
        scan(yd[d + 2], ip, [&](int64_t j) {
          const int64_t i = j * s - pb + k * dil;
          return i < 0 || i >= in ? kNoRead : i;
        }, out);
      if (n.op == LinOp::AvgPool && n.win.count_include_pad)  // the padded count changes
        scan(yd[d + 2], Points{0, 1}, [&](int64_t j) {
          const int64_t i = j * s - pb + k * dil;
          return i < -pb || i >= in + n.win.pe[d] ? kNoRead : 0;
        }, out);
    }
    y[d + 2] = {atom(yd[d + 2], out)};
  }
}

void Inference::run(const LinNode& n) {
  const int x = n.in[0];
  const Dims& xd = dims(x);
  for (size_t k = 0; k < n.out.size(); ++k) {
    const int out = n.out[k];
    const Dims& yd = dims(out);
    Splits y = trivial_all(yd);
    switch (n.op) {
      case LinOp::Copy:
        if (flat_[static_cast<size_t>(x)]) flat_[static_cast<size_t>(out)] = 1;
        else y = reshape(xd, of(x), yd);
        break;
      case LinOp::Transpose: y = transpose(of(x), n.perm); break;
      case LinOp::Add: case LinOp::Sub: case LinOp::Mul:
        take_broadcast(n.in[0], yd, y);
        take_broadcast(n.in[1], yd, y);
        break;
      case LinOp::Conv: case LinOp::ConvTranspose: {
        const int w = n.in[1];
        y[0] = of(x)[0];
        const int64_t Mg = yd[1] / n.win.group;
        Points m;
        for (int64_t g = 0; g <= n.win.group; ++g) m.push_back(g * Mg);
        if (n.op == LinOp::Conv) {
          m = flat_points(w, 0);
          for (int64_t g = 0; g <= n.win.group; ++g) m.push_back(g * Mg);
        } else {
          for (int64_t g = 0; g < n.win.group; ++g)
            for (int64_t q : flat_points(w, 1)) m.push_back(g * Mg + q);
        }
        if (n.in[2] >= 0) {
          const Points b = flat_points(n.in[2], 0);
          m.insert(m.end(), b.begin(), b.end());
        }
        y[1] = {atom(yd[1], m)};
        window(n, y, yd);
        break;
      }
      case LinOp::AvgPool:
        y[0] = of(x)[0];
        y[1] = of(x)[1];
        window(n, y, yd);
        break;
      case LinOp::MatMul: {
        const int b = n.in[1];
        const Dims& ad = dims(x);
        const Dims& bd = dims(b);
        const bool a1 = ad.size() == 1, b1 = bd.size() == 1;
        const size_t nbatch = yd.size() - (a1 ? 0 : 1) - (b1 ? 0 : 1);
        if (!a1) y[nbatch] = of(x)[ad.size() - 2];
        if (!b1) y[yd.size() - 1] = of(b)[bd.size() - 1];
        for (int id : {x, b}) {
          const Dims& d = dims(id);
          if (d.size() < 2) continue;
          const size_t nb = d.size() - 2;
          for (size_t t = 0; t < nb; ++t)
            if (d[t] == yd[nbatch - nb + t]) y[nbatch - nb + t] = unify(y[nbatch - nb + t], of(id)[t]);
        }
        break;
      }
      case LinOp::Gemm:
        y[0] = of(x)[n.trans_a ? 1 : 0];
        y[1] = of(n.in[1])[n.trans_b ? 0 : 1];
        if (n.in.size() > 2) take_broadcast(n.in[2], yd, y);
        break;
      case LinOp::Pad: case LinOp::Slice:
        for (size_t d = 0; d < yd.size(); ++d) {
          if (n.start[d] == 0 && n.step[d] == 1 && yd[d] == xd[d]) {
            y[d] = of(x)[d];  // left alone
            continue;
          }
          Points p;
          scan(yd[d], flat_points(x, d), [&](int64_t j) {
            const int64_t i = n.start[d] + j * n.step[d];
            return i < 0 || i >= xd[d] ? kNoRead : i;
          }, p);
          y[d] = {atom(yd[d], p)};
        }
        break;
      case LinOp::Concat: {
        const size_t ax = static_cast<size_t>(n.axis);
        Points p;
        for (size_t i = 0; i < n.in.size(); ++i) {
          for (size_t d = 0; d < yd.size(); ++d)
            if (d != ax) y[d] = unify(y[d], of(n.in[i])[d]);
          for (int64_t q : flat_points(n.in[i], ax)) p.push_back(n.offsets[i] + q);
        }
        y[ax] = {atom(yd[ax], p)};
        break;
      }
      case LinOp::Split: {
        const size_t ax = static_cast<size_t>(n.axis);
        for (size_t d = 0; d < yd.size(); ++d)
          if (d != ax) y[d] = of(x)[d];
        Points p;
        for (int64_t q : flat_points(x, ax)) p.push_back(q - n.offsets[k]);
        y[ax] = {atom(yd[ax], p)};
        break;
      }
      case LinOp::Reduce:
        for (size_t d = 0, o = 0; d < xd.size(); ++d) {
          if (!n.reduced[d]) y[o++] = of(x)[d];
          else if (n.keepdims) ++o;
        }
        break;
      case LinOp::DepthToSpace: {  // a reshape, a transpose and a reshape
        const int64_t b = n.block, N = xd[0], C = yd[1], H = xd[2], W = xd[3];
        if (n.dcr) y = relabel(x, {N, b, b, C, H, W}, {0, 3, 4, 1, 5, 2}, yd);
        else y = relabel(x, {N, C, b, b, H, W}, {0, 1, 4, 2, 5, 3}, yd);
        break;
      }
      case LinOp::SpaceToDepth: {
        const int64_t b = n.block;
        y = relabel(x, {xd[0], xd[1], xd[2] / b, b, xd[3] / b, b}, {0, 3, 5, 1, 2, 4}, yd);
        break;
      }
    }
    s_[static_cast<size_t>(out)] = std::move(y);
  }
}

}  // namespace

Points dim_points(const DimSplit& d) {
  const DimSplit a = nontrivial(d);
  if (a.empty()) return atom(dim_size(d)).points;
  if (a.size() == 1) return a[0].points;
  // A point at every row of the innermost atom (and its points in each row).
  const Atom& inner = a.back();
  Points p;
  for (int64_t r = 0; r < dim_size(d) / inner.size; ++r)
    for (int64_t q : inner.points) p.push_back(r * inner.size + q);
  normalize(p, dim_size(d));
  return p;
}

std::vector<Splits> infer_splitting_points(const LinearPlan& plan) {
  Inference inf(plan);
  std::vector<Splits> r;
  for (int id : plan.outputs) r.push_back(inf.of(id));
  return r;
}

std::vector<Splits> infer_splitting_points(const Graph& g) { return infer_splitting_points(plan_linear(g)); }

Splits union_splits(const Splits& a, const Splits& b) {
  TESSERA_CHECK(a.size() == b.size(), "pet: splits of ranks ", a.size(), " and ", b.size());
  Splits r;
  for (size_t d = 0; d < a.size(); ++d) r.push_back(unify(a[d], b[d]));
  return r;
}

int64_t AtomBox::volume() const {
  int64_t v = 1;
  for (size_t t = 0; t < lo.size(); ++t) v *= hi[t] - lo[t];
  return v;
}

int64_t box_count(const Splits& s) {
  int64_t n = 1;
  for (const DimSplit& d : s)
    for (const Atom& a : d) n *= std::max<int64_t>(0, static_cast<int64_t>(a.points.size()) - 1);
  return n;
}

std::vector<AtomBox> atom_boxes(const Splits& s) {
  std::vector<const Points*> atoms;
  for (const DimSplit& d : s)
    for (const Atom& a : d) atoms.push_back(&a.points);
  std::vector<AtomBox> r;
  const int64_t n = box_count(s);
  r.reserve(static_cast<size_t>(n));
  std::vector<size_t> cell(atoms.size(), 0);
  for (int64_t b = 0; b < n; ++b) {
    AtomBox box;
    for (size_t t = 0; t < atoms.size(); ++t) {
      box.lo.push_back((*atoms[t])[cell[t]]);
      box.hi.push_back((*atoms[t])[cell[t] + 1]);
    }
    r.push_back(std::move(box));
    for (size_t t = atoms.size(); t-- > 0;) {
      if (++cell[t] + 1 < atoms[t]->size()) break;
      cell[t] = 0;
    }
  }
  return r;
}

std::vector<std::vector<int64_t>> box_positions(const Splits& s, const AtomBox& b) {
  auto index = [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> idx;
    size_t t = 0;
    for (const DimSplit& d : s) {
      int64_t v = 0;
      for (const Atom& a : d) v = v * a.size + c[t++];
      idx.push_back(v);
    }
    return idx;
  };
  std::vector<std::vector<int64_t>> r{index(b.lo)};
  for (size_t t = 0; t < b.lo.size(); ++t)
    if (b.hi[t] - b.lo[t] > 1) {
      std::vector<int64_t> c = b.lo;
      ++c[t];
      r.push_back(index(c));
    }
  return r;
}

std::vector<Box> to_boxes(const Splits& s, const AtomBox& b) {
  // Per dim, the contiguous runs [lo, hi) the box covers: the innermost atoms
  // it covers whole join the first one it does not into one run per value of
  // the atoms outside it.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> runs;
  size_t t0 = 0;
  for (const DimSplit& d : s) {
    const size_t k = d.size();
    size_t cut = k;  // atoms [cut, k) are whole
    while (cut > 0 && b.lo[t0 + cut - 1] == 0 && b.hi[t0 + cut - 1] == d[cut - 1].size) --cut;
    int64_t inner = 1;  // elements per step of atom cut - 1
    for (size_t t = cut; t < k; ++t) inner *= d[t].size;
    std::vector<std::pair<int64_t, int64_t>> r{{0, 0}};  // bases of the outer atoms
    const size_t run_atom = cut == 0 ? 0 : cut - 1;
    for (size_t t = 0; t < run_atom; ++t) {
      std::vector<std::pair<int64_t, int64_t>> next;
      for (const auto& [base, unused] : r)
        for (int64_t c = b.lo[t0 + t]; c < b.hi[t0 + t]; ++c) next.push_back({base * d[t].size + c, 0});
      r = std::move(next);
    }
    for (auto& [lo, hi] : r) {
      if (cut == 0) {
        lo = 0;
        hi = dim_size(d);
        continue;
      }
      const int64_t base = lo * d[run_atom].size;
      lo = (base + b.lo[t0 + run_atom]) * inner;
      hi = (base + b.hi[t0 + run_atom]) * inner;
    }
    runs.push_back(std::move(r));
    t0 += k;
  }
  std::vector<Box> out{Box{}};
  for (const auto& r : runs) {
    std::vector<Box> next;
    for (const Box& o : out)
      for (const auto& [lo, hi] : r) {
        Box x = o;
        x.lo.push_back(lo);
        x.hi.push_back(hi);
        next.push_back(std::move(x));
      }
    out = std::move(next);
  }
  return out;
}

}  // namespace tessera::pet
