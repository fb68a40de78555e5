// PET's Algorithm 1 for one compute node: depth-first from the node's
// activation, adding one op of a candidate set made for the node's class,
// recording every program whose output has the node's type.
//
// The search works on shapes only (each candidate knows its output dims), and
// writes a program as a graph only when it is recorded. Restrictions, so the
// programs stay multi-linear and the search small: each op reads the latest
// tensor (Add: the latest and one earlier tensor of its shape); at most one
// op reads the weights (a second would make the program quadratic in them);
// a program must contain that op, and the original op alone is not recorded.
// Reciprocity: an R/T whose composition with the R/T that produced its input
// is the identity permutation of the elements is not explored; the
// composition is computed exactly on index tensors, once per pair of R/T
// forms in the process.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "pet/mutants_internal.h"
#include "support/error.h"

namespace tessera::pet::detail {
namespace {

struct RTForm {
  Dims mid;
  std::vector<int64_t> perm;
  Dims out;
};

struct Cand {
  std::string name;
  bool is_rt = false;
  bool reads_weights = false;
  bool original = false;  // the node's own op with its own parameters
  int arity = 1;
  std::function<std::optional<RTForm>(const Dims&)> rt;                // R/T ops
  std::function<std::optional<Dims>(const std::vector<Dims>&)> shape;  // other ops
  // Emits the op: operands, and the node's inputs in the new graph.
  std::function<Value*(ProgramBuilder&, const std::vector<Value*>&, const std::vector<Value*>&)> emit;
};

Dims transposed(const Dims& mid, const std::vector<int64_t>& perm) {
  Dims t;
  for (int64_t p : perm) t.push_back(mid[static_cast<size_t>(p)]);
  return t;
}

// The flat input index output element `i` of the R/T reads (`t`: the
// transposed dims, `st`: the mid dims' strides).
int64_t rt_source(const RTForm& f, const Dims& t, const Dims& st, int64_t i) {
  int64_t s = 0;
  for (size_t k = t.size(); k-- > 0;) {
    s += (i % t[k]) * st[static_cast<size_t>(f.perm[k])];
    i /= t[k];
  }
  return s;
}

// rt_source for every output element i = 0, 1, ... in turn, by counting
// through the transposed dims (no divisions), passed to `visit(i, source)`;
// stops early when `visit` returns false. For the full check of a pair.
template <typename Visit>
void for_each_source(const RTForm& f, Visit visit) {
  const Dims t = transposed(f.mid, f.perm), st = strides_of(f.mid);
  const int64_t n = numel_of(f.mid);
  std::vector<int64_t> idx(t.size(), 0);
  int64_t s = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!visit(i, s)) return;
    for (size_t k = t.size(); k-- > 0;) {
      const int64_t stride = st[static_cast<size_t>(f.perm[k])];
      if (++idx[k] < t[k]) {
        s += stride;
        break;
      }
      s -= (t[k] - 1) * stride;
      idx[k] = 0;
    }
  }
}

RTForm make_rt(Dims mid, std::vector<int64_t> perm, Dims out) { return {std::move(mid), std::move(perm), std::move(out)}; }

// "mid/perm/out" of an R/T: its whole effect on the elements.
std::string form_key(const RTForm& f) {
  std::string k = dims_to_string(f.mid) + "/";
  for (int64_t p : f.perm) k += std::to_string(p) + ",";
  return k + "/" + dims_to_string(f.out);
}

