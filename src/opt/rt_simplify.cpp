// PET's post-optimizations of reshape/transpose ("R/T") chains (Wang et al.,
// OSDI'21, section 6.3), run after mutants are spliced into the graph: a
// mutant such as D2H wraps each conv in an R/T and its inverse, and the
// inverse of one conv meets the R/T of the next only across the Relu between
// them. Exact rewrites only (no element changes value, only position):
//  - move_rt: an R/T chain feeding a one-to-one elementwise op (Relu, Clip,
//    ..., or Add/Sub/Mul/Div/Pow/Max/Min/PRelu with a constant operand) moves
//    after it: op(RT(x)) = RT(op(x)); the constant is moved back through the
//    chain's inverse and shrunk to the axes it varies on, and the move is
//    made only when it gets no larger (a per-channel bias stays per channel);
//  - merge_rt: a chain of R/T ops (each output read only by the next) becomes
//    its canonical form (rt_form.h) when that has fewer ops: inverse pairs
//    vanish, consecutive R/T become one Reshape-Transpose-Reshape or less.
// Counted per rule; tests/unit/test_rt_simplify.cpp checks each against the
// reference interpreter.
#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "opt/passes.h"
#include "opt/rt_form.h"

namespace tessera {

namespace {

bool default_domain(const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

// The producer of `v` when it is an R/T node whose output is read only once and is not a graph output.
Node* single_use_rt(const Graph& g, const Value* v) {
  if (!v || !v->producer || v->uses.size() != 1 || g.is_output(v) || !rt::form_of(*v->producer)) return nullptr;
  return v->producer;
}

// The R/T nodes ending at `last`, in order: each feeds only the next.
std::vector<Node*> chain_ending_at(const Graph& g, Node* last) {
  std::vector<Node*> chain{last};
  while (Node* p = single_use_rt(g, chain.front()->inputs[0])) chain.insert(chain.begin(), p);
  return chain;
}

// Erases the nodes (a chain whose outputs are now unread), last first.
void erase_chain(Graph& g, const std::vector<Node*>& chain) {
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) g.erase_node(*it);
}

// The one perm of a chain of Transposes (axis i of the result is input axis perm[i]), or nullopt
// when the chain has another op.
std::optional<std::vector<int64_t>> composed_transpose(const std::vector<Node*>& chain) {
  std::vector<int64_t> perm;
  for (Node* n : chain) {
    if (n->op_type != "Transpose") return std::nullopt;
    const std::vector<int64_t> p = rt::form_of(*n)->perm;
    if (perm.empty()) {
      perm = p;
      continue;
    }
    std::vector<int64_t> next;
    for (int64_t i : p) next.push_back(perm[static_cast<size_t>(i)]);
    perm = next;
  }
  return perm;
}

bool merge_rt(Graph& g, Node& n) {
  if (!rt::form_of(n)) return false;
  Value* y = n.outputs[0];
  if (y->uses.size() == 1 && !g.is_output(y) && rt::form_of(*y->uses[0].node)) return false;  // not a chain's end
  std::vector<Node*> chain = chain_ending_at(g, &n);
  // Split the chain where two forms do not compose; rewrite the last piece that gets shorter.
  size_t start = 0;
  std::optional<rt::Form> form = rt::form_of(*chain[0]);
  std::vector<std::pair<size_t, rt::Form>> pieces;  // (start index, composed form), each up to the next start
  for (size_t i = 1; i <= chain.size(); ++i) {
    std::optional<rt::Form> next = i < chain.size() ? rt::compose(*form, *rt::form_of(*chain[i])) : std::nullopt;
    if (next) {
      form = next;
      continue;
    }
    pieces.push_back({start, rt::normalize(*form)});
    if (i < chain.size()) form = rt::form_of(*chain[i]), start = i;
  }
  for (size_t p = pieces.size(); p-- > 0;) {
    const size_t begin = pieces[p].first, end = p + 1 < pieces.size() ? pieces[p + 1].first : chain.size();
    const rt::Form& f = pieces[p].second;
    std::vector<Node*> piece(chain.begin() + static_cast<std::ptrdiff_t>(begin),
                             chain.begin() + static_cast<std::ptrdiff_t>(end));
    Value* x = piece.front()->inputs[0];
    Value* last = piece.back()->outputs[0];
    // Transposes alone compose to one Transpose of the input's own axes, which the normalized
    // form may write as three ops (it merges axes and needs reshapes around them).
    std::optional<std::vector<int64_t>> perm = composed_transpose(piece);
    const int form_ops = perm && !f.is_identity() ? 1 : f.op_count();
    const int ops = form_ops == 0 && g.is_output(last) ? 1 : form_ops;  // an output keeps one node
    if (ops >= static_cast<int>(piece.size())) continue;
    if (ops == 0) {
      g.replace_all_uses(last, x);
    } else if (perm && !f.is_identity()) {
      Node* t = g.insert_node_before(piece.back(), "Transpose", {x}, {g.unique_name(last->name + ".rt")},
                                     {{"perm", Attribute::of_ints(*perm)}}, g.unique_name(last->name + ".rt"));
      t->outputs[0]->type = last->type;
      Graph::take_over(t->outputs[0], last);
    } else {
      Value* v = rt::emit(g, piece.back(), x, f, last->name + ".rt", true);
      Graph::take_over(v, last);
    }
    erase_chain(g, piece);
    return true;
  }
  return false;
}

// One-to-one elementwise ops whose inputs other than the first are absent or scalar constants.
bool unary_elementwise(const std::string& op) {
  static const std::unordered_set<std::string> ops = {
      "Relu",  "LeakyRelu", "Elu",  "Selu", "Celu",  "ThresholdedRelu", "Sigmoid", "HardSigmoid", "HardSwish",
      "Tanh",  "Neg",       "Abs",  "Exp",  "Log",   "Sqrt",            "Reciprocal", "Erf",      "Softplus",
      "Softsign", "Sin",    "Cos",  "Floor", "Ceil", "Round",           "Sign",    "Clip",        "Mish", "Gelu"};
  return ops.count(op) != 0;
}

// Two-input elementwise ops that broadcast; moved when the other input is a constant.
bool binary_elementwise(const std::string& op) {
  static const std::unordered_set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu"};
  return ops.count(op) != 0;
}

// `c` broadcast to `dims` (numpy rules; the caller checked they hold).
Tensor broadcast_to(const Tensor& c, const Dims& dims) {
  Tensor out(c.dtype(), dims);
  const size_t esz = dtype_size(c.dtype());
  const Dims cs = strides_of(c.dims());
  const size_t off = dims.size() - c.dims().size();
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t k = 0; k < out.numel(); ++k) {
    int64_t src = 0;
    for (size_t a = off; a < dims.size(); ++a)
      if (c.dims()[a - off] != 1) src += idx[a] * cs[a - off];
    std::memcpy(static_cast<char*>(out.raw()) + static_cast<size_t>(k) * esz,
                static_cast<const char*>(c.raw()) + static_cast<size_t>(src) * esz, esz);
    for (size_t a = dims.size(); a-- > 0;)
      if (++idx[a] < dims[a]) break;
      else idx[a] = 0;
  }
  return out;
}

// `t` with every axis along which it does not vary cut to size 1 (the
// smallest tensor that broadcasts back to it).
Tensor unbroadcast(Tensor t) {
  const size_t esz = dtype_size(t.dtype());
  for (size_t a = 0; a < t.dims().size(); ++a) {
    const Dims& d = t.dims();
    if (d[a] == 1) continue;
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < a; ++i) outer *= d[i];
    for (size_t i = a + 1; i < d.size(); ++i) inner *= d[i];
    const size_t block = static_cast<size_t>(inner) * esz;
    const char* p = static_cast<const char*>(t.raw());
    bool constant = true;
    for (int64_t o = 0; o < outer && constant; ++o)
      for (int64_t j = 1; j < d[a] && constant; ++j)
        constant = std::memcmp(p + (o * d[a] + j) * block, p + o * d[a] * block, block) == 0;
    if (!constant) continue;
    Dims nd = d;
    nd[a] = 1;
    Tensor cut(t.dtype(), nd);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(cut.raw()) + o * block, p + o * d[a] * block, block);
    t = std::move(cut);
  }
  return t;
}

