// Layout ops that permute elements: Transpose, DepthToSpace, SpaceToDepth,
// plus the element-position masks Trilu and ReverseSequence.
#include <algorithm>
#include <numeric>

#include "ops/tensor_common.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

// ---------------------------------------------------------------- Transpose

std::vector<int64_t> transpose_perm(const OpAttrs& attrs, int64_t rank) {
  const Node& n = attrs.node();
  std::vector<int64_t> perm = attrs.ints("perm");
  if (!n.has_attr("perm")) {
    perm.resize(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = rank - 1 - i;
    return perm;
  }
  TESSERA_CHECK(static_cast<int64_t>(perm.size()) == rank, n.describe(), ": perm has ", perm.size(),
                " entries but the input has rank ", rank);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm) {
    TESSERA_CHECK(p >= 0 && p < rank && !seen[static_cast<size_t>(p)], n.describe(),
                  ": perm is not a permutation of 0..", rank - 1);
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

void infer_transpose(InferContext& c) {
  const TensorType& x = c.in(0);
  std::vector<int64_t> perm = transpose_perm(op_attrs(c), x.rank());
  Dims d;
  for (int64_t p : perm) d.push_back(x.dims[static_cast<size_t>(p)]);
  c.out(0) = {x.dtype, d, true};
}

std::vector<Tensor> run_transpose(const KernelContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> perm = transpose_perm(op_attrs(c), x.rank());
  Dims d, st, xs = strides_of(x.dims());
  for (int64_t p : perm) {
    d.push_back(x.dims()[static_cast<size_t>(p)]);
    st.push_back(xs[static_cast<size_t>(p)]);
  }
  Tensor y(x.dtype(), d);
  copy_strided(x, y, 0, st);
  return {y};
}

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth

int64_t block_size(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  int64_t bs = attrs.i("blocksize");
  TESSERA_CHECK(bs > 0 && bs <= (int64_t{1} << 20), n.describe(), ": invalid blocksize ", bs);
  return bs;
}

bool crd_mode(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  std::string m = attrs.s("mode");
  TESSERA_CHECK(m == "DCR" || m == "CRD", n.describe(), ": unsupported mode '", m, "' (expected DCR or CRD)");
  return m == "CRD";
}

void infer_depth_to_space(InferContext& c) {
  const TensorType& x = c.in(0);
  int64_t bs = block_size(op_attrs(c));
  crd_mode(op_attrs(c));
  TESSERA_CHECK(x.rank() == 4, c.node.describe(), ": input must be 4-D (NCHW), got ", x.to_string());
  int64_t ch = x.dims[1];
  TESSERA_CHECK(ch < 0 || ch % (bs * bs) == 0, c.node.describe(), ": channels ", ch,
                " are not divisible by blocksize^2 = ", bs * bs);
  auto mul = [](int64_t a, int64_t b) { return a < 0 ? -1 : a * b; };
  c.out(0) = {x.dtype, {x.dims[0], ch < 0 ? -1 : ch / (bs * bs), mul(x.dims[2], bs), mul(x.dims[3], bs)}, true};
}

std::vector<Tensor> run_depth_to_space(const KernelContext& c) {
  const Tensor& x = c.in(0);
  int64_t bs = block_size(op_attrs(c));
  bool crd = crd_mode(op_attrs(c));
  TESSERA_CHECK(x.rank() == 4, c.node.describe(), ": input must be 4-D (NCHW), got ", dims_to_string(x.dims()));
  int64_t n = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
  TESSERA_CHECK(ch % (bs * bs) == 0, c.node.describe(), ": channels ", ch, " are not divisible by blocksize^2 = ",
                bs * bs);
  int64_t co = ch / (bs * bs), hw = h * w;
  // Output viewed as [N, C', H, bs, W, bs]; strides into the input per axis.
  Tensor y(x.dtype(), {n, co, h, bs, w, bs});
  Dims st = crd ? Dims{ch * hw, bs * bs * hw, w, bs * hw, 1, hw} : Dims{ch * hw, hw, w, bs * co * hw, 1, co * hw};
  copy_strided(x, y, 0, st);
  return {y.reshaped({n, co, h * bs, w * bs})};
}

void infer_space_to_depth(InferContext& c) {
  const TensorType& x = c.in(0);
  int64_t bs = block_size(op_attrs(c));
  TESSERA_CHECK(x.rank() == 4, c.node.describe(), ": input must be 4-D (NCHW), got ", x.to_string());
  auto div = [&](int64_t a) {
    TESSERA_CHECK(a < 0 || a % bs == 0, c.node.describe(), ": spatial dim ", a, " is not divisible by blocksize ",
                  bs);
    return a < 0 ? -1 : a / bs;
  };
  c.out(0) = {x.dtype, {x.dims[0], x.dims[1] < 0 ? -1 : x.dims[1] * bs * bs, div(x.dims[2]), div(x.dims[3])}, true};
}

std::vector<Tensor> run_space_to_depth(const KernelContext& c) {
  const Tensor& x = c.in(0);
  int64_t bs = block_size(op_attrs(c));
  TESSERA_CHECK(x.rank() == 4, c.node.describe(), ": input must be 4-D (NCHW), got ", dims_to_string(x.dims()));
  int64_t n = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
  TESSERA_CHECK(h % bs == 0 && w % bs == 0, c.node.describe(), ": spatial dims ", h, "x", w,
                " are not divisible by blocksize ", bs);
  // Output viewed as [N, bs, bs, C, H/bs, W/bs].
  Tensor y(x.dtype(), {n, bs, bs, ch, h / bs, w / bs});
  copy_strided(x, y, 0, {ch * h * w, w, 1, h * w, bs * w, bs});
  return {y.reshaped({n, ch * bs * bs, h / bs, w / bs})};
}

// ---------------------------------------------------------------- Trilu

void infer_trilu(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": input must have rank >= 2, got ", x.to_string());
  c.out(0) = x;
}

std::vector<Tensor> run_trilu(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": input must have rank >= 2, got ", dims_to_string(x.dims()));
  int64_t k = 0;
  if (c.has_input(1)) {
    std::vector<int64_t> kv = input_ints(c, 1);
    TESSERA_CHECK(kv.size() == 1, c.node.describe(), ": k must be a scalar");
    k = kv[0];
  }
  bool upper = op_attrs(c).i("upper") != 0;
  int64_t rows = x.dim(-2), cols = x.dim(-1);
  Tensor y = x.clone();
  dispatch_storage(x.dtype(), [&]<class W>() {
    W* o = elems<W>(y);
    for (int64_t base = 0; base < y.numel(); base += rows * cols)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          bool keep = upper ? j - i >= k : j - i <= k;
          if (!keep) o[base + i * cols + j] = W{};
        }
  });
  return {y};
}

