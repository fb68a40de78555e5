// Vector math from glibc's libmvec: the vector variants of expf, logf, tanhf,
// erff, powf ... (x86-64 vector ABI names such as _ZGVeN16v_expf for 16
// floats with AVX-512, _ZGVdN8v_expf for 8 with AVX2), so that a vectorized
// kernel's transcendentals stay vectors instead of one libm call per lane.
// glibc documents them within 4 ulp of the correctly rounded result.
//
// The library is opened once, at first use; where it is missing the code
// generator keeps calling libm lane by lane.
#pragma once

#include <string>

namespace tessera::codegen {

// The libmvec symbol for libm function `name` ("exp", "pow" ...) on vectors
// of `lanes` elements of float (or double when f64) with `arity` arguments,
// for AVX-512 (`avx512`) or AVX2; empty when libmvec has no such variant.
std::string vector_math_symbol(const std::string& name, bool f64, int lanes, bool avx512);

// The address of a libmvec symbol; null when libmvec or the symbol is absent.
void* vector_math_address(const std::string& symbol);

}  // namespace tessera::codegen