// Whether R/T `f2` applied to the output of R/T `f1` gives back every
// element where it was (the composition is the identity). Most pairs are
// not inverse: a sample of positions rejects them at once; a pair passing
// it is checked on every element (exact). The answers are kept for the
// process, by both forms: the full check of a 512x64x64 map walks 2M
// elements twice, and every generation over a conv of that shape (the
// search's rounds mutate mutants of one subprogram many times) meets the
// same pairs.
bool inverse_pair(const RTForm& f1, const RTForm& f2) {
  static std::mutex mu;
  static std::unordered_map<std::string, bool> cache;
  const std::string key = form_key(f1) + "|" + form_key(f2);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  const Dims t1 = transposed(f1.mid, f1.perm), st1 = strides_of(f1.mid);
  const Dims t2 = transposed(f2.mid, f2.perm), st2 = strides_of(f2.mid);
  const int64_t n = numel_of(f1.mid);
  auto fixed = [&](int64_t i) { return rt_source(f1, t1, st1, rt_source(f2, t2, st2, i)) == i; };
  bool identity = true;
  uint64_t r = 0x9e3779b97f4a7c15ull;  // positions spread by a fixed LCG, not a stride aligned with the dims
  for (int j = 0; j < 1000 && identity; ++j) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    identity = fixed(static_cast<int64_t>((r >> 17) % static_cast<uint64_t>(n)));
  }
  if (identity && n < (int64_t{1} << 31)) {
    // f1's sources in a table (32-bit: half the memory to touch), f2's
    // streamed against it.
    std::unique_ptr<int32_t[]> s1(new int32_t[static_cast<size_t>(n)]);
    for_each_source(f1, [&](int64_t i, int64_t src) {
      s1[static_cast<size_t>(i)] = static_cast<int32_t>(src);
      return true;
    });
    for_each_source(f2, [&](int64_t i, int64_t src) { return identity = s1[static_cast<size_t>(src)] == i; });
  } else if (identity) {
    identity = false;  // too large to check exactly: not pruned (exploring it is never wrong)
  }
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, identity);
  return identity;
}

// The conv output dims on one input, or nothing when it does not apply.
std::optional<Dims> conv_shape(const Dims& in, int64_t C, int64_t M, int64_t kh, int64_t kw,
                               const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                               const std::vector<int64_t>& d) {
  if (in.size() != 4 || in[1] != C) return std::nullopt;
  int64_t oh = (in[2] + p[0] + p[2] - d[0] * (kh - 1) - 1) / s[0] + 1;
  int64_t ow = (in[3] + p[1] + p[3] - d[1] * (kw - 1) - 1) / s[1] + 1;
  if (in[2] + p[0] + p[2] < d[0] * (kh - 1) + 1 || in[3] + p[1] + p[3] < d[1] * (kw - 1) + 1) return std::nullopt;
  return Dims{in[0], M, oh, ow};
}

// The 4-D R/T ops PET's generator uses: split an axis by 2 (or by d) and fold
// the factor into another axis.
std::function<std::optional<RTForm>(const Dims&)> rt4(const std::string& kind, int64_t f) {
  return [kind, f](const Dims& x) -> std::optional<RTForm> {
    if (x.size() != 4) return std::nullopt;
    const int64_t N = x[0], C = x[1], H = x[2], W = x[3];
    if (kind == "N2H" && N % f == 0) return make_rt({N / f, f, C, H, W}, {0, 2, 1, 3, 4}, {N / f, C, f * H, W});
    if (kind == "H2N" && H % f == 0) return make_rt({N, C, f, H / f, W}, {0, 2, 1, 3, 4}, {N * f, C, H / f, W});
    if (kind == "N2W" && N % f == 0) return make_rt({N / f, f, C, H, W}, {0, 2, 3, 1, 4}, {N / f, C, H, f * W});
    if (kind == "W2N" && W % f == 0) return make_rt({N, C, H, f, W / f}, {0, 3, 1, 2, 4}, {N * f, C, H, W / f});
    if (kind == "C2H" && C % f == 0) return make_rt({N, C / f, f, H, W}, {0, 1, 3, 2, 4}, {N, C / f, H * f, W});
    if (kind == "C2W" && C % f == 0) return make_rt({N, C / f, f, H, W}, {0, 1, 3, 4, 2}, {N, C / f, H, W * f});
    // Dilation phases into the batch and back (phase-major batch).
    if (kind == "D2H" && H % f == 0) return make_rt({N, C, H / f, f, W}, {3, 0, 1, 2, 4}, {f * N, C, H / f, W});
    if (kind == "H2D" && N % f == 0) return make_rt({f, N / f, C, H, W}, {1, 2, 3, 0, 4}, {N / f, C, H * f, W});
    if (kind == "D2W" && W % f == 0) return make_rt({N, C, H, W / f, f}, {4, 0, 1, 2, 3}, {f * N, C, H, W / f});
    if (kind == "W2D" && N % f == 0) return make_rt({f, N / f, C, H, W}, {1, 2, 3, 4, 0}, {N / f, C, H, W * f});
    return std::nullopt;
  };
}

