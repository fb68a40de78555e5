// Per-store features (see value_features.h): a walk that records every
// store with its enclosing loops, allocations, operation counts and
// accesses, then one row per store from those.
#include "cost/value_features.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_set>

#include "cost/footprint.h"
#include "loop/bounds.h"
#include "loop/visitor.h"
#include "support/error.h"

namespace tessera::cost {

using namespace loop;

namespace {

struct LoopFrame {
  const VarNode* var = nullptr;
  int64_t extent = 1;
  ForKind kind = ForKind::Serial;
};

// One store statement as the walk saw it.
struct StoreSite {
  std::string buffer;
  const BufferNode* written = nullptr;
  std::vector<LoopFrame> loops;  // outermost first
  std::vector<double> ops = std::vector<double>(kHeadCount, 0.0);  // element ops of one execution (computation columns)
  int lanes = 1;
  std::vector<Access> accesses;  // loads of the value, then the store itself
  bool is_alloc = false;
  int64_t alloc_bytes = 0;
  size_t alloc_depth = 0;  // loops around the Allocate
};

int64_t element_count(const Buffer& b) {
  int64_t n = 1;
  for (int64_t d : b.dims()) n = d > 0 && n > 0 ? n * d : 0;
  return b.dims().empty() ? 0 : n;
}

class StoreWalker : public IRVisitor {
 public:
  using IRVisitor::visit;
  std::vector<StoreSite> sites;

 protected:
  void visit(const ForNode* op) override {
    const int64_t ext = enter_loop(op, vb_);
    loops_.push_back({op->var.node(), ext, op->for_kind});
    visit(op->body);
    loops_.pop_back();
  }
  void visit(const LetStmtNode* op) override {
    lets_[op->var.node()] = affine_index(op->value, lets_);
    if (op->value.type().is_int()) vb_[op->var.node()] = bounds_of(op->value, vb_);
    visit(op->body);
  }
  void visit(const AllocateNode* op) override {
    int64_t n = 0;
    if (const int64_t* c = as_const_int(op->extent)) n = *c;
    else if (Interval r = bounds_of(op->extent, vb_); r.has_max()) n = r.max;
    allocs_[op->buffer.get()] = {n * static_cast<int64_t>(dtype_size(op->buffer.dtype())), loops_.size()};
    visit(op->body);
    allocs_.erase(op->buffer.get());
  }
  void visit(const StoreNode* op) override {
    StoreSite s;
    s.buffer = op->buffer.name();
    s.written = op->buffer.get();
    s.loops = loops_;
    s.lanes = op->value.type().lanes;
    site_ = &s;
    count(op->value);
    add_access(op->buffer, op->index, op->value.type().lanes, true);
    site_ = nullptr;
    if (auto it = allocs_.find(op->buffer.get()); it != allocs_.end()) {
      s.is_alloc = true;
      s.alloc_bytes = it->second.first;
      s.alloc_depth = it->second.second;
    }
    sites.push_back(std::move(s));
  }
  void visit(const EvaluateNode*) override {}  // runtime calls and hints store no value

 private:
  void op(ValueHead h, const Expr& e) { site_->ops[column(h)] += e.type().lanes; }
  static bool is_float_mul(const Expr& e) { return e.kind() == ExprKind::Mul && e.type().is_float(); }

