// LabelEncoder (ai.onnx.ml): maps each element through a key -> value table.
//
// Versions by attribute: v1 classes_strings (string <-> int64 index), v2
// keys_*/values_* lists (string, int64, float), v4 keys_tensor /
// values_tensor / default_tensor (any of string, int16/32/64, float, double).
#include <cmath>
#include <cstring>
#include <map>

#include "ops/ml_ops.h"
#include "ops/op_attrs.h"
#include "ops/op_helpers.h"

namespace tessera {

namespace {

enum class KeyKind { String, Integer, Float };

KeyKind kind_of(DType t) {
  if (t == DType::String) return KeyKind::String;
  return is_float(t) ? KeyKind::Float : KeyKind::Integer;
}

// The op's table, read from whichever attributes are present.
struct Encoder {
  DType key_type = DType::Undefined;
  std::map<std::string, int64_t> by_string;  // key -> position in `values`
  std::map<int64_t, int64_t> by_int;
  std::map<double, int64_t> by_float;        // NaN keys are kept apart
  int64_t nan_value = -1;
  Tensor values;    // 1-D, the output dtype
  Tensor fallback;  // one element, the output dtype
};

const Attribute* attr_of(const Node& n, const char* key, Attribute::Kind kind) {
  const Attribute* a = n.attr(key);
  TESSERA_CHECK(!a || a->kind == kind, n.describe(), ": attribute '", key, "' has the wrong type");
  return a;
}

Tensor strings_tensor(const std::vector<std::string>& v) {
  Tensor t(DType::String, {static_cast<int64_t>(v.size())});
  t.strings() = v;
  return t;
}

Tensor floats_tensor(const std::vector<float>& v) {
  return Tensor::from<float>({static_cast<int64_t>(v.size())}, v);
}

// Exactly one of the given list/tensor attributes as a 1-D tensor.
Tensor one_of(const Node& n, const char* what, const char* strings, const char* ints, const char* floats,
              const char* tensor) {
  const Attribute* s = attr_of(n, strings, Attribute::Kind::Strings);
  const Attribute* i = attr_of(n, ints, Attribute::Kind::Ints);
  const Attribute* f = attr_of(n, floats, Attribute::Kind::Floats);
  const Attribute* t = attr_of(n, tensor, Attribute::Kind::Tensor);
  int count = (s != nullptr) + (i != nullptr) + (f != nullptr) + (t != nullptr);
  TESSERA_CHECK(count == 1, n.describe(), ": exactly one of ", strings, ", ", ints, ", ", floats, " and ", tensor,
                " must be set (", what, "), found ", count);
  if (s) return strings_tensor(s->strings);
  if (i) return Tensor::from<int64_t>({static_cast<int64_t>(i->ints.size())}, i->ints);
  if (f) return floats_tensor(f->floats);
  DType dt = t->t.dtype();
  TESSERA_CHECK(dt == DType::String || dt == DType::I16 || dt == DType::I32 || dt == DType::I64 ||
                    dt == DType::F32 || dt == DType::F64,
                n.describe(), ": ", tensor, " has unsupported element type ", dtype_name(dt));
  return t->t.reshaped({t->t.numel()});
}

// The default output for values of type `vt`.
Tensor default_of(const OpAttrs& attrs, DType vt) {
  const Node& n = attrs.node();
  if (const Attribute* d = attr_of(n, "default_tensor", Attribute::Kind::Tensor)) {
    TESSERA_CHECK(d->t.dtype() == vt && d->t.numel() == 1, n.describe(),
                  ": default_tensor must hold one element of the values' type ", dtype_name(vt), ", got ",
                  dtype_name(d->t.dtype()), "[", dims_to_string(d->t.dims()), "]");
    return d->t.reshaped({1});
  }
  if (vt == DType::String) return strings_tensor({attrs.s("default_string")});
  if (is_float(vt)) return floats_tensor({attrs.f("default_float")}).cast(vt);
  return Tensor::from<int64_t>({1}, {attrs.i("default_int64")}).cast(vt);
}

void add_keys(Encoder& e, const Tensor& keys) {
  for (int64_t i = 0; i < keys.numel(); ++i) {
    switch (kind_of(keys.dtype())) {
      case KeyKind::String: e.by_string.emplace(keys.strings()[static_cast<size_t>(i)], i); break;
      case KeyKind::Integer: e.by_int.emplace(keys.get_int(i), i); break;
      case KeyKind::Float: {
        double v = keys.get_double(i);
        if (std::isnan(v)) {
          if (e.nan_value < 0) e.nan_value = i;
        } else {
          e.by_float.emplace(v, i);
        }
        break;
      }
    }
  }
}

// `input` is the input's dtype (v1 picks its direction from it).
Encoder read_encoder(const OpAttrs& attrs, DType input) {
  const Node& n = attrs.node();
  Encoder e;
  if (const Attribute* cls = attr_of(n, "classes_strings", Attribute::Kind::Strings)) {
    // Version 1: strings map to their index, indices to their string.
    Tensor classes = strings_tensor(cls->strings);
    int64_t count = classes.numel();
    std::vector<int64_t> pos(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) pos[static_cast<size_t>(i)] = i;
    Tensor positions = Tensor::from<int64_t>({count}, pos);
    if (input == DType::String) {
      e.key_type = DType::String;
      add_keys(e, classes);
      e.values = positions;
    } else {
      e.key_type = DType::I64;
      add_keys(e, positions);
      e.values = classes;
    }
    e.fallback = default_of(attrs, e.values.dtype());
    return e;
  }
  Tensor keys = one_of(n, "keys", "keys_strings", "keys_int64s", "keys_floats", "keys_tensor");
  e.values = one_of(n, "values", "values_strings", "values_int64s", "values_floats", "values_tensor");
  TESSERA_CHECK(keys.numel() == e.values.numel(), n.describe(), ": ", keys.numel(), " keys but ", e.values.numel(),
                " values");
  e.key_type = keys.dtype();
  add_keys(e, keys);
  e.fallback = default_of(attrs, e.values.dtype());
  return e;
}

void check_input(const Node& n, const Encoder& e, DType input) {
  TESSERA_CHECK(input == e.key_type, n.describe(), ": input has element type ", dtype_name(input),
                " but the keys are ", dtype_name(e.key_type));
}

void infer_label_encoder(InferContext& c) {
  const TensorType& x = c.in(0);
  Encoder e = read_encoder(op_attrs(c), x.dtype);
  check_input(c.node, e, x.dtype);
  c.out(0) = {e.values.dtype(), x.dims, true};
}

// Position of element i of x in the table, or -1.
int64_t find_key(const Encoder& e, const Tensor& x, int64_t i) {
  switch (kind_of(x.dtype())) {
    case KeyKind::String: {
      auto it = e.by_string.find(x.strings()[static_cast<size_t>(i)]);
      return it == e.by_string.end() ? -1 : it->second;
    }
    case KeyKind::Integer: {
      auto it = e.by_int.find(x.get_int(i));
      return it == e.by_int.end() ? -1 : it->second;
    }
    case KeyKind::Float: {
      double v = x.get_double(i);
      if (std::isnan(v)) return e.nan_value;
      auto it = e.by_float.find(v);
      return it == e.by_float.end() ? -1 : it->second;
    }
  }
  return -1;
}

std::vector<Tensor> run_label_encoder(const KernelContext& c) {
  const Tensor& x = c.in(0);
  Encoder e = read_encoder(op_attrs(c), x.dtype());
  check_input(c.node, e, x.dtype());
  Tensor y(e.values.dtype(), x.dims());
  size_t width = dtype_size(y.dtype());
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t k = find_key(e, x, i);
    const Tensor& src = k >= 0 ? e.values : e.fallback;
    int64_t j = k >= 0 ? k : 0;
    if (y.dtype() == DType::String) {
      y.strings()[static_cast<size_t>(i)] = src.strings()[static_cast<size_t>(j)];
    } else {
      std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>(i) * width,
                  static_cast<const char*>(src.raw()) + static_cast<size_t>(j) * width, width);
    }
  }
  return {y};
}

}  // namespace

void register_ml_label_encoder_ops(OpRegistry& r) {
  // Each output element is the image of one input element.
  r.add({.name = "LabelEncoder", .domain = "ai.onnx.ml", .min_opset = 1, .mapping = MappingType::OneToOne,
         .infer = infer_label_encoder, .reference = run_label_encoder,
         .attributes = {strings_attr("classes_strings"), float_attr("default_float", -0.0f),
                        int_attr("default_int64", -1), string_attr("default_string", "_Unused"),
                        tensor_attr("default_tensor"), floats_attr("keys_floats"), ints_attr("keys_int64s"),
                        strings_attr("keys_strings"), tensor_attr("keys_tensor"), floats_attr("values_floats"),
                        ints_attr("values_int64s"), strings_attr("values_strings"), tensor_attr("values_tensor")}});
}

}  // namespace tessera
