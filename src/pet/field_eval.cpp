#include "pet/field_eval.h"

#include <algorithm>
#include <array>

#include "pet/field.h"
#include "support/error.h"

namespace tessera::pet {

namespace {

using Index = std::array<int64_t, kMaxRank>;

// Larger values never get a dense memo (a hash map only).
constexpr int64_t kDenseLimit = int64_t{1} << 24;
// Values up to this many elements are memoized densely from their first element.
constexpr int64_t kSmall = int64_t{1} << 16;

void unflatten(int64_t flat, const Dims& dims, const Dims& strides, int64_t* idx) {
  for (size_t d = 0; d < dims.size(); ++d) {
    idx[d] = strides[d] ? flat / strides[d] : 0;
    flat -= idx[d] * strides[d];
  }
}

// Flat index into a tensor of `in` dims that broadcasts (numpy, aligned right)
// to an output indexed by `idx` of rank `out_rank`.
int64_t broadcast_flat(const Dims& in, const Dims& in_strides, const int64_t* idx, size_t out_rank) {
  const size_t off = out_rank - in.size();
  int64_t f = 0;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1) f += idx[i + off] * in_strides[i];
  return f;
}

}  // namespace

FieldEvaluator::FieldEvaluator(const Graph& g, std::vector<FieldTensor> inputs)
    : owned_(std::make_unique<LinearPlan>(plan_linear(g))), plan_(owned_.get()), inputs_(std::move(inputs)) {
  TESSERA_CHECK(inputs_.size() == plan_->inputs.size(), "pet: ", inputs_.size(), " field inputs for a graph of ",
                plan_->inputs.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const int id = plan_->inputs[i];
    TESSERA_CHECK(inputs_[i].dims == plan_->dims[static_cast<size_t>(id)] &&
                      static_cast<int64_t>(inputs_[i].data.size()) == numel_of(inputs_[i].dims),
                  "pet: field input ", i, " ('", plan_->values[static_cast<size_t>(id)]->name, "') has dims ",
                  dims_to_string(inputs_[i].dims), " and ", inputs_[i].data.size(), " elements, expected ",
                  dims_to_string(plan_->dims[static_cast<size_t>(id)]));
    for (uint32_t v : inputs_[i].data)
      TESSERA_CHECK(v < field::kP, "pet: field input ", i, " holds ", v, ", not an element of Z_p");
  }
  init();
}

FieldEvaluator::FieldEvaluator(const Graph& g, uint64_t seed)
    : owned_(std::make_unique<LinearPlan>(plan_linear(g))), plan_(owned_.get()), seed_(seed) {
  init();
}

FieldEvaluator::FieldEvaluator(const LinearPlan& plan, uint64_t seed) : plan_(&plan), seed_(seed) { init(); }

void FieldEvaluator::init() {
  const size_t n = plan_->values.size();
  memo_.resize(n);
  sparse_.resize(n);
  dense_.assign(n, nullptr);
  strides_.resize(n);
  for (size_t i = 0; i < n; ++i) strides_[i] = strides_of(plan_->dims[i]);
  for (size_t i = 0; i < plan_->inputs.size(); ++i) input_keys_.push_back(field::stream_key(seed_, i));
  memoize_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int p = plan_->producer[i];
    if (p < 0) continue;
    switch (plan_->nodes[static_cast<size_t>(p)].op) {
      case LinOp::Copy: case LinOp::Transpose: case LinOp::Pad: case LinOp::Slice: case LinOp::Concat:
      case LinOp::Split: case LinOp::DepthToSpace: case LinOp::SpaceToDepth: break;
      default: memoize_[i] = 1;
    }
  }
  for (const auto& [id, data] : plan_->constants) dense_[static_cast<size_t>(id)] = data.data();
  for (size_t i = 0; i < inputs_.size(); ++i) dense_[static_cast<size_t>(plan_->inputs[i])] = inputs_[i].data.data();
}

const Dims& FieldEvaluator::output_dims(int output) const {
  TESSERA_CHECK(output >= 0 && output < num_outputs(), "pet: no output ", output);
  return plan_->dims[static_cast<size_t>(plan_->outputs[static_cast<size_t>(output)])];
}

uint32_t FieldEvaluator::at(int output, int64_t flat) {
  const Dims& d = output_dims(output);
  TESSERA_CHECK(flat >= 0 && flat < numel_of(d), "pet: element ", flat, " is outside output ", output, " of dims ",
                dims_to_string(d));
  return get(plan_->outputs[static_cast<size_t>(output)], flat);
}

