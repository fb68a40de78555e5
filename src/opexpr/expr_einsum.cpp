// Tensor-expression definition of Einsum: the equation is parsed into labels;
// output labels become the output's axes, every other label a reduce axis,
// and each element is the sum over the reduce axes of the operands' product.
// Repeated labels in one operand read its diagonal, "..." stands for the
// broadcast leading dims, and size-1 dims broadcast. As the reference
// (nn_einsum.cpp), floats multiply and accumulate in double; integers wrap in
// their own type.
#include <algorithm>
#include <cctype>
#include <map>

#include "opexpr/expr_reduce.h"
#include "ops/op_attrs.h"
#include "support/error.h"

namespace tessera::ops {

namespace {

constexpr int kEll = -1;
constexpr int kEllLabel = 1000;  // label of broadcast dim j: kEllLabel + j

std::vector<int> parse_labels(const Node& n, const std::string& t) {
  std::vector<int> v;
  for (size_t i = 0; i < t.size(); ++i) {
    const char ch = t[i];
    if (std::isalpha(static_cast<unsigned char>(ch))) {
      v.push_back(ch);
      continue;
    }
    TESSERA_CHECK(ch == '.' && t.compare(i, 3, "...") == 0, n.describe(), ": bad einsum term '", t, "'");
    TESSERA_CHECK(std::count(v.begin(), v.end(), kEll) == 0, n.describe(), ": two ellipses in einsum term '", t, "'");
    v.push_back(kEll);
    i += 2;
  }
  return v;
}

std::vector<te::Tensor> einsum_expr(ExprContext& c) {
  const Node& n = c.node;
  std::string eq;
  for (char ch : op_attrs(c).s("equation"))
    if (!std::isspace(static_cast<unsigned char>(ch))) eq += ch;
  TESSERA_CHECK(!eq.empty(), n.describe(), ": attribute 'equation' is required");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t b = 0;;) {
    size_t e = lhs.find(',', b);
    terms.push_back(parse_labels(n, lhs.substr(b, e == std::string::npos ? std::string::npos : e - b)));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  const int K = c.num_inputs();
  TESSERA_CHECK(static_cast<int>(terms.size()) == K, n.describe(), ": equation has ", terms.size(),
                " operands, the node ", K, " inputs");
  const DType T = c.in(0).dtype();
  TESSERA_CHECK(T != DType::Bool && T != DType::String, n.describe(), ": unsupported element type ", dtype_name(T));
  // Broadcast rank of "...", then each operand's labels per dim.
  int64_t ell = 0;
  for (int k = 0; k < K; ++k) {
    const auto& t = terms[static_cast<size_t>(k)];
    const int64_t letters = static_cast<int64_t>(t.size()) - std::count(t.begin(), t.end(), kEll);
    const int64_t r = c.in(k).rank();
    const bool has = letters != static_cast<int64_t>(t.size());
    TESSERA_CHECK(has ? r >= letters : r == letters, n.describe(), ": einsum term ", k, " does not match rank ", r);
    if (has) ell = std::max(ell, r - letters);
  }
  std::vector<std::vector<int>> labels(static_cast<size_t>(K));
  std::map<int, int64_t> size;
  for (int k = 0; k < K; ++k) {
    const auto& t = terms[static_cast<size_t>(k)];
    const int64_t r = c.in(k).rank();
    auto& lab = labels[static_cast<size_t>(k)];
    for (int l : t) {
      if (l != kEll) {
        lab.push_back(l);
        continue;
      }
      const int64_t er = r - (static_cast<int64_t>(t.size()) - 1);
      for (int64_t j = 0; j < er; ++j) lab.push_back(kEllLabel + static_cast<int>(ell - er + j));
    }
    for (size_t d = 0; d < lab.size(); ++d) {
      const int64_t ext = c.in(k).dim(static_cast<int>(d));
      auto it = size.find(lab[d]);
      if (it == size.end() || it->second == 1) size[lab[d]] = ext;
      else TESSERA_CHECK(ext == 1 || ext == it->second, n.describe(), ": einsum label extents ", it->second, " and ", ext);
    }
  }
  std::vector<int> out;
  if (arrow != std::string::npos) {
    for (int l : parse_labels(n, eq.substr(arrow + 2))) {
      if (l == kEll) {
        for (int64_t j = 0; j < ell; ++j) out.push_back(kEllLabel + static_cast<int>(j));
        continue;
      }
      TESSERA_CHECK(size.count(l) && std::count(out.begin(), out.end(), l) == 0, n.describe(),
                    ": bad output label '", static_cast<char>(l), "'");
      out.push_back(l);
    }
  } else {
    for (int64_t j = 0; j < ell; ++j) out.push_back(kEllLabel + static_cast<int>(j));
    std::map<int, int> count;
    for (const auto& t : terms)
      for (int l : t)
        if (l != kEll) ++count[l];
    for (const auto& [l, cnt] : count)
      if (cnt == 1) out.push_back(l);
  }
  Dims od;
  for (int l : out) od.push_back(size.at(l));
  TESSERA_CHECK(od == c.out(0).dims, n.describe(), ": einsum output dims ", dims_to_string(od), " differ from inference");
  std::vector<int> summed;
  for (const auto& [l, s] : size)
    if (std::find(out.begin(), out.end(), l) == out.end()) summed.push_back(l);
  const DType A = is_float(T) ? DType::F64 : T;
  te::Tensor acc = te::compute(od, [&](const Indices& oi) {
    std::map<int, Expr> var;
    for (size_t i = 0; i < out.size(); ++i) var[out[i]] = oi[i];
    std::vector<loop::ReduceAxis> rv;
    for (size_t i = 0; i < summed.size(); ++i) {
      rv.push_back(te::reduce_axis(size.at(summed[i]), "r" + std::to_string(i)));
      var[summed[i]] = rv.back().var;
    }
    Expr prod;
    for (int k = 0; k < K; ++k) {
      const te::Tensor& x = c.in(k);
      std::vector<Expr> idx;
      for (int d = 0; d < x.rank(); ++d) {
        int l = labels[static_cast<size_t>(k)][static_cast<size_t>(d)];
        idx.push_back(x.dim(d) == 1 && size.at(l) != 1 ? loop::int_imm(0) : var.at(l));
      }
      Expr v = cast_to(x(idx), A);
      prod = prod.defined() ? prod * v : v;
    }
    if (rv.empty()) return loop::make_zero({A, 1}) + prod;
    return loop::reduce(loop::ReduceOp::Sum, prod, rv);
  }, c.stage_name(A == T ? "" : "acc"), "einsum");
  if (A == T) return {acc};
  return {te::compute(od, [&](const Indices& oi) { return cast_to(acc(as_exprs(oi)), T); }, c.stage_name(""),
                      te::OpClass::Elementwise)};
}

}  // namespace

void register_einsum_exprs(ExprRegistry& r) { r.set_expr("Einsum", "", einsum_expr); }

}  // namespace tessera::ops
