#include "pet/mutation_test.h"

#include <chrono>
#include <random>
#include <sstream>

#include "ops/registry.h"
#include "pet/seed_pairs.h"
#include "pet/verifier.h"
#include "support/error.h"

namespace tessera::pet {

namespace {

using Rng = std::mt19937_64;

int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

template <class T>
T* pick_of(Rng& rng, const std::vector<T*>& v) {
  return v.empty() ? nullptr : v[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(v.size()) - 1))];
}

std::vector<Node*> nodes_of(Graph& g, std::initializer_list<const char*> types) {
  std::vector<Node*> r;
  for (const auto& n : g.nodes())
    for (const char* t : types)
      if (n->op_type == t) r.push_back(n.get());
  return r;
}

Value* ints(Graph& g, const std::vector<int64_t>& v) {
  return g.add_int64s("c", v);
}

Value* add(Graph& g, const std::string& type, std::vector<Value*> in, AttrMap attrs = {}) {
  return g.add_node(type, std::move(in), {g.unique_name("v")}, std::move(attrs), g.unique_name(type))->outputs[0];
}

// Points every use of `from` recorded before the call (and the graph outputs)
// at `to`; nodes added after reading `from` keep reading it.
struct Uses {
  std::vector<Use> uses;
  explicit Uses(const Value* v) : uses(v->uses) {}
  void redirect(Graph& g, Value* from, Value* to) const {
    for (const Use& u : uses) g.set_input(u.node, u.input_index, to);
    for (Value*& o : g.mutable_outputs())
      if (o == from) o = to;
  }
};

Value* slice(Graph& g, Value* v, int64_t axis, int64_t lo, int64_t hi) {
  return add(g, "Slice", {v, ints(g, {lo}), ints(g, {hi}), ints(g, {axis})});
}

// A value of dims `want` from `v`: crop with Slice and extend with zero Pad
// per dim, or Reshape when the ranks differ and the counts agree.
Value* refit_value(Graph& g, Value* v, const Dims& have, const Dims& want) {
  if (have.size() != want.size()) {
    TESSERA_CHECK(numel_of(have) == numel_of(want), "cannot refit");
    return add(g, "Reshape", {v, ints(g, want)});
  }
  for (size_t d = 0; d < want.size(); ++d) {
    if (have[d] > want[d]) v = slice(g, v, static_cast<int64_t>(d), 0, want[d]);
    if (have[d] < want[d]) {
      std::vector<int64_t> pads(2 * want.size(), 0);
      pads[want.size() + d] = want[d] - have[d];
      v = add(g, "Pad", {v, ints(g, pads)});
    }
  }
  return v;
}

// After a node's attributes or inputs changed: re-infers its outputs and, where
// their dims moved, restores the old dims so the rest of the graph still fits.
void refit_node(Graph& g, Node* n) {
  std::vector<TensorType> old;
  for (Value* v : n->outputs) {
    old.push_back(v->type);
    v->type = TensorType{v->type.dtype, {}, false};
  }
  infer_node(*n, g.opset);
  for (size_t i = 0; i < n->outputs.size(); ++i) {
    Value* v = n->outputs[i];
    if (v->type.dims == old[i].dims) continue;
    Uses uses(v);
    Value* fixed = refit_value(g, v, v->type.dims, old[i].dims);
    uses.redirect(g, v, fixed);
  }
}

const std::vector<std::string> kKinds = {"weight-shuffle", "window-attr", "slice-bound", "pad-shift", "perm-entry",
                                         "concat-order", "split-size", "scale-slice", "region", "mask-drop"};

