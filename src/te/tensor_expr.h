// Tensor expressions: an op (or a fused block of ops) as a small dataflow
// program of stages over static shapes. A stage is a placeholder (an input
// buffer), a compute stage (an index formula giving each output element as a
// loop-IR expression of the output indices, which may read other stages and
// contain reductions), or an extern stage (a loop-IR statement written
// directly, for ops that are not an index formula: sorting, recurrences ...).
//
//   Tensor a = placeholder({m, k}, DType::F32, "a"), b = placeholder({k, n}, DType::F32, "b");
//   ReduceAxis r = reduce_axis(k, "r");
//   Tensor c = compute({m, n}, [&](const Indices& i) { return sum(a(i[0], r) * b(r, i[1]), {r}); }, "c");
//
// Composition: `inline_tensor` replaces the reads of a reduction-free stage by
// its formula, which is how fusion joins ops; lowering (src/schedule/lower.h)
// turns the stages into a loop-IR kernel under a schedule.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loop/expr.h"
#include "loop/stmt.h"
#include "te/op_class.h"
#include "tessera/tensor.h"

namespace tessera::te {

using loop::Buffer;
using loop::Expr;
using loop::ReduceAxis;
using loop::ReduceOp;
using loop::Stmt;
using loop::Type;
using loop::Var;

enum class StageKind : uint8_t { Placeholder, Compute, Extern };
std::string_view stage_kind_name(StageKind k);

class Tensor;
using Indices = std::vector<Var>;
using ComputeFn = std::function<Expr(const Indices&)>;
// Writes an extern stage: given buffers for its inputs and outputs (flat,
// row-major, in the stage's shapes), returns the statement computing them.
using ExternFn = std::function<Stmt(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs)>;

// One stage. Placeholder and compute stages have one output; extern stages
// may have several. Immutable once built.
struct Stage final : loop::Producer {
  StageKind kind = StageKind::Compute;
  std::string name;
  OpClass op_class = OpClass::Other;  // what schedule rules key on
  std::string tag;                 // label for printing: the class's name, "conv1d_transpose", "softmax" ...
  std::vector<Dims> shapes;        // per output
  std::vector<DType> dtypes;       // per output
  // Compute: one variable per output dimension (named by axis_names) and the formula.
  std::vector<Var> axes;
  Expr body;
  // Extern: the stages read and the statement builder.
  std::vector<Tensor> extern_inputs;
  ExternFn build;

  const std::string& producer_name() const override { return name; }
  int num_outputs() const { return static_cast<int>(shapes.size()); }
  // The stages this one reads (compute: every ProducerLoad in the body, in
  // first-use order, no repeats; extern: its inputs).
  std::vector<Tensor> inputs() const;
};
using StagePtr = std::shared_ptr<const Stage>;

// One output of a stage.
class Tensor {
 public:
  Tensor() = default;
  Tensor(StagePtr stage, int index) : stage_(std::move(stage)), index_(index) {}

  bool defined() const { return stage_ != nullptr; }
  const Stage& stage() const { return *stage_; }
  const StagePtr& stage_ptr() const { return stage_; }
  int index() const { return index_; }
  const Dims& shape() const { return stage_->shapes[static_cast<size_t>(index_)]; }
  // Dimension i; negative i counts from the end. Throws when out of range.
  int64_t dim(int i) const;
  int rank() const { return static_cast<int>(shape().size()); }
  DType dtype() const { return stage_->dtypes[static_cast<size_t>(index_)]; }
  Type type() const { return {dtype(), 1}; }
  const std::string& name() const { return stage_->name; }
  bool same_as(const Tensor& o) const { return stage_ == o.stage_ && index_ == o.index_; }

  // A read of one element; indices may be Exprs or integers (rank of them).
  Expr operator()(std::vector<Expr> indices) const;
  template <class... I>
  Expr operator()(I... i) const { return (*this)(std::vector<Expr>{to_index(i)...}); }

 private:
  static Expr to_index(const Expr& e) { return e; }
  static Expr to_index(int64_t v) { return loop::int_imm(v); }
  static Expr to_index(int v) { return loop::int_imm(v); }

  StagePtr stage_;
  int index_ = 0;
};

// --- building stages ------------------------------------------------------------

Tensor placeholder(Dims shape, DType dtype, std::string name);
// A compute stage: element `i` is f(i), of the op class `tag` declares.
// axis_names name the index variables (default i0, i1, ...). The dtype is
// the formula's.
Tensor compute(Dims shape, const ComputeFn& f, std::string name, StageTag tag = {},
               std::vector<std::string> axis_names = {});
// Extern stages: outputs of the given shapes and dtypes, computed by `build`.
std::vector<Tensor> extern_stage(std::vector<Dims> shapes, std::vector<DType> dtypes, std::vector<Tensor> inputs,
                                 ExternFn build, std::string name, std::string tag = "extern");

// A reduction axis over [min, min + extent).
ReduceAxis reduce_axis(int64_t extent, std::string name, int64_t min = 0);
Expr sum(Expr source, std::vector<ReduceAxis> axes, Expr condition = {});
Expr prod(Expr source, std::vector<ReduceAxis> axes, Expr condition = {});
Expr max_of(Expr source, std::vector<ReduceAxis> axes, Expr condition = {});  // -inf / lowest when empty
Expr min_of(Expr source, std::vector<ReduceAxis> axes, Expr condition = {});  // +inf / largest when empty

// `cond ? t : f` where only the chosen side is evaluated: reads of stages in
// the untaken side never touch memory (lowering predicates them), so `t` may
// index out of bounds where cond is false (padding, gathers). A plain
// loop::select reads both sides unconditionally (cheaper: no masks), so its
// reads must be in bounds either way. The condition is marked by wrapping it
// in a "te.guard" call, which lowering removes.
Expr if_then_else(Expr cond, Expr t, Expr f);
// True when `cond` is an if_then_else condition (a "te.guard" call).
bool is_guard(const Expr& cond);
// The condition inside a "te.guard" call; `cond` itself otherwise.
Expr unguard(const Expr& cond);
// Constant of the given dtype.
Expr constant(DType dtype, double v);

// --- composition and queries -------------------------------------------------------

// The formula of compute tensor `t` at the given indices (its axes substituted).
// Throws when t is not a compute stage.
Expr formula_at(const Tensor& t, const std::vector<Expr>& indices);
// Replaces every read of `t` in `e` with t's formula (composition). The formula
// must not contain a reduction unless it is a top-level reduce read once.
Expr inline_tensor(const Expr& e, const Tensor& t);
// The same stage with a new body (inlining into a stage, fusion).
Tensor with_body(const Tensor& t, Expr body);
// Every stage reachable from `outputs`, producers before consumers.
std::vector<StagePtr> stages_of(const std::vector<Tensor>& outputs);
// True when the expression contains a Reduce node.
bool has_reduce(const Expr& e);
// True when a compute stage's body is one Reduce (the form lowering can
// reorder freely: init, then update over spatial and reduce loops).
bool is_top_reduce(const Stage& s);

// True when every read of `producer` in `consumer` is at the consumer's own
// output position (a dim of 1 may be read at 0; reads of another rank are not).
bool reads_at_own_position(const Stage& consumer, const Stage& producer);

// The program as text, one stage per line: "c[i0, i1] = sum(a[i0, r] * b[r, i1] over r in [0, +4))".
std::string to_string(const std::vector<Tensor>& outputs);

}  // namespace tessera::te
