// Lowering a scheduled tensor-expression program to a loop-IR kernel (the
// steps are listed in lower.h).
#include "schedule/lower.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

#include "loop/bounds.h"
#include "loop/hoist_guards.h"
#include "loop/printer.h"
#include "loop/simplify.h"
#include "loop/unroll.h"
#include "loop/vectorize.h"
#include "loop/visitor.h"
#include "schedule/loop_nest.h"
#include "schedule/prefetch_ahead.h"
#include "schedule/region.h"
#include "schedule/stage_graph.h"
#include "schedule/unswitch_guards.h"
#include "support/error.h"
#include "support/int_div.h"

namespace tessera::schedule {

using loop::Buffer;
using loop::Expr;
using loop::Stmt;
using loop::Var;
using te::Stage;
using te::StageKind;
using te::StagePtr;
using te::Tensor;

namespace {

enum class Place { Inline, Root, At };

struct Placement {
  Place place = Place::Inline;
  bool explicit_ = false;
  std::string target, loop;  // Place::At
};

// Where and how one output of a stage is stored: element at logical index i
// lives at flat(i - lo) in `buffer` whose logical dims are `dims`, with
// layout splits (dim, factor) moving the inner part of a dim last.
struct Storage {
  Buffer buffer;
  std::vector<Expr> lo;  // empty: all zero
  Dims dims;
  std::vector<std::pair<int64_t, int64_t>> layout;

  Dims physical_dims() const {
    Dims p = dims;
    for (auto [d, f] : layout) {
      p[static_cast<size_t>(d)] = ceil_div(p[static_cast<size_t>(d)], f);
      p.push_back(f);
    }
    return p;
  }
  Expr flat(const std::vector<Expr>& idx) const {
    std::vector<Expr> p;
    for (size_t d = 0; d < idx.size(); ++d) p.push_back(lo.empty() ? idx[d] : idx[d] - lo[d]);
    for (auto [d, f] : layout) {
      Expr i = p[static_cast<size_t>(d)];
      p[static_cast<size_t>(d)] = i / f;
      p.push_back(i % f);
    }
    Dims pd = physical_dims();
    Expr flat = loop::int_imm(0);
    int64_t stride = 1;
    for (size_t d = p.size(); d-- > 0;) {
      flat = p[d] * stride + flat;
      stride *= pd[d];
    }
    return flat;
  }
};

struct StageKey {
  const Stage* stage;
  int index;
  bool operator==(const StageKey&) const = default;
};
struct StageKeyHash {
  size_t operator()(const StageKey& k) const { return std::hash<const void*>()(k.stage) * 31 + static_cast<size_t>(k.index); }
};

// Multi-dimensional reads become flat loads; reads inside a branch of an
// if_then_else are predicated on the branch condition (so padding reads never
// touch memory), reads inside a plain select are not.
class Flattener : public loop::IRMutator {
 public:
  explicit Flattener(const std::unordered_map<StageKey, Storage, StageKeyHash>& s) : storage_(s) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const loop::SelectNode* op, const Expr& e) override {
    Expr c = mutate(te::unguard(op->cond));
    if (!te::is_guard(op->cond)) return loop::select(c, mutate(op->true_value), mutate(op->false_value));
    conds_.push_back(c);
    Expr t = mutate(op->true_value);
    conds_.back() = loop::logical_not(c);
    Expr f = mutate(op->false_value);
    conds_.pop_back();
    return loop::select(c, t, f);
  }
  Expr visit(const loop::CallNode* op, const Expr& e) override {  // a guard outside a select
    if (te::is_guard(e)) return mutate(op->args[0]);
    return IRMutator::visit(op, e);
  }
  Expr visit(const loop::ProducerLoadNode* op, const Expr& e) override {
    std::vector<Expr> idx;
    for (const Expr& i : op->indices) idx.push_back(mutate(i));
    auto it = storage_.find({static_cast<const Stage*>(op->producer.get()), op->value_index});
    TESSERA_CHECK(it != storage_.end(), "lower: stage ", op->producer->producer_name(), " has no storage");
    Expr pred;
    for (const Expr& c : conds_) pred = pred.defined() ? (pred && c) : c;
    return loop::load(it->second.buffer, it->second.flat(idx), pred);
  }