// Applies corruption `kind`; false when the graph has nothing it applies to.
bool corrupt(Graph& g, const std::string& kind, Rng& rng) {
  if (kind == "weight-shuffle") {
    std::vector<Value*> w;
    for (size_t i = 0; i < g.inputs().size(); ++i)
      if (!g.inputs()[i]->uses.empty()) w.push_back(g.inputs()[i]);
    Value* v = pick_of(rng, w);
    if (!v) return false;
    const Dims d = v->type.dims;
    std::vector<int64_t> axes;
    for (size_t a = 0; a < d.size(); ++a)
      if (d[a] > 1) axes.push_back(static_cast<int64_t>(a));
    if (axes.empty()) return false;
    const int64_t ax = axes[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(axes.size()) - 1))];
    Uses uses(v);
    Value* s = nullptr;
    switch (pick(rng, 0, 2)) {
      case 0:  // reversed along one axis
        s = add(g, "Slice", {v, ints(g, {-1}), ints(g, {INT64_MIN}), ints(g, {ax}), ints(g, {-1})});
        break;
      case 1: {  // rotated along one axis
        const int64_t k = pick(rng, 1, d[static_cast<size_t>(ax)] - 1);
        s = add(g, "Concat", {slice(g, v, ax, k, d[static_cast<size_t>(ax)]), slice(g, v, ax, 0, k)}, {{"axis", Attribute::of_int(ax)}});
        break;
      }
      default: {  // two elements swapped along one axis (the rest in place)
        const int64_t n = d[static_cast<size_t>(ax)], i = pick(rng, 0, n - 2);
        std::vector<Value*> parts;
        if (i > 0) parts.push_back(slice(g, v, ax, 0, i));
        parts.push_back(slice(g, v, ax, i + 1, i + 2));
        parts.push_back(slice(g, v, ax, i, i + 1));
        if (i + 2 < n) parts.push_back(slice(g, v, ax, i + 2, n));
        s = add(g, "Concat", parts, {{"axis", Attribute::of_int(ax)}});
      }
    }
    uses.redirect(g, v, s);
    return true;
  }
  if (kind == "window-attr") {
    Node* n = pick_of(rng, nodes_of(g, {"Conv", "ConvTranspose", "AveragePool"}));
    if (!n) return false;
    const int64_t nsp = n->outputs[0]->type.rank() - 2;
    const size_t d = static_cast<size_t>(pick(rng, 0, nsp - 1));
    auto get = [&](const char* name, int64_t size, int64_t def) {
      const Attribute* a = n->attr(name);
      return a ? a->ints : std::vector<int64_t>(static_cast<size_t>(size), def);
    };
    std::vector<int64_t> pads = get("pads", 2 * nsp, 0), strides = get("strides", nsp, 1), dil = get("dilations", nsp, 1);
    switch (pick(rng, 0, 3)) {
      case 0:  // shifted window: one more pad before, one less after (or the reverse)
        if (pads[d] > 0 && pick(rng, 0, 1)) {
          --pads[d];
          ++pads[d + static_cast<size_t>(nsp)];
        } else {
          ++pads[d];
          if (pads[d + static_cast<size_t>(nsp)] > 0) --pads[d + static_cast<size_t>(nsp)];
        }
        break;
      case 1: pads[d] = std::max<int64_t>(0, pads[d] + (pick(rng, 0, 1) ? 1 : -1)); break;
      case 2: ++strides[d]; break;
      default:
        if (n->op_type == "AveragePool") return false;
        ++dil[d];
    }
    n->attrs["pads"] = Attribute::of_ints(pads);
    n->attrs["strides"] = Attribute::of_ints(strides);
    if (n->op_type != "AveragePool") n->attrs["dilations"] = Attribute::of_ints(dil);
    refit_node(g, n);
    return true;
  }
  if (kind == "slice-bound" || kind == "pad-shift") {
    const bool is_slice = kind == "slice-bound";
    Node* n = pick_of(rng, nodes_of(g, {is_slice ? "Slice" : "Pad"}));
    if (!n) return false;
    std::vector<int64_t> v = n->inputs[1]->constant->to_int_vector();
    std::vector<int64_t> e = is_slice ? n->inputs[2]->constant->to_int_vector() : std::vector<int64_t>{};
    const size_t i = static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(is_slice ? v.size() : v.size() / 2) - 1));
    const int64_t delta = pick(rng, 0, 1) ? 1 : -1;
    if (is_slice) {
      if (v[i] < 0 || e[i] < -1) return false;  // negative-step slices: leave them
      v[i] = std::max<int64_t>(0, v[i] + delta);
      if (pick(rng, 0, 1)) e[i] += delta;
      g.set_input(n, 2, ints(g, e));
    } else {
      v[i] += delta;  // shift: one side gains, the other loses
      v[i + v.size() / 2] -= delta;
    }
    g.set_input(n, 1, ints(g, v));
    refit_node(g, n);
    return true;
  }
  if (kind == "perm-entry") {
    Node* n = pick_of(rng, nodes_of(g, {"Transpose"}));
    if (!n) return false;
    const int64_t r = n->inputs[0]->type.rank();
    if (r < 2) return false;
    std::vector<int64_t> perm = n->attr("perm") ? n->attr("perm")->ints : std::vector<int64_t>{};
    if (perm.empty())
      for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
    const int64_t a = pick(rng, 0, r - 2), b = pick(rng, a + 1, r - 1);
    std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
    n->attrs["perm"] = Attribute::of_ints(perm);
    refit_node(g, n);
    return true;
  }
  if (kind == "concat-order") {
    Node* n = pick_of(rng, nodes_of(g, {"Concat"}));
    if (!n || n->inputs.size() < 2) return false;
    Value* a = n->inputs[0];
    g.set_input(n, 0, n->inputs[1]);
    g.set_input(n, 1, a);
    refit_node(g, n);
    return true;
  }
  if (kind == "split-size") {
    Node* n = pick_of(rng, nodes_of(g, {"Split"}));
    if (!n || !n->has_input(1)) return false;
    std::vector<int64_t> s = n->inputs[1]->constant->to_int_vector();
    const size_t i = static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(s.size()) - 1)), j = (i + 1) % s.size();
    if (s[i] <= 1) return false;
    --s[i];
    ++s[j];
    g.set_input(n, 1, ints(g, s));
    refit_node(g, n);
    return true;
  }
  if (kind == "scale-slice") {  // one slice of an intermediate value doubled
    std::vector<Node*> all;
    for (const auto& n : g.nodes()) all.push_back(n.get());
    Node* n = pick_of(rng, all);
    Value* v = n ? n->outputs[0] : nullptr;
    if (!v || v->type.rank() == 0) return false;
    const Dims d = v->type.dims;
    const size_t ax = static_cast<size_t>(pick(rng, 0, v->type.rank() - 1));
    const int64_t at = pick(rng, 0, d[ax] - 1);
    Tensor scale(DType::F32, d);
    const Dims st = strides_of(d);
    for (int64_t f = 0; f < scale.numel(); ++f) scale.data<float>()[f] = (f / st[ax]) % d[ax] == at ? 2.0f : 1.0f;
    Uses uses(v);
    Value* s = add(g, "Mul", {v, g.add_constant(g.unique_name("scale"), scale)});
    uses.redirect(g, v, s);
    return true;
  }
  if (kind == "region") {  // an output region replaced by zeros or by another region
    const size_t o = static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(g.outputs().size()) - 1));
    Value* y = g.outputs()[o];
    const Dims d = y->type.dims;
    std::vector<int64_t> axes;
    for (size_t a = 0; a < d.size(); ++a)
      if (d[a] > 1) axes.push_back(static_cast<int64_t>(a));
    if (axes.empty()) return false;
    const int64_t ax = axes[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(axes.size()) - 1))];
    const int64_t n = d[static_cast<size_t>(ax)], len = pick(rng, 1, std::max<int64_t>(1, n / 2));
    const int64_t a = pick(rng, 0, n - len);
    Value* r;
    if (pick(rng, 0, 1)) {
      Dims zd = d;
      zd[static_cast<size_t>(ax)] = len;
      r = g.add_constant(g.unique_name("zeros"), Tensor(DType::F32, zd));
    } else {
      int64_t c = pick(rng, 0, n - len - 1);
      if (c >= a) ++c;  // another region of the same size
      r = slice(g, y, ax, c, c + len);
    }
    std::vector<Value*> parts;
    if (a > 0) parts.push_back(slice(g, y, ax, 0, a));
    parts.push_back(r);
    if (a + len < n) parts.push_back(slice(g, y, ax, a + len, n));
    g.mutable_outputs()[o] = add(g, "Concat", parts, {{"axis", Attribute::of_int(ax)}});
    return true;
  }
  if (kind == "mask-drop") {  // a box of a correction dropped: zeros, or the mutant's wrong values
    Value* fix = nullptr;
    Value* keep = nullptr;
    for (const auto& v : g.values()) {
      if (v->name.rfind("fix_mask", 0) == 0) fix = v.get();
      if (v->name.rfind("keep_mask", 0) == 0) keep = v.get();
    }
    if (!fix || !keep) return false;
    Tensor f = fix->constant->clone(), k = keep->constant->clone();
    std::vector<int64_t> ones;
    for (int64_t i = 0; i < f.numel(); ++i)
      if (f.data<float>()[i] == 1.0f) ones.push_back(i);
    if (ones.empty()) return false;
    // A box around one corrected element: along each dim up to 2 more elements.
    const Dims& d = f.dims();
    const Dims st = strides_of(d);
    const int64_t c = ones[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(ones.size()) - 1))];
    std::vector<int64_t> lo(d.size()), hi(d.size());
    for (size_t a = 0; a < d.size(); ++a) {
      const int64_t i = (c / st[a]) % d[a];
      lo[a] = i;
      hi[a] = std::min(d[a], i + 1 + pick(rng, 0, 2));
    }
    const bool zeros = pick(rng, 0, 1);
    for (int64_t i = 0; i < f.numel(); ++i) {
      bool in = true;
      for (size_t a = 0; a < d.size(); ++a) {
        const int64_t x = (i / st[a]) % d[a];
        in = in && x >= lo[a] && x < hi[a];
      }
      if (in && f.data<float>()[i] == 1.0f) {
        f.data<float>()[i] = 0.0f;
        k.data<float>()[i] = zeros ? 0.0f : 1.0f;
      }
    }
    fix->constant = f;
    keep->constant = k;
    return true;
  }
  TESSERA_FAIL("pet: no corruption '", kind, "'");
}

}  // namespace