  // Counts the operations of a stored value's expression (not of its buffer indices).
  void count(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
      case ExprKind::Var: return;
      case ExprKind::Cast: {
        const CastNode* c = e.as<CastNode>();
        if (e.type().is_float() || c->value.type().is_float()) op(ValueHead::FloatOther, e);
        count(c->value);
        return;
      }
      case ExprKind::Not: op(ValueHead::BoolOps, e); count(e.as<NotNode>()->a); return;
      case ExprKind::Select: {
        const SelectNode* s = e.as<SelectNode>();
        op(ValueHead::SelectOps, e);
        count(s->cond);
        count(s->true_value);
        count(s->false_value);
        return;
      }
      case ExprKind::Load: {
        const LoadNode* l = e.as<LoadNode>();
        add_access(l->buffer, l->index, e.type().lanes, false);
        return;
      }
      case ExprKind::Ramp: return;  // an index-like value: no arithmetic of the value
      case ExprKind::Broadcast: count(e.as<BroadcastNode>()->value); return;
      case ExprKind::Call: {
        const CallNode* c = e.as<CallNode>();
        if (e.type().is_float()) op(c->name == "fma" ? ValueHead::FloatMad : ValueHead::FloatMath, e);
        for (const Expr& a : c->args) count(a);
        return;
      }
      case ExprKind::Let: {
        const LetNode* l = e.as<LetNode>();
        lets_[l->var.node()] = affine_index(l->value, lets_);
        count(l->value);
        count(l->body);
        return;
      }
      case ExprKind::ProducerLoad:
      case ExprKind::Reduce: TESSERA_FAIL("value features: tensor-expression node in a lowered kernel: ", expr_kind_name(e.kind()));
      default: break;
    }
    const BinaryNode* b = e.as<BinaryNode>();
    const ExprKind k = e.kind();
    if (e.type().is_float()) {
      if ((k == ExprKind::Add || k == ExprKind::Sub) && (is_float_mul(b->a) || is_float_mul(b->b))) {
        const Expr& mul = is_float_mul(b->a) ? b->a : b->b;
        const Expr& other = is_float_mul(b->a) ? b->b : b->a;
        op(ValueHead::FloatMad, e);
        count(mul.as<BinaryNode>()->a);
        count(mul.as<BinaryNode>()->b);
        count(other);
        return;
      }
      op(k == ExprKind::Mul                        ? ValueHead::FloatMul
         : k == ExprKind::Add || k == ExprKind::Sub ? ValueHead::FloatAdd
         : k == ExprKind::Div || k == ExprKind::Mod ? ValueHead::FloatDiv
                                                    : ValueHead::FloatCmp,
         e);
    } else if (is_comparison(k) && b->a.type().is_float()) {
      op(ValueHead::FloatCmp, b->a);
    } else if (k == ExprKind::And || k == ExprKind::Or) {
      op(ValueHead::BoolOps, e);
    } else {
      op(ValueHead::IntOps, is_comparison(k) ? b->a : e);
    }
    count(b->a);
    count(b->b);
  }

  void add_access(const Buffer& buf, const Expr& index, int lanes, bool is_store) {
    Access a;
    a.buffer = buf.get();
    a.elem_bytes = static_cast<int>(dtype_size(buf.dtype()));
    a.buffer_bytes = element_count(buf) * a.elem_bytes;
    if (auto it = allocs_.find(buf.get()); it != allocs_.end()) a.buffer_bytes = it->second.first;
    a.index = affine_index(index, lets_);
    if (a.index.affine && a.index.lanes < lanes) a.index.lanes = lanes;
    a.raw_index = index;
    a.is_store = is_store;
    site_->accesses.push_back(std::move(a));
  }