uint32_t FieldEvaluator::at(int output, const std::vector<int64_t>& index) {
  const Dims& d = output_dims(output);
  TESSERA_CHECK(index.size() == d.size(), "pet: index of rank ", index.size(), " for output ", output, " of dims ",
                dims_to_string(d));
  const Dims st = strides_of(d);
  int64_t flat = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    TESSERA_CHECK(index[i] >= 0 && index[i] < d[i], "pet: index ", index[i], " is outside dim ", i, " of output ",
                  output, " (", dims_to_string(d), ")");
    flat += index[i] * st[i];
  }
  return get(plan_->outputs[static_cast<size_t>(output)], flat);
}

FieldTensor FieldEvaluator::output(int output) {
  FieldTensor t{output_dims(output), {}};
  const int64_t n = numel_of(t.dims);
  t.data.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t.data[static_cast<size_t>(i)] = at(output, i);
  return t;
}

uint32_t FieldEvaluator::slow(int id, int64_t flat) {
  const size_t u = static_cast<size_t>(id);
  // Seeded inputs and ops that only move elements are cheaper to recompute
  // than to memoize (a memo of a large value costs its whole size to clear);
  // sums of products (Conv, MatMul, pools, reductions, elementwise) are memoized.
  if (!memoize_[u]) return compute(id, flat);
  // A value starts with a hash-map memo (a few positions of a large tensor
  // should not cost clearing all of it) and gets a dense one once it holds a
  // sizeable share of the elements.
  const int64_t n = plan_->numel(id);
  if (n <= kSmall) {  // small: dense from the start
    if (!dense_[u]) {
      memo_[u].assign(static_cast<size_t>(n), field::kNone);
      dense_[u] = memo_[u].data();
    }
    const uint32_t v = compute(id, flat);
    memo_[u][static_cast<size_t>(flat)] = v;
    return v;
  }
  auto it = sparse_[u].find(flat);
  if (it != sparse_[u].end()) return it->second;
  const uint32_t v = compute(id, flat);
  if (dense_[u]) {  // became dense while computing (a value read at many places)
    memo_[u][static_cast<size_t>(flat)] = v;
    return v;
  }
  sparse_[u][flat] = v;
  if (n <= kDenseLimit && static_cast<int64_t>(sparse_[u].size()) > std::max<int64_t>(4096, n / 64)) {
    memo_[u].assign(static_cast<size_t>(n), field::kNone);
    for (const auto& [f, x] : sparse_[u]) memo_[u][static_cast<size_t>(f)] = x;
    sparse_[u] = {};
    dense_[u] = memo_[u].data();
  }
  return v;
}

