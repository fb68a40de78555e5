#include "support/memory.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "support/checked_int.h"
#include "support/error.h"

namespace tessera {

std::string format_bytes(int64_t bytes) {
  char buf[64];
  if (bytes < 1024 && bytes > -1024) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
    return buf;
  }
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  size_t u = 0;
  // Move up a unit when the value would print as 1024.0.
  while (u + 1 < std::size(kUnits) && (v >= 1023.95 || v <= -1023.95)) {
    v /= 1024.0;
    ++u;
  }
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

int64_t memory_limit_bytes() {
  if (const char* env = std::getenv("TESSERA_MEMORY_LIMIT"))
    if (auto v = parse_int64(env); v && *v > 0) return *v;
  static const int64_t physical = [] {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    auto bytes = pages > 0 && size > 0 ? checked_mul(pages, size) : std::nullopt;
    return bytes.value_or(INT64_MAX);
  }();
  return physical;
}

std::optional<int64_t> tensor_bytes(DType dtype, const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    auto p = d >= 0 ? checked_mul(n, d) : std::nullopt;
    if (!p) return std::nullopt;
    n = *p;
  }
  if (dtype == DType::String) return 0;
  return checked_mul(n, static_cast<int64_t>(dtype_size(dtype)));
}

void check_tensor_fits(DType dtype, const Dims& dims, const std::string& what) {
  std::optional<int64_t> bytes = tensor_bytes(dtype, dims);
  int64_t limit = memory_limit_bytes();
  if (bytes && *bytes <= limit) return;
  TESSERA_FAIL(what, " needs ", bytes ? format_bytes(*bytes) : std::string("more than 2^63 bytes"), " (",
               dims_to_string(dims), " ", dtype_name(dtype), "), more than this machine's memory (",
               format_bytes(limit), ")");
}

}  // namespace tessera
