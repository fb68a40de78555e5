#include "pet/linear_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/nn_conv.h"
#include "ops/nn_ops.h"
#include "ops/op_attrs.h"
#include "ops/reduce_ops.h"
#include "pet/field.h"
#include "support/error.h"

namespace tessera::pet {

namespace {

struct Builder {
  const Graph& g;
  LinearPlan plan;
  std::map<const Value*, int> ids;
  std::map<const Value*, Tensor> constant_nodes;  // outputs of Constant nodes

  int id_of(const Value* v) {
    auto it = ids.find(v);
    if (it != ids.end()) return it->second;
    const int id = static_cast<int>(plan.values.size());
    ids[v] = id;
    plan.values.push_back(v);
    plan.dims.emplace_back();
    plan.producer.push_back(-1);
    plan.producer_output.push_back(0);
    plan.input_index.push_back(-1);
    return id;
  }

  const Tensor* constant(const Value* v) const {
    if (!v) return nullptr;
    if (v->constant) return &*v->constant;
    auto it = constant_nodes.find(v);
    return it == constant_nodes.end() ? nullptr : &it->second;
  }

  // An integer parameter input (shape, pads, starts ...): must be a constant.
  std::vector<int64_t> ints_input(const Node& n, int i, const char* what) const {
    const Tensor* t = constant(n.inputs[static_cast<size_t>(i)]);
    TESSERA_CHECK(t, "pet: ", n.describe(), ": its ", what, " input must be a constant");
    return t->to_int_vector();
  }

  // A data input: its value id; a constant read as data becomes field
  // elements, and must hold integers (zeros of a padding, ones).
  int data_input(const Node& n, int i) {
    const Value* v = n.has_input(i) ? n.inputs[static_cast<size_t>(i)] : nullptr;
    if (!v) return -1;
    const int id = id_of(v);
    if (const Tensor* t = constant(v); t && !plan.constants.count(id)) {
      TESSERA_CHECK(t->dtype() != DType::String, "pet: ", n.describe(), " reads a string constant");
      std::vector<uint32_t> f(static_cast<size_t>(t->numel()));
      for (int64_t k = 0; k < t->numel(); ++k) {
        const double x = t->get_double(k);
        TESSERA_CHECK(std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.0e15, "pet: ", n.describe(),
                      " reads constant '", v->name, "' as data, and its element ", k, " (", x,
                      ") is not an integer: only integer constants (zeros, ones) have an exact field value");
        f[static_cast<size_t>(k)] = field::from_int(static_cast<int64_t>(x));
      }
      plan.constants[id] = std::move(f);
      plan.dims[static_cast<size_t>(id)] = t->dims();
    }
    TESSERA_CHECK(plan.producer[static_cast<size_t>(id)] >= 0 || plan.input_index[static_cast<size_t>(id)] >= 0 ||
                      plan.constants.count(id),
                  "pet: ", n.describe(), " reads '", v->name, "', which is neither a graph input, a constant nor computed before it");
    return id;
  }

  const Dims& dims(int id) const { return plan.dims[static_cast<size_t>(id)]; }

  void plan_window(LinNode& ln, const WindowAttrs& a, const std::vector<int64_t>& pads) {
    const size_t nsp = static_cast<size_t>(a.nsp);
    ln.win.k = a.kernel;
    ln.win.s = a.strides;
    ln.win.d = a.dilations;
    ln.win.pb.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(nsp));
    ln.win.pe.assign(pads.begin() + static_cast<std::ptrdiff_t>(nsp), pads.end());
  }

