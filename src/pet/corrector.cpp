// PET's corrector (see corrector.h). Two passes over the original program:
// demand (every box of every value some wrong box needs, with its plan from
// region.h, recursively from the outputs) and emission (the nodes that
// compute them, built into a clone of the mutant; a Conv/MatMul/Gemm node's
// compatible requests as one batched kernel). Then the merge.
#include "pet/corrector.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "ops/registry.h"
#include "pet/region.h"
#include "support/error.h"

namespace tessera::pet {

namespace {

Tensor ints_tensor(const std::vector<int64_t>& v) { return Tensor::from<int64_t>({static_cast<int64_t>(v.size())}, v); }

bool is_whole(const Box& b, const Dims& dims) { return b == whole_box(dims); }

Dims extents(const Box& b) {
  Dims d;
  for (int64_t k = 0; k < b.rank(); ++k) d.push_back(b.extent(k));
  return d;
}

// A box made relative to `origin` (the produced region's lo).
Box shifted(const Box& b, const Box& origin) {
  Box r = b;
  for (size_t k = 0; k < r.lo.size(); ++k) {
    r.lo[k] -= origin.lo[k];
    r.hi[k] -= origin.lo[k];
  }
  return r;
}

class Corrector {
 public:
  Corrector(const Graph& original, Graph& out, const CorrectOptions& opts)
      : g_(original), c_(out), opts_(opts), opset_(original.opset) {
    for (size_t i = 0; i < g_.inputs().size(); ++i) mapped_[g_.inputs()[i]] = c_.inputs()[i];
  }

  // Pass 1: records the request for box `b` of `v` and, recursively, what it needs.
  void demand(const Value* v, const Box& b) {
    if (!v->producer) return;  // a graph input or constant: sliced when emitted
    const Key key{v, b.to_string()};
    if (index_.count(key)) return;
    Request r;
    r.node = v->producer;
    r.output = v->producer_output;
    r.want = b;
    r.plan = restrict_node(*r.node, r.output, b, opset_);
    index_[key] = requests_.size();
    requests_.push_back(r);
    const RestrictPlan plan = r.plan;  // requests_ may grow below
    for (const Operand& o : plan.operands)
      if (o.kind == Operand::Kind::Region) demand(r.node->inputs[static_cast<size_t>(o.input)], o.box);
  }

  // Between the passes: requests of one node that can share a kernel.
  void batch_requests() {
    if (!opts_.batch) return;
    std::map<std::string, std::vector<size_t>> groups;
    for (size_t i = 0; i < requests_.size(); ++i) {
      const Request& r = requests_[i];
      if (r.plan.batch_operand < 0) continue;
      groups[batch_signature(r)].push_back(i);
    }
    for (auto& [sig, members] : groups) {
      if (members.size() < 2) continue;
      const int id = static_cast<int>(groups_.size());
      groups_.push_back({members, {}});
      for (size_t m : members) requests_[m].group = id;
    }
  }

  // Pass 2: the value holding exactly box `b` of `v`.
  Value* get(const Value* v, const Box& b) {
    if (!v->producer) {
      Value*& memo = sliced_[Key{v, b.to_string()}];
      if (!memo) memo = slice(source(v), v->type.dims, b);
      return memo;
    }
    Request& r = requests_.at(index_.at(Key{v, b.to_string()}));
    if (!r.result) {
      if (r.group >= 0) emit_group(r.group);
      else emit(r);
    }
    return r.result;
  }

  CorrectReport report;

 private:
  using Key = std::pair<const Value*, std::string>;
  struct Request {
    const Node* node = nullptr;
    int output = 0;
    Box want;
    RestrictPlan plan;
    Value* result = nullptr;
    int group = -1;
  };
  struct Group {
    std::vector<size_t> members;
    std::vector<Value*> outputs;
  };