 private:
  const std::unordered_map<StageKey, Storage, StageKeyHash>& storage_;
  std::vector<Expr> conds_;
};

// Inserts a producer's nest at the start of the body of the loop over `target`.
class AtInserter : public loop::IRMutator {
 public:
  AtInserter(const Var& target, std::function<Stmt(const Stmt& body, const loop::VarBounds& outer)> insert)
      : target_(target), insert_(std::move(insert)) {}
  bool done = false;
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const loop::ForNode* op, const Stmt& s) override {
    loop::Interval lo = loop::bounds_of(op->min, outer_);
    loop::Interval hi = loop::bounds_of(loop::simplify(op->min + op->extent - 1), outer_);
    outer_[op->var.node()] = {lo.min, hi.max};
    Stmt r;
    if (op->var.same_as(target_)) {
      done = true;
      r = loop::for_loop(op->var, op->min, op->extent, op->for_kind, insert_(op->body, outer_));
    } else {
      r = IRMutator::visit(op, s);
    }
    outer_.erase(op->var.node());
    return r;
  }

 private:
  Var target_;
  std::function<Stmt(const Stmt&, const loop::VarBounds&)> insert_;
  loop::VarBounds outer_;
};

class Lowering {
 public:
  Lowering(const std::string& name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
           const Schedule& sched)
      : name_(name), inputs_(inputs), program_(outputs), sched_(sched) {}

  LoweredKernels run(const LowerOptions& options) {
    program_steps();
    decide_placement();
    inline_stages();
    stages_ = te::stages_of(program_);
    check_steps_refer_to_stages();
    make_param_storage();
    std::unordered_set<const Stage*> constant;
    for (size_t i = 0; i < inputs_.size() && i < options.constant_inputs.size(); ++i)
      if (options.constant_inputs[i]) constant.insert(&inputs_[i].stage());
    std::unordered_set<std::string> at_targets;
    for (const auto& [n, p] : placement_)
      if (p.place == Place::At) at_targets.insert(p.target);
    std::vector<Stmt> root, pre;
    std::vector<Buffer> root_temps, packed;
    for (const StagePtr& s : stages_) {
      if (s->kind == StageKind::Placeholder) continue;
      const Placement& p = placement_[s->name];
      if (p.place != Place::Root) continue;
      // Every output that is not a kernel output is a temporary: an extern
      // stage with several outputs (an LSTM's Y, Y_h, Y_c) writes all of them
      // even when the program reads only some.
      std::vector<Buffer> temps;
      for (int i = 0; i < s->num_outputs(); ++i)
        if (!storage_.count({s.get(), i})) {
          storage_[{s.get(), i}] = root_storage(*s, i);
          temps.push_back(storage_[{s.get(), i}].buffer);
        }
      bool all_temp = static_cast<int>(temps.size()) == s->num_outputs();
      // A temporary computed from constants only (and nothing computed inside it) is prepacked.
      bool from_constants = all_temp && !at_targets.count(s->name) && !constant.empty();
      for (const Tensor& in : s->inputs()) from_constants = from_constants && constant.count(&in.stage());
      if (from_constants) {
        constant.insert(s.get());
        packed.insert(packed.end(), temps.begin(), temps.end());
        pre.push_back(build_root(*s));
        continue;
      }
      root_temps.insert(root_temps.end(), temps.begin(), temps.end());
      root.push_back(build_root(*s));
    }
    Stmt body = loop::block(root);
    // compute_at stages, consumers first.
    for (size_t i = stages_.size(); i-- > 0;) {
      const Stage& s = *stages_[i];
      if (s.kind != StageKind::Compute || placement_[s.name].place != Place::At) continue;
      body = insert_at(s, body);
    }
    body = unswitch_guards(body);
    Flattener f(storage_);
    body = f.mutate(lower_inner_reductions(body));
    for (const Directive& st : prefetch_steps_) body = insert_prefetch(body, st, prefetch_buffer(st));
    for (auto it = root_temps.rbegin(); it != root_temps.rend(); ++it)
      body = loop::allocate(*it, loop::int_imm(numel_of(it->dims())), body);
    LoweredKernels r;
    loop::Kernel& k = r.main;
    k.name = name_;
    for (const Tensor& t : inputs_) k.inputs.push_back(storage_of(t.stage(), 0).buffer);
    for (const Buffer& b : packed) k.inputs.push_back(b);
    for (const Tensor& t : program_) k.outputs.push_back(storage_of(t.stage(), t.index()).buffer);
    k.body = body;
    if (!pre.empty()) {
      loop::Kernel p;
      p.name = name_ + ".prepack";
      Stmt pbody = f.mutate(lower_inner_reductions(loop::block(pre)));
      for (const Tensor& t : inputs_) {
        const Buffer& b = storage_of(t.stage(), 0).buffer;
        if (loop::uses_buffer(pbody, b)) p.inputs.push_back(b);
      }
      p.outputs = packed;
      p.body = pbody;
      r.prepack = finish(p, options);
    }
    r.main = finish(k, options);
    return r;
  }

