// Loop-IR features (see loop_features.h): a tree of the kernel's loops with
// the operations and accesses of each level, then the counts weighted by the
// trips, the parallel split and the footprint-based cache traffic.
#include "cost/loop_features.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <unordered_set>

#include "cost/footprint.h"
#include "loop/bounds.h"
#include "loop/printer.h"
#include "loop/visitor.h"
#include "support/error.h"

namespace tessera::cost {

using namespace loop;

namespace {

constexpr std::array<std::string_view, kOpCount> kOpNames{
    "fma", "mul", "add", "div", "math_vector", "math_scalar", "other_float", "int_ops", "loads", "stores",
    "load_bytes", "store_bytes", "gather_lanes", "scatter_lanes", "shuffles", "broadcasts", "local_accesses",
    "flops", "lane_ops", "float_ops", "anchor", "mem_elements"};

// Instructions of the machine code per element of a transcendental function
// (the JIT's vector exp is about 15 vector instructions; a libm call about as
// many scalar ones). asm_features.h counts a call the same way.
constexpr double kMathExpansion = 15;

// Transcendentals (a polynomial or a libm call); sqrt and division-like ones
// count as Div; the rest of the intrinsics as OtherFloat.
const std::unordered_set<std::string_view> kTranscendental{
    "exp", "expm1", "log", "log1p", "pow", "tanh", "erf", "sigmoid", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "fmod"};
const std::unordered_set<std::string_view> kDivLike{"sqrt", "rsqrt"};

// One loop level (or the kernel root): what its body does outside nested loops.
struct LoopNode {
  const ForNode* loop = nullptr;  // null: the kernel's root
  const VarNode* var = nullptr;
  int64_t extent = 1;
  ForKind kind = ForKind::Serial;
  OpCounts direct;  // per iteration of the body
  int stores = 0;
  int accumulators = 0;  // stores to a location fixed over this loop that read it first
  std::vector<Access> accesses;
  std::vector<std::unique_ptr<LoopNode>> children;
  std::unordered_set<std::string> seen;  // loads and broadcasts counted in this body (common subexpressions)
  // For the traffic model: every access below (pointers into the nodes) and the extents of the loops below.
  std::vector<const Access*> subtree;
  VarExtents inner_extents;
};

class TreeBuilder : public IRVisitor {
 public:
  using IRVisitor::visit;
  TreeBuilder(const HardwareDesc& hw, LoopNode* root) : hw_(hw), cur_(root) {}

 protected:
  void visit(const ForNode* op) override {
    const int64_t ext = enter_loop(op, vb_);
    auto node = std::make_unique<LoopNode>();
    node->loop = op;
    node->var = op->var.node();
    node->extent = ext;
    node->kind = op->for_kind;
    LoopNode* parent = cur_;
    cur_ = node.get();
    parent->children.push_back(std::move(node));
    visit(op->body);
    cur_ = parent;
  }
  void visit(const StoreNode* op) override {
    if (cur_->loop && !uses_var(op->index, cur_->loop->var) && reads(op->value, op->buffer, op->index))
      ++cur_->accumulators;
    count(op->value, false);
    if (op->predicate.defined()) count(op->predicate, true);
    access(op->buffer, op->index, op->value.type().lanes, true);
    ++cur_->stores;
  }
  void visit(const LetStmtNode* op) override {
    lets_[op->var.node()] = affine_index(op->value, lets_);
    if (op->value.type().is_int()) vb_[op->var.node()] = bounds_of(op->value, vb_);
    count(op->value, true);
    visit(op->body);
  }
  void visit(const IfThenElseNode* op) override {
    count(op->cond, true);
    visit(op->then_case);
    visit(op->else_case);
  }
  void visit(const AllocateNode* op) override {
    const int64_t* n = as_const_int(op->extent);
    bool in_registers = n && *n * static_cast<int64_t>(dtype_size(op->buffer.dtype())) <=
                                 int64_t{hw_.vector_registers} * hw_.vector_bytes * 3 / 4;
    if (in_registers) registers_.insert(op->buffer.get());
    visit(op->body);
    registers_.erase(op->buffer.get());
  }
  void visit(const EvaluateNode* op) override {
    if (!is_hint(op)) count(op->value, false);
  }

