// Tensor expressions: building stages, composition and printing.
#include "te/tensor_expr.h"

#include <sstream>
#include <unordered_set>

#include "loop/printer.h"
#include "loop/visitor.h"
#include "support/error.h"

namespace tessera::te {

std::string_view stage_kind_name(StageKind k) {
  switch (k) {
    case StageKind::Placeholder: return "placeholder";
    case StageKind::Compute: return "compute";
    case StageKind::Extern: return "extern";
  }
  return "?";
}

namespace {

// Collects the tensors read by an expression, in first-use order.
class ReadCollector : public loop::IRVisitor {
 public:
  std::vector<Tensor> tensors;
  using IRVisitor::visit;

 protected:
  void visit(const loop::ProducerLoadNode* op) override {
    auto stage = std::static_pointer_cast<const Stage>(op->producer);
    Tensor t(stage, op->value_index);
    bool seen = false;
    for (const Tensor& x : tensors) seen |= x.same_as(t);
    if (!seen) tensors.push_back(t);
    IRVisitor::visit(op);
  }
};

class ReduceFinder : public loop::IRVisitor {
 public:
  bool found = false;
  using IRVisitor::visit;

 protected:
  void visit(const loop::ReduceNode*) override { found = true; }
};

// Replaces reads of one stage by its formula.
class Inliner : public loop::IRMutator {
 public:
  explicit Inliner(const Tensor& t) : t_(t) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const loop::ProducerLoadNode* op, const Expr& e) override {
    Expr r = IRMutator::visit(op, e);
    auto* load = r.as<loop::ProducerLoadNode>();
    if (load->producer.get() != t_.stage_ptr().get() || load->value_index != t_.index()) return r;
    return formula_at(t_, load->indices);
  }

 private:
  const Tensor& t_;
};

}  // namespace

std::vector<Tensor> Stage::inputs() const {
  if (kind == StageKind::Extern) return extern_inputs;
  if (kind == StageKind::Placeholder) return {};
  ReadCollector c;
  c.visit(body);
  return c.tensors;
}

Expr Tensor::operator()(std::vector<Expr> indices) const {
  TESSERA_CHECK(defined(), "tensor expression: read of an undefined tensor");
  TESSERA_CHECK(static_cast<int>(indices.size()) == rank(), "tensor expression: ", name(), " has rank ", rank(),
                ", read with ", indices.size(), " indices");
  return loop::producer_load(stage_, index_, type(), std::move(indices));
}

Tensor placeholder(Dims shape, DType dtype, std::string name) {
  auto s = std::make_shared<Stage>();
  s->kind = StageKind::Placeholder;
  s->name = std::move(name);
  s->tag = "placeholder";
  s->shapes = {std::move(shape)};
  s->dtypes = {dtype};
  return Tensor(s, 0);
}

Tensor compute(Dims shape, const ComputeFn& f, std::string name, StageTag tag,
               std::vector<std::string> axis_names) {
  TESSERA_CHECK(axis_names.empty() || axis_names.size() == shape.size(), "tensor expression: ", name, " has ",
                shape.size(), " dims but ", axis_names.size(), " axis names");
  for (int64_t d : shape) TESSERA_CHECK(d >= 0, "tensor expression: ", name, " has a negative dim");
  auto s = std::make_shared<Stage>();
  s->kind = StageKind::Compute;
  s->name = std::move(name);
  s->op_class = tag.op_class;
  s->tag = std::move(tag.label);
  for (size_t i = 0; i < shape.size(); ++i)
    s->axes.emplace_back(axis_names.empty() ? "i" + std::to_string(i) : axis_names[i]);
  s->body = f(s->axes);
  TESSERA_CHECK(s->body.defined() && s->body.type().is_scalar(), "tensor expression: ", s->name,
                " needs a scalar formula");
  s->shapes = {std::move(shape)};
  s->dtypes = {s->body.type().dtype};
  return Tensor(s, 0);
}

std::vector<Tensor> extern_stage(std::vector<Dims> shapes, std::vector<DType> dtypes, std::vector<Tensor> inputs,
                                 ExternFn build, std::string name, std::string tag) {
  TESSERA_CHECK(shapes.size() == dtypes.size() && !shapes.empty(), "tensor expression: extern ", name,
                " needs one dtype per output");
  auto s = std::make_shared<Stage>();
  s->kind = StageKind::Extern;
  s->name = std::move(name);
  s->tag = std::move(tag);
  s->shapes = std::move(shapes);
  s->dtypes = std::move(dtypes);
  s->extern_inputs = std::move(inputs);
  s->build = std::move(build);
  std::vector<Tensor> outs;
  for (int i = 0; i < s->num_outputs(); ++i) outs.emplace_back(s, i);
  return outs;
}

ReduceAxis reduce_axis(int64_t extent, std::string name, int64_t min) {
  TESSERA_CHECK(extent >= 0, "tensor expression: reduce axis ", name, " has a negative extent");
  return {Var(std::move(name)), loop::int_imm(min), loop::int_imm(extent)};
}

Expr sum(Expr source, std::vector<ReduceAxis> axes, Expr condition) {
  return loop::reduce(ReduceOp::Sum, std::move(source), std::move(axes), std::move(condition));
}
Expr prod(Expr source, std::vector<ReduceAxis> axes, Expr condition) {
  return loop::reduce(ReduceOp::Prod, std::move(source), std::move(axes), std::move(condition));
}
Expr max_of(Expr source, std::vector<ReduceAxis> axes, Expr condition) {
  return loop::reduce(ReduceOp::Max, std::move(source), std::move(axes), std::move(condition));
}
Expr min_of(Expr source, std::vector<ReduceAxis> axes, Expr condition) {
  return loop::reduce(ReduceOp::Min, std::move(source), std::move(axes), std::move(condition));
}