Cand rt_cand(const std::string& kind, int64_t f) {
  Cand c;
  c.name = kind;
  c.is_rt = true;
  c.rt = rt4(kind, f);
  return c;
}

// A conv candidate: the node's conv with other parameters, its weights derived
// by `derive` (null: the weights as they are).
Cand conv_cand(const std::string& name, const Conv2D& k, int64_t C, int64_t kh, int64_t kw, std::vector<int64_t> s,
               std::vector<int64_t> p, std::vector<int64_t> d, std::function<Value*(ProgramBuilder&, Value*)> derive,
               bool original = false) {
  Cand c;
  c.name = name;
  c.reads_weights = true;
  c.original = original;
  const int64_t M = k.M, G = k.group;
  c.shape = [=](const std::vector<Dims>& in) { return conv_shape(in[0], C, M, kh, kw, s, p, d); };
  c.emit = [=](ProgramBuilder& b, const std::vector<Value*>& ops, const std::vector<Value*>& node) {
    Value* w = derive ? derive(b, node[1]) : node[1];
    return b.conv(ops[0], w, node.size() > 2 ? node[2] : nullptr, s, p, d, G);
  };
  return c;
}

std::vector<Cand> conv_candidates(GenContext& ctx, const Node& n, std::string& why) {
  Conv2D k;
  if (!read_conv2d(n, k, why)) return {};
  std::vector<Cand> cs;
  const std::vector<int64_t> s{k.sh, k.sw}, p{k.pt, k.pl, k.pb, k.pr}, d{k.dh, k.dw};
  if (k.group != 1) {
    why = "group conv: PET's Concat/Split candidates are the fixed group-to-conv mutant here";
    return {};
  }
  if (k.dh > 1 || k.dw > 1) {
    // Dilated: phases into the batch, a conv with dilation 1 where the pads
    // divide by the dilation, phases back.
    if (k.sh != 1 || k.sw != 1) {
      why = "strided dilated conv";
      return {};
    }
    const bool h_ok = k.dh > 1 && k.pt % k.dh == 0 && k.pb % k.dh == 0;
    const bool w_ok = k.dw > 1 && k.pl % k.dw == 0 && k.pr % k.dw == 0;
    if (h_ok) cs.push_back(rt_cand("D2H", k.dh)), cs.push_back(rt_cand("H2D", k.dh));
    if (w_ok) cs.push_back(rt_cand("D2W", k.dw)), cs.push_back(rt_cand("W2D", k.dw));
    if (h_ok)
      cs.push_back(conv_cand("conv_d1h", k, k.C, k.KH, k.KW, s, {k.pt / k.dh, k.pl, k.pb / k.dh, k.pr}, {1, k.dw}, nullptr));
    if (w_ok)
      cs.push_back(conv_cand("conv_d1w", k, k.C, k.KH, k.KW, s, {k.pt, k.pl / k.dw, k.pb, k.pr / k.dw}, {k.dh, 1}, nullptr));
    if (h_ok && w_ok)
      cs.push_back(conv_cand("conv_d1", k, k.C, k.KH, k.KW, s, {k.pt / k.dh, k.pl / k.dw, k.pb / k.dh, k.pr / k.dw},
                             {1, 1}, nullptr));
    if (cs.empty()) why = "dilated conv whose pads are not multiples of the dilation (fixed D2H covers it)";
  } else {
    for (const char* kind : {"N2H", "H2N", "N2W", "W2N", "C2H", "C2W"}) cs.push_back(rt_cand(kind, 2));
    cs.push_back(conv_cand("conv", k, k.C, k.KH, k.KW, s, p, d, nullptr, true));
    if (k.C % 2 == 0) {
      // Channel pairs interleaved into rows: kernel 2KH x KW, stride 2 there.
      const int64_t C = k.C, M = k.M, KH = k.KH, KW = k.KW;
      cs.push_back(conv_cand("conv_c2h", k, C / 2, 2 * KH, KW, {2 * k.sh, k.sw}, {2 * k.pt, k.pl, 2 * k.pb, k.pr}, d,
                             [=](ProgramBuilder& b, Value* w) {
                               return b.rt(w, {M, C / 2, 2, KH, KW}, {0, 1, 3, 2, 4}, {M, C / 2, 2 * KH, KW});
                             }));
      cs.push_back(conv_cand("conv_c2w", k, C / 2, KH, 2 * KW, {k.sh, 2 * k.sw}, {k.pt, 2 * k.pl, k.pb, 2 * k.pr}, d,
                             [=](ProgramBuilder& b, Value* w) {
                               return b.rt(w, {M, C / 2, 2, KH, KW}, {0, 1, 3, 4, 2}, {M, C / 2, KH, 2 * KW});
                             }));
    }
    if (k.H % 2 || k.W % 2) {
      // PET's odd-size candidates: pad one row and column at the end, slice it off.
      Cand pad;
      pad.name = "pad";
      pad.shape = [](const std::vector<Dims>& in) -> std::optional<Dims> {
        if (in[0].size() != 4) return std::nullopt;
        return Dims{in[0][0], in[0][1], in[0][2] + 1, in[0][3] + 1};
      };
      pad.emit = [](ProgramBuilder& b, const std::vector<Value*>& ops, const std::vector<Value*>&) {
        return b.pad(ops[0], {0, 0, 0, 0, 0, 0, 1, 1});
      };
      Cand slice;
      slice.name = "slice";
      slice.shape = [](const std::vector<Dims>& in) -> std::optional<Dims> {
        if (in[0].size() != 4 || in[0][2] < 2 || in[0][3] < 2) return std::nullopt;
        return Dims{in[0][0], in[0][1], in[0][2] - 1, in[0][3] - 1};
      };
      slice.emit = [](ProgramBuilder& b, const std::vector<Value*>& ops, const std::vector<Value*>&) {
        const Dims& d = ops[0]->type.dims;
        return b.slice(ops[0], {0, 0}, {d[2] - 1, d[3] - 1}, {2, 3});
      };
      cs.push_back(pad), cs.push_back(slice);
    }
  }
  (void)ctx;
  return cs;
}