 private:
  // Machine instructions for one operation of type t.
  double mv(Type t) const {
    if (t.lanes == 1) return 1;
    return std::ceil(static_cast<double>(t.lanes) * static_cast<double>(dtype_size(t.dtype)) / hw_.vector_bytes);
  }
  void float_op(Op op, Type t, double flops_per_lane = 1) {
    OpCounts& c = cur_->direct;
    c[op] += mv(t);
    c[Op::Flops] += flops_per_lane * t.lanes;
    c[Op::LaneOps] += t.lanes;
    c[Op::FloatOps] += 1;
    c[Op::Anchor] += t.lanes * (op == Op::MathVector || op == Op::MathScalar ? kMathExpansion : 1);
  }
  // True when e loads buf at index.
  static bool reads(const Expr& e, const Buffer& buf, const Expr& index) {
    struct Finder : IRVisitor {
      using IRVisitor::visit;
      const Buffer& buf;
      const Expr& index;
      bool found = false;
      Finder(const Buffer& b, const Expr& i) : buf(b), index(i) {}
      void visit(const LoadNode* op) override {
        found |= op->buffer.same_as(buf) && equal(op->index, index);
        IRVisitor::visit(op);
      }
    } finder(buf, index);
    finder.visit(e);
    return finder.found;
  }
  static bool is_float_mul(const Expr& e) { return e.kind() == ExprKind::Mul && e.type().is_float(); }

  // Counts the operations of e; `index` marks address arithmetic (not counted:
  // hoisted or folded into addressing by the compiler).
  void count(const Expr& e, bool index) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
      case ExprKind::Var: return;
      case ExprKind::Cast: {
        const CastNode* c = e.as<CastNode>();
        if (e.type().is_float() || c->value.type().is_float()) float_op(Op::OtherFloat, e.type());
        count(c->value, index);
        return;
      }
      case ExprKind::Not:
        if (!index) cur_->direct[Op::IntOps] += mv(e.type());
        count(e.as<NotNode>()->a, index);
        return;
      case ExprKind::Select: {
        const SelectNode* s = e.as<SelectNode>();
        if (e.type().is_float()) float_op(Op::OtherFloat, e.type());
        count(s->cond, index);
        count(s->true_value, index);
        count(s->false_value, index);
        return;
      }
      case ExprKind::Load: {
        const LoadNode* l = e.as<LoadNode>();
        access(l->buffer, l->index, e.type().lanes, false);
        count(l->index, true);
        count(l->predicate, true);
        return;
      }
      case ExprKind::Ramp:
        count(e.as<RampNode>()->base, true);
        return;
      case ExprKind::Broadcast: {
        const BroadcastNode* b = e.as<BroadcastNode>();
        if (!is_const(b->value) && !index && cur_->seen.insert("bcast " + to_string(e)).second)
          cur_->direct[Op::Broadcasts] += mv(e.type());
        count(b->value, index);
        return;
      }
      case ExprKind::Call: {
        const CallNode* c = e.as<CallNode>();
        if (e.type().is_float()) {
          if (c->name == "fma") float_op(Op::Fma, e.type(), 2);
          else if (kTranscendental.count(c->name)) float_op(e.type().lanes > 1 ? Op::MathVector : Op::MathScalar, e.type());
          else if (kDivLike.count(c->name)) float_op(Op::Div, e.type());
          else float_op(Op::OtherFloat, e.type());
        }
        for (const Expr& a : c->args) count(a, index);
        return;
      }
      case ExprKind::Let: {
        const LetNode* l = e.as<LetNode>();
        lets_[l->var.node()] = affine_index(l->value, lets_);
        count(l->value, index);
        count(l->body, index);
        return;
      }
      case ExprKind::ProducerLoad:
      case ExprKind::Reduce: TESSERA_FAIL("cost features: tensor-expression node in a lowered kernel: ", to_string(e));
      default: break;
    }
    const BinaryNode* b = e.as<BinaryNode>();
    if (e.type().is_float()) {
      ExprKind k = e.kind();
      if ((k == ExprKind::Add || k == ExprKind::Sub) && (is_float_mul(b->a) || is_float_mul(b->b))) {
        const Expr& mul = is_float_mul(b->a) ? b->a : b->b;
        const Expr& other = is_float_mul(b->a) ? b->b : b->a;
        float_op(Op::Fma, e.type(), 2);
        count(mul.as<BinaryNode>()->a, index);
        count(mul.as<BinaryNode>()->b, index);
        count(other, index);
        return;
      }
      float_op(k == ExprKind::Mul                        ? Op::Mul
               : k == ExprKind::Add || k == ExprKind::Sub ? Op::Add
               : k == ExprKind::Div || k == ExprKind::Mod ? Op::Div
                                                          : Op::OtherFloat,
               e.type());
    } else if (is_comparison(e.kind()) && b->a.type().is_float()) {
      float_op(Op::OtherFloat, b->a.type());
    } else if (!index) {
      cur_->direct[Op::IntOps] += mv(e.type());
    }
    count(b->a, index);
    count(b->b, index);
  }