  // The original's graph input or constant, in the corrected graph.
  Value* source(const Value* v) {
    auto it = mapped_.find(v);
    if (it != mapped_.end()) return it->second;
    TESSERA_CHECK(v->is_constant(), "pet corrector: value '", v->name, "' has no producer and is not an input");
    return mapped_[v] = c_.add_constant(c_.unique_name("pet_const"), *v->constant);
  }

  Value* constant(Tensor t) { return c_.add_constant(c_.unique_name("pet_param"), std::move(t)); }

  Value* node(const std::string& op, std::vector<Value*> ins, AttrMap attrs = {}, int outputs = 1, int take = 0) {
    std::vector<std::string> names;
    for (int i = 0; i < outputs; ++i) names.push_back(c_.unique_name("pet_corr"));
    Node* n = c_.add_node(op, std::move(ins), names, std::move(attrs), c_.unique_name("pet_" + op));
    return n->outputs[static_cast<size_t>(take)];
  }

 public:
  // Box b of a value x of the given dims (x itself when b is all of it).
  Value* slice(Value* x, const Dims& dims, const Box& b) {
    if (is_whole(b, dims)) return x;
    std::vector<int64_t> starts, ends, axes;
    for (int64_t d = 0; d < b.rank(); ++d)
      if (b.lo[static_cast<size_t>(d)] != 0 || b.hi[static_cast<size_t>(d)] != dims[static_cast<size_t>(d)]) {
        starts.push_back(b.lo[static_cast<size_t>(d)]);
        ends.push_back(b.hi[static_cast<size_t>(d)]);
        axes.push_back(d);
      }
    return node("Slice", {x, constant(ints_tensor(starts)), constant(ints_tensor(ends)), constant(ints_tensor(axes))});
  }

