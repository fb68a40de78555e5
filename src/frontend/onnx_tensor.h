// ONNX TensorProto <-> Tensor, and .pb / .npy tensor files.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tessera/tensor.h"

namespace onnx {
class TensorProto;
}

namespace tessera {

// Converts a TensorProto; external data is read relative to `base_dir`.
// `what` names the tensor in error messages.
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir, const std::string& what);
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& p);
// The tensor of a TensorProto that gives only its type and dims (no data),
// over `data` (its raw little-endian elements, held elsewhere: an artifact's
// mapped file, kept alive by `owner`) — viewed in place, not copied, when
// aligned to the element size. Numeric types only.
Tensor tensor_over_bytes(const onnx::TensorProto& p, std::string_view data, std::shared_ptr<void> owner,
                         const std::string& what);

// A serialized TensorProto file (the ONNX test-data format).
Tensor read_tensor_pb(const std::string& path);
void write_tensor_pb(const std::string& path, const Tensor& t, const std::string& name);

// NumPy .npy (version 1/2, little-endian, C order).
Tensor read_npy(const std::string& path);
// The same from the file's bytes (`path` names it in errors).
Tensor parse_npy(const std::string& bytes, const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

// Reads either format by extension (.npy, otherwise TensorProto).
Tensor read_tensor_file(const std::string& path);

}  // namespace tessera
