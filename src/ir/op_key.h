// The key of an op in the op registry (ir/op_registry.h) and the expression
// registry (opexpr/expr_registry.h): its domain ("ai.onnx" is the default
// domain, "") and name.
#pragma once

#include <string>

namespace tessera {

inline std::string op_key(const std::string& op, const std::string& domain) {
  return (domain == "ai.onnx" ? std::string() : domain) + "::" + op;
}

}  // namespace tessera
