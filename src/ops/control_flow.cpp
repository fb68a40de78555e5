// Control flow: If, Loop and Scan (opset 9+ semantics, and opset 8's batched
// Scan). Bodies are Graph attributes run with the reference interpreter; values of the enclosing
// scope they read (their captures) resolve through KernelContext::outer.
// Output types come from the bodies' declared output types, merged with the
// initial values for loop-carried state.
#include <cstring>
#include <limits>

#include "interp/interpreter.h"
#include "ops/misc_ops.h"
#include "ops/op_attrs.h"
#include "ops/op_helpers.h"

namespace tessera {

namespace {

const Graph& body_attr(const Node& n, const std::string& key) {
  const Attribute* a = n.attr(key);
  TESSERA_CHECK(a && a->kind == Attribute::Kind::Graph && a->g, n.describe(), ": graph attribute '", key,
                "' is required");
  return *a->g;
}

// Declared type of a body output; unknown for values captured from the
// enclosing scope (their type lives in the caller).
TensorType body_output_type(const Graph& g, size_t i) {
  const Value* v = g.outputs()[i];
  if (v->constant) return {v->constant->dtype(), v->constant->dims(), true};
  for (const Value* cap : g.captures)
    if (cap == v) return {DType::Undefined, {}, false};
  return v->type;
}

// The least specific type covering both (dims that differ become unknown).
TensorType merge_types(const Node& n, const TensorType& a, const TensorType& b, const std::string& what) {
  TensorType t;
  TESSERA_CHECK(a.dtype == DType::Undefined || b.dtype == DType::Undefined || a.dtype == b.dtype, n.describe(),
                ": ", what, " has element type ", dtype_name(a.dtype), " in one place and ", dtype_name(b.dtype),
                " in another");
  t.dtype = a.dtype != DType::Undefined ? a.dtype : b.dtype;
  if (!a.rank_known || !b.rank_known || a.rank() != b.rank()) {
    t.rank_known = false;
    return t;
  }
  t.dims = a.dims;
  for (size_t i = 0; i < t.dims.size(); ++i)
    if (a.dims[i] != b.dims[i]) t.dims[i] = -1;
  return t;
}

InterpreterOptions body_options(const KernelContext& c) {
  InterpreterOptions o;
  o.outer = c.outer;
  return o;
}

bool truthy(const Node& n, const Tensor& t, const char* what) {
  TESSERA_CHECK(t.numel() == 1, n.describe(), ": ", what, " must hold exactly one value, got shape ",
                dims_to_string(t.dims()));
  return t.get_double(0) != 0;
}

// Element i of `t` along `axis`, with that axis removed.
Tensor take_slice(const Tensor& t, int64_t axis, int64_t index) {
  Dims od = t.dims();
  int64_t n = od[static_cast<size_t>(axis)];
  od.erase(od.begin() + axis);
  Tensor s(t.dtype(), od);
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= t.dim(i);
  size_t inner = dtype_size(t.dtype());
  for (int64_t i = axis + 1; i < t.rank(); ++i) inner *= static_cast<size_t>(t.dim(i));
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(s.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * inner, src + static_cast<size_t>(o * n + index) * inner, inner);
  return s;
}

// Stacks equally shaped slices along a new axis `axis`.
Tensor stack(const Node& n, const std::vector<Tensor>& parts, int64_t axis, const std::string& what) {
  const Tensor& p0 = parts.front();
  for (const Tensor& p : parts)
    TESSERA_CHECK(p.dtype() == p0.dtype() && p.dims() == p0.dims(), n.describe(), ": ", what,
                  " changes from ", dtype_name(p0.dtype()), "[", dims_to_string(p0.dims()), "] to ",
                  dtype_name(p.dtype()), "[", dims_to_string(p.dims()), "] between iterations");
  Dims od = p0.dims();
  int64_t count = static_cast<int64_t>(parts.size());
  od.insert(od.begin() + axis, count);
  Tensor r(p0.dtype(), od);
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= p0.dim(i);
  size_t inner = dtype_size(p0.dtype());
  for (int64_t i = axis; i < p0.rank(); ++i) inner *= static_cast<size_t>(p0.dim(i));
  char* dst = static_cast<char*>(r.raw());
  for (int64_t s = 0; s < count; ++s) {
    const char* src = static_cast<const char*>(parts[static_cast<size_t>(s)].raw());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + static_cast<size_t>(o * count + s) * inner, src + static_cast<size_t>(o) * inner, inner);
  }
  return r;
}

// A zero tensor of a body's declared output type (unknown dims become 0,
// unknown element type f32): stands in for slices no iteration produced.
Tensor declared_zeros(const TensorType& t) {
  Dims d;
  if (t.rank_known)
    for (int64_t x : t.dims) d.push_back(x < 0 ? 0 : x);
  return Tensor(t.dtype == DType::Undefined ? DType::F32 : t.dtype, d);
}

// An empty stack (no iterations) from the body's declared slice type.
Tensor empty_stack(const TensorType& slice, int64_t axis) {
  Tensor z = declared_zeros(slice);
  Dims d = z.dims();
  axis = std::min<int64_t>(axis, static_cast<int64_t>(d.size()));
  d.insert(d.begin() + axis, 0);
  return Tensor(z.dtype(), d);
}

void check_no_strings(const Node& n, const Tensor& t, const std::string& what) {
  TESSERA_CHECK(t.dtype() != DType::String, n.describe(), ": ", what, " is a string tensor (not supported here)");
}

// Sum of the body's node FLOPs (0 for nodes whose types are not known).
double body_flops(const Graph& g) {
  double f = 0;
  for (const auto& n : g.nodes()) f += node_flops(*n);
  return f;
}

// ---------------------------------------------------------------- If

void infer_if(InferContext& c) {
  const Graph& tb = body_attr(c.node, "then_branch");
  const Graph& eb = body_attr(c.node, "else_branch");
  const TensorType& cond = c.in(0);
  TESSERA_CHECK(cond.dtype == DType::Bool || cond.dtype == DType::Undefined, c.node.describe(),
                ": cond must be bool, got ", dtype_name(cond.dtype));
  size_t n = static_cast<size_t>(c.num_outputs());
  TESSERA_CHECK(tb.outputs().size() == n && eb.outputs().size() == n, c.node.describe(), ": the node has ", n,
                " outputs but then_branch has ", tb.outputs().size(), " and else_branch ", eb.outputs().size());
  TESSERA_CHECK(tb.inputs().empty() && eb.inputs().empty(), c.node.describe(), ": If branches take no inputs");
  const Tensor* cv = c.value(0);
  for (size_t i = 0; i < n; ++i) {
    std::string what = "output " + std::to_string(i);
    if (cv && cv->numel() == 1) {
      c.out(static_cast<int>(i)) = body_output_type(cv->get_double(0) != 0 ? tb : eb, i);
    } else {
      c.out(static_cast<int>(i)) = merge_types(c.node, body_output_type(tb, i), body_output_type(eb, i), what);
    }
  }
}

std::vector<Tensor> if_kernel(const KernelContext& c) {
  bool cond = truthy(c.node, c.in(0), "cond");
  const Graph& g = body_attr(c.node, cond ? "then_branch" : "else_branch");
  TESSERA_CHECK(static_cast<int>(g.outputs().size()) == c.num_outputs(), c.node.describe(), ": the node has ",
                c.num_outputs(), " outputs but ", cond ? "then_branch" : "else_branch", " has ", g.outputs().size());
  return interpret(g, {}, body_options(c));
}

// ---------------------------------------------------------------- Loop

struct LoopShape {
  size_t n_carried = 0, n_scan = 0;
};

LoopShape loop_shape(const Node& node, const Graph& body, int num_inputs) {
  TESSERA_CHECK(num_inputs >= 2, node.describe(), ": Loop needs inputs M and cond (either may be empty)");
  LoopShape s;
  s.n_carried = static_cast<size_t>(num_inputs - 2);
  TESSERA_CHECK(body.inputs().size() == 2 + s.n_carried, node.describe(), ": the body takes ",
                body.inputs().size(), " inputs but must take 2 + ", s.n_carried, " (iteration, cond, loop-carried)");
  TESSERA_CHECK(body.outputs().size() >= 1 + s.n_carried, node.describe(), ": the body has ", body.outputs().size(),
                " outputs but must have at least 1 + ", s.n_carried, " (cond, loop-carried)");
  s.n_scan = body.outputs().size() - 1 - s.n_carried;
  TESSERA_CHECK(node.outputs.size() == s.n_carried + s.n_scan, node.describe(), ": the node has ",
                node.outputs.size(), " outputs but the body yields ", s.n_carried, " loop-carried and ", s.n_scan,
                " scan outputs");
  return s;
}

void infer_loop(InferContext& c) {
  const Graph& body = body_attr(c.node, "body");
  LoopShape s = loop_shape(c.node, body, c.num_inputs());
  if (c.has_input(0))
    TESSERA_CHECK(c.in(0).dtype == DType::I64, c.node.describe(), ": M must be int64, got ", dtype_name(c.in(0).dtype));
  if (c.has_input(1))
    TESSERA_CHECK(c.in(1).dtype == DType::Bool, c.node.describe(), ": cond must be bool, got ",
                  dtype_name(c.in(1).dtype));
  for (size_t i = 0; i < s.n_carried; ++i) {
    std::string what = "loop-carried value " + std::to_string(i);
    TensorType t = merge_types(c.node, c.in(static_cast<int>(2 + i)), body_output_type(body, 1 + i), what);
    t.dtype = c.in(static_cast<int>(2 + i)).dtype;
    c.out(static_cast<int>(i)) = t;
  }
  // Iterations are known when only the trip count bounds the loop.
  int64_t trips = -1;
  if (c.value(0) && !c.has_input(1) && c.value(0)->numel() == 1) trips = std::max<int64_t>(0, c.value(0)->get_int(0));
  for (size_t k = 0; k < s.n_scan; ++k) {
    TensorType t = body_output_type(body, 1 + s.n_carried + k);
    if (t.rank_known) t.dims.insert(t.dims.begin(), trips);
    c.out(static_cast<int>(s.n_carried + k)) = t;
  }
}

std::vector<Tensor> loop_kernel(const KernelContext& c) {
  const Graph& body = body_attr(c.node, "body");
  LoopShape s = loop_shape(c.node, body, c.num_inputs());
  bool has_m = c.has_input(0), has_cond = c.has_input(1);
  TESSERA_CHECK(has_m || has_cond, c.node.describe(),
                ": a Loop with neither a trip count nor a condition never terminates");
  int64_t m = std::numeric_limits<int64_t>::max();
  if (has_m) {
    TESSERA_CHECK(c.in(0).numel() == 1, c.node.describe(), ": M must hold exactly one value, got shape ",
                  dims_to_string(c.in(0).dims()));
    m = c.in(0).get_int(0);
  }
  bool cond = has_cond ? truthy(c.node, c.in(1), "cond") : true;
  std::vector<Tensor> carried;
  for (size_t i = 0; i < s.n_carried; ++i) carried.push_back(c.in(static_cast<int>(2 + i)));
  std::vector<std::vector<Tensor>> scans(s.n_scan);
  InterpreterOptions opts = body_options(c);
  for (int64_t it = 0; it < m && cond; ++it) {
    std::vector<Tensor> ins = {Tensor::scalar<int64_t>(it), Tensor::scalar<bool>(cond)};
    ins.insert(ins.end(), carried.begin(), carried.end());
    std::vector<Tensor> outs = interpret(body, ins, opts);
    if (has_cond) cond = truthy(c.node, outs[0], "the body's condition output");
    for (size_t i = 0; i < s.n_carried; ++i) {
      Tensor& v = outs[1 + i];
      TESSERA_CHECK(v.dtype() == carried[i].dtype(), c.node.describe(), ": loop-carried value ", i,
                    " changes element type from ", dtype_name(carried[i].dtype()), " to ", dtype_name(v.dtype()));
      carried[i] = v;
    }
    for (size_t k = 0; k < s.n_scan; ++k) {
      check_no_strings(c.node, outs[1 + s.n_carried + k], "scan output " + std::to_string(k));
      scans[k].push_back(outs[1 + s.n_carried + k]);
    }
  }
  std::vector<Tensor> result = carried;
  for (size_t k = 0; k < s.n_scan; ++k) {
    std::string what = "scan output " + std::to_string(k);
    result.push_back(scans[k].empty() ? empty_stack(body_output_type(body, 1 + s.n_carried + k), 0)
                                      : stack(c.node, scans[k], 0, what));
  }
  return result;
}

// ---------------------------------------------------------------- Scan

// Checks a Scan body against the node's state and scan-input counts (both
// opset 8 and 9+ forms); returns the number of scan outputs.
size_t check_scan_body(const Node& node, const Graph& body, size_t n_state, size_t n_in) {
  TESSERA_CHECK(body.inputs().size() == n_state + n_in, node.describe(), ": the body takes ",
                body.inputs().size(), " inputs but must take ", n_state, " state + ", n_in, " scan inputs");
  TESSERA_CHECK(body.outputs().size() >= n_state, node.describe(), ": the body has ", body.outputs().size(),
                " outputs, fewer than the ", n_state, " state values");
  const size_t n_out = body.outputs().size() - n_state;
  TESSERA_CHECK(node.outputs.size() == n_state + n_out, node.describe(), ": the node has ", node.outputs.size(),
                " outputs but the body yields ", n_state, " state and ", n_out, " scan outputs");
  return n_out;
}

struct ScanShape {
  size_t n_state = 0, n_in = 0, n_out = 0;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

ScanShape scan_shape(const OpAttrs& attrs, const Graph& body, int num_inputs) {
  const Node& node = attrs.node();
  ScanShape s;
  int64_t m = attrs.i("num_scan_inputs");
  TESSERA_CHECK(m >= 1 && m <= num_inputs, node.describe(), ": num_scan_inputs = ", m, " but the node has ",
                num_inputs, " inputs");
  s.n_in = static_cast<size_t>(m);
  s.n_state = static_cast<size_t>(num_inputs) - s.n_in;
  s.n_out = check_scan_body(node, body, s.n_state, s.n_in);
  auto list = [&](const char* key, size_t count) {
    std::vector<int64_t> v = attrs.has(key) ? attrs.ints(key) : std::vector<int64_t>(count, 0);
    TESSERA_CHECK(v.size() == count, node.describe(), ": attribute '", key, "' has ", v.size(),
                  " entries but there are ", count);
    return v;
  };
  s.in_axes = list("scan_input_axes", s.n_in);
  s.in_dirs = list("scan_input_directions", s.n_in);
  s.out_axes = list("scan_output_axes", s.n_out);
  s.out_dirs = list("scan_output_directions", s.n_out);
  for (int64_t d : s.in_dirs)
    TESSERA_CHECK(d == 0 || d == 1, node.describe(), ": scan_input_directions must be 0 or 1, got ", d);
  for (int64_t d : s.out_dirs)
    TESSERA_CHECK(d == 0 || d == 1, node.describe(), ": scan_output_directions must be 0 or 1, got ", d);
  return s;
}

void infer_scan(InferContext& c) {
  const Graph& body = body_attr(c.node, "body");
  ScanShape s = scan_shape(op_attrs(c), body, c.num_inputs());
  for (size_t i = 0; i < s.n_state; ++i) {
    std::string what = "state value " + std::to_string(i);
    TensorType t = merge_types(c.node, c.in(static_cast<int>(i)), body_output_type(body, i), what);
    t.dtype = c.in(static_cast<int>(i)).dtype;
    c.out(static_cast<int>(i)) = t;
  }
  int64_t seq = -1;
  for (size_t j = 0; j < s.n_in; ++j) {
    const TensorType& x = c.in(static_cast<int>(s.n_state + j));
    int64_t ax = normalize_axis(c.node, s.in_axes[j], x.rank());
    TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": scan input ", j, " must have rank >= 1");
    int64_t d = x.dims[static_cast<size_t>(ax)];
    if (d < 0) continue;
    TESSERA_CHECK(seq < 0 || seq == d, c.node.describe(), ": scan inputs have different lengths (", seq, " and ",
                  d, ")");
    seq = d;
  }
  for (size_t k = 0; k < s.n_out; ++k) {
    TensorType t = body_output_type(body, s.n_state + k);
    if (t.rank_known) {
      int64_t ax = normalize_axis(c.node, s.out_axes[k], t.rank() + 1);
      t.dims.insert(t.dims.begin() + ax, seq);
    }
    c.out(static_cast<int>(s.n_state + k)) = t;
  }
}

std::vector<Tensor> scan_kernel(const KernelContext& c) {
  const Graph& body = body_attr(c.node, "body");
  ScanShape s = scan_shape(op_attrs(c), body, c.num_inputs());
  std::vector<Tensor> state;
  for (size_t i = 0; i < s.n_state; ++i) state.push_back(c.in(static_cast<int>(i)));
  std::vector<int64_t> axes(s.n_in);
  int64_t seq = -1;
  for (size_t j = 0; j < s.n_in; ++j) {
    const Tensor& x = c.in(static_cast<int>(s.n_state + j));
    check_no_strings(c.node, x, "scan input " + std::to_string(j));
    TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": scan input ", j, " must have rank >= 1");
    axes[j] = normalize_axis(c.node, s.in_axes[j], x.rank());
    int64_t d = x.dim(axes[j]);
    TESSERA_CHECK(seq < 0 || seq == d, c.node.describe(), ": scan inputs have different lengths (", seq, " and ", d,
                  ")");
    seq = d;
  }
  std::vector<std::vector<Tensor>> outs(s.n_out);
  InterpreterOptions opts = body_options(c);
  for (int64_t t = 0; t < seq; ++t) {
    std::vector<Tensor> ins = state;
    for (size_t j = 0; j < s.n_in; ++j)
      ins.push_back(take_slice(c.in(static_cast<int>(s.n_state + j)), axes[j], s.in_dirs[j] ? seq - 1 - t : t));
    std::vector<Tensor> r = interpret(body, ins, opts);
    for (size_t i = 0; i < s.n_state; ++i) {
      TESSERA_CHECK(r[i].dtype() == state[i].dtype(), c.node.describe(), ": state value ", i,
                    " changes element type from ", dtype_name(state[i].dtype()), " to ", dtype_name(r[i].dtype()));
      state[i] = r[i];
    }
    for (size_t k = 0; k < s.n_out; ++k) {
      check_no_strings(c.node, r[s.n_state + k], "scan output " + std::to_string(k));
      outs[k].push_back(r[s.n_state + k]);
    }
  }
  std::vector<Tensor> result = state;
  for (size_t k = 0; k < s.n_out; ++k) {
    if (s.out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());  // each slice prepended
    if (outs[k].empty()) {
      TensorType st = body_output_type(body, s.n_state + k);
      int64_t ax = st.rank_known ? normalize_axis(c.node, s.out_axes[k], st.rank() + 1) : 0;
      result.push_back(empty_stack(st, ax));
      continue;
    }
    int64_t ax = normalize_axis(c.node, s.out_axes[k], outs[k][0].rank() + 1);
    result.push_back(stack(c.node, outs[k], ax, "scan output " + std::to_string(k)));
  }
  return result;
}