std::vector<Cand> matmul_candidates(GenContext& ctx, const Node& n, std::string& why) {
  const Value* a = n.inputs[0];
  const Value* w = n.inputs[1];
  bool w_is_weight = false;
  for (size_t i = ctx.num_activations; i < ctx.sub.inputs().size(); ++i) w_is_weight |= ctx.sub.inputs()[i] == w;
  if (!w_is_weight || w->type.rank() != 2 || a->type.rank() < 2) {
    why = "MatMul not of an activation by a 2-D weight";
    return {};
  }
  const int64_t K = w->type.dims[0], N = w->type.dims[1];
  std::vector<Cand> cs;
  Cand t;  // swap the last two axes
  t.name = "T";
  t.is_rt = true;
  t.rt = [](const Dims& x) -> std::optional<RTForm> {
    if (x.size() < 2) return std::nullopt;
    std::vector<int64_t> perm;
    for (size_t i = 0; i < x.size(); ++i) perm.push_back(static_cast<int64_t>(i));
    std::swap(perm[x.size() - 1], perm[x.size() - 2]);
    return make_rt(x, perm, {});
  };
  cs.push_back(t);
  Cand mm;  // t @ W
  mm.name = "mm";
  mm.reads_weights = mm.original = true;
  mm.shape = [K, N](const std::vector<Dims>& in) -> std::optional<Dims> {
    if (in[0].size() < 2 || in[0].back() != K) return std::nullopt;
    Dims o = in[0];
    o.back() = N;
    return o;
  };
  mm.emit = [](ProgramBuilder& b, const std::vector<Value*>& ops, const std::vector<Value*>& node) {
    return b.op1("MatMul", {ops[0], node[1]});
  };
  cs.push_back(mm);
  Cand left;  // W^T @ t
  left.name = "mm_left";
  left.reads_weights = true;
  left.shape = [K, N](const std::vector<Dims>& in) -> std::optional<Dims> {
    if (in[0].size() < 2 || in[0][in[0].size() - 2] != K) return std::nullopt;
    Dims o = in[0];
    o[o.size() - 2] = N;
    return o;
  };
  left.emit = [](ProgramBuilder& b, const std::vector<Value*>& ops, const std::vector<Value*>& node) {
    return b.op1("MatMul", {b.transpose(node[1], {1, 0}), ops[0]});
  };
  cs.push_back(left);
  return cs;
}

