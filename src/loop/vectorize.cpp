// Lowering of vectorized loops to vector code (see vectorize.h). A loop is
// first checked for lanes that could interact through memory (LaneAccesses),
// then its body is rewritten by Vectorizer; anything it cannot express throws
// NotVectorizable, which leaves the loop serial.
#include "loop/vectorize.h"

#include <cstdlib>
#include <limits>
#include <optional>
#include <unordered_set>

#include "loop/bounds.h"
#include "loop/scalar_ops.h"
#include "loop/simplify.h"
#include "loop/visitor.h"
#include "support/error.h"

namespace tessera::loop {

namespace {

// Why a loop cannot be vectorized; caught in this file (the loop stays serial).
struct NotVectorizable {
  std::string why;
};
[[noreturn]] void give_up(std::string why) { throw NotVectorizable{std::move(why)}; }

// Sets map[key] to a value (or, given nullopt, hides the key) until the end of
// the scope, then restores the previous entry.
template <class Map>
class ScopedEntry {
 public:
  using Key = typename Map::key_type;
  using Value = typename Map::mapped_type;
  ScopedEntry(Map& m, Key k, std::optional<Value> v) : map_(m), key_(k) {
    if (auto it = m.find(k); it != m.end()) saved_ = it->second;
    if (v) m[k] = std::move(*v);
    else m.erase(k);
  }
  ~ScopedEntry() {
    if (saved_) map_[key_] = std::move(*saved_);
    else map_.erase(key_);
  }
  ScopedEntry(const ScopedEntry&) = delete;
  ScopedEntry& operator=(const ScopedEntry&) = delete;

 private:
  Map& map_;
  Key key_;
  std::optional<Value> saved_;
};

using VarSet = std::unordered_set<const VarNode*>;

// True when e mentions one of `vars`.
bool uses_any(const Expr& e, const VarSet& vars) {
  struct Finder : IRVisitor {
    const VarSet& vars;
    bool found = false;
    explicit Finder(const VarSet& v) : vars(v) {}
    using IRVisitor::visit;
    void visit(const VarNode* op) override { found = found || vars.count(op); }
  } f(vars);
  f.visit(e);
  return f.found;
}

// The variables a statement binds (loops, lets) and whether it reads memory.
struct BoundVars : IRVisitor {
  VarSet vars;
  using IRVisitor::visit;
  void visit(const ForNode* op) override { vars.insert(op->var.node()); IRVisitor::visit(op); }
  void visit(const LetStmtNode* op) override { vars.insert(op->var.node()); IRVisitor::visit(op); }
  void visit(const LetNode* op) override { vars.insert(op->var.node()); IRVisitor::visit(op); }
};

bool reads_memory(const Expr& e) {
  struct Finder : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const LoadNode*) override { found = true; }
  } f;
  f.visit(e);
  return f.found;
}

// The values a loop variable takes, as the simplifier computes them.
Interval loop_range(const Expr& min, const Expr& extent, const VarBounds& bounds) {
  Interval lo = bounds_of(min, bounds), ext = bounds_of(extent, bounds);
  Interval r{lo.min, Interval::kPosInf};
  int64_t last;
  if (lo.has_max() && ext.has_max() && !__builtin_add_overflow(lo.max, ext.max - 1, &last)) r.max = last;
  return r;
}

// Adds scale * e to `coeff`, per variable of `tracked`; false when e is not an
// affine function of them (parts without them are ignored).
bool affine(const Expr& e, const VarSet& tracked, int64_t scale, std::unordered_map<const VarNode*, int64_t>& coeff) {
  if (!uses_any(e, tracked)) return true;
  if (auto* v = e.as<VarNode>()) return !__builtin_add_overflow(coeff[v], scale, &coeff[v]);
  auto* b = e.as<BinaryNode>();
  if (!b || b->type != index_type()) return false;
  int64_t s;
  switch (b->kind) {
    case ExprKind::Add: return affine(b->a, tracked, scale, coeff) && affine(b->b, tracked, scale, coeff);
    case ExprKind::Sub:
      return !__builtin_sub_overflow(int64_t{0}, scale, &s) && affine(b->a, tracked, scale, coeff) &&
             affine(b->b, tracked, s, coeff);
    case ExprKind::Mul:
      if (const int64_t* c = as_const_int(b->b)) return !__builtin_mul_overflow(scale, *c, &s) && affine(b->a, tracked, s, coeff);
      if (const int64_t* c = as_const_int(b->a)) return !__builtin_mul_overflow(scale, *c, &s) && affine(b->b, tracked, s, coeff);
      return false;
    default: return false;
  }
}