  std::vector<LoopFrame> loops_;
  LetForms lets_;
  VarBounds vb_;
  std::map<const BufferNode*, std::pair<int64_t, size_t>> allocs_;  // bytes, loops around it
  StoreSite* site_ = nullptr;
};

// The variables an expression mentions.
struct VarSet : IRVisitor {
  using IRVisitor::visit;
  std::unordered_set<const VarNode*> vars;
  void visit(const VarNode* op) override { vars.insert(op); }
};

// Loop variables an access's index moves with.
std::unordered_set<const VarNode*> index_vars(const Access& a) {
  std::unordered_set<const VarNode*> out;
  if (!a.index.affine) {
    VarSet vs;
    vs.visit(a.raw_index);
    return vs.vars;
  }
  for (const auto& [term, c] : a.index.terms)
    if (term->kind == ExprKind::Var) out.insert(static_cast<const VarNode*>(term));
  for (const AffineIndex::Opaque& o : a.index.opaque) out.insert(o.vars.begin(), o.vars.end());
  return out;
}

// The coefficient of `v` in an affine index (0 when absent or not affine).
int64_t coefficient(const Access& a, const VarNode* v) {
  if (!a.index.affine) return 0;
  for (const auto& [term, c] : a.index.terms)
    if (term == v) return c;
  return 0;
}

VarExtents extents_of(const std::vector<LoopFrame>& loops, size_t from) {
  VarExtents ext;
  for (size_t i = from; i < loops.size(); ++i) ext[loops[i].var] = loops[i].extent;
  return ext;
}

double product(const std::vector<LoopFrame>& loops, size_t from, size_t to) {
  double p = 1;
  for (size_t i = from; i < to && i < loops.size(); ++i) p *= static_cast<double>(loops[i].extent);
  return p;
}

// Cache lines one access statement fetches over the run (see the Lines column).
double access_lines(const Access& a, const std::vector<LoopFrame>& loops, int line) {
  const double lanes = a.index.affine ? a.index.lanes : 1;
  const double lane_stride = a.index.affine && a.index.lanes > 1 ? std::max<int64_t>(1, std::abs(a.index.lane_stride)) : 1;
  const double span = lanes * lane_stride * a.elem_bytes;
  const double runs = product(loops, 0, loops.size());
  if (loops.empty()) return std::ceil(span / line);
  const LoopFrame& inner = loops.back();
  const double stride = static_cast<double>(std::abs(coefficient(a, inner.var))) * a.elem_bytes;
  const bool moves = !a.index.affine ? index_vars(a).count(inner.var) > 0 : stride > 0;
  if (!moves) return runs / std::max<double>(1, static_cast<double>(inner.extent)) * std::ceil(span / line);
  if (!a.index.affine || stride >= line) return runs * std::ceil(span / line);
  return runs * std::max(span, stride) / line;
}

int64_t access_stride(const Access& a, const std::vector<LoopFrame>& loops) {
  if (!a.index.affine) return 0;
  if (a.index.lanes > 1 && a.index.lane_stride != 0) return std::abs(a.index.lane_stride);
  for (size_t i = loops.size(); i-- > 0;)
    if (loops[i].extent > 1)
      if (int64_t c = coefficient(a, loops[i].var)) return std::abs(c);
  return 0;
}

double float_ops(const std::vector<double>& ops) {
  return 2 * ops[column(ValueHead::FloatMad)] + ops[column(ValueHead::FloatAdd)] + ops[column(ValueHead::FloatMul)] +
         ops[column(ValueHead::FloatDiv)] + ops[column(ValueHead::FloatCmp)] + ops[column(ValueHead::FloatMath)] +
         ops[column(ValueHead::FloatOther)];
}

std::vector<const Access*> pointers(const std::vector<Access>& v) {
  std::vector<const Access*> p;
  for (const Access& a : v) p.push_back(&a);
  return p;
}

// One buffer's accesses within a store, as a block of columns.
struct BufferUse {
  const BufferNode* buffer = nullptr;
  std::vector<const Access*> accesses;
  bool read = false, written = false;
  double bytes = 0, lines = 0;
};

std::vector<double> row_of(const StoreSite& s, const std::map<const BufferNode*, int>& sites_of, int line) {
  std::vector<double> row(kValueFeatureCount, 0.0);
  const double runs = product(s.loops, 0, s.loops.size());
  for (int i = 0; i < kHeadCount; ++i) row[i] = s.ops[i] * runs;

  // Annotations.
  row[column(ValueHead::VecLanes)] = s.lanes;
  struct Kind {
    ForKind kind;
    ValueHead num, prod, len;
  };
  for (const Kind& k : {Kind{ForKind::Vectorized, ValueHead::VecNum, ValueHead::VecProd, ValueHead::VecLen},
                        Kind{ForKind::Unrolled, ValueHead::UnrollNum, ValueHead::UnrollProd, ValueHead::UnrollLen},
                        Kind{ForKind::Parallel, ValueHead::ParallelNum, ValueHead::ParallelProd, ValueHead::ParallelLen}}) {
    double num = 0, prod = 1, len = 0;
    for (const LoopFrame& l : s.loops)
      if (l.kind == k.kind) {
        num += 1;
        prod *= static_cast<double>(l.extent);
        len = static_cast<double>(l.extent);
      }
    row[column(k.num)] = num;
    row[column(k.prod)] = prod;
    row[column(k.len)] = len;
  }

  // Buffers, most bytes first (then most lines, then name).
  std::vector<BufferUse> uses;
  for (const Access& a : s.accesses) {
    auto it = std::find_if(uses.begin(), uses.end(), [&](const BufferUse& u) { return u.buffer == a.buffer; });
    if (it == uses.end()) {
      uses.push_back({a.buffer, {}, false, false, 0, 0});
      it = uses.end() - 1;
    }
    it->accesses.push_back(&a);
    (a.is_store ? it->written : it->read) = true;
    it->bytes += runs * (a.index.affine ? a.index.lanes : s.lanes) * a.elem_bytes;
    it->lines += access_lines(a, s.loops, line);
  }
  std::stable_sort(uses.begin(), uses.end(), [](const BufferUse& a, const BufferUse& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.lines != b.lines) return a.lines > b.lines;
    return a.buffer->name < b.buffer->name;
  });
  const VarExtents all = extents_of(s.loops, 0);
  const std::vector<const Access*> every = pointers(s.accesses);
  for (int slot = 0; slot < kValueBuffers && slot < static_cast<int>(uses.size()); ++slot) {
    const BufferUse& u = uses[static_cast<size_t>(slot)];
    auto set = [&](BufferFeature f, double v) { row[column(slot, f)] = v; };
    set(BufferFeature::IsRead, u.read && !u.written);
    set(BufferFeature::IsWrite, u.written && !u.read);
    set(BufferFeature::IsReadWrite, u.read && u.written);
    set(BufferFeature::Bytes, u.bytes);
    const double unique_bytes = footprint_bytes(u.accesses, all, 1);
    const double unique_lines = footprint_bytes(u.accesses, all, line) / line;
    set(BufferFeature::UniqueBytes, unique_bytes);
    set(BufferFeature::Lines, u.lines);
    set(BufferFeature::UniqueLines, unique_lines);
    // Reuse: the innermost loop (extent > 1) none of the indices moves with.
    std::unordered_set<const VarNode*> used;
    for (const Access* a : u.accesses) {
      std::unordered_set<const VarNode*> v = index_vars(*a);
      used.insert(v.begin(), v.end());
    }
    double count = 0;
    for (size_t i = s.loops.size(); i-- > 0;) {
      if (s.loops[i].extent <= 1 || used.count(s.loops[i].var)) continue;
      set(BufferFeature::ReuseLoop, 1);
      count = static_cast<double>(s.loops[i].extent);
      set(BufferFeature::ReuseDistIter, product(s.loops, i + 1, s.loops.size()));
      set(BufferFeature::ReuseDistBytes, footprint_bytes(every, extents_of(s.loops, i + 1), 1));
      break;
    }
    if (count == 0) {
      const int stores = sites_of.count(u.buffer) ? sites_of.at(u.buffer) : 0;
      if (stores > 1) {
        set(BufferFeature::ReuseSerial, 1);
        count = stores;
      } else {
        set(BufferFeature::ReuseNone, 1);
      }
    }
    set(BufferFeature::ReuseCount, count);
    const double per = std::max(count, 1.0);
    set(BufferFeature::BytesPerReuse, u.bytes / per);
    set(BufferFeature::UniqueBytesPerReuse, unique_bytes / per);
    set(BufferFeature::LinesPerReuse, u.lines / per);
    set(BufferFeature::UniqueLinesPerReuse, unique_lines / per);
    set(BufferFeature::Stride, static_cast<double>(access_stride(*u.accesses.front(), s.loops)));
  }