struct Search {
  GenContext& ctx;
  const Node& node;
  int act_input = 0;  // which input of the node is the activation
  std::vector<Cand> cands;
  Dims target;
  std::vector<Dims> tensors;          // dims; [0] is the activation
  std::vector<int> producer;          // step that made each tensor (-1: input)
  std::vector<std::pair<int, std::vector<int>>> steps;  // candidate, operand tensors

  bool cancels(const Cand& second, int operand) {
    int ps = producer[static_cast<size_t>(operand)];
    if (ps < 0) return false;
    const Cand& first = cands[static_cast<size_t>(steps[static_cast<size_t>(ps)].first)];
    if (!first.is_rt) return false;
    const Dims& in = tensors[static_cast<size_t>(steps[static_cast<size_t>(ps)].second[0])];
    auto f1 = first.rt(in);
    auto f2 = second.rt(tensors[static_cast<size_t>(operand)]);
    if (!f1 || !f2) return false;
    Dims out2 = f2->out.empty() ? transposed(f2->mid, f2->perm) : f2->out;
    if (out2 != in) return false;
    return inverse_pair(*f1, *f2);
  }

  std::optional<Dims> out_dims(const Cand& c, const std::vector<int>& ops) {
    if (c.is_rt) {
      auto f = c.rt(tensors[static_cast<size_t>(ops[0])]);
      if (!f) return std::nullopt;
      return f->out.empty() ? transposed(f->mid, f->perm) : f->out;
    }
    std::vector<Dims> in;
    for (int o : ops) in.push_back(tensors[static_cast<size_t>(o)]);
    return c.shape(in);
  }