// --- legality ------------------------------------------------------------------

// Walks the body of a vectorized loop: the index of every access to every
// buffer (let variables expanded), the buffers stored to, the temporaries
// allocated inside, and the inner loops. Expanding lets is only sound when no
// variable is captured, so a body that binds a variable twice, or uses a
// variable outside the statement binding it, is given up on.
class LaneAccesses : public IRVisitor {
 public:
  struct InnerLoop {
    Expr min, extent;  // lets expanded
  };
  std::unordered_map<const BufferNode*, std::vector<Expr>> indices;
  std::unordered_map<const BufferNode*, std::string> names;
  std::unordered_set<const BufferNode*> stored, allocated;
  std::unordered_map<const VarNode*, InnerLoop> loops;

  using IRVisitor::visit;

  // Throws unless every variable bound inside is bound once and used only in its scope.
  void check_scopes() const {
    for (auto& [v, n] : binds_)
      if (n > 1 || free_.count(v)) give_up("its body rebinds " + v->name);
  }

 protected:
  void visit(const VarNode* op) override {
    if (!in_scope_.count(op)) free_.insert(op);
  }
  void visit(const LoadNode* op) override {
    IRVisitor::visit(op);
    record(op->buffer, op->index);
  }
  void visit(const StoreNode* op) override {
    IRVisitor::visit(op);
    stored.insert(op->buffer.get());
    record(op->buffer, op->index);
  }
  void visit(const CallNode* op) override {
    if (math_arity(op->name) < 0 || !op->type.is_float()) give_up("it calls '" + op->name + "'");
    IRVisitor::visit(op);
  }
  void visit(const ProducerLoadNode*) override { give_up("it reads a tensor-expression stage"); }
  void visit(const ReduceNode*) override { give_up("it holds a tensor-expression reduction"); }
  void visit(const EvaluateNode* op) override {
    if (kept_in_memory(op).defined()) return;  // names a buffer, reads no lane
    Expr load = prefetched(op);  // a prefetch: its load
    if (!load.defined()) give_up("it evaluates an expression for its effect");
    visit(load);
  }
  void visit(const LetNode* op) override {
    visit(op->value);
    ScopedEntry<VarMap> let(lets_, op->var.node(), expand(op->value));
    Scope scope(*this, op->var.node());
    visit(op->body);
  }
  void visit(const LetStmtNode* op) override {
    visit(op->value);
    ScopedEntry<VarMap> let(lets_, op->var.node(), expand(op->value));
    Scope scope(*this, op->var.node());
    visit(op->body);
  }
  void visit(const ForNode* op) override {
    visit(op->min);
    visit(op->extent);
    loops[op->var.node()] = {expand(op->min), simplify(expand(op->extent))};
    ScopedEntry<VarMap> hide(lets_, op->var.node(), std::nullopt);
    Scope scope(*this, op->var.node());
    visit(op->body);
  }
  void visit(const AllocateNode* op) override {
    visit(op->extent);
    allocated.insert(op->buffer.get());
    ScopedEntry<std::unordered_map<const BufferNode*, int>> inside(private_, op->buffer.get(), 1);
    visit(op->body);
  }

 private:
  // `v` is in scope for the lifetime of the guard.
  struct Scope {
    Scope(LaneAccesses& a, const VarNode* v) : acc(a), var(v) {
      ++acc.binds_[v];
      acc.in_scope_.insert(v);
    }
    ~Scope() { acc.in_scope_.erase(var); }
    LaneAccesses& acc;
    const VarNode* var;
  };

  Expr expand(const Expr& e) const { return lets_.empty() ? e : substitute(e, lets_); }
  void record(const Buffer& b, const Expr& index) {
    if (private_.count(b.get())) return;  // a per-lane temporary
    indices[b.get()].push_back(expand(index));
    names[b.get()] = b.name();
  }