 private:
  static loop::Kernel finish(loop::Kernel k, const LowerOptions& options) {
    // Guards invariant in loops move out of them before the tile's rows are
    // unrolled and its columns vectorized (one test per reduction tap).
    if (options.simplify) k = loop::hoist_invariant_guards(loop::simplify(k));
    if (options.unroll) k = loop::unroll_loops(k);
    if (options.vectorize) k = loop::vectorize_loops(k);
    return k;
  }

  void program_steps() {
    for (const Directive& st : sched_.directives) {
      switch (st.kind) {
        case DirectiveKind::CacheWrite:
          program_ = cache_write(program_, st.stage);
          created_.insert(st.stage + ".local");
          created_.insert(st.stage);  // the copy-out stays materialized (compute_at targets it)
          break;
        case DirectiveKind::CacheRead:
          program_ = cache_read(program_, st.stage, st.names.at(0));
          created_.insert(st.stage + "." + st.names.at(0));
          break;
        case DirectiveKind::RFactor:
          program_ = rfactor(program_, st.stage, st.names.at(0), st.ints.at(0));
          created_.insert(st.stage + ".rf");
          break;
        case DirectiveKind::ComputeInline: set_place(st, Place::Inline); break;
        case DirectiveKind::ComputeRoot: set_place(st, Place::Root); break;
        case DirectiveKind::ComputeAt: set_place(st, Place::At); break;
        case DirectiveKind::Layout:
        case DirectiveKind::Pad: storage_steps_[st.stage].push_back(st); break;
        case DirectiveKind::Prefetch: prefetch_steps_.push_back(st); break;
        default: loop_steps_[st.stage].push_back(st); break;
      }
    }
  }

  void set_place(const Directive& st, Place p) {
    Placement& pl = placement_[st.stage];
    pl.place = p;
    pl.explicit_ = true;
    if (p == Place::At) {
      pl.target = st.names.at(0);
      pl.loop = st.names.at(1);
    }
  }

  bool is_output(const Stage* s) const {
    for (const Tensor& t : program_)
      if (&t.stage() == s) return true;
    return false;
  }

  void decide_placement() {
    auto stages = te::stages_of(program_);
    std::unordered_set<const Stage*> read_by_extern;
    std::unordered_set<std::string> names;
    for (const StagePtr& s : stages) {
      TESSERA_CHECK(names.insert(s->name).second, "lower ", name_, ": two stages are named '", s->name, "'");
      if (s->kind == StageKind::Extern)
        for (const Tensor& in : s->extern_inputs) read_by_extern.insert(&in.stage());
    }
    for (const StagePtr& s : stages) {
      Placement& p = placement_[s->name];
      if (s->kind != StageKind::Compute) {
        TESSERA_CHECK(!p.explicit_ || p.place == Place::Root || s->kind == StageKind::Placeholder,
                      "lower ", name_, ": ", s->name, " is an extern stage; it can only be computed at root");
        TESSERA_CHECK(!p.explicit_ || s->kind != StageKind::Placeholder, "lower ", name_, ": ", s->name,
                      " is an input; it cannot be placed");
        p.place = Place::Root;
        continue;
      }
      bool must = is_output(s.get()) || read_by_extern.count(s.get());
      if (must) {
        TESSERA_CHECK(!p.explicit_ || p.place == Place::Root, "lower ", name_, ": ", s->name, " is ",
                      is_output(s.get()) ? "an output of the kernel" : "read by an extern stage",
                      " and must be computed at root");
        p.place = Place::Root;
      } else if (!p.explicit_) {
        p.place = (te::has_reduce(s->body) || created_.count(s->name)) ? Place::Root : Place::Inline;
      }
    }
    for (const auto& [n, p] : placement_)
      TESSERA_CHECK(names.count(n), "lower ", name_, ": schedule names stage '", n, "', which does not exist");
  }

  void inline_stages() {
    for (const StagePtr& s : te::stages_of(program_))
      if (s->kind == StageKind::Compute && placement_[s->name].place == Place::Inline)
        program_ = inline_stage(program_, s->name);
  }