  void record(bool used_weights) {
    if (!used_weights) return;
    if (steps.size() == 1 && cands[static_cast<size_t>(steps[0].first)].original) return;
    ++ctx.report.dfs_programs;
    std::string seq;
    for (const auto& [ci, ops] : steps) seq += (seq.empty() ? "" : "+") + cands[static_cast<size_t>(ci)].name;
    // The family a program belongs to is its op sequence (PET's rules as
    // sequences): N2H/N2W put two images side by side, wrong at the seam;
    // the others are exact permutations. Any other program the DFS records
    // is "dfs:<ops>" and left to the verifier.
    static const std::map<std::string, std::pair<std::string, bool>> families = {
        {"N2H+conv+H2N", {"N2H", false}},     {"N2W+conv+W2N", {"N2W", false}},
        {"C2H+conv_c2h", {"C2H", true}},      {"C2W+conv_c2w", {"C2W", true}},
        {"D2H+conv_d1h+H2D", {"D2H", true}},  {"D2W+conv_d1w+W2D", {"D2W", true}},
    };
    auto fam = families.find(seq);
    const std::string label = fam != families.end() ? fam->second.first : "dfs:" + seq;
    const bool exact = fam != families.end() && fam->second.second;
    auto steps_copy = steps;
    const Node* np = &node;
    const int act = act_input;
    ctx.add(label, exact, false, [&, steps_copy, np, act] {
      return rewrite_nodes(ctx.sub, {np}, [&](ProgramBuilder& b, const std::vector<std::vector<Value*>>& ins) {
        std::vector<Value*> vals{ins[0][static_cast<size_t>(act)]};
        for (const auto& [ci, ops] : steps_copy) {
          const Cand& c = cands[static_cast<size_t>(ci)];
          std::vector<Value*> operands;
          for (int o : ops) operands.push_back(vals[static_cast<size_t>(o)]);
          if (c.is_rt) {
            auto f = c.rt(operands[0]->type.dims);
            vals.push_back(b.rt(operands[0], f->mid, f->perm, f->out));
          } else {
            vals.push_back(c.emit(b, operands, ins[0]));
          }
        }
        return std::vector<std::vector<Value*>>{{vals.back()}};
      });
    });
  }

  void dfs(bool used_weights) {
    if (static_cast<int>(steps.size()) >= ctx.opts.depth) return;
    if (ctx.out_of_states()) {
      ctx.report.out_of_states = true;
      return;
    }
    const int last = static_cast<int>(tensors.size()) - 1;
    for (size_t ci = 0; ci < cands.size(); ++ci) {
      const Cand& c = cands[ci];
      if (c.reads_weights && used_weights) continue;
      std::vector<std::vector<int>> choices;
      if (c.arity == 1) choices.push_back({last});
      else
        for (int j = 0; j < last; ++j)
          if (tensors[static_cast<size_t>(j)] == tensors[static_cast<size_t>(last)]) choices.push_back({last, j});
      for (const auto& ops : choices) {
        auto od = out_dims(c, ops);
        if (!od) continue;
        if (c.is_rt && cancels(c, ops[0])) {
          ++ctx.report.reciprocal_pruned;
          continue;
        }
        if (ctx.out_of_states()) {
          ctx.report.out_of_states = true;
          return;
        }
        if (ctx.past_deadline()) return;
        ++ctx.report.dfs_states;
        tensors.push_back(*od);
        producer.push_back(static_cast<int>(steps.size()));
        steps.push_back({static_cast<int>(ci), ops});
        const bool uw = used_weights || c.reads_weights;
        if (*od == target) record(uw);
        dfs(uw);
        steps.pop_back();
        producer.pop_back();
        tensors.pop_back();
      }
    }
  }
};

Cand add_cand() {
  Cand c;
  c.name = "add";
  c.arity = 2;
  c.shape = [](const std::vector<Dims>& in) -> std::optional<Dims> { return in[0]; };
  c.emit = [](ProgramBuilder& b, const std::vector<Value*>& ops, const std::vector<Value*>&) {
    return b.op1("Add", {ops[0], ops[1]});
  };
  return c;
}

}  // namespace

void dfs_mutants(GenContext& ctx, const Node& n) {
  std::string why;
  std::vector<Cand> cands = n.op_type == "Conv" ? conv_candidates(ctx, n, why) : matmul_candidates(ctx, n, why);
  if (cands.empty()) {
    ctx.report.skipped.push_back(n.describe() + ": DFS: " + why);
    return;
  }
  cands.push_back(add_cand());
  Search s{ctx, n, 0, std::move(cands), n.outputs[0]->type.dims, {n.inputs[0]->type.dims}, {-1}, {}};
  s.dfs(false);
}

}  // namespace tessera::pet::detail