// ---------------------------------------------------------------- Scan (opset 8)
// Every input and output has a leading batch axis; scan inputs are scanned
// along axis 1 (optionally reversed by `directions`); sequence_lens (input 0,
// optional) bounds each batch entry's length, scan outputs are zero-padded.

struct Scan8Shape {
  size_t n_state = 0, n_in = 0, n_out = 0;
  std::vector<int64_t> dirs;
};

Scan8Shape scan8_shape(const OpAttrs& attrs, const Graph& body, int num_inputs) {
  const Node& node = attrs.node();
  Scan8Shape s;
  int64_t m = attrs.i("num_scan_inputs");
  TESSERA_CHECK(m >= 1 && m <= num_inputs - 1, node.describe(), ": num_scan_inputs = ", m, " but the node has ",
                num_inputs - 1, " state and scan inputs");
  s.n_in = static_cast<size_t>(m);
  s.n_state = static_cast<size_t>(num_inputs - 1) - s.n_in;
  s.n_out = check_scan_body(node, body, s.n_state, s.n_in);
  s.dirs = attrs.has("directions") ? attrs.ints("directions") : std::vector<int64_t>(s.n_in, 0);
  TESSERA_CHECK(s.dirs.size() == s.n_in, node.describe(), ": attribute 'directions' has ", s.dirs.size(),
                " entries but there are ", s.n_in, " scan inputs");
  for (int64_t d : s.dirs) TESSERA_CHECK(d == 0 || d == 1, node.describe(), ": directions must be 0 or 1, got ", d);
  return s;
}

