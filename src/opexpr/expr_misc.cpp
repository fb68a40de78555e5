// Tensor-expression definitions of the misc ops: registration of every misc
// family (expr_misc_*.cpp) and the ops that stay opaque, each with the reason
// the compiled runtime runs its reference kernel instead.
#include "opexpr/expr_misc.h"

namespace tessera::ops {

namespace misc {

loop::Stmt serial(const loop::Var& v, Expr extent, loop::Stmt body) {
  return loop::for_loop(v, loop::int_imm(0), std::move(extent), loop::ForKind::Serial, std::move(body));
}
loop::Stmt serial(const loop::Var& v, int64_t extent, loop::Stmt body) {
  return serial(v, loop::int_imm(extent), std::move(body));
}
Expr f64(double v) { return loop::float_imm(v, {DType::F64, 1}); }
Expr to_f64(const Expr& e) { return cast_to(e, DType::F64); }

}  // namespace misc

void register_misc_opaque(ExprRegistry& r) {
  const std::string random = "random: outputs are drawn from a generator, not computed from the inputs";
  for (const char* op : {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
                         "Multinomial"})
    r.set_opaque(op, "", random);
  const std::string sub = "control flow: runs subgraphs (the body graph is executed by the runtime)";
  for (const char* op : {"If", "Loop", "Scan"}) r.set_opaque(op, "", sub);
  const std::string str = "string tensors: strings are not a loop-IR element type";
  for (const char* op : {"StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch"}) r.set_opaque(op, "", str);
  r.set_opaque("TfIdfVectorizer", "",
               "n-gram pool matching over string (or integer) tokens; strings are not a loop-IR element type");
  r.set_opaque("NonMaxSuppression", "", "output row count depends on the data (number of selected boxes)");
  r.set_opaque("LabelEncoder", "ai.onnx.ml",
               "key -> value table lookup over string / int / float keys (string tensors are not a loop-IR type)");
  r.set_opaque("TreeEnsemble", "ai.onnx.ml",
               "tree traversal over attribute tables (data-dependent branching per tree)");
}

void register_misc_exprs(ExprRegistry& r) {
  register_misc_opaque(r);
  register_misc_small_exprs(r);
  register_misc_signal_exprs(r);
  register_misc_vision_exprs(r);
  register_misc_rnn_exprs(r);
}

}  // namespace tessera::ops