  VarMap lets_;
  std::unordered_map<const BufferNode*, int> private_;
  std::unordered_map<const VarNode*, int> binds_;
  VarSet in_scope_, free_;
};

// Throws NotVectorizable unless every lane of the loop owns the elements it
// stores to (see vectorize.h).
void check_lanes_independent(const Var& var, const Stmt& body) {
  LaneAccesses acc;
  acc.visit(body);
  acc.check_scopes();
  VarSet tracked{var.node()};
  for (auto& [v, l] : acc.loops) tracked.insert(v);
  for (const BufferNode* b : acc.allocated)
    if (acc.indices.count(b)) give_up("buffer '" + acc.names[b] + "' is used both as a temporary and outside it");
  constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();
  for (const BufferNode* b : acc.stored) {
    if (acc.allocated.count(b)) continue;
    const std::string& name = acc.names[b];
    const std::vector<Expr>& idx = acc.indices[b];
    Expr f = simplify(idx[0]);
    for (size_t k = 1; k < idx.size(); ++k)
      if (!equal(simplify(idx[k]), f)) give_up("buffer '" + name + "' is accessed at different indices");
    std::unordered_map<const VarNode*, int64_t> coeff;
    if (!affine(f, tracked, 1, coeff)) give_up("the index into '" + name + "' is not affine in the loop variables");
    int64_t stride = coeff[var.node()];
    if (stride == 0 || stride == kLowest) give_up("every lane accesses the same element of '" + name + "' (a reduction)");
    int64_t spread = 0;  // how far the inner loops move the index
    for (auto& [v, c] : coeff) {
      if (v == var.node() || c == 0) continue;
      const LaneAccesses::InnerLoop& l = acc.loops[v];
      const int64_t* n = as_const_int(l.extent);
      int64_t add = 0;
      if (!n || uses_any(l.min, tracked) || c == kLowest ||
          (*n > 1 && (__builtin_mul_overflow(std::abs(c), *n - 1, &add) || __builtin_add_overflow(spread, add, &spread))))
        give_up("lanes may access the same element of '" + name + "'");
    }
    if (spread >= std::abs(stride)) give_up("lanes may access the same element of '" + name + "'");
  }
}

// --- the rewrite -----------------------------------------------------------------

// Rewrites the body of one vectorized loop into `lanes`-wide code.
class Vectorizer {
 public:
  Vectorizer(int lanes, VarBounds bounds) : lanes_(lanes), bounds_(std::move(bounds)) {}

  Stmt run(const Var& var, const Expr& base, const Stmt& body) {
    name_ = var.name();
    vars_[var.node()] = ramp(base, int_imm(1), lanes_);
    bounds_.erase(var.node());
    return vec(body);
  }

 private:
  Expr widen(const Expr& e) const {
    if (!e.defined() || e.type().lanes == lanes_) return e;
    TESSERA_CHECK(e.type().is_scalar(), "vectorize: unexpected ", e.type().to_string(), " in a ", lanes_, "-lane loop");
    return broadcast(e, lanes_);
  }
  // The predicate of an access in the current (masked) region.
  Expr masked(const Expr& pred) const {
    if (!mask_.defined()) return pred;
    return pred.defined() ? pred && mask_ : mask_;
  }
  // Lane l of a per-lane temporary keeps element x at x*lanes + l.
  Expr private_index(const Expr& index) const {
    if (index.type().is_scalar()) return ramp(index * lanes_, int_imm(1), lanes_);
    return index * lanes_ + ramp(int_imm(0), int_imm(1), lanes_);
  }
  // True when a scalar load of b at `index` is known to stay in bounds (so it
  // may run even when no lane of the region is active).
  bool in_bounds(const Buffer& b, const Expr& index) const {
    if (b.dims().empty()) return false;
    Interval r = bounds_of(index, bounds_);
    return r.min >= 0 && r.max < numel_of(b.dims());
  }

  Expr vec(const Expr& e);
  Stmt vec(const Stmt& s);
  Expr vec_load(const LoadNode* op, const Expr& e);
  Stmt vec_store(const StoreNode* op);
  Stmt vec_if(const IfThenElseNode* op);