  void access(const Buffer& buf, const Expr& index, int lanes, bool is_store) {
    OpCounts& c = cur_->direct;
    Type t{buf.dtype(), lanes};
    if (registers_.count(buf.get())) {
      c[Op::LocalAccesses] += mv(t);
      return;
    }
    if (!is_store && !cur_->seen.insert(buf.name() + "[" + to_string(index) + "]").second) return;
    AffineIndex form = affine_index(index, lets_);
    const double eb = static_cast<double>(dtype_size(buf.dtype()));
    Op count_as = is_store ? Op::Stores : Op::Loads;
    if (lanes == 1 || (form.affine && form.lane_stride == 0)) {
      c[count_as] += 1;
      if (lanes > 1 && !is_store) c[Op::Broadcasts] += mv(t);
    } else if (form.affine && form.lane_stride == 1) {
      c[count_as] += mv(t);
    } else if (form.affine && std::abs(form.lane_stride) <= 4 && !is_store) {
      c[count_as] += std::ceil(lanes * std::abs(form.lane_stride) * eb / hw_.vector_bytes);
      c[Op::Shuffles] += mv(t);
    } else {
      c[count_as] += lanes;
      c[is_store ? Op::ScatterLanes : Op::GatherLanes] += lanes;
    }
    c[is_store ? Op::StoreBytes : Op::LoadBytes] += lanes * eb;
    c[Op::MemElements] += lanes;
    Access a;
    a.buffer = buf.get();
    a.elem_bytes = static_cast<int>(eb);
    int64_t n = 1;
    for (int64_t d : buf.dims()) n = d > 0 && n > 0 ? n * d : 0;
    a.buffer_bytes = buf.dims().empty() ? 0 : n * a.elem_bytes;
    a.index = form;
    a.raw_index = index;
    a.is_store = is_store;
    cur_->accesses.push_back(std::move(a));
  }

  const HardwareDesc& hw_;
  LoopNode* cur_;
  LetForms lets_;
  VarBounds vb_;
  std::unordered_set<const BufferNode*> registers_;
};

// Fills subtree and inner_extents bottom-up.
void collect(LoopNode& n) {
  for (const Access& a : n.accesses) n.subtree.push_back(&a);
  for (auto& c : n.children) {
    collect(*c);
    n.subtree.insert(n.subtree.end(), c->subtree.begin(), c->subtree.end());
    n.inner_extents.insert(c->inner_extents.begin(), c->inner_extents.end());
    n.inner_extents[c->var] = c->extent;
  }
}

// Weighted counts and loop statistics, top-down.
struct Aggregator {
  int threads;
  LoopFeatures& f;
  double inner_weight = 0, inner_extent_sum = 0, inner_stores_sum = 0;
  double par_best_work = -1, par_work = 0;

  // Anchor work in a subtree per run of the node's body.
  static double work(const LoopNode& n) {
    double w = n.direct[Op::Anchor] + n.direct[Op::MemElements];
    for (const auto& c : n.children) w += c->extent * work(*c);
    return w;
  }

  void run(const LoopNode& n, double runs, double speedup, int depth) {
    f.total.add(n.direct, runs);
    f.per_thread.add(n.direct, runs / speedup);
    f.max_depth = std::max(f.max_depth, depth);
    if (n.loop && n.children.empty()) {
      double w = runs * (n.direct[Op::Anchor] + n.direct[Op::MemElements]) + 1e-9;
      inner_weight += w;
      inner_extent_sum += w * n.extent;
      inner_stores_sum += w * n.stores;
      if (n.accumulators > 0) f.chained_iterations += runs / speedup;
    }
    for (const auto& c : n.children) {
      ++f.loops;
      double child_speedup = speedup;
      if (c->kind == ForKind::Unrolled) f.unrolled_extent *= std::max<int64_t>(c->extent, 1);
      if (c->kind == ForKind::Parallel && speedup == 1 && c->extent > 1) {
        double ext = static_cast<double>(c->extent), t = std::min<double>(threads, ext);
        double per_thread = std::ceil(ext / t);
        child_speedup = ext / per_thread;
        double w = runs * ext * work(*c);
        par_work += w;
        f.parallel_launches += runs;
        if (w > par_best_work) {
          par_best_work = w;
          f.parallel_extent = ext;
          f.parallel_balance = per_thread / (ext / t);
        }
      }
      run(*c, runs * static_cast<double>(c->extent), child_speedup, depth + 1);
    }
  }
};