  // Arithmetic intensity at each loop level, innermost first.
  const double flops = float_ops(s.ops);
  std::vector<double> curve;
  for (size_t i = s.loops.size(); i-- > 0;) {
    const double bytes = footprint_bytes(every, extents_of(s.loops, i), 1);
    curve.push_back(bytes > 0 ? flops * product(s.loops, i, s.loops.size()) / bytes : 0);
  }
  if (curve.empty()) {
    const double bytes = footprint_bytes(every, {}, 1);
    curve.push_back(bytes > 0 ? flops / bytes : 0);
  }
  for (int k = 0; k < kIntensitySamples; ++k) {
    const double x = static_cast<double>(k) * static_cast<double>(curve.size() - 1) / (kIntensitySamples - 1);
    const size_t lo = static_cast<size_t>(std::floor(x));
    const size_t hi = std::min(lo + 1, curve.size() - 1);
    const double t = x - static_cast<double>(lo);
    row[intensity_column(k)] = curve[lo] * (1 - t) + curve[hi] * t;
  }

  // Allocation and outer loops.
  if (s.is_alloc) {
    row[column(ValueTail::IsAlloc)] = 1;
    row[column(ValueTail::AllocBytes)] = static_cast<double>(s.alloc_bytes);
    row[column(ValueTail::AllocOuterProd)] = product(s.loops, 0, s.alloc_depth);
    row[column(ValueTail::AllocInnerProd)] = product(s.loops, s.alloc_depth, s.loops.size());
  }
  row[column(ValueTail::OuterProd)] = runs;
  row[column(ValueTail::NumLoops)] = static_cast<double>(s.loops.size());
  row[column(ValueTail::InnermostExtent)] = s.loops.empty() ? 0 : static_cast<double>(s.loops.back().extent);
  return row;
}