  void add(const Node& n);
};

LinOp op_of(const Node& n) {
  static const std::map<std::string, LinOp> ops = {
      {"Identity", LinOp::Copy},       {"Reshape", LinOp::Copy},         {"Flatten", LinOp::Copy},
      {"Squeeze", LinOp::Copy},        {"Unsqueeze", LinOp::Copy},       {"Transpose", LinOp::Transpose},
      {"Add", LinOp::Add},             {"Sub", LinOp::Sub},              {"Mul", LinOp::Mul},
      {"Conv", LinOp::Conv},           {"ConvTranspose", LinOp::ConvTranspose},
      {"MatMul", LinOp::MatMul},       {"Gemm", LinOp::Gemm},            {"Pad", LinOp::Pad},
      {"Slice", LinOp::Slice},         {"Concat", LinOp::Concat},        {"Split", LinOp::Split},
      {"AveragePool", LinOp::AvgPool}, {"GlobalAveragePool", LinOp::AvgPool},
      {"ReduceSum", LinOp::Reduce},    {"ReduceMean", LinOp::Reduce},
      {"DepthToSpace", LinOp::DepthToSpace}, {"SpaceToDepth", LinOp::SpaceToDepth}};
  auto it = n.domain.empty() ? ops.find(n.op_type) : ops.end();
  TESSERA_CHECK(it != ops.end(), "pet: ", n.op_type, " '", n.name, "' is not multi-linear");
  return it->second;
}

void Builder::add(const Node& n) {
  if (n.op_type == "Constant" && n.domain.empty()) {
    TESSERA_CHECK(n.has_attr("value") && n.attr("value")->kind == Attribute::Kind::Tensor && n.outputs.size() == 1 &&
                      n.outputs[0],
                  "pet: ", n.describe(), ": only a Constant with a tensor 'value' is taken");
    constant_nodes[n.outputs[0]] = n.attr("value")->t;
    return;
  }
  LinNode ln;
  ln.node = &n;
  ln.op = op_of(n);
  const int64_t opset = g.opset;
  const OpAttrs at(n, opset);
  const auto& def = op_registry().get(n, opset);
  for (size_t i = 0; i < n.outputs.size(); ++i)
    TESSERA_CHECK(n.outputs[i], "pet: ", n.describe(), " has an absent output ", i);

  // Data inputs per op (the others are integer parameters read below).
  std::vector<int> data;
  switch (ln.op) {
    case LinOp::Add: case LinOp::Sub: case LinOp::Mul: case LinOp::MatMul: data = {0, 1}; break;
    case LinOp::Conv: case LinOp::ConvTranspose: case LinOp::Gemm: data = {0, 1, 2}; break;
    case LinOp::Concat:
      for (int i = 0; i < n.num_inputs(); ++i) data.push_back(i);
      break;
    default: data = {0}; break;
  }
  for (int i : data) ln.in.push_back(data_input(n, i));
  TESSERA_CHECK(!ln.in.empty() && ln.in[0] >= 0, "pet: ", n.describe(), " has no data input");

  // Output dims from the registry's inference on the resolved input dims;
  // a declared type that disagrees is refused (the index maps below trust them).
  std::vector<TensorType> in_types(n.inputs.size());
  InferContext ic{n, opset, {}, {}, {}};
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value* v = n.inputs[i];
    if (!v) {
      ic.input_types.push_back(nullptr);
      ic.input_values.push_back(nullptr);
      continue;
    }
    const Tensor* c = constant(v);
    in_types[i] = c ? TensorType{c->dtype(), c->dims()} : TensorType{v->type.dtype, dims(id_of(v))};
    ic.input_types.push_back(&in_types[i]);
    ic.input_values.push_back(c);
  }
  TESSERA_CHECK(def.infer, "pet: ", n.describe(), " has no shape inference");
  def.infer(ic);
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    TESSERA_CHECK(i < ic.output_types.size() && ic.output_types[i].rank_known && ic.output_types[i].fully_known(),
                  "pet: ", n.describe(), ": output ", i, " has unknown dims");
    const TensorType& t = ic.output_types[i];
    const TensorType& declared = n.outputs[i]->type;
    if (declared.rank_known && declared.fully_known())
      TESSERA_CHECK(declared.dims == t.dims, "pet: ", n.describe(), ": output '", n.outputs[i]->name, "' is declared ",
                    declared.to_string(), " but its inputs give ", t.to_string());
    TESSERA_CHECK(t.rank() <= kMaxRank, "pet: ", n.describe(), ": rank ", t.rank(), " is above ", kMaxRank);
    const int id = id_of(n.outputs[i]);
    plan.dims[static_cast<size_t>(id)] = t.dims;
    plan.producer[static_cast<size_t>(id)] = static_cast<int>(plan.nodes.size());
    plan.producer_output[static_cast<size_t>(id)] = static_cast<int>(i);
    ln.out.push_back(id);
  }

  const Dims& x = dims(ln.in[0]);
  const Dims& y = dims(ln.out[0]);
  const int64_t rank = static_cast<int64_t>(x.size());
  switch (ln.op) {
    case LinOp::Conv: {
      ConvShape s = conv_shape(at, x, dims(ln.in[1]));
      plan_window(ln, s.attrs, s.pads);
      ln.win.group = s.group;
      break;
    }
    case LinOp::ConvTranspose: {
      ConvTShape s = convt_shape(at, x, dims(ln.in[1]));
      plan_window(ln, s.attrs, s.pads);
      ln.win.group = s.group;
      break;
    }
    case LinOp::AvgPool: {
      const int64_t nsp = rank - 2;
      TESSERA_CHECK(nsp >= 1, "pet: ", n.describe(), ": needs rank >= 3");
      if (n.op_type == "GlobalAveragePool") {
        ln.win.k = spatial_dims(x);
        ln.win.s.assign(static_cast<size_t>(nsp), 1);
        ln.win.d.assign(static_cast<size_t>(nsp), 1);
        ln.win.pb.assign(static_cast<size_t>(nsp), 0);
        ln.win.pe.assign(static_cast<size_t>(nsp), 0);
      } else {
        WindowAttrs wa = read_window_attrs(at, nsp, {}, true);
        std::vector<int64_t> pads;
        window_output_dims(n, wa, spatial_dims(x), &pads);
        plan_window(ln, wa, pads);
        ln.win.count_include_pad = at.i("count_include_pad") != 0;
      }
      break;
    }
    case LinOp::Gemm:
      TESSERA_CHECK(at.f("alpha") == 1.0f && at.f("beta") == 1.0f, "pet: ", n.describe(),
                    ": alpha and beta must be 1 (a float scale has no exact field value)");
      ln.trans_a = at.i("transA") != 0;
      ln.trans_b = at.i("transB") != 0;
      break;
    case LinOp::Transpose:
      ln.perm = at.ints("perm");
      if (ln.perm.empty())
        for (int64_t i = rank - 1; i >= 0; --i) ln.perm.push_back(i);
      for (int64_t& p : ln.perm) p = normalize_axis(n, p, rank);
      break;
    case LinOp::Pad: {
      TESSERA_CHECK(at.s("mode") == "constant", "pet: ", n.describe(), ": only constant padding is multi-linear");
      std::vector<int64_t> pads, axes;
      double value = 0;
      if (opset < 11) {
        pads = at.ints("pads");
        value = at.f("value");
      } else {
        pads = ints_input(n, 1, "pads");
        if (n.has_input(2)) {
          const Tensor* cv = constant(n.inputs[2]);
          TESSERA_CHECK(cv && cv->numel() == 1, "pet: ", n.describe(), ": constant_value must be a constant scalar");
          value = cv->get_double(0);
        }
        if (n.has_input(3)) axes = ints_input(n, 3, "axes");
      }
      TESSERA_CHECK(value == 0, "pet: ", n.describe(), ": padding with ", value, " is not linear (only 0 is)");
      if (axes.empty())
        for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
      TESSERA_CHECK(pads.size() == 2 * axes.size(), "pet: ", n.describe(), ": pads has ", pads.size(),
                    " values for ", axes.size(), " axes");
      ln.start.assign(static_cast<size_t>(rank), 0);
      ln.step.assign(static_cast<size_t>(rank), 1);
      for (size_t i = 0; i < axes.size(); ++i)
        ln.start[static_cast<size_t>(normalize_axis(n, axes[i], rank))] = -pads[i];
      break;
    }
    case LinOp::Slice: {
      std::vector<int64_t> starts, ends, axes, steps;
      if (opset < 10) {
        starts = at.ints("starts");
        ends = at.ints("ends");
        axes = at.ints("axes");
      } else {
        starts = ints_input(n, 1, "starts");
        ends = ints_input(n, 2, "ends");
        if (n.has_input(3)) axes = ints_input(n, 3, "axes");
        if (n.has_input(4)) steps = ints_input(n, 4, "steps");
      }
      if (axes.empty())
        for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
      if (steps.empty()) steps.assign(starts.size(), 1);
      TESSERA_CHECK(ends.size() == starts.size() && axes.size() == starts.size() && steps.size() == starts.size(),
                    "pet: ", n.describe(), ": starts, ends, axes and steps differ in length");
      ln.start.assign(static_cast<size_t>(rank), 0);
      ln.step.assign(static_cast<size_t>(rank), 1);
      for (size_t i = 0; i < starts.size(); ++i) {
        const size_t ax = static_cast<size_t>(normalize_axis(n, axes[i], rank));
        const int64_t dim = x[ax], st = steps[i];
        TESSERA_CHECK(st != 0 && st != std::numeric_limits<int64_t>::min(), "pet: ", n.describe(), ": bad step ", st);
        int64_t s0 = starts[i] < 0 ? starts[i] + dim : starts[i];
        s0 = st > 0 ? std::clamp<int64_t>(s0, 0, dim) : std::clamp<int64_t>(s0, 0, dim - 1);
        ln.start[ax] = s0;
        ln.step[ax] = st;
      }
      for (int64_t d = 0; d < rank; ++d) {  // every read inside the input
        const size_t u = static_cast<size_t>(d);
        if (y[u] == 0) continue;
        const int64_t last = ln.start[u] + (y[u] - 1) * ln.step[u];
        TESSERA_CHECK(ln.start[u] >= 0 && ln.start[u] < x[u] && last >= 0 && last < x[u], "pet: ", n.describe(),
                      ": slice of axis ", d, " reads outside the input");
      }
      break;
    }
    case LinOp::Concat: {
      ln.axis = normalize_axis(n, at.i("axis"), rank);
      int64_t off = 0;
      for (int id : ln.in) {
        TESSERA_CHECK(id >= 0, "pet: ", n.describe(), " has an absent input");
        ln.offsets.push_back(off);
        off += dims(id)[static_cast<size_t>(ln.axis)];
      }
      break;
    }
    case LinOp::Split: {
      ln.axis = normalize_axis(n, at.i("axis"), rank);
      int64_t off = 0;
      for (int id : ln.out) {
        ln.offsets.push_back(off);
        off += dims(id)[static_cast<size_t>(ln.axis)];
      }
      TESSERA_CHECK(off == x[static_cast<size_t>(ln.axis)], "pet: ", n.describe(), ": split sizes do not cover the axis");
      break;
    }
    case LinOp::Reduce: {
      ln.mean = n.op_type == "ReduceMean";
      const ReduceAttrs ra = reduce_attrs(at);
      std::vector<int64_t> axes = ra.axes;
      if (n.has_input(1)) axes = ints_input(n, 1, "axes");
      axes = resolve_reduce_axes(n, ra, axes, rank);
      ln.keepdims = ra.keepdims;
      ln.reduced.assign(static_cast<size_t>(rank), 0);
      for (int64_t a : axes) ln.reduced[static_cast<size_t>(a)] = 1;
      break;
    }
    case LinOp::DepthToSpace: case LinOp::SpaceToDepth:
      ln.block = at.i("blocksize");
      TESSERA_CHECK(ln.block > 0 && rank == 4, "pet: ", n.describe(), ": needs rank 4 and a positive blocksize");
      if (ln.op == LinOp::DepthToSpace) ln.dcr = at.s("mode") != "CRD";
      break;
    default: break;
  }
  if (ln.op == LinOp::Copy)
    TESSERA_CHECK(numel_of(x) == numel_of(y), "pet: ", n.describe(), ": element count changes");
  plan.nodes.push_back(std::move(ln));
}

}  // namespace