  const int lanes_;
  VarBounds bounds_;                                     // of the scalar variables in scope
  VarMap vars_;                                          // loop var -> ramp, vector lets -> renamed
  std::unordered_map<const BufferNode*, Buffer> private_;  // temporaries widened to a slice per lane
  Expr mask_;                                            // the active lanes (undefined: all)
  std::string name_;                                     // of the loop variable
  int masks_ = 0;                                        // mask variables made
};

Expr Vectorizer::vec(const Expr& e) {
  if (e.type().is_vector()) give_up("its body already holds vector code");
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm: return e;
    case ExprKind::Var: {
      auto it = vars_.find(e.as<VarNode>());
      return it == vars_.end() ? e : it->second;
    }
    case ExprKind::Cast: {
      const Expr& v = e.as<CastNode>()->value;
      Expr x = vec(v);
      return x.same_as(v) ? e : cast(e.type().with_lanes(x.type().lanes), x);
    }
    case ExprKind::Not: {
      const Expr& a = e.as<NotNode>()->a;
      Expr x = vec(a);
      return x.same_as(a) ? e : logical_not(x);
    }
    case ExprKind::Select: {
      auto* op = e.as<SelectNode>();
      Expr c = vec(op->cond), t = vec(op->true_value), f = vec(op->false_value);
      if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
      if (c.type().is_vector()) t = widen(t);
      return select(c, t, f);
    }
    case ExprKind::Load: return vec_load(e.as<LoadNode>(), e);
    case ExprKind::Call: {
      auto* op = e.as<CallNode>();
      if (math_arity(op->name) < 0 || !op->type.is_float()) give_up("it calls '" + op->name + "'");
      std::vector<Expr> args;
      bool changed = false;
      for (const Expr& a : op->args) {
        args.push_back(vec(a));
        changed |= !args.back().same_as(a);
      }
      return changed ? call(op->name, std::move(args)) : e;
    }
    case ExprKind::Let: {
      auto* op = e.as<LetNode>();
      Expr value = vec(op->value);
      Var var = op->var;
      std::optional<Expr> renamed;
      if (value.type().is_vector()) renamed = var = Var(op->var.name(), value.type());
      std::optional<Interval> range;
      if (value.type().is_scalar()) range = bounds_of(value, bounds_);
      ScopedEntry<VarMap> rename(vars_, op->var.node(), renamed);
      ScopedEntry<VarBounds> b(bounds_, op->var.node(), range);
      Expr body = vec(op->body);
      if (var.same_as(op->var) && value.same_as(op->value) && body.same_as(op->body)) return e;
      return let(var, value, body);
    }
    case ExprKind::Ramp:
    case ExprKind::Broadcast: give_up("its body already holds vector code");
    case ExprKind::ProducerLoad:
    case ExprKind::Reduce: give_up("it holds tensor-expression nodes");
    default: {
      auto* op = e.as<BinaryNode>();
      Expr a = vec(op->a), b = vec(op->b);
      return a.same_as(op->a) && b.same_as(op->b) ? e : binary(op->kind, a, b);
    }
  }
}

Expr Vectorizer::vec_load(const LoadNode* op, const Expr& e) {
  Expr index = vec(op->index), pred = op->predicate.defined() ? vec(op->predicate) : Expr();
  Buffer buf = op->buffer;
  if (auto it = private_.find(buf.get()); it != private_.end()) {
    buf = it->second;
    index = private_index(index);
  }
  bool scalar = index.type().is_scalar() && (!pred.defined() || pred.type().is_scalar());
  // The same element for every lane: a scalar load, unless the region is
  // masked and the load might fault when no lane is active.
  if (scalar && (!mask_.defined() || (!pred.defined() && in_bounds(buf, index)))) {
    bool same = buf.same_as(op->buffer) && index.same_as(op->index) && pred.same_as(op->predicate);
    return same ? e : load(buf, index, pred);
  }
  return load(buf, widen(index), masked(widen(pred)));
}

Stmt Vectorizer::vec_store(const StoreNode* op) {
  Expr value = vec(op->value), index = vec(op->index);
  Expr pred = op->predicate.defined() ? vec(op->predicate) : Expr();
  Buffer buf = op->buffer;
  if (auto it = private_.find(buf.get()); it != private_.end()) {
    buf = it->second;
    index = private_index(index);
  }
  // check_lanes_independent rules this out; kept as a safety net.
  if (index.type().is_scalar()) give_up("every lane stores to the same element of '" + buf.name() + "'");
  return store(buf, widen(value), index, masked(widen(pred)));
}

