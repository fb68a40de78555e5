// The loop-IR -> LLVM IR emitter shared by codegen.cpp (kernel, statements,
// memory), codegen_expr.cpp (expressions, casts), codegen_math.cpp (math) and
// codegen_parallel.cpp (parallel loops). Internal to src/codegen/llvm.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <unordered_map>

#include "codegen/llvm/codegen.h"
#include "loop/stmt.h"

namespace tessera::codegen {

class CodeGen {
 public:
  CodeGen(llvm::LLVMContext& ctx, llvm::Module& module, const CodegenOptions& options);
  void emit_kernel(const loop::Kernel& kernel);

 private:
  // --- types (codegen_expr.cpp) ---
  llvm::Type* scalar_type(DType d);                   // register type of one element
  llvm::Type* memory_type(DType d);                   // in-memory type of one element
  llvm::Type* llvm_type(loop::Type t);                // register type of a value
  llvm::Type* memory_vector(DType d, int lanes);
  static bool is_signed(DType d);
  static bool is_narrow_float(DType d) { return d == DType::F16 || d == DType::BF16; }
  llvm::Value* splat(llvm::Value* v, int lanes);      // v itself when lanes == 1
  llvm::Value* int_const(loop::Type t, int64_t v);    // splatted to t's lanes

  // --- expressions (codegen_expr.cpp) ---
  llvm::Value* emit(const loop::Expr& e);
  llvm::Value* emit_binary(const loop::BinaryNode* op);
  llvm::Value* emit_int_div_mod(bool is_div, DType d, llvm::Value* a, llvm::Value* b, loop::Type t);
  llvm::Value* emit_float_arith(loop::ExprKind k, loop::Type t, llvm::Value* a, llvm::Value* b);
  llvm::Value* emit_cast(loop::Type to, loop::Type from, llvm::Value* v);
  llvm::Value* emit_call(const loop::Expr& call);
  llvm::Value* call_libm(const std::string& name, loop::Type t, llvm::Value* x);  // lane by lane
  // libm function `name` on vector arguments through libmvec (vector_math.h),
  // split into the native width; null when libmvec cannot serve it.
  llvm::Value* call_vector_math(const std::string& name, loop::Type t, const std::vector<llvm::Value*>& args);
  llvm::Value* vector_exp_f32(llvm::Value* x);  // exp of a float vector, inline (codegen_math.cpp)
  // Rounds a float register value to f16/bf16 precision (no-op for f32/f64).
  llvm::Value* round_to(DType d, llvm::Value* v);

  // --- memory (codegen.cpp) ---
  llvm::Value* buffer_ptr(const loop::Buffer& b);
  llvm::Value* emit_load(const loop::LoadNode* op);
  void emit_store(const loop::StoreNode* op);
  void emit_prefetch(const loop::LoadNode* op);
  void emit_keep_in_memory(const loop::Buffer& buf);
  llvm::Value* from_memory(DType d, llvm::Value* v);  // memory form -> register form
  llvm::Value* to_memory(DType d, llvm::Value* v);    // register form -> memory form
  // A contiguous vector access when `index` is a ramp with stride 1: the
  // element pointer of its first lane, else null.
  llvm::Value* contiguous_base(const loop::Buffer& b, const loop::Expr& index);

  // --- statements (codegen.cpp) ---
  void emit(const loop::Stmt& s);
  void emit_for(const loop::ForNode* op);
  void emit_serial_for(const loop::ForNode* op);
  void emit_unrolled_for(const loop::ForNode* op, int64_t extent);
  // Outlines the body into `void body(i64 i, i8* closure)` and calls the
  // runtime's tessera_parallel_for (codegen_parallel.cpp).
  void emit_parallel_for(const loop::ForNode* op);
  void emit_if(const loop::IfThenElseNode* op);
  void emit_allocate(const loop::AllocateNode* op);
  // Runs `then` only when the scalar `cond` holds; returns the value of
  // `then` (or `otherwise` when it does not hold) when `then` yields one.
  llvm::Value* emit_guarded(llvm::Value* cond, const std::function<llvm::Value*()>& then,
                            llvm::Value* otherwise);
  llvm::Function* runtime_function(const std::string& name, llvm::FunctionType* type);

  // Scoped bindings (rebinding a var or buffer hides the outer one).
  void bind(const loop::VarNode* v, llvm::Value* value);
  void unbind(const loop::VarNode* v, llvm::Value* saved);

  llvm::LLVMContext& ctx_;
  llvm::Module& module_;
  CodegenOptions options_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;
  std::unordered_map<const loop::VarNode*, llvm::Value*> vars_;
  std::unordered_map<const loop::BufferNode*, llvm::Value*> buffers_;  // element pointers
  // Temporaries in a stack slot of the function being emitted (element count):
  // their masked contiguous accesses become plain vector accesses plus a
  // blend, which LLVM can promote to registers (accumulator tiles).
  struct StackSlot {
    llvm::Function* fn;
    int64_t count;
  };
  std::unordered_map<const loop::BufferNode*, StackSlot> stack_slots_;
  bool private_window(const loop::Buffer& b, const loop::Expr& index, int lanes) const;
};

}  // namespace tessera::codegen
