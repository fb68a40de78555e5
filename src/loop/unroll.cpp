// Full unrolling of loops marked ForKind::Unrolled (see unroll.h).
#include "loop/unroll.h"

#include <optional>
#include <unordered_set>

#include "loop/bounds.h"
#include "loop/simplify.h"
#include "loop/visitor.h"

namespace tessera::loop {

namespace {

// True when e reads memory or mentions a variable that `s` binds (so e cannot
// be substituted into s unchanged).
bool needs_binding(const Expr& e, const Stmt& s) {
  struct Binders : IRVisitor {
    std::unordered_set<const VarNode*> vars;
    using IRVisitor::visit;
    void visit(const ForNode* op) override { vars.insert(op->var.node()); IRVisitor::visit(op); }
    void visit(const LetStmtNode* op) override { vars.insert(op->var.node()); IRVisitor::visit(op); }
    void visit(const LetNode* op) override { vars.insert(op->var.node()); IRVisitor::visit(op); }
  } binders;
  binders.visit(s);
  struct Uses : IRVisitor {
    const std::unordered_set<const VarNode*>& vars;
    bool found = false;
    explicit Uses(const std::unordered_set<const VarNode*>& v) : vars(v) {}
    using IRVisitor::visit;
    void visit(const VarNode* op) override { found = found || vars.count(op); }
    void visit(const LoadNode*) override { found = true; }
  } uses(binders.vars);
  uses.visit(e);
  return uses.found;
}

// Visits loops inside out, knowing the ranges of the enclosing loop variables
// (for simplifying the copies).
class LoopUnroller : public IRMutator {
 protected:
  using IRMutator::visit;

  Stmt visit(const ForNode* op, const Stmt& s) override {
    Stmt body;
    {
      Scoped b(bounds_, op->var.node(), range(op->min, op->extent));
      body = mutate(op->body);
    }
    if (op->for_kind == ForKind::Unrolled) return unroll(op, body);
    return body.same_as(op->body) ? s : for_loop(op->var, op->min, op->extent, op->for_kind, body);
  }
  Stmt visit(const LetStmtNode* op, const Stmt& s) override {
    Scoped b(bounds_, op->var.node(), std::nullopt);
    return IRMutator::visit(op, s);
  }

 private:
  // Sets (or hides) a variable's range for the lifetime of the guard.
  class Scoped {
   public:
    Scoped(VarBounds& m, const VarNode* v, std::optional<Interval> i) : map_(m), var_(v) {
      if (auto it = m.find(v); it != m.end()) saved_ = it->second;
      if (i) m[v] = *i;
      else m.erase(v);
    }
    ~Scoped() {
      if (saved_) map_[var_] = *saved_;
      else map_.erase(var_);
    }
    Scoped(const Scoped&) = delete;
    Scoped& operator=(const Scoped&) = delete;

   private:
    VarBounds& map_;
    const VarNode* var_;
    std::optional<Interval> saved_;
  };

  Interval range(const Expr& min, const Expr& extent) const {
    Interval lo = bounds_of(min, bounds_), ext = bounds_of(extent, bounds_);
    Interval r{lo.min, Interval::kPosInf};
    int64_t last;
    if (lo.has_max() && ext.has_max() && !__builtin_add_overflow(lo.max, ext.max - 1, &last)) r.max = last;
    return r;
  }

  Stmt unroll(const ForNode* op, const Stmt& body) {
    const int64_t* n = as_const_int(simplify(op->extent, bounds_));
    if (!n || *n > kMaxUnrollIterations) return for_loop(op->var, op->min, op->extent, ForKind::Serial, body);
    if (*n <= 0) return no_op();
    // The loop evaluates min once, before the body runs.
    Expr base = op->min;
    Var base_var;
    if (needs_binding(base, body)) base = base_var = Var(op->var.name() + "_base");
    std::vector<Stmt> copies;
    for (int64_t k = 0; k < *n; ++k) copies.push_back(substitute(body, op->var, base + k));
    Stmt out = copies.size() == 1 ? copies[0] : block(std::move(copies));
    if (base_var.defined()) out = let_stmt(base_var, op->min, out);
    return simplify(out, bounds_);
  }

  VarBounds bounds_;
};

}  // namespace

Stmt unroll_loops(const Stmt& s) { return LoopUnroller().mutate(s); }

Kernel unroll_loops(const Kernel& k) { return Kernel{k.name, k.inputs, k.outputs, unroll_loops(k.body)}; }

}  // namespace tessera::loop
