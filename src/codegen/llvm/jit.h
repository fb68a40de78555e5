// The LLVM JIT backend: compiles a loop-IR Kernel to native x86-64 code with
// LLVM 14's ORC LLJIT and runs it on raw buffers. No LLVM type appears here;
// only src/codegen/ is compiled against LLVM's headers.
//
// A compiled kernel has the C signature `void name(void** args)`, args[i]
// pointing at the first element of Kernel::params()[i]. It computes exactly
// what loop::run_kernel computes (expr.h's semantics), except that math
// intrinsics may differ by an ulp or so (the evaluator rounds a double result,
// the JIT calls the float libm/LLVM routine), and without the evaluator's
// bounds checks.
//
// Contraction (JitOptions::contract, on by default) lets a multiply feeding an
// add become one fused multiply-add, rounded once — as BLAS libraries and
// oneDNN compute, and twice the arithmetic throughput of separate multiplies
// and adds; results may differ from the evaluator's in the last bits. Fast
// math (JitOptions::fast_math, off by default) also allows reassociation.
// NaN and infinity behave as without either (no nnan/ninf).
//
// Every kernel is compiled to a relocatable object file (JitKernel::object)
// which ORC then links; an artifact stores those bytes, and jit_link links
// them again in another process with no lowering and no optimization — the
// same machine code, so the same results bit for bit. Linked code runs as
// is: an object is as trusted as a shared library (object_check.h checks its
// structure, not what it does).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loop/stmt.h"
#include "support/target.h"
#include "tessera/tensor.h"

namespace tessera::codegen {

// Instruction set to compile for (support/target.h). Host resolves to
// host_isa() (and tunes for the host CPU); the others force that baseline,
// which the host must support.
using ::tessera::Isa;
using ::tessera::isa_name;

// The best Isa the host supports (from LLVM's sys::getHostCPUFeatures):
// AVX512 when AVX-512F is present, else AVX2, else Generic.
Isa host_isa();
// True when code for `isa` runs on this host.
bool host_supports(Isa isa);

struct JitOptions {
  Isa isa = Isa::Host;
  bool contract = true;    // a * b + c as one fused multiply-add
  bool fast_math = false;  // reassociation and contraction only
  // Print to stderr at compile time: the loop IR, the optimized LLVM IR, the assembly.
  bool dump_ir = false, dump_llvm = false, dump_asm = false;
};

class JitKernel {
 public:
  using Entry = void (*)(void**);
  struct Impl;
  explicit JitKernel(std::unique_ptr<Impl> impl);
  ~JitKernel();
  JitKernel(const JitKernel&) = delete;
  JitKernel& operator=(const JitKernel&) = delete;

  // Runs the kernel; buffers[i] is the data of Kernel::params()[i] (unchecked).
  void run(const std::vector<void*>& buffers) const;
  // Runs on tensors, checking their count, dtypes and element counts against
  // the parameters (outputs are written in place).
  void run(const std::vector<Tensor>& tensors) const;

  Entry entry() const;
  const std::string& name() const;     // the kernel's name
  Isa isa() const;                     // the resolved ISA (never Host)
  const std::string& cpu() const;      // the LLVM CPU name compiled for
  const std::string& features() const;  // the LLVM target features compiled for ("+avx2,..."; may be empty)
  // The kernel's loop-IR text and its optimized LLVM IR module (both empty
  // for a linked kernel). Kept compressed (they are read only by dumps, the
  // tuner's assembly features and tests), so each call decompresses.
  std::string loop_ir() const;
  std::string llvm_ir() const;
  bool has_ir() const;  // false for a kernel linked from an object
  // The assembly of the optimized module (made on first request; a note for
  // a linked kernel, which has no IR).
  std::string assembly() const;
  const std::string& object() const;  // the relocatable ELF object the kernel was linked from
  const std::string& symbol() const;  // the object's entry symbol
  const std::vector<loop::Buffer>& params() const;  // the parameters, in calling order

 private:
  std::unique_ptr<Impl> impl_;
};

// Compiles a kernel, or returns the one compiled before for the same kernel
// text and options (a process-wide, thread-safe cache). Throws tessera::Error
// on IR the backend does not support and when the host lacks the forced ISA.
std::shared_ptr<JitKernel> jit_compile(const loop::Kernel& kernel, const JitOptions& options = {});

// What jit_link needs besides the object: the kernel's name, its entry
// symbol, the ISA it was compiled for (checked against the host) and its
// parameters (their count is checked by run()).
struct JitLinkInfo {
  std::string name, symbol;
  Isa isa = Isa::Host;
  std::vector<loop::Buffer> params;
};

// Links a kernel from an object made by jit_compile (JitKernel::object):
// no lowering and no optimization. Throws tessera::Error when the host lacks
// the ISA, the object is malformed (object_check.h) or does not link.
std::shared_ptr<JitKernel> jit_link(const std::string& object, const JitLinkInfo& info);

// The LLVM CPU name and target features code for `isa` is compiled with on
// this host (Host: the host's own), as an artifact records them.
struct TargetDesc {
  std::string cpu, features;
};
TargetDesc target_desc(Isa isa);
// The features among `features` ("+avx2,+fma,-amx-tile": the "+" ones) this
// host lacks; empty when it runs code compiled for them.
std::vector<std::string> missing_host_features(const std::string& features);

// Number of kernels in the cache; drops them all (kernels in use stay alive).
size_t jit_cache_size();
void jit_cache_clear();

}  // namespace tessera::codegen
