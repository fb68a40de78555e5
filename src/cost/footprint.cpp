// Affine index forms and cache-line footprints (see footprint.h).
#include "cost/footprint.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_set>

#include "loop/bounds.h"
#include "loop/visitor.h"

namespace tessera::cost {

using namespace loop;

namespace {

AffineIndex not_affine() { return {}; }

AffineIndex constant(int64_t v) {
  AffineIndex a;
  a.affine = true;
  a.offset = v;
  return a;
}

// a + k*b (lanes: a scalar side takes the other's lanes).
AffineIndex combine(const AffineIndex& a, const AffineIndex& b, int64_t k) {
  if (!a.affine || !b.affine) return not_affine();
  if (a.lanes > 1 && b.lanes > 1 && a.lanes != b.lanes) return not_affine();
  AffineIndex r;
  r.affine = true;
  r.offset = a.offset + k * b.offset;
  std::map<const ExprNode*, int64_t> terms(a.terms.begin(), a.terms.end());
  for (const auto& [v, c] : b.terms) terms[v] += k * c;
  for (const auto& [v, c] : terms)
    if (c != 0) r.terms.emplace_back(v, c);
  r.opaque = a.opaque;
  for (const AffineIndex::Opaque& o : b.opaque)
    if (std::none_of(r.opaque.begin(), r.opaque.end(), [&](const auto& x) { return x.expr.same_as(o.expr); }))
      r.opaque.push_back(o);
  r.lanes = std::max(a.lanes, b.lanes);
  r.lane_stride = a.lane_stride + k * b.lane_stride;
  return r;
}

AffineIndex scaled(const AffineIndex& a, int64_t k) { return combine(constant(0), a, k); }

// The variables an expression mentions.
struct VarCollector : IRVisitor {
  using IRVisitor::visit;
  std::unordered_set<const VarNode*> vars;
  void visit(const VarNode* op) override { vars.insert(op); }
};

// A scalar integer subexpression as one opaque term.
AffineIndex opaque_term(const Expr& e) {
  if (e.type().lanes > 1) return not_affine();
  VarCollector vc;
  vc.visit(e);
  AffineIndex a;
  a.affine = true;
  a.terms.emplace_back(e.get(), 1);
  a.opaque.push_back({e, std::vector<const VarNode*>(vc.vars.begin(), vc.vars.end())});
  return a;
}

// The trip count of a term: a variable's extent (1 when fixed), an opaque
// term's number of values while its varying variables run (interval
// analysis; 1 when none varies, -1 when unbounded).
int64_t term_count(const AffineIndex& idx, const ExprNode* key, const VarExtents& extents) {
  if (key->kind == ExprKind::Var) {
    auto it = extents.find(static_cast<const VarNode*>(key));
    return it == extents.end() ? 1 : it->second;
  }
  for (const AffineIndex::Opaque& o : idx.opaque) {
    if (o.expr.get() != key) continue;
    VarBounds vb;
    bool varies = false;
    for (const VarNode* v : o.vars) {
      auto it = extents.find(v);
      varies |= it != extents.end() && it->second > 1;
      vb[v] = it == extents.end() ? Interval::single(0) : Interval{0, std::max<int64_t>(0, it->second - 1)};
    }
    if (!varies) return 1;
    Interval r = bounds_of(o.expr, vb);
    if (!r.has_min() || !r.has_max()) return -1;
    return r.max - r.min + 1;
  }
  return 1;
}

// Lines of one affine access: its dimensions (stride and count in bytes)
// sorted by stride merge into one contiguous run while the gap to the next
// step is under a line; the remaining dimensions repeat that run as separate
// blocks. The count never exceeds the lines of the span the access covers.
double affine_lines(const Access& a, const VarExtents& extents, int line) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // stride bytes, count
  int64_t span = a.elem_bytes;
  for (const auto& [key, c] : a.index.terms) {
    int64_t count = term_count(a.index, key, extents);
    if (count < 0) return a.buffer_bytes > 0 ? std::ceil(static_cast<double>(a.buffer_bytes) / line) : 1e12;
    if (count > 1) dims.emplace_back(std::abs(c) * a.elem_bytes, count);
  }
  if (a.index.lanes > 1 && a.index.lane_stride != 0)
    dims.emplace_back(std::abs(a.index.lane_stride) * a.elem_bytes, a.index.lanes);
  std::sort(dims.begin(), dims.end());
  double run = a.elem_bytes, blocks = 1;
  bool merging = true;
  for (const auto& [stride, count] : dims) {
    span += stride * (count - 1);
    if (merging && stride - run < line) run += static_cast<double>(stride) * static_cast<double>(count - 1);
    else {
      merging = false;
      blocks *= static_cast<double>(count);
    }
  }
  double lines = blocks * std::ceil(run / line);
  return std::min(lines, std::ceil(static_cast<double>(span) / line) + 1);
}

// The element range [lo, hi] an affine access covers (fixed variables at 0).
std::pair<int64_t, int64_t> affine_range(const Access& a, const VarExtents& extents) {
  int64_t lo = a.index.offset, hi = a.index.offset;
  for (const auto& [key, c] : a.index.terms) {
    int64_t count = term_count(a.index, key, extents);
    if (count <= 1) continue;
    int64_t d = c * (count - 1);
    (d < 0 ? lo : hi) += d;
  }
  int64_t d = a.index.lane_stride * (a.index.lanes - 1);
  (d < 0 ? lo : hi) += d;
  return {lo, hi};
}

// Lines of a non-affine access from the interval of its index (varying
// variables over their range, every other variable at 0).
double interval_lines(const Access& a, const VarExtents& extents, int line) {
  VarCollector vc;
  vc.visit(a.raw_index);
  VarBounds vb;
  for (const VarNode* v : vc.vars) {
    auto it = extents.find(v);
    vb[v] = it == extents.end() ? Interval::single(0) : Interval{0, std::max<int64_t>(0, it->second - 1)};
  }
  Interval r = bounds_of(a.raw_index, vb);
  if (!r.has_min() || !r.has_max()) return a.buffer_bytes > 0 ? std::ceil(static_cast<double>(a.buffer_bytes) / line) : 1e12;
  return std::ceil(static_cast<double>(r.max - r.min + 1) * a.elem_bytes / line) + 1;
}

}  // namespace

