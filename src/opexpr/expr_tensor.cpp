// Tensor-expression definitions of the tensor ops: shared helpers and the
// registration of every file of the family (src/ops/expr_tensor_*.cpp).
#include "opexpr/expr_tensor.h"

#include "support/error.h"

namespace tessera::ops {

namespace tensor_expr {

void set(ExprRegistry& r, const std::string& op, ExprFn fn) {
  r.set_expr(op, "", [fn = std::move(fn)](ExprContext& c) {
    for (int i = 0; i < c.num_inputs(); ++i)
      TESSERA_CHECK(!c.has_input(i) || c.in(i).dtype() != DType::String, c.node.describe(),
                    ": string tensors cannot be compiled (input ", i, ")");
    for (int i = 0; i < c.num_outputs(); ++i)
      TESSERA_CHECK(c.out(i).dtype != DType::String, c.node.describe(), ": string tensors cannot be compiled (output ",
                    i, ")");
    return fn(c);
  });
}

std::vector<int64_t> value_ints(ExprContext& c, int i) {
  if (!c.has_input(i)) return {};
  const Tensor& t = c.value(i);
  TESSERA_CHECK(is_integer(t.dtype()), c.node.describe(), ": input ", i, " must be an integer tensor, got ",
                dtype_name(t.dtype()));
  return t.to_int_vector();
}

void note_value(ExprContext& c, int i) {
  if (c.has_value(i)) c.value(i);
}

Expr as_index(const Expr& e) { return cast_to(e, DType::I64); }

Expr wrap_clamp_index(const Expr& v, int64_t dim) {
  Expr i = as_index(v);
  // The offset is selected, not the read: no branch holds a load (which would be predicated).
  i = i + loop::select(i < 0, loop::int_imm(dim), loop::int_imm(0));
  return loop::max(loop::min(i, dim - 1), 0);
}

Expr read_first(const te::Tensor& t) { return t(std::vector<Expr>(static_cast<size_t>(t.rank()), loop::int_imm(0))); }

std::vector<Expr> reshape_indices(const Dims& in, const Dims& out, const std::vector<Expr>& o) {
  std::vector<Expr> r(in.size(), loop::int_imm(0));
  if (numel_of(in) == 0 || numel_of(out) == 0) return r;  // no elements: any index
  std::vector<size_t> ia, oa;  // the axes of size > 1
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1) ia.push_back(i);
  for (size_t j = 0; j < out.size(); ++j)
    if (out[j] != 1) oa.push_back(j);
  size_t p = 0, q = 0;
  while (p < ia.size() && q < oa.size()) {
    // The smallest run of input axes and output axes with equal products.
    std::vector<size_t> gi{ia[p++]}, go{oa[q++]};
    int64_t pi = in[gi[0]], po = out[go[0]];
    while (pi != po) {
      if (pi < po) {
        TESSERA_CHECK(p < ia.size(), "reshape_indices: element counts differ");
        gi.push_back(ia[p]);
        pi *= in[ia[p++]];
      } else {
        TESSERA_CHECK(q < oa.size(), "reshape_indices: element counts differ");
        go.push_back(oa[q]);
        po *= out[oa[q++]];
      }
    }
    Expr lin = o[go[0]];
    for (size_t k = 1; k < go.size(); ++k) lin = lin * out[go[k]] + o[go[k]];
    if (gi.size() == 1) {
      r[gi[0]] = lin;
      continue;
    }
    int64_t stride = pi;
    for (size_t k = 0; k < gi.size(); ++k) {
      stride /= in[gi[k]];
      Expr v = stride == 1 ? lin : lin / stride;
      r[gi[k]] = k == 0 ? v : v % in[gi[k]];
    }
  }
  TESSERA_CHECK(p == ia.size() && q == oa.size(), "reshape_indices: element counts differ");
  return r;
}

std::vector<Expr> unravel(const Expr& lin, const Dims& dims) {
  std::vector<Expr> r(dims.size(), loop::int_imm(0));
  int64_t stride = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k] != 1) {
      Expr v = stride == 1 ? lin : lin / stride;
      r[k] = k == 0 ? v : v % dims[k];
    }
    stride *= dims[k];
  }
  return r;
}

Expr element_const(const Tensor& t, int64_t i) {
  loop::Type ty{t.dtype(), 1};
  if (is_float(t.dtype())) return loop::make_const(ty, t.get_double(i));
  return loop::make_int_const(ty, t.get_int(i));
}

Expr int_table(const std::vector<int64_t>& table, const Expr& k) {
  TESSERA_CHECK(!table.empty(), "int_table: empty table");
  struct Run {
    int64_t start, offset;
  };
  std::vector<Run> runs;
  for (size_t i = 0; i < table.size(); ++i) {
    int64_t off = table[i] - static_cast<int64_t>(i);
    if (runs.empty() || runs.back().offset != off) runs.push_back({static_cast<int64_t>(i), off});
  }
  std::function<Expr(size_t, size_t)> build = [&](size_t lo, size_t hi) -> Expr {
    if (hi - lo == 1) return runs[lo].offset == 0 ? k : k + runs[lo].offset;
    size_t mid = (lo + hi) / 2;
    return loop::select(k < runs[mid].start, build(lo, mid), build(mid, hi));
  };
  return build(0, runs.size());
}

Expr f64_to(const Expr& v, DType d) {
  if (d == DType::F16 || d == DType::BF16) return cast_to(cast_to(v, DType::F32), d);
  return cast_to(v, d);
}

}  // namespace tensor_expr

void register_tensor_exprs(ExprRegistry& r) {
  tensor_expr::register_shape_exprs(r);
  tensor_expr::register_slice_exprs(r);
  tensor_expr::register_gather_exprs(r);
  tensor_expr::register_gen_exprs(r);
  tensor_expr::register_resize_exprs(r);
}

}  // namespace tessera::ops