MutationCounts run_mutation_test(int64_t count, uint64_t seed) {
  const auto t0 = std::chrono::steady_clock::now();
  MutationCounts c;
  Rng rng(seed);
  const auto& families = seed_families();
  int64_t attempts = 0;
  while (c.corrupted < count) {
    TESSERA_CHECK(++attempts < 20 * count + 1000, "pet: the mutation test cannot make corrupted mutants");
    const std::string& family = families[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(families.size()) - 1))];
    const std::string& kind = kKinds[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(kKinds.size()) - 1))];
    SeedPair p = seed_pair(family, rng);
    std::unique_ptr<Graph> m = p.mutant->clone();
    try {
      if (!corrupt(*m, kind, rng)) continue;
      m->topo_sort();
      m->remove_dead_nodes();
      infer_graph(*m);
      verify_graph(*m);
    } catch (const Error&) {
      continue;  // the corruption made an invalid graph (a window that no longer fits): not a mutant
    }
    FloatDiff bf;
    try {
      bf = brute_force_diff(*p.original, *m, rng());
    } catch (const Error&) {
      continue;
    }
    VerifyOptions opts;
    opts.seed = rng();
    const VerifyResult r = verify(*p.original, *m, opts);
    ++c.corrupted;
    ++c.by_kind[kind];
    const bool differs = bf.count() > 0;
    c.brute_differs += differs;
    c.equivalent += r.verdict == Verdict::Equivalent;
    c.partial += r.verdict == Verdict::Partial;
    c.different += r.verdict == Verdict::Different;
    bool missed = r.verdict == Verdict::Equivalent && differs;
    bool exact = false;
    if (r.verdict == Verdict::Partial) {
      const auto mask = wrong_mask(r, bf.dims);
      exact = true;
      for (size_t o = 0; o < bf.dims.size(); ++o) {
        int64_t marked = 0;
        for (char x : mask[o]) marked += x;
        for (int64_t i : bf.differing[o]) missed = missed || !mask[o][static_cast<size_t>(i)];
        exact = exact && marked == static_cast<int64_t>(bf.differing[o].size());
      }
      exact = exact && !missed;
    }
    c.accepted_with_difference += missed;
    c.boxes_exact += exact;
    c.flagged_without_difference += r.verdict != Verdict::Equivalent && !differs;
  }
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

std::string format_counts(const MutationCounts& c) {
  std::ostringstream os;
  os << "corrupted mutants:                          " << c.corrupted << "\n"
     << "brute force finds a difference:             " << c.brute_differs << "\n"
     << "verifier says equivalent:                   " << c.equivalent << "\n"
     << "verifier says partial:                      " << c.partial << "\n"
     << "verifier says different:                    " << c.different << "\n"
     << "partial with boxes == differing elements:   " << c.boxes_exact << "\n"
     << "flagged where brute force sees none:        " << c.flagged_without_difference << "\n"
     << "accepted where brute force finds a difference: " << c.accepted_with_difference << "\n"
     << "corruptions:";
  for (const auto& [k, n] : c.by_kind) os << " " << k << "=" << n;
  os << "\ntime: " << c.seconds << " s\n";
  return os.str();
}

}  // namespace tessera::pet
