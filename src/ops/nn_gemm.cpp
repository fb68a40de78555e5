// MatMul (numpy batching, 1-D operands) and Gemm (transA/transB, alpha/beta,
// optional broadcast C).
#include "ops/nn_matmul.h"

namespace tessera {

MatMulShape matmul_shape(const Node& n, const Dims& a, const Dims& b) {
  TESSERA_CHECK(!a.empty() && !b.empty(), n.describe(), ": MatMul operands must have rank >= 1, got shapes ",
                dims_to_string(a), " and ", dims_to_string(b));
  MatMulShape s;
  s.a_vec = a.size() == 1;
  s.b_vec = b.size() == 1;
  Dims a2 = s.a_vec ? Dims{1, a[0]} : a;
  Dims b2 = s.b_vec ? Dims{b[0], 1} : b;
  s.M = a2[a2.size() - 2];
  s.K = a2[a2.size() - 1];
  s.N = b2[b2.size() - 1];
  int64_t kb = b2[b2.size() - 2];
  TESSERA_CHECK(s.K < 0 || kb < 0 || s.K == kb, n.describe(), ": cannot multiply shapes ", dims_to_string(a), " and ",
                dims_to_string(b), " (inner dims ", s.K, " and ", kb, ")");
  if (s.K < 0) s.K = kb;
  s.a_batch.assign(a2.begin(), a2.end() - 2);
  s.b_batch.assign(b2.begin(), b2.end() - 2);
  s.batch = broadcast_dims(n, s.a_batch, s.b_batch);
  s.out_dims = s.batch;
  if (!s.a_vec) s.out_dims.push_back(s.M);
  if (!s.b_vec) s.out_dims.push_back(s.N);
  return s;
}

namespace {

DType check_numeric(const Node& n, DType t) {
  TESSERA_CHECK(t != DType::Bool && t != DType::String && t != DType::Undefined, n.describe(),
                ": unsupported element type ", dtype_name(t));
  return t;
}

void infer_matmul(InferContext& c) {
  check_same_dtype(c.node, c.input_types);
  MatMulShape s = matmul_shape(c.node, c.in(0).dims, c.in(1).dims);
  c.out(0) = TensorType{check_numeric(c.node, c.in(0).dtype), s.out_dims};
}

std::vector<Tensor> run_matmul(const KernelContext& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  TESSERA_CHECK(a.dtype() == b.dtype(), c.node.describe(), ": inputs have different element types");
  MatMulShape s = matmul_shape(c.node, a.dims(), b.dims());
  Tensor y(check_numeric(c.node, a.dtype()), s.out_dims);
  dispatch_dtype(a.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using A = compute_t<T>;
      std::vector<A> yv(static_cast<size_t>(y.numel()), A(0));
      if constexpr (std::is_same_v<T, A>) {
        matmul_batched<A>(a.data<T>(), b.data<T>(), yv.data(), s);
      } else {
        std::vector<A> av(a.span<T>().begin(), a.span<T>().end()), bv(b.span<T>().begin(), b.span<T>().end());
        matmul_batched<A>(av.data(), bv.data(), yv.data(), s);
      }
      T* o = y.data<T>();
      for (size_t i = 0; i < yv.size(); ++i) o[i] = to_storage<T>(yv[i]);
    }
  });
  return {y};
}

struct GemmShape {
  int64_t M = -1, K = -1, N = -1;
};

GemmShape gemm_shape(const Node& n, const GemmAttrs& g, const Dims& a, const Dims& b, const Dims* cdims) {
  TESSERA_CHECK(a.size() == 2 && b.size() == 2, n.describe(), ": Gemm needs 2-D A and B, got ", dims_to_string(a),
                " and ", dims_to_string(b));
  const bool ta = g.trans_a, tb = g.trans_b;
  GemmShape s;
  s.M = ta ? a[1] : a[0];
  s.K = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0];
  s.N = tb ? b[0] : b[1];
  TESSERA_CHECK(s.K < 0 || kb < 0 || s.K == kb, n.describe(), ": inner dims differ (", s.K, " vs ", kb,
                ") for A ", dims_to_string(a), " and B ", dims_to_string(b));
  if (s.K < 0) s.K = kb;
  if (cdims) {
    const Dims& cd = *cdims;
    TESSERA_CHECK(cd.size() <= 2, n.describe(), ": C must have rank <= 2, got ", dims_to_string(cd));
    Dims target{s.M, s.N};
    for (size_t i = 0; i < cd.size(); ++i) {
      int64_t want = target[2 - cd.size() + i];
      TESSERA_CHECK(cd[i] == 1 || cd[i] < 0 || want < 0 || cd[i] == want, n.describe(), ": C of shape ",
                    dims_to_string(cd), " cannot be broadcast to [", s.M, ", ", s.N, "]");
    }
  }
  return s;
}

