// Reference evaluator of the loop IR: runs a Kernel on Tensors by direct
// interpretation, lane by lane, with the semantics of expr.h. Every load and
// store is bounds-checked. It is the oracle for the simplifier, later passes
// and the JIT. Loops of every kind run serially in order; temporaries from
// Allocate start zero-filled.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "loop/stmt.h"
#include "tessera/tensor.h"

namespace tessera::loop {

// A value during evaluation: one entry per lane, in `ints` for integer and
// bool types (u64 as its bit pattern, bool as 0/1) or in `floats` for float
// types (already rounded to the type).
struct EvalValue {
  Type type;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  static EvalValue of_int(Type t, int64_t v);      // every lane v (wrapped to t)
  static EvalValue of_float(Type t, double v);     // every lane v (rounded to t)
  int64_t int_lane(int i) const { return ints[static_cast<size_t>(i)]; }
  double float_lane(int i) const { return floats[static_cast<size_t>(i)]; }
  // Lane i as a double whatever the type (u64 converted from unsigned).
  double as_double(int i) const;
  std::string to_string() const;  // "5", "[1, 2, 3, 4]", "1.5"
};

class Evaluator {
 public:
  void bind(const Var& v, EvalValue value);
  // Binds a buffer to a tensor of the buffer's dtype (the tensor's storage is
  // shared: stores are visible to the caller).
  void bind(const Buffer& b, Tensor t);
  EvalValue eval(const Expr& e);
  void exec(const Stmt& s);

 private:
  EvalValue eval_binary(ExprKind k, const EvalValue& a, const EvalValue& b);
  EvalValue eval_cast(Type t, const EvalValue& v);
  Tensor& buffer(const Buffer& b);
  void check_index(const Buffer& b, const Tensor& t, int64_t index, const char* what);

  std::unordered_map<const VarNode*, EvalValue> vars_;
  std::unordered_map<const BufferNode*, Tensor> buffers_;
};

// Runs a kernel with args bound to k.params() in order; outputs are written in
// place. Throws when an argument's dtype or element count does not match.
void run_kernel(const Kernel& k, const std::vector<Tensor>& args);

}  // namespace tessera::loop
