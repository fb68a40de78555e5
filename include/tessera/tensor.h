// A dense, row-major, host tensor: element type, dimensions and a shared,
// 64-byte aligned buffer. Copies share the buffer; clone() copies the data.
// Buffers of kMappedTensorBytes or more are page mappings of their own
// (page_mapped()): whole pages, zero until written, returned to the system
// when the last copy goes, with 64 KiB of present, read-only zero pages on
// each side (kernels' masked loads past a buffer's ends find them mapped).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/dtype.h"

namespace tessera {

using Dims = std::vector<int64_t>;

// Number of elements of a shape (1 for a scalar); throws on negative dims.
int64_t numel_of(const Dims& dims);
// "1x3x224x224" ("scalar" for rank 0).
std::string dims_to_string(const Dims& dims);
// Row-major strides in elements.
Dims strides_of(const Dims& dims);

// Buffers at least this large are mappings of their own (whole pages).
inline constexpr size_t kMappedTensorBytes = size_t{256} << 10;

class Tensor {
 public:
  Tensor() = default;  // undefined (absent optional input)
  Tensor(DType dtype, Dims dims);  // zero-filled
  // Wraps a copy of `values` with the given dims.
  template <class T>
  static Tensor from(Dims dims, const std::vector<T>& values);
  template <class T>
  static Tensor scalar(T value) { return from<T>({}, {value}); }
  // A non-owning tensor over `data` (numeric dtypes only): `data` must stay
  // valid while the view or any copy of it is used.
  static Tensor view(DType dtype, Dims dims, void* data);
  // A tensor over `data` that keeps `owner` (a mapped file, say) alive while
  // it or any copy of it lives (numeric dtypes only).
  static Tensor view(DType dtype, Dims dims, void* data, std::shared_ptr<void> owner);

  bool defined() const { return dtype_ != DType::Undefined; }
  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t dim(int64_t i) const { return dims_.at(static_cast<size_t>(i < 0 ? i + rank() : i)); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  // True when the buffer is a page mapping this tensor (and its copies) owns,
  // starting at raw() and spanning nbytes() rounded up to whole pages: its
  // pages may be remapped with the same contents (runtime/weight_store.h).
  bool page_mapped() const { return mapped_; }
  // True when this tensor owns its buffer and no other tensor shares it (a
  // copy, a reshaped or owner-keeping view): writing it changes no one else's.
  bool sole_owner() const { return storage_ && storage_.use_count() == 1; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <class T> T* data() { return static_cast<T*>(data_); }
  template <class T> const T* data() const { return static_cast<const T*>(data_); }
  template <class T> std::span<T> span() { return {data<T>(), static_cast<size_t>(numel_)}; }
  template <class T> std::span<const T> span() const { return {data<T>(), static_cast<size_t>(numel_)}; }

  // Same buffer, new dims with the same element count.
  Tensor reshaped(Dims dims) const;
  Tensor clone() const;
  // Element i converted to double / int64 whatever the dtype (for small tensors:
  // shapes, indices, scalars).
  double get_double(int64_t i) const;
  int64_t get_int(int64_t i) const;
  // All elements as int64 (shape and index tensors).
  std::vector<int64_t> to_int_vector() const;
  // Converts every element to `to` with C++ conversion rules (what Cast does).
  Tensor cast(DType to) const;

  // String tensors keep their elements here (dtype String); numel_ matches.
  std::vector<std::string>& strings() { return strings_; }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  DType dtype_ = DType::Undefined;
  Dims dims_;
  int64_t numel_ = 0;
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  bool mapped_ = false;
  std::vector<std::string> strings_;
};

template <class T>
Tensor Tensor::from(Dims dims, const std::vector<T>& values) {
  Tensor t(DTypeOf<T>::value, std::move(dims));
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw std::invalid_argument("Tensor::from: " + std::to_string(values.size()) +
                                " values for shape " + dims_to_string(t.dims()));
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

}  // namespace tessera