void infer_scan8(InferContext& c) {
  const Graph& body = body_attr(c.node, "body");
  Scan8Shape s = scan8_shape(op_attrs(c), body, c.num_inputs());
  int64_t batch = -1, seq = -1;
  for (size_t j = 0; j < s.n_in; ++j) {
    const TensorType& x = c.in(static_cast<int>(1 + s.n_state + j));
    TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": scan input ", j, " must have rank >= 2 (batch, sequence)");
    if (x.dims[0] >= 0) batch = x.dims[0];
    if (x.dims[1] >= 0) seq = x.dims[1];
  }
  for (size_t i = 0; i < s.n_state; ++i) {
    TensorType b = body_output_type(body, i);
    if (b.rank_known) b.dims.insert(b.dims.begin(), batch);
    TensorType t = merge_types(c.node, c.in(static_cast<int>(1 + i)), b, "state value " + std::to_string(i));
    t.dtype = c.in(static_cast<int>(1 + i)).dtype;
    c.out(static_cast<int>(i)) = t;
  }
  for (size_t k = 0; k < s.n_out; ++k) {
    TensorType t = body_output_type(body, s.n_state + k);
    if (t.rank_known) t.dims.insert(t.dims.begin(), {batch, seq});
    c.out(static_cast<int>(s.n_state + k)) = t;
  }
}

