// Loop IR -> LLVM IR. A Kernel becomes one function `void name(i8** args)`
// whose body loads each parameter buffer from args (in Kernel::params()
// order) and runs the kernel's statement. Used by jit.cpp; only LLVM forward
// declarations here.
//
// Values live in registers as: bool -> i1, integers -> iN (signedness from
// the dtype), f32/f16/bf16 -> float, f64 -> double, vectors -> fixed LLVM
// vectors. In memory bool is i8, f16 is half and bf16 is i16. An f16/bf16
// value is rounded to its type after every operation, as the evaluator does.
#pragma once

#include <memory>
#include <string>

#include "loop/stmt.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace tessera::codegen {

struct CodegenOptions {
  std::string function_name;  // the symbol of the kernel function
  std::string cpu;            // "target-cpu" attribute of the function
  std::string features;       // "target-features" attribute ("+avx2,...")
  bool contract = true;       // contract (FMA formation) on float arithmetic
  bool fast_math = false;     // reassoc + contract on float arithmetic
  // Vector width (bits) of libmvec's math variants to call for vectorized
  // transcendentals: 512 (AVX-512), 256 (AVX2), 0: libm lane by lane.
  int vector_math_bits = 0;
};

// Builds the module holding the kernel's function (not yet verified or
// optimized). Throws tessera::Error on IR the backend does not support.
std::unique_ptr<llvm::Module> emit_kernel_module(const loop::Kernel& kernel, llvm::LLVMContext& ctx,
                                                 const CodegenOptions& options);

}  // namespace tessera::codegen