LinearPlan plan_linear(const Graph& g) {
  Builder b{g, {}, {}, {}};
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value* v = g.inputs()[i];
    TESSERA_CHECK(v->type.rank_known && v->type.fully_known(), "pet: graph input '", v->name, "' has unknown dims ",
                  v->type.to_string());
    TESSERA_CHECK(v->type.rank() <= kMaxRank, "pet: graph input '", v->name, "' has rank above ", kMaxRank);
    const int id = b.id_of(v);
    TESSERA_CHECK(b.plan.input_index[static_cast<size_t>(id)] < 0, "pet: graph input '", v->name, "' is listed twice");
    b.plan.dims[static_cast<size_t>(id)] = v->type.dims;
    b.plan.input_index[static_cast<size_t>(id)] = static_cast<int>(i);
    b.plan.inputs.push_back(id);
  }
  for (const auto& n : g.nodes()) {
    TESSERA_CHECK(!n->has_subgraph(), "pet: ", n->describe(), " has a subgraph and is not multi-linear");
    b.add(*n);
  }
  for (const Value* v : g.outputs()) {
    const int id = b.id_of(v);
    TESSERA_CHECK(b.plan.producer[static_cast<size_t>(id)] >= 0 || b.plan.input_index[static_cast<size_t>(id)] >= 0,
                  "pet: graph output '", v->name, "' is not computed by the graph (a constant output is not taken)");
    b.plan.outputs.push_back(id);
  }
  return std::move(b.plan);
}

}  // namespace tessera::pet