// Bytes a statement executed once must bring into a cache of `capacity`
// bytes: all it touches when that fits; else, for a loop whose one iteration
// fits, the first iteration's lines plus the new lines of each further
// iteration while a window of consecutive iterations still fits; else its
// body's traffic times its trips.
double traffic(const LoopNode& n, double capacity, int line) {
  auto fp = [&](int64_t window) {
    if (!n.var) return footprint_bytes(n.subtree, n.inner_extents, line);
    VarExtents ext = n.inner_extents;
    ext[n.var] = window;
    return footprint_bytes(n.subtree, ext, line);
  };
  double all = fp(n.extent);
  if (all <= capacity) return all;
  double one = n.var ? fp(1) : all;
  if (!n.var || one > capacity) {
    std::vector<const Access*> direct;
    for (const Access& a : n.accesses) direct.push_back(&a);
    double body = footprint_bytes(direct, {}, line);
    for (const auto& c : n.children) body += traffic(*c, capacity, line);
    return (n.var ? static_cast<double>(n.extent) : 1.0) * body;
  }
  // The longest run of w consecutive iterations (a power of two) that fits:
  // beyond it, each further iteration brings what the next run adds to the
  // last one (measured over a whole run, so data shared by a few neighbours
  // only — a cache line over 16 columns — is counted once per run).
  int64_t w = 1;
  double fw = one, next_fp = all;
  for (int64_t next = 2; next < n.extent; next *= 2) {
    double f = fp(next);
    if (f > capacity) {
      next_fp = f;
      break;
    }
    w = next;
    fw = f;
  }
  if (w == 1) return static_cast<double>(n.extent) * one;
  int64_t next = std::min(2 * w, n.extent);  // the loop stops at a run that did not fit, or at the extent
  if (next == n.extent) next_fp = all;
  double fresh = (next_fp - fw) / static_cast<double>(next - w);
  return fw + static_cast<double>(n.extent - w) * fresh;
}

}  // namespace

std::string_view op_name(Op op) { return kOpNames.at(static_cast<size_t>(op)); }

LoopFeatures loop_features(const Kernel& kernel, const HardwareDesc& hw, int threads) {
  if (threads <= 0) threads = hw.cores;
  LoopNode root;
  TreeBuilder builder(hw, &root);
  builder.visit(kernel.body);
  collect(root);

  LoopFeatures f;
  Aggregator agg{threads, f};
  agg.run(root, 1, 1, 0);
  if (agg.inner_weight > 0) {
    f.innermost_extent = agg.inner_extent_sum / agg.inner_weight;
    f.stores_per_inner = agg.inner_stores_sum / agg.inner_weight;
  }
  if (f.total[Op::FloatOps] > 0) f.vector_lanes = f.total[Op::LaneOps] / f.total[Op::FloatOps];
  double all_work = Aggregator::work(root);
  f.parallel_fraction = all_work > 0 ? std::min(1.0, agg.par_work / all_work) : 0;
  double per_thread_work = f.per_thread[Op::Anchor] + f.per_thread[Op::MemElements];
  double total_work = f.total[Op::Anchor] + f.total[Op::MemElements];
  f.parallel_speedup = per_thread_work > 0 ? total_work / per_thread_work : 1;

  // Caches hold somewhat less than their size (associativity, other data);
  // threads share the last level.
  const int line = hw.line_bytes;
  const double used_threads = f.parallel_extent > 0 ? std::min<double>(threads, f.parallel_extent) : 1;
  f.footprint = footprint_bytes(root.subtree, root.inner_extents, line);
  f.traffic_l2 = traffic(root, 0.75 * static_cast<double>(hw.l1d), line);
  f.traffic_l3 = traffic(root, 0.75 * static_cast<double>(hw.l2), line);
  // Data that fits the last level is taken to be there already (written by
  // the kernel before, or read by the run before): only a kernel whose data
  // outgrows it pays memory traffic.
  const double l3 = 0.75 * static_cast<double>(hw.l3) / used_threads;
  f.traffic_dram = f.footprint <= l3 ? 0 : traffic(root, l3, line);
  return f;
}

}  // namespace tessera::cost