uint32_t FieldEvaluator::compute(int id, int64_t flat) {
  ++computed_;
  const size_t u = static_cast<size_t>(id);
  if (plan_->input_index[u] >= 0)
    return field::random_element_of_key(input_keys_[static_cast<size_t>(plan_->input_index[u])], static_cast<uint64_t>(flat));
  const int p = plan_->producer[u];
  TESSERA_CHECK(p >= 0, "pet: value '", plan_->values[u]->name, "' has no producer");
  const LinNode& n = plan_->nodes[static_cast<size_t>(p)];
  const int x = n.in[0];
  if (n.op == LinOp::Copy) return get(x, flat);  // same flat index
  const int out_k = plan_->producer_output[u];
  Index idx{};
  const Dims& yd = plan_->dims[u];
  unflatten(flat, yd, strides_[u], idx.data());
  const Dims& xd = plan_->dims[static_cast<size_t>(x)];
  const Dims& xs = strides_[static_cast<size_t>(x)];
  switch (n.op) {
    case LinOp::Copy: return get(x, flat);
    case LinOp::Transpose: {
      int64_t f = 0;
      for (size_t i = 0; i < n.perm.size(); ++i) f += idx[i] * xs[static_cast<size_t>(n.perm[i])];
      return get(x, f);
    }
    case LinOp::Add: case LinOp::Sub: case LinOp::Mul: {
      const int b = n.in[1];
      const uint32_t va = get(x, broadcast_flat(xd, xs, idx.data(), yd.size()));
      const uint32_t vb = get(b, broadcast_flat(plan_->dims[static_cast<size_t>(b)], strides_[static_cast<size_t>(b)],
                                                idx.data(), yd.size()));
      return n.op == LinOp::Add ? field::add(va, vb) : n.op == LinOp::Sub ? field::sub(va, vb) : field::mul(va, vb);
    }
    case LinOp::Pad: case LinOp::Slice: {
      int64_t f = 0;
      for (size_t d = 0; d < xd.size(); ++d) {
        const int64_t i = n.start[d] + idx[d] * n.step[d];
        if (i < 0 || i >= xd[d]) return 0;  // Pad's zeros
        f += i * xs[d];
      }
      return get(x, f);
    }
    case LinOp::Concat: {
      const size_t ax = static_cast<size_t>(n.axis);
      size_t k = n.offsets.size() - 1;
      while (n.offsets[k] > idx[ax]) --k;
      idx[ax] -= n.offsets[k];
      const int src = n.in[k];
      const Dims& s = strides_[static_cast<size_t>(src)];
      int64_t f = 0;
      for (size_t d = 0; d < yd.size(); ++d) f += idx[d] * s[d];
      return get(src, f);
    }
    case LinOp::Split: {
      idx[static_cast<size_t>(n.axis)] += n.offsets[static_cast<size_t>(out_k)];
      int64_t f = 0;
      for (size_t d = 0; d < xd.size(); ++d) f += idx[d] * xs[d];
      return get(x, f);
    }
    case LinOp::DepthToSpace: {
      const int64_t b = n.block, c = idx[1], h = idx[2], w = idx[3], C = yd[1];
      const int64_t i = h % b, j = w % b;
      const int64_t ci = n.dcr ? (i * b + j) * C + c : c * b * b + i * b + j;
      return get(x, idx[0] * xs[0] + ci * xs[1] + (h / b) * xs[2] + (w / b) * xs[3]);
    }
    case LinOp::SpaceToDepth: {
      const int64_t b = n.block, C = xd[1], co = idx[1];
      const int64_t bh = co / (b * C), bw = (co / C) % b, c = co % C;
      return get(x, idx[0] * xs[0] + c * xs[1] + (idx[2] * b + bh) * xs[2] + (idx[3] * b + bw) * xs[3]);
    }
    case LinOp::Conv: return eval_conv(n, idx.data());
    case LinOp::ConvTranspose: return eval_conv_transpose(n, idx.data());
    case LinOp::AvgPool: return eval_avg_pool(n, idx.data());
    case LinOp::MatMul: return eval_matmul(n, idx.data());
    case LinOp::Gemm: return eval_gemm(n, idx.data());
    case LinOp::Reduce: return eval_reduce(n, idx.data());
  }
  TESSERA_FAIL("pet: ", n.node->describe(), ": unhandled op");
}

// The taps of a window op's output position: for every spatial dim d, the
// kernel positions k whose input index source(d, k) is inside x (source returns
// -1 for none), combined over the dims into pairs (offset into x's plane,
// offset into w's kernel).
template <class Source>
static std::vector<int64_t> window_taps(const LinNode& n, size_t nsp, const Dims& xs, const Dims& ws, Source source) {
  std::vector<int64_t> taps{0, 0}, next;
  for (size_t d = 0; d < nsp; ++d) {
    next.clear();
    for (int64_t k = 0; k < n.win.k[d]; ++k) {
      const int64_t i = source(d, k);
      if (i < 0) continue;
      for (size_t t = 0; t < taps.size(); t += 2) {
        next.push_back(taps[t] + i * xs[d + 2]);
        next.push_back(taps[t + 1] + k * ws[d + 2]);
      }
    }
    taps.swap(next);
  }
  return taps;
}

template <class XBase, class WBase>
uint32_t FieldEvaluator::sum_taps(int x, int w, const std::vector<int64_t>& taps, int64_t c0, int64_t c1, uint64_t acc,
                                  XBase xb_of, WBase wb_of) {
  for (int64_t c = c0; c < c1; ++c) {
    const int64_t xb = xb_of(c), wb = wb_of(c);
    for (size_t t = 0; t < taps.size(); t += 2) acc += field::mul(get(x, xb + taps[t]), get(w, wb + taps[t + 1]));
    acc = field::reduce(acc);
  }
  return field::reduce(acc);
}