int64_t Tensor::dim(int i) const {
  int r = rank();
  TESSERA_CHECK(i >= -r && i < r, "tensor expression: dimension ", i, " of ", name(), " (rank ", r, ")");
  return shape()[static_cast<size_t>(i < 0 ? i + r : i)];
}

Expr if_then_else(Expr cond, Expr t, Expr f) {
  Expr guard = loop::call(cond.type(), "te.guard", {cond});
  return loop::select(std::move(guard), std::move(t), std::move(f));
}

bool is_guard(const Expr& cond) {
  auto* c = cond.as<loop::CallNode>();
  return c && c->name == "te.guard" && c->args.size() == 1;
}

Expr unguard(const Expr& cond) { return is_guard(cond) ? cond.as<loop::CallNode>()->args[0] : cond; }

Expr constant(DType dtype, double v) { return loop::make_const({dtype, 1}, v); }

Expr formula_at(const Tensor& t, const std::vector<Expr>& indices) {
  const Stage& s = t.stage();
  TESSERA_CHECK(s.kind == StageKind::Compute, "tensor expression: cannot inline ", stage_kind_name(s.kind), " ",
                s.name);
  TESSERA_CHECK(indices.size() == s.axes.size(), "tensor expression: ", s.name, " read with ", indices.size(),
                " indices, has rank ", s.axes.size());
  loop::VarMap map;
  for (size_t i = 0; i < indices.size(); ++i) map[s.axes[i].node()] = indices[i];
  return loop::substitute(s.body, map);
}

Expr inline_tensor(const Expr& e, const Tensor& t) {
  Inliner in(t);
  return in.mutate(e);
}

Tensor with_body(const Tensor& t, Expr body) {
  const Stage& old = t.stage();
  TESSERA_CHECK(old.kind == StageKind::Compute, "tensor expression: ", old.name, " is not a compute stage");
  TESSERA_CHECK(body.type().dtype == old.dtypes[0], "tensor expression: new body of ", old.name,
                " changes its dtype");
  auto s = std::make_shared<Stage>(old);
  s->body = std::move(body);
  return Tensor(s, 0);
}

std::vector<StagePtr> stages_of(const std::vector<Tensor>& outputs) {
  std::vector<StagePtr> order;
  std::unordered_set<const Stage*> done, active;
  std::function<void(const StagePtr&)> visit = [&](const StagePtr& s) {
    if (done.count(s.get())) return;
    TESSERA_CHECK(!active.count(s.get()), "tensor expression: cycle through ", s->name);
    active.insert(s.get());
    for (const Tensor& in : s->inputs()) visit(in.stage_ptr());
    active.erase(s.get());
    done.insert(s.get());
    order.push_back(s);
  };
  for (const Tensor& t : outputs) visit(t.stage_ptr());
  return order;
}

bool has_reduce(const Expr& e) {
  ReduceFinder f;
  f.visit(e);
  return f.found;
}

bool is_top_reduce(const Stage& s) {
  return s.kind == StageKind::Compute && s.body.defined() && s.body.kind() == loop::ExprKind::Reduce;
}

bool reads_at_own_position(const Stage& consumer, const Stage& producer) {
  struct Checker : loop::IRVisitor {
    const Stage *producer, *consumer;
    bool ok = true;
    using IRVisitor::visit;
    void visit(const loop::ProducerLoadNode* op) override {
      if (op->producer.get() == producer) {
        ok = ok && op->indices.size() == consumer->axes.size();
        for (size_t d = 0; ok && d < op->indices.size(); ++d)
          ok = loop::equal(op->indices[d], consumer->axes[d]) ||
               (consumer->shapes[0][d] == 1 && loop::is_const_int(op->indices[d], 0));
      }
      IRVisitor::visit(op);
    }
  } c;
  c.producer = &producer;
  c.consumer = &consumer;
  c.visit(consumer.body);
  return c.ok;
}

std::string to_string(const std::vector<Tensor>& outputs) {
  std::ostringstream os;
  for (const StagePtr& s : stages_of(outputs)) {
    switch (s->kind) {
      case StageKind::Placeholder:
        os << s->name << ": placeholder " << dtype_name(s->dtypes[0]) << "[" << dims_to_string(s->shapes[0]) << "]\n";
        break;
      case StageKind::Compute: {
        os << s->name << "[";
        for (size_t i = 0; i < s->axes.size(); ++i) os << (i ? ", " : "") << s->axes[i].name();
        os << "] = " << loop::to_string(s->body) << "  (" << dtype_name(s->dtypes[0]) << "[" << dims_to_string(s->shapes[0]) << "]";
        if (!s->tag.empty()) os << ", " << s->tag;
        os << ")\n";
        break;
      }
      case StageKind::Extern: {
        os << s->name << ": extern " << s->tag << " (";
        auto ins = s->inputs();
        for (size_t i = 0; i < ins.size(); ++i) os << (i ? ", " : "") << ins[i].name();
        os << ") -> ";
        for (int i = 0; i < s->num_outputs(); ++i)
          os << (i ? ", " : "") << dtype_name(s->dtypes[static_cast<size_t>(i)]) << "["
             << dims_to_string(s->shapes[static_cast<size_t>(i)]) << "]";
        os << "\n";
        break;
      }
    }
  }
  return os.str();
}

}  // namespace tessera::te