std::vector<ColumnDoc> make_columns() {
  std::vector<ColumnDoc> c;
#define TESSERA_VALUE_DOC(id, name, doc) c.push_back({name, doc});
  TESSERA_VALUE_HEAD_FEATURES(TESSERA_VALUE_DOC)
  for (int k = 0; k < kValueBuffers; ++k) {
    const std::string p = "b" + std::to_string(k) + "_";
#define TESSERA_BUFFER_DOC(id, name, doc) c.push_back({p + name, "buffer " + std::to_string(k) + ": " + doc});
    TESSERA_VALUE_BUFFER_FEATURES(TESSERA_BUFFER_DOC)
#undef TESSERA_BUFFER_DOC
  }
  for (int i = 0; i < kIntensitySamples; ++i)
    c.push_back({"ai_curve_" + std::to_string(i), "arithmetic-intensity curve, sample " + std::to_string(i) +
                                                      " (float ops per distinct byte; innermost level first)"});
  TESSERA_VALUE_TAIL_FEATURES(TESSERA_VALUE_DOC)
#undef TESSERA_VALUE_DOC
  return c;
}

// The hardware vector: X(name, field expression, what it is).
#define TESSERA_HARDWARE_FEATURES(X)                                                             \
  X("hw_avx512", hw.isa == Isa::AVX512 ? 1.0 : 0.0, "1: AVX-512 code, 0: AVX2")                   \
  X("hw_vector_bytes", hw.vector_bytes, "widest vector register, bytes")                           \
  X("hw_vector_registers", hw.vector_registers, "vector registers")                                \
  X("hw_fma_units", hw.fma_units, "full-width vector FMAs a core starts per cycle")                 \
  X("hw_l1d", static_cast<double>(hw.l1d), "L1 data cache per core, bytes")                        \
  X("hw_l2", static_cast<double>(hw.l2), "L2 per core, bytes")                                     \
  X("hw_l3", static_cast<double>(hw.l3), "L3 of the chip, bytes")                                  \
  X("hw_line_bytes", hw.line_bytes, "cache line, bytes")                                           \
  X("hw_cores", hw.cores, "cores (threads) the kernels run on")                                    \
  X("hw_ghz", hw.ghz, "sustained clock under vector load, GHz")                                    \
  X("hw_mem_gbps", hw.mem_gbps, "streaming read bandwidth, GB/s")                                  \
  X("hw_l1_bytes_per_cycle", hw.l1_bytes_per_cycle, "L1 read bytes per cycle")                     \
  X("hw_l2_bytes_per_cycle", hw.l2_bytes_per_cycle, "L2 read bytes per cycle")                     \
  X("hw_l3_bytes_per_cycle", hw.l3_bytes_per_cycle, "L3 read bytes per cycle")

}  // namespace

const std::vector<ColumnDoc>& value_feature_columns() {
  static const std::vector<ColumnDoc> columns = make_columns();
  return columns;
}

ValueFeatures value_features(const Kernel& kernel, const HardwareDesc& hw) {
  StoreWalker w;
  w.visit(kernel.body);
  // How many store statements access each buffer (for serial reuse).
  std::map<const BufferNode*, int> sites_of;
  for (const StoreSite& s : w.sites) {
    std::unordered_set<const BufferNode*> seen;
    for (const Access& a : s.accesses)
      if (seen.insert(a.buffer).second) ++sites_of[a.buffer];
  }
  ValueFeatures out;
  for (const StoreSite& s : w.sites) {
    out.rows.push_back(row_of(s, sites_of, std::max(1, hw.line_bytes)));
    out.stores.push_back(s.buffer);
  }
  return out;
}

std::vector<double> hardware_features(const HardwareDesc& hw) {
  std::vector<double> v;
#define TESSERA_HW_VALUE(name, value, doc) v.push_back(static_cast<double>(value));
  TESSERA_HARDWARE_FEATURES(TESSERA_HW_VALUE)
#undef TESSERA_HW_VALUE
  return v;
}

const std::vector<ColumnDoc>& hardware_feature_columns() {
  static const std::vector<ColumnDoc> columns = [] {
    std::vector<ColumnDoc> c;
#define TESSERA_HW_DOC(name, value, doc) c.push_back({name, doc});
    HardwareDesc hw;  // the macro's value expressions name it; unused here
    (void)hw;
    TESSERA_HARDWARE_FEATURES(TESSERA_HW_DOC)
#undef TESSERA_HW_DOC
    return c;
  }();
  return columns;
}

}  // namespace tessera::cost