void infer_gemm(InferContext& c) {
  check_same_dtype(c.node, c.input_types);
  const Dims* cd = c.has_input(2) ? &c.in(2).dims : nullptr;
  GemmShape s = gemm_shape(c.node, gemm_attrs(op_attrs(c)), c.in(0).dims, c.in(1).dims, cd);
  c.out(0) = TensorType{check_numeric(c.node, c.in(0).dtype), {s.M, s.N}};
}

std::vector<Tensor> run_gemm(const KernelContext& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  const Tensor* ct = c.has_input(2) ? &c.in(2) : nullptr;
  TESSERA_CHECK(a.dtype() == b.dtype() && (!ct || ct->dtype() == a.dtype()), c.node.describe(),
                ": inputs have different element types");
  const GemmAttrs g = gemm_attrs(op_attrs(c));
  GemmShape s = gemm_shape(c.node, g, a.dims(), b.dims(), ct ? &ct->dims() : nullptr);
  const bool ta = g.trans_a, tb = g.trans_b;
  const double alpha = g.alpha, beta = g.beta;
  const int64_t M = s.M, K = s.K, N = s.N;
  Tensor y(check_numeric(c.node, a.dtype()), {M, N});
  dispatch_dtype(a.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using A = compute_t<T>;
      // A' as M x K and B' as K x N, contiguous, in the compute type.
      std::vector<A> am(static_cast<size_t>(M * K)), bm(static_cast<size_t>(K * N));
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k) am[static_cast<size_t>(i * K + k)] = static_cast<A>(ta ? pa[k * M + i] : pa[i * K + k]);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j) bm[static_cast<size_t>(k * N + j)] = static_cast<A>(tb ? pb[j * K + k] : pb[k * N + j]);
      std::vector<A> acc(static_cast<size_t>(M * N), A(0));
      MatMulShape ms;
      ms.M = M, ms.K = K, ms.N = N;
      matmul_batched<A>(am.data(), bm.data(), acc.data(), ms);
      T* o = y.data<T>();
      Dims cd = ct ? ct->dims() : Dims{};
      BroadcastIndexer ic(cd, {M, N});
      for (int64_t i = 0; i < M * N; ++i) {
        const size_t u = static_cast<size_t>(i);
        if constexpr (std::is_floating_point_v<A>) {
          A v = alpha == 1.0 ? acc[u] : static_cast<A>(alpha) * acc[u];
          if (ct && beta != 0.0) {
            A cv = static_cast<A>(ct->data<T>()[ic(i)]);
            v += beta == 1.0 ? cv : static_cast<A>(beta) * cv;
          }
          o[i] = to_storage<T>(v);
        } else {
          const T cv = (ct && beta != 0.0) ? ct->data<T>()[ic(i)] : T(0);
          if (alpha == 1.0 && (beta == 1.0 || beta == 0.0))
            o[i] = static_cast<T>(acc[u] + cv);  // exact integer arithmetic
          else
            o[i] = static_cast<T>(alpha * static_cast<double>(acc[u]) + beta * static_cast<double>(cv));
        }
      }
    }
  });
  return {y};
}

}  // namespace

GemmAttrs gemm_attrs(const OpAttrs& a) {
  return {a.i("transA") != 0, a.i("transB") != 0, a.f("alpha"), a.f("beta")};
}

void register_nn_gemm_ops(OpRegistry& r) {
  r.add({.name = "MatMul",
         .min_opset = 1,
         .mapping = MappingType::ManyToMany,
         .linear_inputs = {0, 1},
         .infer = infer_matmul,
         .reference = run_matmul,
         .flops = [](const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           MatMulShape s = matmul_shape(n, ins[0]->dims, ins[1]->dims);
           return 2.0 * prod_dims(s.batch) * static_cast<double>(s.M) * static_cast<double>(s.K) *
                  static_cast<double>(s.N);
         },
         .attributes = {}});
  r.add({.name = "Gemm",
         .min_opset = 6,
         .mapping = MappingType::ManyToMany,
         .linear_inputs = {0, 1},
         .infer = infer_gemm,
         .reference = run_gemm,
         .flops = [](const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
           GemmShape s = gemm_shape(n, gemm_attrs(OpAttrs(n, kAnyOpset)), ins[0]->dims, ins[1]->dims, nullptr);
           double mn = static_cast<double>(s.M) * static_cast<double>(s.N);
           return 2.0 * mn * static_cast<double>(s.K) + (ins.size() > 2 && ins[2] ? 2.0 * mn : 0.0);
         },
         .attributes = {float_attr("alpha", 1.0f), float_attr("beta", 1.0f), int_attr("transA", 0),
                        int_attr("transB", 0), int_attr("broadcast", 0)}});
}

}  // namespace tessera