// ---------------------------------------------------------------- ReverseSequence

std::pair<int64_t, int64_t> time_batch_axes(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  int64_t t = attrs.i("time_axis"), b = attrs.i("batch_axis");
  TESSERA_CHECK((t == 0 && b == 1) || (t == 1 && b == 0), n.describe(),
                ": time_axis and batch_axis must be 0 and 1 in some order, got ", t, " and ", b);
  return {t, b};
}

void infer_reverse_sequence(InferContext& c) {
  const TensorType& x = c.in(0);
  time_batch_axes(op_attrs(c));
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": input must have rank >= 2, got ", x.to_string());
  TESSERA_CHECK(c.in(1).dtype == DType::I64 || c.in(1).dtype == DType::Undefined, c.node.describe(),
                ": sequence_lens must be int64");
  c.out(0) = x;
}

std::vector<Tensor> run_reverse_sequence(const KernelContext& c) {
  const Tensor& x = c.in(0);
  // Plain variables, not a structured binding: clang 14 cannot capture those.
  const auto axes = time_batch_axes(op_attrs(c));
  const int64_t ta = axes.first, ba = axes.second;
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": input must have rank >= 2, got ", dims_to_string(x.dims()));
  std::vector<int64_t> lens = input_ints(c, 1);
  int64_t tmax = x.dim(ta), batch = x.dim(ba);
  TESSERA_CHECK(static_cast<int64_t>(lens.size()) == batch, c.node.describe(), ": sequence_lens has ", lens.size(),
                " entries but the batch size is ", batch);
  Dims st = strides_of(x.dims());
  int64_t inner = st[1];
  Tensor y = x.clone();
  dispatch_storage(x.dtype(), [&]<class W>() {
    const W* s = elems<W>(x);
    W* o = elems<W>(y);
    for (int64_t b = 0; b < batch; ++b) {
      int64_t len = lens[static_cast<size_t>(b)];
      TESSERA_CHECK(len >= 0 && len <= tmax, c.node.describe(), ": sequence length ", len, " of batch ", b,
                    " is outside [0, ", tmax, "]");
      for (int64_t t = 0; t < len; ++t) {
        int64_t dst = t * st[static_cast<size_t>(ta)] + b * st[static_cast<size_t>(ba)];
        int64_t src = (len - 1 - t) * st[static_cast<size_t>(ta)] + b * st[static_cast<size_t>(ba)];
        for (int64_t j = 0; j < inner; ++j) o[dst + j] = s[src + j];
      }
    }
  });
  return {y};
}

}  // namespace

void register_tensor_layout_ops(OpRegistry& r) {
  r.add({.name = "Transpose", .min_opset = 1, .mapping = MappingType::Shuffle, .linear_inputs = {0},
         .infer = infer_transpose, .reference = run_transpose, .flops = zero_flops,
         .attributes = {ints_attr("perm", {})}});
  r.add({.name = "DepthToSpace", .min_opset = 1, .mapping = MappingType::Shuffle, .linear_inputs = {0},
         .infer = infer_depth_to_space, .reference = run_depth_to_space, .flops = zero_flops,
         .attributes = {int_attr("blocksize").required(), string_attr("mode", "DCR")}});
  r.add({.name = "SpaceToDepth", .min_opset = 1, .mapping = MappingType::Shuffle, .linear_inputs = {0},
         .infer = infer_space_to_depth, .reference = run_space_to_depth, .flops = zero_flops,
         .attributes = {int_attr("blocksize").required()}});
  // Trilu keeps or zeroes each element in place: one-to-one.
  r.add({.name = "Trilu", .min_opset = 14, .mapping = MappingType::OneToOne, .linear_inputs = {0},
         .infer = infer_trilu, .reference = run_trilu, .flops = zero_flops, .attributes = {int_attr("upper", 1)}});
  // ReverseSequence permutes elements within each sequence: a shuffle.
  r.add({.name = "ReverseSequence", .min_opset = 10, .mapping = MappingType::Shuffle, .linear_inputs = {0},
         .infer = infer_reverse_sequence, .reference = run_reverse_sequence, .flops = zero_flops,
         .attributes = {int_attr("time_axis", 0), int_attr("batch_axis", 1)}});
}

}  // namespace tessera
