// Cast and CastLike: elementwise conversion between the element types Tessera
// represents. Float -> integer truncates toward zero and saturates (NaN -> 0);
// float8/int4/string targets are not supported. `saturate` and `round_mode`
// only affect float8 / e8m0 targets, so they are accepted and have no effect.
// Cast before opset 6 names the target type by string ("FLOAT", "INT64" ...).
#include "ops/elementwise_common.h"

namespace tessera {

namespace {

// Before opset 6 `to` was a string naming the TensorProto data type ("FLOAT").
int64_t legacy_type_code(const Node& n, const std::string& name) {
  for (int32_t code = 1; code < 64; ++code)
    if (onnx_type_name(code) == name) return code;
  TESSERA_FAIL(n.describe(), ": unknown element type name '", name, "' in attribute 'to'");
}

DType cast_target(const Node& n, int64_t opset) {
  const Attribute* a = OpAttrs(n, opset).raw("to");  // an int, or a type name before opset 6
  TESSERA_CHECK(a, n.describe(), ": missing required attribute 'to'");
  TESSERA_CHECK(a->kind == Attribute::Kind::Int || (opset < 6 && a->kind == Attribute::Kind::String), n.describe(),
                ": attribute 'to' must be an int", opset < 6 ? " or a type name" : "");
  int64_t code = a->kind == Attribute::Kind::String ? legacy_type_code(n, a->s) : a->i;
  TESSERA_CHECK(code >= 0 && code <= 0x7fffffff && dtype_supported(static_cast<int32_t>(code)) &&
                    code != static_cast<int64_t>(DType::String),
                n.describe(), ": cast to ONNX element type ", code, " is not supported");
  return static_cast<DType>(code);
}

void check_source(const Node& n, DType t) {
  TESSERA_CHECK(t != DType::String, n.describe(), ": cast from string is not supported");
}

TensorType with_dtype(TensorType t, DType d) {
  t.dtype = d;
  return t;
}

std::vector<Tensor> convert(const Node& n, const Tensor& x, DType to) {
  check_source(n, x.dtype());
  TESSERA_CHECK(to != DType::String && to != DType::Undefined, n.describe(), ": cast to ", dtype_name(to),
                " is not supported");
  return {x.cast(to)};
}

}  // namespace

void register_cast_ops(OpRegistry& r) {
  r.add({.name = "Cast", .min_opset = 1, .mapping = MappingType::OneToOne,
         .infer = [](InferContext& c) {
           check_source(c.node, c.in(0).dtype);
           c.out(0) = with_dtype(c.in(0), cast_target(c.node, c.opset));
         },
         .reference = [](const KernelContext& c) { return convert(c.node, c.in(0), cast_target(c.node, c.opset)); },
         .flops = [](const Node&, const std::vector<const TensorType*>&, const std::vector<TensorType>&) {
           return 0.0;
         },
         .attributes = {int_attr("to").required().or_kind(Attribute::Kind::String), int_attr("saturate", 1),
                        string_attr("round_mode", "up")}});
  r.add({.name = "CastLike", .min_opset = 15, .mapping = MappingType::OneToOne,
         .infer = [](InferContext& c) {
           check_source(c.node, c.in(0).dtype);
           TESSERA_CHECK(c.in(1).dtype != DType::String, c.node.describe(), ": cast to string is not supported");
           c.out(0) = with_dtype(c.in(0), c.in(1).dtype);
         },
         .reference = [](const KernelContext& c) { return convert(c.node, c.in(0), c.in(1).dtype()); },
         .flops = [](const Node&, const std::vector<const TensorType*>&, const std::vector<TensorType>&) {
           return 0.0;
         },
         .attributes = {int_attr("saturate", 1), string_attr("round_mode", "up")}});
}

}  // namespace tessera
