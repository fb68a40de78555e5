// Features of the machine code LLVM generated for a kernel (x86-64 assembly
// in AT&T syntax, JitKernel::assembly()): loops are found by backward jumps,
// and the instructions of the innermost ones are counted by class — vector
// FMAs, other float arithmetic, loads, stores, broadcasts, shuffles, gathers,
// calls and stack spills/reloads (vector moves to or from rsp/rbp-relative
// memory) — per iteration.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace tessera::cost {

enum class AsmOp : int {
  Instructions,
  Fma,          // vector or scalar fused multiply-adds
  FloatArith,   // other float arithmetic (add, mul, div, min/max, compare, convert, round)
  ScalarFloat,  // of Fma and FloatArith, those on one element (ss/sd)
  Loads,        // instructions reading memory (folded operands too)
  Stores,       // instructions writing memory
  Broadcasts,   // vbroadcast*, vpbroadcast*, embedded {1toN}
  Shuffles,     // permutes, shuffles, unpacks, inserts/extracts
  Gathers,      // vgather* / vscatter*
  Spills,       // vector stores to the stack
  Reloads,      // vector loads from the stack (folded ones too)
  Calls,
  Anchor,       // float element-operations (an FMA on 16 lanes is 16; a call counts as a transcendental)
  MemElements,  // 4-byte elements moved by loads and stores
  Chain,        // longest run of float instructions accumulating into one register (loop-carried latency)
  kCount
};
inline constexpr int kAsmOpCount = static_cast<int>(AsmOp::kCount);
std::string_view asm_op_name(AsmOp op);  // "instructions", "fma", ...

struct AsmCounts {
  std::array<double, kAsmOpCount> v{};
  double& operator[](AsmOp op) { return v[static_cast<int>(op)]; }
  double operator[](AsmOp op) const { return v[static_cast<int>(op)]; }
};

struct AsmFeatures {
  int loops = 0;            // backward jumps
  int innermost_loops = 0;  // loops holding no other loop
  AsmCounts inner;          // one iteration of every innermost loop, summed
  AsmCounts whole;          // every instruction of the text once
};

// Parses assembly text; text that is not assembly gives zero counts.
AsmFeatures asm_features(std::string_view assembly);

}  // namespace tessera::cost