// A condition that differs between lanes runs both branches, each with its
// lanes masked; the condition is evaluated once, before either branch.
Stmt Vectorizer::vec_if(const IfThenElseNode* op) {
  Expr c = vec(op->cond);
  if (c.type().is_scalar())
    return if_then_else(c, vec(op->then_case), op->else_case.defined() ? vec(op->else_case) : Stmt());
  Var cond(name_ + "_mask" + (masks_ ? std::to_string(masks_) : ""), c.type());
  ++masks_;
  Expr saved = mask_;
  mask_ = masked(cond);
  Stmt then_case = vec(op->then_case);
  mask_ = saved;
  Stmt out = then_case;
  if (op->else_case.defined()) {
    mask_ = masked(logical_not(cond));
    Stmt else_case = vec(op->else_case);
    mask_ = saved;
    out = block({then_case, else_case});
  }
  return let_stmt(cond, c, out);
}

Stmt Vectorizer::vec(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::Store: return vec_store(s.as<StoreNode>());
    case StmtKind::IfThenElse: return vec_if(s.as<IfThenElseNode>());
    case StmtKind::LetStmt: {
      auto* op = s.as<LetStmtNode>();
      Expr value = vec(op->value);
      Var var = op->var;
      std::optional<Expr> renamed;
      if (value.type().is_vector()) renamed = var = Var(op->var.name(), value.type());
      std::optional<Interval> range;
      if (value.type().is_scalar()) range = bounds_of(value, bounds_);
      ScopedEntry<VarMap> rename(vars_, op->var.node(), renamed);
      ScopedEntry<VarBounds> b(bounds_, op->var.node(), range);
      return let_stmt(var, value, vec(op->body));
    }
    case StmtKind::For: {
      auto* op = s.as<ForNode>();
      if (op->for_kind == ForKind::Parallel) give_up("it holds a parallel loop");
      if (op->for_kind == ForKind::Vectorized) give_up("it holds another vectorized loop");
      Expr min = vec(op->min), extent = vec(op->extent);
      if (min.type().is_vector() || extent.type().is_vector())
        give_up("the bounds of its inner loop " + op->var.name() + " differ between lanes");
      ScopedEntry<VarMap> hide(vars_, op->var.node(), std::nullopt);
      ScopedEntry<VarBounds> b(bounds_, op->var.node(), loop_range(min, extent, bounds_));
      return for_loop(op->var, min, extent, op->for_kind, vec(op->body));
    }
    case StmtKind::Allocate: {
      auto* op = s.as<AllocateNode>();
      Expr extent = vec(op->extent);
      if (extent.type().is_vector()) give_up("the size of temporary '" + op->buffer.name() + "' differs between lanes");
      Buffer wide(op->buffer.name(), op->buffer.dtype());
      ScopedEntry<std::unordered_map<const BufferNode*, Buffer>> p(private_, op->buffer.get(), wide);
      return allocate(wide, extent * lanes_, vec(op->body));
    }
    case StmtKind::Block: {
      std::vector<Stmt> out;
      for (const Stmt& st : s.as<BlockNode>()->stmts) out.push_back(vec(st));
      return block(std::move(out));
    }
    case StmtKind::Evaluate:
      if (Expr load = prefetched(s); load.defined()) return prefetch(vec(load));
      if (kept_in_memory(s).defined()) return s;
      give_up("it evaluates an expression for its effect");
  }
  give_up("unknown statement");
}

// --- the pass ----------------------------------------------------------------------

// A load of one element into every lane (a broadcast index, as simplifying
// `(o*8 + i)/8` gives) becomes a scalar load, broadcast: always when every
// lane reads, and under a predicate when the element is known in bounds
// (inactive lanes then read 0 through a select).
class BroadcastLoads : public IRMutator {
 public:
  explicit BroadcastLoads(VarBounds bounds) : bounds_(std::move(bounds)) {}

 protected:
  using IRMutator::visit;

