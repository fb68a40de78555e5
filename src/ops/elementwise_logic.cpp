// Comparisons (bool output), boolean logic, bitwise integer ops and Where,
// all with numpy broadcasting (legacy `broadcast`/`axis` broadcasting for
// Equal Less Greater And Or Xor before opset 7).
#include "ops/elementwise_common.h"

namespace tessera {

namespace {

using namespace ew;

// min_opset < 7: the op exists since opset 1 with legacy broadcasting.
template <unsigned Mask, class F>
void add_compare(OpRegistry& r, const char* name, int64_t min_opset, F f) {
  OpDef d{.name = name, .min_opset = min_opset, .mapping = MappingType::OneToOne, .broadcasts = true,
          .infer = infer_binary<Mask, DType::Bool>,
          .reference = [f](const KernelContext& c) { return map_binary<Mask>(c, f, DType::Bool); }};
  r.add(min_opset < 7 ? with_legacy_broadcast(std::move(d)) : std::move(d));
}

template <unsigned Mask, class F>
void add_bitwise(OpRegistry& r, const char* name, int64_t min_opset, F f) {
  r.add({.name = name, .min_opset = min_opset, .mapping = MappingType::OneToOne, .broadcasts = true, .infer = infer_binary<Mask>,
         .reference = [f](const KernelContext& c) { return map_binary<Mask>(c, f); }});
}

// Equal also compares string tensors.
void infer_equal(InferContext& c) {
  bool strings = c.in(0).dtype == DType::String || c.in(1).dtype == DType::String;
  if (!strings) return infer_binary<kAny, DType::Bool>(c);
  check_same_dtype(c.node, c.input_types);
  TensorType t = broadcast_types(c.node, c.input_types);
  t.dtype = DType::Bool;
  c.out(0) = t;
}

std::vector<Tensor> equal_kernel(const KernelContext& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  if (a.dtype() != DType::String || b.dtype() != DType::String)
    return map_binary<kAny>(c, [](auto x, auto y) { return x == y; }, DType::Bool);
  Dims od = broadcast_dims(c.node, a.dims(), b.dims());
  Tensor y(DType::Bool, od);
  BroadcastIndexer ia(a.dims(), od), ib(b.dims(), od);
  bool* o = y.data<bool>();
  for (int64_t i = 0; i < y.numel(); ++i)
    o[i] = a.strings()[static_cast<size_t>(ia(i))] == b.strings()[static_cast<size_t>(ib(i))];
  return {y};
}

void infer_where(InferContext& c) {
  TESSERA_CHECK(c.num_inputs() == 3, c.node.describe(), ": needs 3 inputs (condition, X, Y)");
  require_type(c.node, c.in(0).dtype, kBool, "condition");
  check_same_dtype(c.node, {&c.in(1), &c.in(2)});
  TensorType t = broadcast_types(c.node, c.input_types);
  t.dtype = c.in(1).dtype != DType::Undefined ? c.in(1).dtype : c.in(2).dtype;
  c.out(0) = t;
}

std::vector<Tensor> where_kernel(const KernelContext& c) {
  const Tensor& cond = c.in(0);
  const Tensor& x = c.in(1);
  const Tensor& y = c.in(2);
  TESSERA_CHECK(cond.dtype() == DType::Bool, c.node.describe(), ": condition must be bool, got ",
                dtype_name(cond.dtype()));
  TESSERA_CHECK(x.dtype() == y.dtype(), c.node.describe(), ": X and Y have different element types (",
                dtype_name(x.dtype()), " and ", dtype_name(y.dtype()), ")");
  Dims od = broadcast_dims(c.node, broadcast_dims(c.node, cond.dims(), x.dims()), y.dims());
  Tensor out(x.dtype(), od);
  BroadcastIndexer ic(cond.dims(), od), ix(x.dims(), od), iy(y.dims(), od);
  dispatch_mask<kAny>(c.node, x.dtype(), [&]<class T>() {
    const bool* pc = cond.data<bool>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* o = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = pc[ic(i)] ? px[ix(i)] : py[iy(i)];
  });
  return {out};
}

}  // namespace

void register_ew_logic_ops(OpRegistry& r) {
  r.add(with_legacy_broadcast({.name = "Equal", .min_opset = 7, .mapping = MappingType::OneToOne, .broadcasts = true,
                               .infer = infer_equal, .reference = equal_kernel}));
  add_compare<kNumeric>(r, "Less", 1, [](auto a, auto b) { return a < b; });
  add_compare<kNumeric>(r, "Greater", 1, [](auto a, auto b) { return a > b; });
  add_compare<kNumeric>(r, "LessOrEqual", 12, [](auto a, auto b) { return a <= b; });
  add_compare<kNumeric>(r, "GreaterOrEqual", 12, [](auto a, auto b) { return a >= b; });
  add_compare<kBool>(r, "And", 1, [](bool a, bool b) { return a && b; });
  add_compare<kBool>(r, "Or", 1, [](bool a, bool b) { return a || b; });
  add_compare<kBool>(r, "Xor", 1, [](bool a, bool b) { return a != b; });
  add_bitwise<kInt>(r, "BitwiseAnd", 18, [](auto a, auto b) { return static_cast<decltype(a)>(a & b); });
  add_bitwise<kInt>(r, "BitwiseOr", 18, [](auto a, auto b) { return static_cast<decltype(a)>(a | b); });
  add_bitwise<kInt>(r, "BitwiseXor", 18, [](auto a, auto b) { return static_cast<decltype(a)>(a ^ b); });
  r.add({.name = "Where", .min_opset = 9, .mapping = MappingType::OneToOne, .broadcasts = true, .infer = infer_where,
         .reference = where_kernel});
}

}  // namespace tessera