  Value* pad(Value* x, const std::vector<int64_t>& pads) {
    if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; })) return x;
    return node("Pad", {x, constant(ints_tensor(pads))});
  }

 private:
  // Requests batch together when the node, the op, the attributes (Conv: but
  // the pads), every operand but the batched one, and the batched operand's
  // extents (Conv: padded) are equal.
  std::string batch_signature(const Request& r) {
    const RestrictPlan& p = r.plan;
    std::ostringstream s;
    s << r.node << '|' << r.output << '|' << p.op_type << '|';
    for (const auto& [k, a] : p.attrs)
      if (!(p.op_type == "Conv" && k == "pads")) s << k << '=' << hash_attribute(a) << ';';
    const std::vector<int64_t> pads = conv_pads(p);
    for (size_t i = 0; i < p.operands.size(); ++i) {
      const Operand& o = p.operands[i];
      s << '|';
      if (o.kind != Operand::Kind::Region) {
        s << (o.kind == Operand::Kind::Const ? hash_tensor(o.value) : 0);
      } else if (static_cast<int>(i) == p.batch_operand) {
        Dims e = extents(o.box);
        const size_t nsp = pads.size() / 2;
        for (size_t k = 0; k < nsp; ++k) e[2 + k] += pads[k] + pads[nsp + k];
        e[static_cast<size_t>(p.batch_axis)] = 0;  // concatenated along this axis: any extent
        s << dims_to_string(e);
      } else {
        s << o.input << o.box.to_string();
      }
    }
    return s.str();
  }

  static std::vector<int64_t> conv_pads(const RestrictPlan& p) {
    if (p.op_type != "Conv") return {};
    auto it = p.attrs.find("pads");
    return it == p.attrs.end() ? std::vector<int64_t>{} : it->second.ints;
  }

  std::vector<Value*> operand_values(const Request& r) {
    std::vector<Value*> ins;
    for (const Operand& o : r.plan.operands) {
      if (o.kind == Operand::Kind::Region) ins.push_back(get(r.node->inputs[static_cast<size_t>(o.input)], o.box));
      else if (o.kind == Operand::Kind::Const) ins.push_back(constant(o.value));
      else ins.push_back(nullptr);
    }
    while (!ins.empty() && !ins.back()) ins.pop_back();
    return ins;
  }

  // The plan's node (or its operand, or a fill), then the box sliced out of
  // what it produced.
  void emit(Request& r) {
    const RestrictPlan& p = r.plan;
    Value* produced = nullptr;
    if (p.op_type == "Fill") {
      Tensor t(r.node->outputs[static_cast<size_t>(r.output)]->type.dtype, extents(r.want));
      TESSERA_CHECK(t.dtype() == DType::F32, "pet corrector: ", r.node->describe(), ": only f32 pads are filled");
      std::fill(t.span<float>().begin(), t.span<float>().end(), p.fill_value);
      produced = constant(t);
    } else {
      std::vector<Value*> ins = operand_values(r);
      if (p.op_type.empty()) {
        produced = ins.at(0);
      } else {
        const bool same = p.op_type == r.node->op_type;
        produced = node(p.op_type, std::move(ins), p.attrs, same ? static_cast<int>(r.node->outputs.size()) : 1,
                        same ? r.output : 0);
        ++report.kernels;
      }
    }
    r.result = slice(produced, extents(p.produced), shifted(r.want, p.produced));
  }

  // One node for the group: the batched operands concatenated (Conv with
  // unequal pads: each padded explicitly first, the Conv then unpadded), the
  // output split back, each member's box sliced from its part.
  void emit_group(int id) {
    Group& grp = groups_[static_cast<size_t>(id)];
    Request& first = requests_[grp.members[0]];
    const RestrictPlan& p0 = first.plan;
    const std::vector<int64_t> pads0 = conv_pads(p0);
    bool equal_pads = true;
    for (size_t m : grp.members) equal_pads = equal_pads && conv_pads(requests_[m].plan) == pads0;
    std::vector<Value*> ins = operand_values(first);
    std::vector<Value*> parts;
    std::vector<int64_t> sizes;
    for (size_t m : grp.members) {
      Request& r = requests_[m];
      const Operand& o = r.plan.operands[static_cast<size_t>(r.plan.batch_operand)];
      Value* x = get(r.node->inputs[static_cast<size_t>(o.input)], o.box);
      if (!equal_pads) {
        const std::vector<int64_t> cp = conv_pads(r.plan);
        std::vector<int64_t> full(2 * static_cast<size_t>(o.box.rank()), 0);
        const size_t nsp = cp.size() / 2, rank = static_cast<size_t>(o.box.rank());
        for (size_t k = 0; k < nsp; ++k) {
          full[2 + k] = cp[k];
          full[rank + 2 + k] = cp[nsp + k];
        }
        x = pad(x, full);
      }
      parts.push_back(x);
      sizes.push_back(r.plan.produced.extent(r.plan.out_axis));
    }
    AttrMap attrs = p0.attrs;
    if (!equal_pads) attrs["pads"] = Attribute::of_ints(std::vector<int64_t>(pads0.size(), 0));
    AttrMap cat;
    cat["axis"] = Attribute::of_int(p0.batch_axis);
    ins[static_cast<size_t>(p0.batch_operand)] = node("Concat", parts, cat);
    Value* y = node(p0.op_type, ins, attrs);
    ++report.kernels;
    AttrMap split;
    split["axis"] = Attribute::of_int(p0.out_axis);
    std::vector<std::string> names;
    for (size_t i = 0; i < grp.members.size(); ++i) names.push_back(c_.unique_name("pet_corr"));
    Node* s = c_.add_node("Split", {y, constant(ints_tensor(sizes))}, names, split, c_.unique_name("pet_Split"));
    for (size_t i = 0; i < grp.members.size(); ++i) {
      Request& r = requests_[grp.members[i]];
      r.result = slice(s->outputs[i], extents(r.plan.produced), shifted(r.want, r.plan.produced));
      report.batched_boxes += 1;
    }
  }

  const Graph& g_;
  Graph& c_;
  CorrectOptions opts_;
  int64_t opset_;
  std::map<const Value*, Value*> mapped_;
  std::map<Key, size_t> index_;
  std::map<Key, Value*> sliced_;  // regions of graph inputs and constants
  std::vector<Request> requests_;
  std::vector<Group> groups_;
};

