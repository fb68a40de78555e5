// Prefetches of the next tile row's operand panel (see prefetch_ahead.h).
#include "schedule/prefetch_ahead.h"

#include <optional>
#include <vector>

#include "loop/printer.h"
#include "loop/simplify.h"
#include "loop/visitor.h"
#include "support/error.h"

namespace tessera::schedule {

namespace {

using loop::Expr;
using loop::Stmt;

// The first load of `buf` in a statement, with the loops between the
// statement and it (outermost first).
struct FirstLoad : loop::IRVisitor {
  explicit FirstLoad(const loop::Buffer& b) : buf(b) {}
  const loop::Buffer& buf;
  std::vector<const loop::ForNode*> open, loops;
  const loop::LoadNode* load = nullptr;
  using loop::IRVisitor::visit;
  void visit(const loop::ForNode* op) override {
    if (load) return;
    open.push_back(op);
    loop::IRVisitor::visit(op);
    open.pop_back();
  }
  void visit(const loop::LoadNode* op) override {
    if (!load && op->buffer.same_as(buf)) {
      load = op;
      loops = open;
    }
    if (!load) loop::IRVisitor::visit(op);
  }
};

class Inserter : public loop::IRMutator {
 public:
  Inserter(const Directive& step, const loop::Buffer& input)
      : step_(step), input_(input), loop_name_(step.stage + "." + step.names.at(1)),
        target_name_(step.names.at(2) + "." + step.names.at(3)), ahead_(step.ints.at(0)), spread_(step.ints.at(1)) {}
  bool done = false;
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const loop::ForNode* op, const Stmt& s) override {
    if (op->var.name() == target_name_) {
      target_ = op;
      Stmt r = IRMutator::visit(op, s);
      target_ = nullptr;
      return r;
    }
    if (op->var.name() != loop_name_ || !target_) return IRMutator::visit(op, s);
    FirstLoad f(input_);
    f.visit(op->body);
    TESSERA_CHECK(f.load, "schedule: ", step_.to_text(), ": the loop reads nothing of ", input_.name());
    done = true;
    return loop::for_loop(op->var, op->min, op->extent, op->for_kind,
                          loop::block({prefetch_of(*op, f), op->body}));
  }

 private:
  // The prefetch at the start of an iteration of reduction loop `k`.
  Stmt prefetch_of(const loop::ForNode& k, const FirstLoad& f) const {
    const Expr t = target_->var, kv = k.var;
    const Expr a = loop::int_imm(ahead_), sp = loop::int_imm(spread_);
    loop::VarMap at;
    Expr ahead = t + a;
    if (const int64_t* n = loop::as_const_int(target_->extent)) ahead = loop::min(ahead, loop::int_imm(*n - 1));
    at[target_->var.node()] = ahead;
    at[k.var.node()] = kv - kv % sp + t % a % sp;
    // Loops between the reduction loop and the read start at their first
    // iteration; the innermost vector loop's lanes become the prefetched span.
    const loop::ForNode* vec = nullptr;
    for (const loop::ForNode* l : f.loops) {
      at[l->var.node()] = l->min;
      if (l->for_kind == loop::ForKind::Vectorized && loop::as_const_int(l->extent)) vec = l;
    }
    Expr base = loop::substitute(f.load->index, at);
    int lanes = 1;
    if (vec) {
      loop::VarMap next = at;
      next[vec->var.node()] = vec->min + 1;
      const Expr step = loop::simplify(loop::substitute(f.load->index, next) - base);
      if (loop::is_const_int(step, 1)) lanes = static_cast<int>(*loop::as_const_int(vec->extent));
    }
    // Never past the buffer: the last tile's "next" reads are clamped to it.
    const int64_t size = numel_of(input_.dims());
    if (size >= lanes) base = loop::max(loop::min(base, loop::int_imm(size - lanes)), loop::int_imm(0));
    base = loop::simplify(base);
    Expr index = lanes > 1 ? loop::ramp(base, loop::int_imm(1), lanes) : base;
    Stmt p = loop::prefetch(loop::load(input_, index));
    if (spread_ > 1) p = loop::if_then_else(loop::eq(kv % sp, loop::int_imm(0)), p);
    return p;
  }

  const Directive& step_;
  const loop::Buffer& input_;
  const std::string loop_name_, target_name_;
  const int64_t ahead_, spread_;
  const loop::ForNode* target_ = nullptr;
};

}  // namespace

Stmt insert_prefetch(const Stmt& body, const Directive& step, const loop::Buffer& input) {
  TESSERA_CHECK(step.kind == DirectiveKind::Prefetch && step.names.size() == 4 && step.ints.size() == 2,
                "schedule: ", step.to_text(), ": not a prefetch step");
  TESSERA_CHECK(step.ints[0] >= 1 && step.ints[1] >= 1, "schedule: ", step.to_text(),
                ": the tiles ahead and the spread must be at least 1");
  Inserter ins(step, input);
  Stmt r = ins.mutate(body);
  TESSERA_CHECK(ins.done, "schedule: ", step.to_text(), ": no loop ", step.names[1], " of ", step.stage,
                " inside loop ", step.names[3], " of ", step.names[2]);
  return r;
}

}  // namespace tessera::schedule
