// Memory sizes: a byte count for humans, and the most one tensor (or a plan's
// activations) may ask for. A size no machine of this kind could hold — a
// shape from a hostile model, an Expand to 2^39 elements, --shape
// 100000x3x224x224 — is an Error naming what asked, before anything is
// allocated, instead of std::bad_alloc or the OOM killer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tessera/dtype.h"
#include "tessera/tensor.h"

namespace tessera {

// A byte count for humans: "0 B", "512 B", "1.5 KiB", "12.3 MiB", "2.0 GiB".
std::string format_bytes(int64_t bytes);

// The limit: this machine's physical memory (sysconf), or
// $TESSERA_MEMORY_LIMIT bytes when set (a test can lower it).
int64_t memory_limit_bytes();

// The bytes of a tensor of `dims` and `dtype`, or nullopt when the product
// overflows 64 bits (strings count as 0: their storage grows as they are set).
std::optional<int64_t> tensor_bytes(DType dtype, const Dims& dims);

// Throws "<what> needs N (shape, type), more than this machine's memory (M)"
// when a tensor of `dims` and `dtype` exceeds the limit.
void check_tensor_fits(DType dtype, const Dims& dims, const std::string& what);

}  // namespace tessera