bool move_rt(Graph& g, Node& u) {
  if (!default_domain(u) || u.outputs.size() != 1 || !u.outputs[0] || !u.has_input(0)) return false;
  int data = 0, other = -1;
  if (unary_elementwise(u.op_type)) {
    for (int i = 1; i < u.num_inputs(); ++i)
      if (u.has_input(i) && (!u.inputs[static_cast<size_t>(i)]->constant ||
                             u.inputs[static_cast<size_t>(i)]->constant->numel() != 1))
        return false;
  } else if (binary_elementwise(u.op_type) && u.num_inputs() == 2 && u.has_input(1)) {
    data = u.inputs[0]->constant ? 1 : 0;
    other = 1 - data;
    if (!u.inputs[static_cast<size_t>(other)]->constant || u.inputs[static_cast<size_t>(data)]->constant) return false;
  } else {
    return false;
  }
  Node* t = single_use_rt(g, u.inputs[static_cast<size_t>(data)]);
  if (!t) return false;
  Value* y = u.outputs[0];
  const Dims s = t->outputs[0]->type.dims;
  if (!y->type.rank_known || y->type.dims != s) return false;  // the op broadcasts its result larger
  std::vector<Node*> chain = chain_ending_at(g, t);
  Value* x = chain.front()->inputs[0];
  Value* moved_constant = nullptr;
  if (other >= 0) {
    // c' with RT(c') = broadcast(c): the constant moved back through the chain, then shrunk.
    const Tensor& c = *u.inputs[static_cast<size_t>(other)]->constant;
    if (c.dims().size() > s.size() || c.dtype() == DType::String) return false;
    Tensor back = broadcast_to(c, s);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) back = rt::apply(rt::inverse(*rt::form_of(**it)), back);
    back = unbroadcast(std::move(back));
    if (back.numel() > c.numel()) return false;
    moved_constant = g.add_constant(g.unique_name(u.inputs[static_cast<size_t>(other)]->name + ".rt"), std::move(back));
  }
  // u now reads x and writes a fresh value of x's dims; the chain's ops, re-made after u, write y.
  Value* fresh = g.add_value(g.unique_name(y->name + ".pre_rt"), TensorType{y->type.dtype, x->type.dims, true});
  g.set_input(&u, data, x);
  if (moved_constant) g.set_input(&u, other, moved_constant);
  u.outputs[0] = fresh;
  fresh->producer = &u;
  fresh->producer_output = 0;
  Node* after = nullptr;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i].get() == &u) after = i + 1 < g.nodes().size() ? g.nodes()[i + 1].get() : nullptr;
  Value* v = fresh;
  for (Node* c : chain) {
    std::vector<Value*> ins = c->inputs;
    ins[0] = v;
    Node* m = g.insert_node_before(after, c->op_type, ins, {g.unique_name(c->outputs[0]->name + ".moved")}, c->attrs,
                                   g.unique_name(c->name + ".moved"));
    m->domain = c->domain;
    m->outputs[0]->type = TensorType{y->type.dtype, c->outputs[0]->type.dims, true};
    v = m->outputs[0];
  }
  // y's producer is u until now: hand y to the last re-made op, u keeps `fresh`.
  Node* last = v->producer;
  last->outputs[0] = y;
  y->producer = last;
  y->producer_output = 0;
  v->producer = nullptr;
  erase_chain(g, chain);
  return true;
}

struct RtRule {
  const char* name;
  bool (*apply)(Graph&, Node&);
};

// Merging first, so an inverse pair vanishes before anything moves it.
const RtRule kRules[] = {{"merge_rt", merge_rt}, {"move_rt", move_rt}};

}  // namespace

int simplify_rt(Graph& g, std::map<std::string, int>* applied) {
  if (g.opset < 5) return 0;  // Reshape reads its shape from an input since opset 5
  // One rewrite at a time, then from the first rule again: a chain that just moved meets its
  // inverse, and merging it before anything else moves it keeps the pair from travelling on.
  int total = 0;
  for (bool changed = true; changed && total < 100000;) {
    changed = false;
    for (const RtRule& r : kRules) {
      std::vector<Node*> todo;
      for (const auto& n : g.nodes()) todo.push_back(n.get());
      for (Node* n : todo) {
        if (!r.apply(g, *n)) continue;
        ++total;
        changed = true;
        if (applied) ++(*applied)[r.name];
        break;
      }
      if (changed) break;
    }
  }
  g.remove_unused_values();
  return total;
}

}  // namespace tessera
