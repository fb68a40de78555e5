// Shared helpers for tensor-expression definitions.
#include "opexpr/expr_util.h"

#include "support/error.h"

namespace tessera::ops {

std::vector<Expr> as_exprs(const Indices& idx) { return std::vector<Expr>(idx.begin(), idx.end()); }

Expr broadcast_read(const te::Tensor& t, const std::vector<Expr>& idx) {
  int rank = t.rank(), out_rank = static_cast<int>(idx.size());
  TESSERA_CHECK(rank <= out_rank, "broadcast_read: ", t.name(), " has rank ", rank, " above the output's ", out_rank);
  std::vector<Expr> r;
  for (int d = 0; d < rank; ++d) {
    const Expr& i = idx[static_cast<size_t>(out_rank - rank + d)];
    r.push_back(t.dim(d) == 1 ? loop::int_imm(0) : i);
  }
  return t(std::move(r));
}

Expr cast_to(const Expr& e, DType d) {
  if (e.type().dtype == d) return e;
  return loop::cast({d, e.type().lanes}, e);
}

te::Tensor elementwise(ExprContext& c, const std::function<Expr(const std::vector<Expr>&)>& f,
                       const te::StageTag& tag) {
  const TensorType& out = c.out(0);
  return te::compute(out.dims, [&](const Indices& i) {
    std::vector<Expr> idx = as_exprs(i), args;
    for (int k = 0; k < c.num_inputs(); ++k)
      args.push_back(c.has_input(k) ? broadcast_read(c.in(k), idx) : Expr());
    return cast_to(f(args), out.dtype);
  }, c.stage_name(""), tag);
}

}  // namespace tessera::ops