uint32_t FieldEvaluator::eval_conv(const LinNode& n, const int64_t* idx) {
  const int x = n.in[0], w = n.in[1];
  const Dims& xd = plan_->dims[static_cast<size_t>(x)];
  const Dims& wd = plan_->dims[static_cast<size_t>(w)];
  const Dims& xs = strides_[static_cast<size_t>(x)];
  const Dims& ws = strides_[static_cast<size_t>(w)];
  const size_t nsp = xd.size() - 2;
  const int64_t M = wd[0], Cg = wd[1], G = n.win.group, Mg = M / G;
  const int64_t m = idx[1], grp = m / Mg;
  const std::vector<int64_t> taps = window_taps(n, nsp, xs, ws, [&](size_t d, int64_t k) -> int64_t {
    const int64_t i = idx[d + 2] * n.win.s[d] - n.win.pb[d] + k * n.win.d[d];
    return i < xd[d + 2] ? i : -1;
  });
  return sum_taps(
      x, w, taps, 0, Cg, n.in[2] >= 0 ? get(n.in[2], m) : 0,
      [&](int64_t c) { return idx[0] * xs[0] + (grp * Cg + c) * xs[1]; },
      [&](int64_t c) { return m * ws[0] + c * ws[1]; });
}

uint32_t FieldEvaluator::eval_conv_transpose(const LinNode& n, const int64_t* idx) {
  // y[n, m, o] = b[m] + sum over c of m's group and taps k with o = i*s - pb + k*d
  // of x[n, c, i] * w[c, m mod M/G, k].
  const int x = n.in[0], w = n.in[1];
  const Dims& xd = plan_->dims[static_cast<size_t>(x)];
  const Dims& wd = plan_->dims[static_cast<size_t>(w)];
  const Dims& xs = strides_[static_cast<size_t>(x)];
  const Dims& ws = strides_[static_cast<size_t>(w)];
  const size_t nsp = xd.size() - 2;
  const int64_t C = xd[1], G = n.win.group, Cg = C / G, Mg = wd[1];
  const int64_t m = idx[1], grp = m / Mg, ml = m % Mg;
  const std::vector<int64_t> taps = window_taps(n, nsp, xs, ws, [&](size_t d, int64_t k) -> int64_t {
    const int64_t t = idx[d + 2] + n.win.pb[d] - k * n.win.d[d];
    return t < 0 || t % n.win.s[d] != 0 || t / n.win.s[d] >= xd[d + 2] ? -1 : t / n.win.s[d];
  });
  return sum_taps(
      x, w, taps, grp * Cg, (grp + 1) * Cg, n.in[2] >= 0 ? get(n.in[2], m) : 0,
      [&](int64_t c) { return idx[0] * xs[0] + c * xs[1]; }, [&](int64_t c) { return c * ws[0] + ml * ws[1]; });
}

uint32_t FieldEvaluator::eval_avg_pool(const LinNode& n, const int64_t* idx) {
  const int x = n.in[0];
  const Dims& xd = plan_->dims[static_cast<size_t>(x)];
  const Dims& xs = strides_[static_cast<size_t>(x)];
  const size_t nsp = xd.size() - 2;
  std::vector<int64_t> offs{idx[0] * xs[0] + idx[1] * xs[1]};
  int64_t padded = 1;
  for (size_t d = 0; d < nsp; ++d) {
    std::vector<int64_t> next;
    int64_t in_padded = 0;
    for (int64_t k = 0; k < n.win.k[d]; ++k) {
      const int64_t i = idx[d + 2] * n.win.s[d] - n.win.pb[d] + k * n.win.d[d];
      in_padded += i >= -n.win.pb[d] && i < xd[d + 2] + n.win.pe[d];
      if (i < 0 || i >= xd[d + 2]) continue;
      for (int64_t o : offs) next.push_back(o + i * xs[d + 2]);
    }
    padded *= in_padded;
    offs = std::move(next);
  }
  const int64_t count = n.win.count_include_pad ? padded : static_cast<int64_t>(offs.size());
  TESSERA_CHECK(count > 0, "pet: ", n.node->describe(), ": a window reads no input element (division by zero)");
  uint64_t acc = 0;
  for (int64_t o : offs) acc += get(x, o);
  return field::mul(field::reduce(acc), field::inv(field::from_int(count)));
}