  void check_steps_refer_to_stages() {
    std::unordered_map<std::string, const Stage*> by_name;
    for (const StagePtr& s : stages_) by_name[s->name] = s.get();
    for (const auto& m : {&loop_steps_, &storage_steps_})
      for (const auto& [n, steps] : *m) {
        auto it = by_name.find(n);
        TESSERA_CHECK(it != by_name.end(), "lower ", name_, ": ", steps[0].to_text(), ": no stage '", n,
                      "' (it may have been inlined)");
        TESSERA_CHECK(it->second->kind == StageKind::Compute, "lower ", name_, ": ", steps[0].to_text(), ": ", n,
                      " is not a compute stage");
      }
    for (const auto& [n, p] : placement_)
      if (p.place == Place::At) {
        auto it = by_name.find(p.target);
        TESSERA_CHECK(it != by_name.end() && it->second->kind == StageKind::Compute, "lower ", name_,
                      ": compute_at ", n, " ", p.target, ": no compute stage '", p.target, "'");
      }
  }

  void make_param_storage() {
    for (const Tensor& t : inputs_) {
      TESSERA_CHECK(t.stage().kind == StageKind::Placeholder, "lower ", name_, ": input ", t.name(),
                    " is not a placeholder");
      storage_[{&t.stage(), 0}] = {Buffer(t.name(), t.dtype(), t.shape()), {}, t.shape(), {}};
    }
    for (const StagePtr& s : stages_)
      if (s->kind == StageKind::Placeholder)
        TESSERA_CHECK(storage_.count({s.get(), 0}), "lower ", name_, ": placeholder ", s->name,
                      " is read but not an input of the kernel");
    std::unordered_set<std::string> names;
    for (const Tensor& t : program_) {
      TESSERA_CHECK(t.stage().kind != StageKind::Placeholder, "lower ", name_, ": output ", t.name(),
                    " is an input; copy it with a compute stage");
      std::string n = t.stage().num_outputs() > 1 ? t.name() + "." + std::to_string(t.index()) : t.name();
      TESSERA_CHECK(names.insert(n).second, "lower ", name_, ": output ", n, " listed twice");
      TESSERA_CHECK(!storage_steps_.count(t.name()), "lower ", name_, ": output ", t.name(),
                    " keeps the graph's layout (layout and pad apply to intermediate stages)");
      storage_[{&t.stage(), t.index()}] = {Buffer(n, t.dtype(), t.shape()), {}, t.shape(), {}};
    }
  }

  // The storage of output `index` of a root stage that is not a kernel
  // output. Layout and pad steps apply to single-output stages only.
  Storage root_storage(const Stage& s, int index) {
    if (s.num_outputs() == 1) {
      Storage st{{}, {}, s.shapes[0], {}};
      apply_storage_steps(s, st);
      st.buffer = Buffer(s.name, s.dtypes[0], st.physical_dims());
      return st;
    }
    TESSERA_CHECK(!storage_steps_.count(s.name), "lower ", name_, ": layout or pad of ", s.name,
                  ", a stage with several outputs");
    const Dims& dims = s.shapes[static_cast<size_t>(index)];
    return {Buffer(s.name + "." + std::to_string(index), s.dtypes[static_cast<size_t>(index)], dims), {}, dims, {}};
  }

  // The storage of a stage's output, which must have been decided.
  // The buffer a prefetch step reads: its input stage's storage.
  const Buffer& prefetch_buffer(const Directive& st) const {
    for (const StagePtr& s : stages_)
      if (s->name == st.names.at(0)) return storage_of(*s, 0).buffer;
    TESSERA_FAIL("lower ", name_, ": ", st.to_text(), ": no stage '", st.names.at(0), "'");
  }

  const Storage& storage_of(const Stage& s, int index) const {
    auto it = storage_.find({&s, index});
    TESSERA_CHECK(it != storage_.end(), "lower ", name_, ": output ", index, " of stage ", s.name, " has no storage");
    return it->second;
  }

  void apply_storage_steps(const Stage& s, Storage& st) {
    auto it = storage_steps_.find(s.name);
    if (it == storage_steps_.end()) return;
    for (const Directive& step : it->second) {
      int64_t d = step.ints.at(0), f = step.ints.at(1);
      TESSERA_CHECK(d >= 0 && d < static_cast<int64_t>(st.dims.size()) && f >= 1, "lower ", name_, ": ",
                    step.to_text(), ": bad dim or factor for rank ", st.dims.size());
      // Blocks of at most the dim (or a few vectors): an untrusted schedule
      // could otherwise pad a dim of 3 to a billion.
      TESSERA_CHECK(f <= std::max<int64_t>(st.dims[static_cast<size_t>(d)], 256), "lower ", name_, ": ",
                    step.to_text(), ": factor ", f, " exceeds dim ", d, " (", st.dims[static_cast<size_t>(d)], ")");
      if (step.kind == DirectiveKind::Pad) st.dims[static_cast<size_t>(d)] = round_up(st.dims[static_cast<size_t>(d)], f);
      else st.layout.emplace_back(d, f);
    }
  }