std::vector<Tensor> scan8_kernel(const KernelContext& c) {
  const Graph& body = body_attr(c.node, "body");
  Scan8Shape s = scan8_shape(op_attrs(c), body, c.num_inputs());
  const Tensor& x0 = c.in(static_cast<int>(1 + s.n_state));
  TESSERA_CHECK(x0.rank() >= 2, c.node.describe(), ": scan input 0 must have rank >= 2 (batch, sequence)");
  int64_t batch = x0.dim(0), seq = x0.dim(1);
  for (int i = 1; i < c.num_inputs(); ++i) {
    const Tensor& x = c.in(i);
    check_no_strings(c.node, x, "input " + std::to_string(i));
    bool is_scan = static_cast<size_t>(i) > s.n_state;
    TESSERA_CHECK(x.rank() >= (is_scan ? 2 : 1) && x.dim(0) == batch && (!is_scan || x.dim(1) == seq),
                  c.node.describe(), ": input ", i, " has shape ", dims_to_string(x.dims()),
                  " but the batch and sequence lengths are ", batch, " and ", seq);
  }
  std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
  if (c.has_input(0)) {
    lens = c.in(0).to_int_vector();
    TESSERA_CHECK(static_cast<int64_t>(lens.size()) == batch, c.node.describe(), ": sequence_lens has ",
                  lens.size(), " entries for a batch of ", batch);
    for (int64_t l : lens)
      TESSERA_CHECK(l >= 0 && l <= seq, c.node.describe(), ": sequence length ", l, " is outside [0, ", seq, "]");
  }
  InterpreterOptions opts = body_options(c);
  std::vector<std::vector<Tensor>> states(s.n_state);           // per state: one per batch entry
  std::vector<std::vector<std::vector<Tensor>>> outs(s.n_out);  // per output, per batch entry: slices
  for (auto& o : outs) o.resize(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> state, xs;
    for (size_t i = 0; i < s.n_state; ++i) state.push_back(take_slice(c.in(static_cast<int>(1 + i)), 0, b));
    for (size_t j = 0; j < s.n_in; ++j) xs.push_back(take_slice(c.in(static_cast<int>(1 + s.n_state + j)), 0, b));
    int64_t len = lens[static_cast<size_t>(b)];
    for (int64_t t = 0; t < len; ++t) {
      std::vector<Tensor> ins = state;
      for (size_t j = 0; j < s.n_in; ++j) ins.push_back(take_slice(xs[j], 0, s.dirs[j] ? len - 1 - t : t));
      std::vector<Tensor> r = interpret(body, ins, opts);
      for (size_t i = 0; i < s.n_state; ++i) state[i] = r[i];
      for (size_t k = 0; k < s.n_out; ++k) outs[k][static_cast<size_t>(b)].push_back(r[s.n_state + k]);
    }
    for (size_t i = 0; i < s.n_state; ++i) states[i].push_back(state[i]);
  }
  std::vector<Tensor> result;
  for (size_t i = 0; i < s.n_state; ++i)
    result.push_back(batch == 0 ? c.in(static_cast<int>(1 + i)) : stack(c.node, states[i], 0, "state value"));
  for (size_t k = 0; k < s.n_out; ++k) {
    // Slice type from any produced slice, else from the body's declaration.
    const Tensor* ref = nullptr;
    for (const auto& per_b : outs[k])
      if (!per_b.empty()) ref = &per_b[0];
    Tensor proto = ref ? Tensor(ref->dtype(), ref->dims()) : declared_zeros(body_output_type(body, s.n_state + k));
    std::vector<Tensor> rows;
    for (auto& per_b : outs[k]) {
      while (static_cast<int64_t>(per_b.size()) < seq) per_b.push_back(Tensor(proto.dtype(), proto.dims()));
      rows.push_back(seq == 0 ? empty_stack({proto.dtype(), proto.dims(), true}, 0)
                              : stack(c.node, per_b, 0, "scan output " + std::to_string(k)));
    }
    Dims od = proto.dims();
    od.insert(od.begin(), {batch, seq});
    result.push_back(batch == 0 ? Tensor(proto.dtype(), od) : stack(c.node, rows, 0, "scan output"));
  }
  return result;
}

}  // namespace

