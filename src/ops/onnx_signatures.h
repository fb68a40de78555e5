// ONNX's input and output signatures of every version of every ONNX operator
// (default domain, ai.onnx.ml, ai.onnx.preview), generated from ONNX's own
// changelogs by scripts/gen_op_signatures.py. op_registry() gives each
// registered op of those domains its rows, so import and the verifier check
// input and output counts and omitted ('') inputs exactly as ONNX's checker
// and ONNX Runtime do, per opset.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

struct OnnxSignatureRow {
  const char* domain;   // "" = the default ONNX domain
  const char* op;
  int64_t since_opset;  // the version that introduced these parameters
  const char* inputs;   // notation of Signature (ir/op_registry.h)
  const char* outputs;
};

// Every row, by domain and op, in ascending since_opset.
const std::vector<OnnxSignatureRow>& onnx_signature_rows();

}  // namespace tessera