  Expr visit(const LoadNode* op, const Expr& e) override {
    Expr r = IRMutator::visit(op, e);
    auto* l = r.as<LoadNode>();
    auto* b = l ? l->index.as<BroadcastNode>() : nullptr;
    if (!b) return r;
    if (!l->predicate.defined()) return broadcast(load(l->buffer, b->value), b->lanes);
    if (l->buffer.dims().empty()) return r;
    Interval range = bounds_of(b->value, bounds_);
    if (range.min < 0 || range.max >= numel_of(l->buffer.dims())) return r;
    return select(l->predicate, broadcast(load(l->buffer, b->value), b->lanes), make_zero(l->type));
  }
  Stmt visit(const ForNode* op, const Stmt& s) override {
    ScopedEntry<VarBounds> b(bounds_, op->var.node(), loop_range(op->min, op->extent, bounds_));
    return IRMutator::visit(op, s);
  }
  Stmt visit(const LetStmtNode* op, const Stmt& s) override {
    std::optional<Interval> range;
    if (op->value.type().is_scalar()) range = bounds_of(op->value, bounds_);
    ScopedEntry<VarBounds> b(bounds_, op->var.node(), range);
    return IRMutator::visit(op, s);
  }
  Expr visit(const LetNode* op, const Expr& e) override {
    std::optional<Interval> range;
    if (op->value.type().is_scalar()) range = bounds_of(op->value, bounds_);
    ScopedEntry<VarBounds> b(bounds_, op->var.node(), range);
    return IRMutator::visit(op, e);
  }

 private:
  VarBounds bounds_;
};

// Visits loops inside out, knowing the ranges of the enclosing loop variables.
class LoopVectorizer : public IRMutator {
 protected:
  using IRMutator::visit;

  Stmt visit(const ForNode* op, const Stmt& s) override {
    Stmt body;
    {
      ScopedEntry<VarBounds> b(bounds_, op->var.node(), loop_range(op->min, op->extent, bounds_));
      body = mutate(op->body);
    }
    if (op->for_kind == ForKind::Vectorized) return vectorize(op, body);
    return body.same_as(op->body) ? s : for_loop(op->var, op->min, op->extent, op->for_kind, body);
  }
  Stmt visit(const LetStmtNode* op, const Stmt& s) override {
    ScopedEntry<VarBounds> b(bounds_, op->var.node(), std::nullopt);
    return IRMutator::visit(op, s);
  }

 private:
  Stmt vectorize(const ForNode* op, Stmt body) {
    Expr extent = simplify(op->extent, bounds_);
    const int64_t* n = as_const_int(extent);
    if (!n || *n > kMaxVectorLanes) return for_loop(op->var, op->min, op->extent, ForKind::Serial, body);
    if (*n <= 0) return no_op();
    if (*n == 1) return simplify(let_stmt(op->var, op->min, body), bounds_);
    try {
      {  // what is left of i after simplifying decides what becomes a vector
        ScopedEntry<VarBounds> b(bounds_, op->var.node(), loop_range(op->min, extent, bounds_));
        body = simplify(body, bounds_);
      }
      check_lanes_independent(op->var, body);
      // The ramp's base is evaluated where the loop var is used; bind it once
      // when it reads memory or would be captured by a rebinding in the body.
      Expr base = op->min;
      Var base_var;
      BoundVars inner;
      inner.visit(body);
      if (reads_memory(base) || uses_any(base, inner.vars)) base = base_var = Var(op->var.name() + "_base");
      Vectorizer v(static_cast<int>(*n), bounds_);
      Stmt out = v.run(op->var, base, body);
      if (base_var.defined()) out = let_stmt(base_var, op->min, out);
      return BroadcastLoads(bounds_).mutate(simplify(out, bounds_));
    } catch (const NotVectorizable&) {
      return for_loop(op->var, op->min, op->extent, ForKind::Serial, body);
    }
  }

  VarBounds bounds_;
};

}  // namespace

Stmt vectorize_loops(const Stmt& s) { return LoopVectorizer().mutate(s); }

Kernel vectorize_loops(const Kernel& k) {
  return Kernel{k.name, k.inputs, k.outputs, vectorize_loops(k.body)};
}

}  // namespace tessera::loop
