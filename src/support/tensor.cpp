// Tensor storage, shape helpers and element conversion.
#include "tessera/tensor.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <sys/mman.h>

#include "support/dtype_dispatch.h"
#include "support/error.h"
#include "support/int_div.h"
#include "support/memory.h"

namespace tessera {

int64_t numel_of(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    TESSERA_CHECK(d >= 0, "negative dimension in shape ", dims_to_string(dims));
    TESSERA_CHECK(d == 0 || n <= (int64_t{1} << 40) / d, "shape ", dims_to_string(dims),
                  " has too many elements");
    n *= d;
  }
  return n;
}

std::string dims_to_string(const Dims& dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += 'x';
    s += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return s;
}

Dims strides_of(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i)
    s[static_cast<size_t>(i)] = s[static_cast<size_t>(i) + 1] * dims[static_cast<size_t>(i) + 1];
  return s;
}

namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;
constexpr size_t kPageBytes = 4096;

// Readable pages kept mapped on each side of a mapped buffer. Kernels read
// out of bounds under a mask: a padded convolution or pool computes its
// border pixels with masked loads at unclamped indices, up to its padding's
// rows before the input's first element (a 5x5 depthwise convolution on a
// blocked 14x14 map: 1,920 bytes; 3 rows of a blocked 224-wide map: 43 KB)
// and as far after its last. Masked-off lanes load nothing, but where they
// fall on a page that is not present the processor takes a slow assist for
// each such load, enough to slow a depthwise layer that reads an activation
// at the start of the arena (a mapping of its own) markedly
// (bench/MEASUREMENTS.md, "Readable margins"). The margins are
// read-only (a stray store still faults) and read once here, which maps
// the kernel's shared zero page: present, with no memory of their own.
constexpr size_t kMarginBytes = size_t{64} << 10;

// A zero-filled buffer of `bytes` (>= kMappedTensorBytes) as a private
// anonymous mapping of its own, `*len` bytes of whole pages, with
// kMarginBytes of readable zero pages before and after; aligned to 2 MiB
// from 2 MiB on. `*region` and `*region_len` are the whole mapping (for
// munmap). Null when the system refuses.
void* map_buffer(size_t bytes, size_t* len, void** region, size_t* region_len) {
  const size_t align = bytes >= kHugePageBytes ? kHugePageBytes : kPageBytes;
  const size_t n = round_up(bytes, kPageBytes), total = kMarginBytes + n + kMarginBytes + (align - kPageBytes);
  void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto base = reinterpret_cast<uintptr_t>(m), at = round_up(base + kMarginBytes, align);
  const uintptr_t lo = at - kMarginBytes, hi = at + n + kMarginBytes;
  // Only the buffer and its margins stay mapped: no slack for a huge page to
  // spill into (the margins are not advised to be huge either).
  if (lo > base) munmap(m, lo - base);
  if (base + total > hi) munmap(reinterpret_cast<void*>(hi), base + total - hi);
  auto* p = reinterpret_cast<void*>(at);
  for (uintptr_t margin : {lo, at + n}) {
    mprotect(reinterpret_cast<void*>(margin), kMarginBytes, PROT_READ);
    for (size_t off = 0; off < kMarginBytes; off += kPageBytes)
      (void)*reinterpret_cast<volatile const char*>(margin + off);  // present: the zero page
  }
  if (align == kHugePageBytes) madvise(p, n, MADV_HUGEPAGE);  // advice only: failure is harmless
  *len = n;
  *region = reinterpret_cast<void*>(lo);
  *region_len = hi - lo;
  return p;
}

}  // namespace