uint32_t FieldEvaluator::eval_matmul(const LinNode& n, const int64_t* idx) {
  // Operands of rank 1 are promoted ([K] -> [1, K] for A, [K, 1] for B) and the
  // promoted dim is absent from the output; batch dims broadcast.
  const int a = n.in[0], b = n.in[1];
  const Dims& ad = plan_->dims[static_cast<size_t>(a)];
  const Dims& bd = plan_->dims[static_cast<size_t>(b)];
  const Dims& as = strides_[static_cast<size_t>(a)];
  const Dims& bs = strides_[static_cast<size_t>(b)];
  const size_t yr = plan_->dims[static_cast<size_t>(n.out[0])].size();
  const bool a1 = ad.size() == 1, b1 = bd.size() == 1;
  const int64_t K = ad.back();
  // Output dims: batch..., [M unless a1], [N unless b1].
  const size_t nbatch = yr - (a1 ? 0 : 1) - (b1 ? 0 : 1);
  const int64_t i = a1 ? 0 : idx[nbatch];
  const int64_t j = b1 ? 0 : idx[yr - 1];
  int64_t abase = 0, bbase = 0;
  if (!a1) {
    const size_t ab = ad.size() - 2;
    for (size_t t = 0; t < ab; ++t)
      if (ad[t] != 1) abase += idx[nbatch - ab + t] * as[t];
    abase += i * as[ad.size() - 2];
  }
  if (!b1) {
    const size_t bb = bd.size() - 2;
    for (size_t t = 0; t < bb; ++t)
      if (bd[t] != 1) bbase += idx[nbatch - bb + t] * bs[t];
    bbase += j;
  }
  const int64_t astep = a1 ? 1 : as[ad.size() - 1];
  const int64_t bstep = b1 ? 1 : bs[bd.size() - 2];
  uint64_t acc = 0;
  for (int64_t k = 0; k < K; ++k) {
    acc += field::mul(get(a, abase + k * astep), get(b, bbase + k * bstep));
    if ((k & 0x3FFFFFF) == 0x3FFFFFF) acc = field::reduce(acc);
  }
  return field::reduce(acc);
}

uint32_t FieldEvaluator::eval_gemm(const LinNode& n, const int64_t* idx) {
  const int a = n.in[0], b = n.in[1];
  const Dims& ad = plan_->dims[static_cast<size_t>(a)];
  const Dims& bd = plan_->dims[static_cast<size_t>(b)];
  const int64_t i = idx[0], j = idx[1];
  const int64_t K = n.trans_a ? ad[0] : ad[1];
  uint64_t acc = 0;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t af = n.trans_a ? k * ad[1] + i : i * ad[1] + k;
    const int64_t bf = n.trans_b ? j * bd[1] + k : k * bd[1] + j;
    acc += field::mul(get(a, af), get(b, bf));
    if ((k & 0x3FFFFFF) == 0x3FFFFFF) acc = field::reduce(acc);
  }
  if (n.in.size() > 2 && n.in[2] >= 0) {
    const int c = n.in[2];
    acc += get(c, broadcast_flat(plan_->dims[static_cast<size_t>(c)], strides_[static_cast<size_t>(c)], idx, 2));
  }
  return field::reduce(acc);
}

uint32_t FieldEvaluator::eval_reduce(const LinNode& n, const int64_t* idx) {
  const int x = n.in[0];
  const Dims& xd = plan_->dims[static_cast<size_t>(x)];
  const Dims& xs = strides_[static_cast<size_t>(x)];
  // The input index of the first element of the reduction, and the reduced dims.
  int64_t base = 0, count = 1;
  std::vector<size_t> red;
  for (size_t d = 0, o = 0; d < xd.size(); ++d) {
    if (n.reduced[d]) {
      red.push_back(d);
      count *= xd[d];
      if (n.keepdims) ++o;
    } else {
      base += idx[o++] * xs[d];
    }
  }
  uint64_t acc = 0;
  Index r{};
  for (int64_t e = 0; e < count; ++e) {
    int64_t f = base;
    for (size_t q = 0; q < red.size(); ++q) f += r[q] * xs[red[q]];
    acc = field::reduce(acc + get(x, f));
    for (size_t q = red.size(); q-- > 0;) {  // odometer over the reduced dims
      if (++r[q] < xd[red[q]]) break;
      r[q] = 0;
    }
  }
  if (!n.mean) return static_cast<uint32_t>(acc);
  TESSERA_CHECK(count > 0, "pet: ", n.node->describe(), ": mean over no elements");
  return field::mul(static_cast<uint32_t>(acc), field::inv(field::from_int(count)));
}

}  // namespace tessera::pet