void check_signatures(const Graph& a, const Graph& b) {
  TESSERA_CHECK(a.inputs().size() == b.inputs().size(), "pet corrector: the original has ", a.inputs().size(),
                " inputs, the mutant ", b.inputs().size());
  TESSERA_CHECK(a.outputs().size() == b.outputs().size(), "pet corrector: the original has ", a.outputs().size(),
                " outputs, the mutant ", b.outputs().size());
  for (size_t i = 0; i < a.inputs().size(); ++i)
    TESSERA_CHECK(a.inputs()[i]->type == b.inputs()[i]->type && a.inputs()[i]->type.fully_known(),
                  "pet corrector: input ", i, " ('", a.inputs()[i]->name, "') is ", a.inputs()[i]->type.to_string(),
                  " in the original and ", b.inputs()[i]->type.to_string(), " in the mutant");
  for (size_t i = 0; i < a.outputs().size(); ++i)
    TESSERA_CHECK(a.outputs()[i]->type == b.outputs()[i]->type && a.outputs()[i]->type.fully_known(),
                  "pet corrector: output ", i, " ('", a.outputs()[i]->name, "') is ",
                  a.outputs()[i]->type.to_string(), " in the original and ", b.outputs()[i]->type.to_string(),
                  " in the mutant");
}

void check_boxes(const Value* out, size_t k, const std::vector<Box>& boxes) {
  const Dims& d = out->type.dims;
  for (const Box& b : boxes) {
    bool ok = b.rank() == static_cast<int64_t>(d.size()) && b.hi.size() == b.lo.size();
    for (size_t i = 0; ok && i < d.size(); ++i) ok = 0 <= b.lo[i] && b.lo[i] <= b.hi[i] && b.hi[i] <= d[i];
    TESSERA_CHECK(ok, "pet corrector: box ", b.to_string(), " of output ", k, " ('", out->name,
                  "') is not inside its dims ", dims_to_string(d));
  }
}

// FLOPs of g's nodes not in `skip`.
double graph_flops(const Graph& g, const std::set<const Node*>& skip = {}) {
  double f = 0;
  for (const auto& n : g.nodes())
    if (!skip.count(n.get())) f += node_flops(*n);
  return f;
}

// The output assembled from the mutant and the corrections along dims >= d
// inside `region`: Slice + Concat, cutting at every box bound.
Value* assemble(Corrector& c, Value* mutant, const Dims& dims, const Box& region, const std::vector<Box>& boxes,
                const std::vector<Value*>& corr, size_t d, Graph& g) {
  // A box covering the region: its correction, sliced.
  for (size_t i = 0; i < boxes.size(); ++i)
    if (region.intersect(boxes[i]) == region) return c.slice(corr[i], extents(boxes[i]), shifted(region, boxes[i]));
  std::vector<size_t> inside;
  for (size_t i = 0; i < boxes.size(); ++i)
    if (!region.intersect(boxes[i]).empty()) inside.push_back(i);
  if (inside.empty() || d >= dims.size()) return c.slice(mutant, dims, region);
  std::vector<int64_t> cuts = {region.lo[d], region.hi[d]};
  for (size_t i : inside)
    for (int64_t x : {boxes[i].lo[d], boxes[i].hi[d]})
      if (x > region.lo[d] && x < region.hi[d]) cuts.push_back(x);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<Value*> parts;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    Box sub = region;
    sub.lo[d] = cuts[k];
    sub.hi[d] = cuts[k + 1];
    parts.push_back(assemble(c, mutant, dims, sub, boxes, corr, d + 1, g));
  }
  if (parts.size() == 1) return parts[0];
  AttrMap a;
  a["axis"] = Attribute::of_int(static_cast<int64_t>(d));
  std::vector<std::string> name = {g.unique_name("pet_merge")};
  return g.add_node("Concat", parts, name, a, g.unique_name("pet_Concat"))->outputs[0];
}

}  // namespace