void register_control_flow_ops(OpRegistry& r) {
  r.add({.name = "If",
         .min_opset = 1,
         .mapping = MappingType::ManyToMany,
         .linear_inputs = {},
         .infer = infer_if,
         .reference = if_kernel,
         .flops = [](const Node& n, const std::vector<const TensorType*>&, const std::vector<TensorType>&) {
           return std::max(body_flops(body_attr(n, "then_branch")), body_flops(body_attr(n, "else_branch")));
         },
         .attributes = {graph_attr("then_branch").required(), graph_attr("else_branch").required()}});
  r.add({.name = "Loop",
         .min_opset = 1,
         .mapping = MappingType::ManyToMany,
         .linear_inputs = {},
         .infer = infer_loop,
         .reference = loop_kernel,
         // Per iteration: the trip count is generally data-dependent.
         .flops = [](const Node& n, const std::vector<const TensorType*>&, const std::vector<TensorType>&) {
           return body_flops(body_attr(n, "body"));
         },
         .attributes = {graph_attr("body").required()}});
  r.add({.name = "Scan",
         .min_opset = 8,
         .mapping = MappingType::ManyToMany,
         .linear_inputs = {},
         .infer = [](InferContext& c) { c.opset < 9 ? infer_scan8(c) : infer_scan(c); },
         .reference = [](const KernelContext& c) { return c.opset < 9 ? scan8_kernel(c) : scan_kernel(c); },
         .flops = [](const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           // Body FLOPs times the sequence length (from the first scan input).
           int64_t m = OpAttrs(n, kAnyOpset).i("num_scan_inputs");
           size_t first = ins.size() >= static_cast<size_t>(m) ? ins.size() - static_cast<size_t>(m) : 0;
           double seq = 1;
           if (first < ins.size() && ins[first] && ins[first]->rank() > 0) {
             const OpAttrs attrs(n, kAnyOpset);
             std::vector<int64_t> axes;
             if (attrs.has("scan_input_axes")) axes = attrs.ints("scan_input_axes");
             int64_t ax = axes.empty() ? 0 : axes[0];
             if (ax < 0) ax += ins[first]->rank();
             if (ax >= 0 && ax < ins[first]->rank()) seq = static_cast<double>(ins[first]->dims[static_cast<size_t>(ax)]);
           }
           return seq * body_flops(body_attr(n, "body"));
         },
         .attributes = {graph_attr("body").required(), int_attr("num_scan_inputs").required(),
                        ints_attr("scan_input_axes"), ints_attr("scan_input_directions"), ints_attr("scan_output_axes"),
                        ints_attr("scan_output_directions"), ints_attr("directions")}});
}

}  // namespace tessera