AffineIndex affine_index(const Expr& e, const LetForms& lets) {
  switch (e.kind()) {
    case ExprKind::IntImm: return constant(e.as<IntImmNode>()->value);
    case ExprKind::Var: {
      const VarNode* v = e.as<VarNode>();
      if (auto it = lets.find(v); it != lets.end()) return it->second;
      AffineIndex a;
      a.affine = true;
      a.terms.emplace_back(e.get(), 1);
      return a;
    }
    case ExprKind::Cast:
      return e.type().is_int() && e.as<CastNode>()->value.type().is_int() ? affine_index(e.as<CastNode>()->value, lets)
                                                                          : opaque_term(e);
    case ExprKind::Add:
    case ExprKind::Sub: {
      const BinaryNode* b = e.as<BinaryNode>();
      return combine(affine_index(b->a, lets), affine_index(b->b, lets), e.kind() == ExprKind::Add ? 1 : -1);
    }
    case ExprKind::Mul: {
      const BinaryNode* b = e.as<BinaryNode>();
      if (const int64_t* k = as_const_int(b->b)) return scaled(affine_index(b->a, lets), *k);
      if (const int64_t* k = as_const_int(b->a)) return scaled(affine_index(b->b, lets), *k);
      return opaque_term(e);
    }
    case ExprKind::Ramp: {
      const RampNode* r = e.as<RampNode>();
      const int64_t* stride = as_const_int(r->stride);
      AffineIndex a = affine_index(r->base, lets);
      if (!stride || !a.affine || a.lanes > 1) return not_affine();
      a.lanes = r->lanes;
      a.lane_stride = *stride;
      return a;
    }
    case ExprKind::Broadcast: {
      const BroadcastNode* b = e.as<BroadcastNode>();
      AffineIndex a = affine_index(b->value, lets);
      if (!a.affine || a.lanes > 1) return not_affine();
      a.lanes = b->lanes;
      return a;
    }
    default: return e.type().is_int() ? opaque_term(e) : not_affine();
  }
}

int64_t enter_loop(const ForNode* op, VarBounds& vb) {
  int64_t ext = 1;
  if (const int64_t* n = as_const_int(op->extent)) ext = *n;
  else if (Interval r = bounds_of(op->extent, vb); r.has_max()) ext = r.max;
  ext = std::max<int64_t>(ext, 0);
  Interval lo = bounds_of(op->min, vb);
  vb[op->var.node()] = lo.has_min() && lo.has_max() ? Interval{lo.min, lo.max + std::max<int64_t>(ext - 1, 0)}
                                                    : Interval::everything();
  return ext;
}

double footprint_bytes(const std::vector<const Access*>& accesses, const VarExtents& extents, int line) {
  // Group by buffer, keeping the distinct affine forms.
  struct Group {
    std::vector<const Access*> affine;
    double other_lines = 0;  // non-affine accesses, summed
    int64_t buffer_bytes = 0;
  };
  std::map<const BufferNode*, Group> groups;
  for (const Access* a : accesses) {
    Group& g = groups[a->buffer];
    g.buffer_bytes = a->buffer_bytes;
    if (!a->index.affine) {
      g.other_lines += interval_lines(*a, extents, line);
      continue;
    }
    bool seen = std::any_of(g.affine.begin(), g.affine.end(),
                            [&](const Access* b) { return b->index == a->index && b->elem_bytes == a->elem_bytes; });
    if (!seen) g.affine.push_back(a);
  }
  double total = 0;
  for (const auto& [buf, g] : groups) {
    double sum = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    int elem = 4;
    for (const Access* a : g.affine) {
      sum += affine_lines(*a, extents, line);
      auto [l, h] = affine_range(*a, extents);
      lo = std::min(lo, l);
      hi = std::max(hi, h);
      elem = a->elem_bytes;
    }
    double lines = sum;
    if (!g.affine.empty()) lines = std::min(sum, std::ceil(static_cast<double>(hi - lo + 1) * elem / line) + 1);
    lines += g.other_lines;
    if (g.buffer_bytes > 0) lines = std::min(lines, std::ceil(static_cast<double>(g.buffer_bytes) / line));
    total += lines * line;
  }
  return total;
}

}  // namespace tessera::cost