  // The stage as computed over its (possibly padded) storage domain.
  StagePtr padded(const Stage& s, const Storage& st) {
    if (st.dims == s.shapes[0]) return nullptr;
    auto copy = std::make_shared<Stage>(s);
    Expr inside;
    for (size_t d = 0; d < st.dims.size(); ++d)
      if (st.dims[d] != s.shapes[0][d]) {
        Expr c = s.axes[d] < s.shapes[0][d];
        inside = inside.defined() ? (inside && c) : c;
      }
    copy->body = loop::select(inside, s.body, loop::make_zero(s.body.type()));
    return copy;
  }

  LoopNest make_nest(const Stage& s, const std::vector<Expr>& mins, const std::vector<Expr>& extents,
                     const std::vector<Expr>& limits = {}) {
    LoopNest nest(s, mins, extents, limits);
    auto it = loop_steps_.find(s.name);
    if (it != loop_steps_.end())
      for (const Directive& step : it->second) nest.apply(step);
    return nest;
  }

  Stmt build_nest(const Stage& s, const LoopNest& nest, const Storage& st) {
    auto store = [&](const std::vector<Expr>& idx, Expr v) { return loop::store(st.buffer, v, st.flat(idx)); };
    auto load = [&](const std::vector<Expr>& idx, Expr pred) { return loop::load(st.buffer, st.flat(idx), pred); };
    return nest.build(store, load);
  }

  Stmt build_root(const Stage& s) {
    if (s.kind == StageKind::Extern) {
      std::vector<Buffer> ins, outs;
      for (const Tensor& t : s.extern_inputs) {
        auto it = storage_.find({&t.stage(), t.index()});
        TESSERA_CHECK(it != storage_.end(), "lower ", name_, ": extern ", s.name, " reads ", t.name(),
                      ", which is not materialized");
        TESSERA_CHECK(it->second.layout.empty() && it->second.dims == t.shape(), "lower ", name_, ": extern ", s.name,
                      " reads ", t.name(), " in a non-default layout");
        ins.push_back(it->second.buffer);
      }
      for (int i = 0; i < s.num_outputs(); ++i) outs.push_back(storage_of(s, i).buffer);
      return s.build(ins, outs);
    }
    const Storage& st = storage_of(s, 0);
    StagePtr pad = padded(s, st);
    if (pad) keep_.push_back(pad);
    const Stage& src = pad ? *pad : s;
    std::vector<Expr> mins, extents;
    for (int64_t d : st.dims) {
      mins.push_back(loop::int_imm(0));
      extents.push_back(loop::int_imm(d));
    }
    LoopNest nest = make_nest(src, mins, extents);
    nests_.emplace(s.name, std::make_unique<LoopNest>(nest));
    return build_nest(src, nest, st);
  }

  Stmt insert_at(const Stage& s, const Stmt& body) {
    const Placement& p = placement_[s.name];
    auto nest_it = nests_.find(p.target);
    TESSERA_CHECK(nest_it != nests_.end(), "lower ", name_, ": compute_at ", s.name, " ", p.target, " ", p.loop,
                  ": ", p.target, " is not computed (it must be at root or computed at a loop itself)");
    const Leaf* target = nest_it->second->find(p.loop);
    TESSERA_CHECK(target, "lower ", name_, ": compute_at ", s.name, " ", p.target, ": ", p.target, " has no loop '",
                  p.loop, "'");
    // Every read of s must be inside the target loop.
    size_t reads_total = count_reads(body, &s);
    AtInserter ins(target->var, [&](const Stmt& loop_body, const loop::VarBounds& outer) {
      TESSERA_CHECK(count_reads(loop_body, &s) == reads_total, "lower ", name_, ": compute_at ", s.name, " ",
                    p.target, " ", p.loop, ": ", s.name, " is also read outside that loop");
      return place_inside(s, loop_body, outer);
    });
    Stmt r = ins.mutate(body);
    TESSERA_CHECK(ins.done, "lower ", name_, ": compute_at ", s.name, " ", p.target, " ", p.loop,
                  ": the loop is not in the kernel");
    return r;
  }