std::string CorrectReport::to_string() const {
  std::ostringstream s;
  s << boxes << " boxes (" << elements << " elements), " << kernels << " kernels (" << batched_boxes
    << " boxes batched), " << (100 * flops_share()) << "% of the original's FLOPs";
  return s.str();
}

std::unique_ptr<Graph> correct(const Graph& original, const Graph& mutant, const std::vector<std::vector<Box>>& wrong,
                               const CorrectOptions& options, CorrectReport* report) {
  check_signatures(original, mutant);
  TESSERA_CHECK(wrong.size() == original.outputs().size(), "pet corrector: ", wrong.size(),
                " box lists for ", original.outputs().size(), " outputs");
  TESSERA_CHECK(original.opset >= 13 && mutant.opset >= 13, "pet corrector: opset 13 or later needed (original ",
                original.opset, ", mutant ", mutant.opset, ")");
  std::unique_ptr<Graph> out = mutant.clone();
  std::set<const Node*> mutant_nodes;
  for (const auto& n : out->nodes()) mutant_nodes.insert(n.get());
  Corrector c(original, *out, options);
  CorrectReport rep;
  std::vector<std::vector<Box>> boxes(wrong.size());
  for (size_t k = 0; k < wrong.size(); ++k) {
    check_boxes(original.outputs()[k], k, wrong[k]);
    for (const Box& b : wrong[k])
      if (!b.empty()) boxes[k].push_back(b);
    for (const Box& b : boxes[k]) c.demand(original.outputs()[k], b);
    rep.boxes += static_cast<int>(boxes[k].size());
    rep.elements += covered_volume(boxes[k]);
  }
  c.batch_requests();
  for (size_t k = 0; k < boxes.size(); ++k) {
    if (boxes[k].empty()) continue;
    const Value* want = original.outputs()[k];
    const Dims& dims = want->type.dims;
    std::vector<Value*> corr;
    for (const Box& b : boxes[k]) corr.push_back(c.get(want, b));
    Value* cur = out->outputs()[k];
    bool disjoint = true;
    for (size_t i = 0; i < boxes[k].size(); ++i)
      for (size_t j = 0; j < i; ++j) disjoint = disjoint && boxes[k][i].intersect(boxes[k][j]).empty();
    if (options.merge == Merge::SliceConcat && disjoint) {
      cur = assemble(c, cur, dims, whole_box(dims), boxes[k], corr, 0, *out);
    } else {
      for (size_t i = 0; i < boxes[k].size(); ++i) {
        const Box& b = boxes[k][i];
        if (is_whole(b, dims)) {
          cur = corr[i];
          continue;
        }
        std::vector<int64_t> pads(2 * dims.size());
        for (size_t d = 0; d < dims.size(); ++d) {
          pads[d] = b.lo[d];
          pads[dims.size() + d] = dims[d] - b.hi[d];
        }
        Tensor mask(DType::Bool, dims);
        std::vector<int64_t> idx(dims.size(), 0);
        bool* m = mask.data<bool>();
        for (int64_t e = 0; e < mask.numel(); ++e) {
          m[e] = b.contains(idx);
          for (size_t d = dims.size(); d-- > 0;) {
            if (++idx[d] < dims[d]) break;
            idx[d] = 0;
          }
        }
        Value* mv = out->add_constant(out->unique_name("pet_mask"), mask);
        std::vector<std::string> name = {out->unique_name("pet_merge")};
        cur = out->add_node("Where", {mv, c.pad(corr[i], pads), cur}, name, {}, out->unique_name("pet_Where"))
                  ->outputs[0];
      }
    }
    out->mutable_outputs()[k] = cur;
  }
  out->remove_dead_nodes();
  out->remove_unused_values();
  infer_graph(*out);
  verify_graph(*out);
  rep.kernels = c.report.kernels;
  rep.batched_boxes = c.report.batched_boxes;
  rep.original_flops = graph_flops(original);
  rep.flops = graph_flops(*out, mutant_nodes);  // the nodes the corrector added
  if (report) *report = rep;
  return out;
}

}  // namespace tessera::pet