Tensor::Tensor(DType dtype, Dims dims) : dtype_(dtype), dims_(std::move(dims)) {
  numel_ = numel_of(dims_);
  if (dtype_ == DType::String) {
    strings_.resize(static_cast<size_t>(numel_));
    return;
  }
  TESSERA_CHECK(dtype_size(dtype_) > 0, "cannot allocate a tensor of type ", dtype_name(dtype_));
  check_tensor_fits(dtype_, dims_, "a tensor");
  size_t bytes = nbytes();
  auto out_of_memory = [&](size_t alloc) {
    TESSERA_FAIL("cannot allocate ", format_bytes(static_cast<int64_t>(alloc)), " for a tensor of shape ",
                 dims_to_string(dims_), " (", dtype_name(dtype_), "): out of memory");
  };
  if (bytes >= kMappedTensorBytes) {
    // Large buffers are mappings of their own: the kernel's zero pages (none
    // resident until written), given back to the system when freed (no heap
    // left holding them), whole pages (runtime/weight_store.h may back a
    // constant's by a file). From 2 MiB on they are aligned to and backed by
    // 2 MiB pages where the kernel allows it: kernels walking them by rows (a
    // GEMM's A, its packed B) would otherwise miss the TLB on every row.
    size_t len = 0, region_len = 0;
    void* region = nullptr;
    void* p = map_buffer(bytes, &len, &region, &region_len);
    if (!p) out_of_memory(bytes);
    storage_ = std::shared_ptr<void>(p, [region, region_len](void*) { munmap(region, region_len); });
    data_ = p;
    mapped_ = true;
    return;
  }
  size_t alloc = round_up(bytes == 0 ? 1 : bytes, 64);
  void* p = std::aligned_alloc(64, alloc);
  if (!p) out_of_memory(alloc);
  std::memset(p, 0, alloc);
  storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  data_ = p;
}

Tensor Tensor::view(DType dtype, Dims dims, void* data) {
  TESSERA_CHECK(dtype_size(dtype) > 0, "cannot make a view of element type ", dtype_name(dtype));
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.numel_ = numel_of(t.dims_);
  t.data_ = data;
  return t;
}

Tensor Tensor::view(DType dtype, Dims dims, void* data, std::shared_ptr<void> owner) {
  Tensor t = view(dtype, std::move(dims), data);
  t.storage_ = std::move(owner);
  return t;
}

Tensor Tensor::reshaped(Dims dims) const {
  TESSERA_CHECK(numel_of(dims) == numel_, "cannot reshape ", dims_to_string(dims_), " to ",
                dims_to_string(dims));
  Tensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = *this;
  if (!defined() || dtype_ == DType::String) return t;
  Tensor c(dtype_, dims_);
  std::memcpy(c.data_, data_, nbytes());
  return c;
}

double Tensor::get_double(int64_t i) const {
  TESSERA_CHECK(i >= 0 && i < numel_, "element ", i, " out of range for ", numel_);
  return dispatch_dtype(dtype_, [&]<class T>() -> double {
    return static_cast<double>(static_cast<compute_t<T>>(data<T>()[i]));
  });
}

int64_t Tensor::get_int(int64_t i) const {
  TESSERA_CHECK(i >= 0 && i < numel_, "element ", i, " out of range for ", numel_);
  return dispatch_dtype(dtype_, [&]<class T>() -> int64_t {
    return static_cast<int64_t>(static_cast<compute_t<T>>(data<T>()[i]));
  });
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[static_cast<size_t>(i)] = get_int(i);
  return v;
}

namespace {
// Float -> integer conversion that saturates NaN/out-of-range instead of UB.
template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return To(0);
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<To>::max());
    double d = static_cast<double>(v);
    if (d <= lo) return std::numeric_limits<To>::min();
    if (d >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}
}  // namespace

Tensor Tensor::cast(DType to) const {
  TESSERA_CHECK(defined(), "cast of an undefined tensor");
  if (to == dtype_) return clone();
  TESSERA_CHECK(dtype_ != DType::String && to != DType::String,
                "casts to or from string are not supported");
  Tensor out(to, dims_);
  dispatch_dtype(dtype_, [&]<class S>() {
    dispatch_dtype(to, [&]<class D>() {
      const S* src = data<S>();
      D* dst = out.data<D>();
      for (int64_t i = 0; i < numel_; ++i) {
        auto v = static_cast<compute_t<S>>(src[i]);
        dst[i] = to_storage<D>(convert<compute_t<D>>(v));
      }
    });
  });
  return out;
}

}  // namespace tessera