  static size_t count_reads(const Stmt& s, const Stage* stage) {
    struct Counter : loop::IRVisitor {
      const Stage* st;
      size_t n = 0;
      using IRVisitor::visit;
      void visit(const loop::ProducerLoadNode* op) override {
        if (op->producer.get() == st) ++n;
        IRVisitor::visit(op);
      }
    } c;
    c.st = stage;
    c.visit(s);
    return c.n;
  }

  Stmt place_inside(const Stage& s, const Stmt& loop_body, const loop::VarBounds& outer) {
    const Dims& shape = s.shapes[0];
    auto region = region_read(loop_body, &s, 0);
    std::vector<Expr> lo, extent, limit;
    Dims alloc;
    for (size_t d = 0; d < shape.size(); ++d) {
      Expr l = loop::int_imm(0), e = loop::int_imm(shape[d]);
      int64_t size = shape[d];
      if (region && !region->empty()) {
        // Clamped to the stage's domain: [max(lo, 0), min(hi, D - 1)]. The
        // allocation bound uses min(a, b) - max(c, d) = min(a - c, a - d, b - c, b - d),
        // which keeps the correlation between the two ends.
        Expr rl = (*region)[d].lo, rh = (*region)[d].hi, top = loop::int_imm(shape[d] - 1);
        int64_t bound = shape[d];
        std::vector<Expr> diffs{rh - rl, rh, top - rl, top};
        // Clamped reads (min(q, c2) - min(p, c1) <= max(q - p, c2 - c1)).
        if (rh.kind() == loop::ExprKind::Min && rl.kind() == loop::ExprKind::Min) {
          auto *h = rh.as<loop::BinaryNode>(), *l = rl.as<loop::BinaryNode>();
          diffs.push_back(loop::max(h->a - l->a, h->b - l->b));
        }
        for (const Expr& diff : diffs) {
          loop::Interval b = loop::bounds_of(loop::simplify(diff, outer), outer);
          if (b.has_max()) bound = std::min(bound, b.max + 1);
        }
        if (bound < shape[d]) {
          l = loop::simplify(loop::max(rl, 0), outer);
          e = loop::simplify(loop::max(loop::min(rh, top) - l + 1, 0), outer);
          size = std::max<int64_t>(bound, 0);
        }
      }
      lo.push_back(l);
      // Loops run over the constant allocation size, guarded where the region is smaller.
      if (loop::as_const_int(e)) {
        extent.push_back(e);
        limit.emplace_back();
      } else {
        extent.push_back(loop::int_imm(size));
        limit.push_back(loop::simplify(l + e, outer));
      }
      alloc.push_back(size);
    }
    Storage st{{}, lo, alloc, {}};
    apply_storage_steps(s, st);
    TESSERA_CHECK(st.dims == alloc, "lower ", name_, ": pad ", s.name, ": padding applies to root stages only");
    st.buffer = Buffer(s.name, s.dtypes[0], st.physical_dims());
    storage_[{&s, 0}] = st;
    LoopNest nest = make_nest(s, lo, extent, limit);
    Stmt produce = build_nest(s, nest, st);
    nests_.emplace(s.name, std::make_unique<LoopNest>(nest));
    return loop::allocate(st.buffer, loop::int_imm(numel_of(st.physical_dims())), loop::block({produce, loop_body}));
  }

  std::string name_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> program_;
  const Schedule& sched_;
  std::vector<StagePtr> stages_;
  std::unordered_set<std::string> created_;
  std::map<std::string, Placement> placement_;
  std::map<std::string, std::vector<Directive>> loop_steps_, storage_steps_;
  std::vector<Directive> prefetch_steps_;  // applied to the flattened body
  std::unordered_map<StageKey, Storage, StageKeyHash> storage_;
  std::map<std::string, std::unique_ptr<LoopNest>> nests_;
  std::vector<StagePtr> keep_;  // padded copies the nests refer to
};

}  // namespace

loop::Kernel lower(const std::string& name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                   const Schedule& schedule, const LowerOptions& options) {
  LowerOptions o = options;
  o.constant_inputs.clear();
  Lowering l(name, inputs, outputs, schedule);
  return l.run(o).main;
}

LoweredKernels lower_with_prepack(const std::string& name, const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& outputs, const Schedule& schedule,
                                  const LowerOptions& options) {
  Lowering l(name, inputs, outputs, schedule);
  return l.run(options);
}

}  // namespace tessera::schedule
