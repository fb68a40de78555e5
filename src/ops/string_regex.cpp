// RegexFullMatch: whether each string matches a pattern (RE2 syntax) in full.
// Matching uses the linear-time NFA matcher of string_regex_engine.h.
#include <stdexcept>

#include "ops/op_helpers.h"
#include "ops/string_ops.h"
#include "ops/string_regex_engine.h"

namespace tessera {

namespace {

RegexMatcher compile(const Node& n) {
  const Attribute* a = n.attr("pattern");
  TESSERA_CHECK(a && a->kind == Attribute::Kind::String, n.describe(), ": requires the string attribute 'pattern'");
  try {
    return RegexMatcher(a->s);
  } catch (const std::invalid_argument& e) {
    TESSERA_FAIL(n.describe(), ": invalid regular expression '", a->s, "': ", e.what());
  }
}

void check_input(const Node& n, DType t) {
  TESSERA_CHECK(t == DType::String, n.describe(), ": input must be a string tensor, got ", dtype_name(t));
}

void infer_regex_full_match(InferContext& c) {
  const TensorType& x = c.in(0);
  check_input(c.node, x.dtype);
  compile(c.node);
  c.out(0) = {DType::Bool, x.dims, true};
}

std::vector<Tensor> run_regex_full_match(const KernelContext& c) {
  const Tensor& x = c.in(0);
  check_input(c.node, x.dtype());
  RegexMatcher re = compile(c.node);
  Tensor y(DType::Bool, x.dims());
  bool* o = y.data<bool>();
  for (size_t i = 0; i < x.strings().size(); ++i) o[i] = re.full_match(x.strings()[i]);
  return {y};
}

}  // namespace

void register_string_regex_ops(OpRegistry& r) {
  r.add({.name = "RegexFullMatch", .min_opset = 20, .mapping = MappingType::OneToOne,
         .infer = infer_regex_full_match, .reference = run_regex_full_match,
         .attributes = {string_attr("pattern").required()}});
}

}  // namespace tessera
