// Loop-IR kernels and statements -> LLVM IR: the kernel function, loops,
// conditionals, temporaries and the memory accesses (contiguous, masked,
// gathered/scattered).
#include "codegen/llvm/codegen.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>

#include "codegen/llvm/codegen_impl.h"
#include "support/error.h"

namespace tessera::codegen {

using namespace loop;
using llvm::Value;

namespace {
// Fully unrolled when an Unrolled loop's extent is a constant up to this.
constexpr int64_t kMaxFullUnroll = 64;
// Temporaries with a constant size up to this many bytes live on the stack.
constexpr int64_t kMaxStackBytes = 16 * 1024;

llvm::Type* like(llvm::Type* shape, llvm::Type* elem) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(shape)) return llvm::FixedVectorType::get(elem, vt->getNumElements());
  return elem;
}
}  // namespace

CodeGen::CodeGen(llvm::LLVMContext& ctx, llvm::Module& module, const CodegenOptions& options)
    : ctx_(ctx), module_(module), options_(options), b_(ctx) {
  if (options_.fast_math || options_.contract) {
    llvm::FastMathFlags fmf;
    if (options_.fast_math) fmf.setAllowReassoc();
    fmf.setAllowContract(true);
    b_.setFastMathFlags(fmf);
  }
}

void CodeGen::bind(const VarNode* v, Value* value) { vars_[v] = value; }

void CodeGen::unbind(const VarNode* v, Value* saved) {
  if (saved) vars_[v] = saved;
  else vars_.erase(v);
}

void CodeGen::emit_kernel(const Kernel& k) {
  llvm::Type* i8p = b_.getInt8PtrTy();
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), {i8p->getPointerTo()}, false);
  fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, options_.function_name, module_);
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  if (!options_.cpu.empty()) fn_->addFnAttr("target-cpu", options_.cpu);
  if (!options_.features.empty()) fn_->addFnAttr("target-features", options_.features);
  fn_->addParamAttr(0, llvm::Attribute::NoCapture);
  fn_->addParamAttr(0, llvm::Attribute::ReadOnly);
  llvm::Argument* args = fn_->getArg(0);
  args->setName("args");
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
  std::vector<Buffer> params = k.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const Buffer& p = params[i];
    TESSERA_CHECK(!buffers_.count(p.get()), "LLVM codegen: kernel ", k.name, " lists buffer '", p.name(),
                  "' twice among its parameters");
    Value* slot = b_.CreateConstInBoundsGEP1_64(i8p, args, i);
    Value* raw = b_.CreateLoad(i8p, slot, p.name() + ".raw");
    buffers_[p.get()] = b_.CreatePointerCast(raw, memory_type(p.dtype())->getPointerTo(), p.name());
  }
  emit(k.body);
  b_.CreateRetVoid();
}

llvm::Function* CodeGen::runtime_function(const std::string& name, llvm::FunctionType* type) {
  llvm::FunctionCallee f = module_.getOrInsertFunction(name, type);
  auto* fn = llvm::cast<llvm::Function>(f.getCallee());
  fn->setDoesNotThrow();
  return fn;
}

// --- statements ---------------------------------------------------------------

void CodeGen::emit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::For: emit_for(s.as<ForNode>()); return;
    case StmtKind::Store: emit_store(s.as<StoreNode>()); return;
    case StmtKind::LetStmt: {
      auto* op = s.as<LetStmtNode>();
      Value* v = emit(op->value);
      auto it = vars_.find(op->var.node());
      Value* saved = it == vars_.end() ? nullptr : it->second;
      bind(op->var.node(), v);
      emit(op->body);
      unbind(op->var.node(), saved);
      return;
    }
    case StmtKind::IfThenElse: emit_if(s.as<IfThenElseNode>()); return;
    case StmtKind::Allocate: emit_allocate(s.as<AllocateNode>()); return;
    case StmtKind::Block:
      for (const Stmt& st : s.as<BlockNode>()->stmts) emit(st);
      return;
    case StmtKind::Evaluate:
      if (Expr l = prefetched(s); l.defined()) emit_prefetch(l.as<LoadNode>());
      else if (Buffer kept = kept_in_memory(s); kept.defined()) emit_keep_in_memory(kept);
      else emit(s.as<EvaluateNode>()->value);
      return;
  }
}

void CodeGen::emit_for(const ForNode* op) {
  switch (op->for_kind) {
    case ForKind::Parallel: emit_parallel_for(op); return;
    case ForKind::Unrolled: {
      const int64_t* n = as_const_int(op->extent);
      if (n && *n <= kMaxFullUnroll) {
        emit_unrolled_for(op, *n);
        return;
      }
      emit_serial_for(op);
      return;
    }
    // A Vectorized loop is expected to have been turned into vector code by a
    // lowering pass; what is left (scalar or already vector-typed body) runs
    // as a serial loop.
    case ForKind::Vectorized:
    case ForKind::Serial: emit_serial_for(op); return;
  }
}

void CodeGen::emit_serial_for(const ForNode* op) {
  Value* lo = emit(op->min);
  Value* end = b_.CreateAdd(lo, emit(op->extent), op->var.name() + ".end");
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, op->var.name() + ".header", fn_);
  auto* body = llvm::BasicBlock::Create(ctx_, op->var.name() + ".body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, op->var.name() + ".exit", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(lo->getType(), 2, op->var.name());
  i->addIncoming(lo, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), body, exit);
  b_.SetInsertPoint(body);
  auto it = vars_.find(op->var.node());
  Value* saved = it == vars_.end() ? nullptr : it->second;
  bind(op->var.node(), i);
  emit(op->body);
  unbind(op->var.node(), saved);
  Value* next = b_.CreateAdd(i, llvm::ConstantInt::get(lo->getType(), 1), op->var.name() + ".next",
                             /*HasNUW=*/false, /*HasNSW=*/true);
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
}

void CodeGen::emit_unrolled_for(const ForNode* op, int64_t extent) {
  Value* lo = emit(op->min);
  auto it = vars_.find(op->var.node());
  Value* saved = it == vars_.end() ? nullptr : it->second;
  for (int64_t k = 0; k < extent; ++k) {
    bind(op->var.node(), b_.CreateAdd(lo, llvm::ConstantInt::get(lo->getType(), static_cast<uint64_t>(k))));
    emit(op->body);
  }
  unbind(op->var.node(), saved);
}

void CodeGen::emit_if(const IfThenElseNode* op) {
  TESSERA_CHECK(op->cond.type() == bool_type(), "LLVM codegen: if condition must be a scalar bool, got ",
                op->cond.type().to_string());
  Value* c = emit(op->cond);
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
  auto* done = llvm::BasicBlock::Create(ctx_, "if.done", fn_);
  llvm::BasicBlock* else_bb = op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "if.else", fn_) : done;
  b_.CreateCondBr(c, then_bb, else_bb);
  b_.SetInsertPoint(then_bb);
  emit(op->then_case);
  b_.CreateBr(done);
  if (op->else_case.defined()) {
    b_.SetInsertPoint(else_bb);
    emit(op->else_case);
    b_.CreateBr(done);
  }
  b_.SetInsertPoint(done);
}

// Temporaries start zero-filled (as in the evaluator): small constant sizes
// are a stack slot in the entry block, cleared where the Allocate runs; others
// come from calloc and are freed after the body.
void CodeGen::emit_allocate(const AllocateNode* op) {
  const Buffer& buf = op->buffer;
  llvm::Type* mt = memory_type(buf.dtype());
  const int64_t esize = static_cast<int64_t>(dtype_size(buf.dtype()));
  const int64_t* n = as_const_int(op->extent);
  auto it = buffers_.find(buf.get());
  Value* saved = it == buffers_.end() ? nullptr : it->second;
  bool on_heap = !(n && *n >= 0 && *n * esize <= kMaxStackBytes);
  Value* heap = nullptr;
  if (!on_heap) {
    int64_t count = std::max<int64_t>(*n, 1);
    llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    llvm::AllocaInst* slot = eb.CreateAlloca(mt, eb.getInt64(static_cast<uint64_t>(count)), buf.name());
    slot->setAlignment(llvm::Align(64));
    b_.CreateMemSet(slot, b_.getInt8(0), static_cast<uint64_t>(count * esize), llvm::MaybeAlign(64));
    buffers_[buf.get()] = slot;
    stack_slots_[buf.get()] = {fn_, count};
  } else {
    Value* count = emit(op->extent);
    count = b_.CreateSelect(b_.CreateICmpSLT(count, b_.getInt64(0)), b_.getInt64(0), count);
    auto* calloc_type = llvm::FunctionType::get(b_.getInt8PtrTy(), {b_.getInt64Ty(), b_.getInt64Ty()}, false);
    heap = b_.CreateCall(runtime_function("calloc", calloc_type),
                         {count, b_.getInt64(static_cast<uint64_t>(esize))}, buf.name() + ".heap");
    buffers_[buf.get()] = b_.CreatePointerCast(heap, mt->getPointerTo(), buf.name());
  }
  emit(op->body);
  stack_slots_.erase(buf.get());
  if (heap) {
    auto* free_type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getInt8PtrTy()}, false);
    b_.CreateCall(runtime_function("free", free_type), {heap});
  }
  if (saved) buffers_[buf.get()] = saved;
  else buffers_.erase(buf.get());
}

Value* CodeGen::emit_guarded(Value* cond, const std::function<Value*()>& then, Value* otherwise) {
  llvm::BasicBlock* from = b_.GetInsertBlock();
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "guard.then", fn_);
  auto* done = llvm::BasicBlock::Create(ctx_, "guard.done", fn_);
  b_.CreateCondBr(cond, then_bb, done);
  b_.SetInsertPoint(then_bb);
  Value* v = then();
  llvm::BasicBlock* then_end = b_.GetInsertBlock();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  if (!v) return nullptr;
  llvm::PHINode* phi = b_.CreatePHI(v->getType(), 2);
  phi->addIncoming(v, then_end);
  phi->addIncoming(otherwise, from);
  return phi;
}

// --- memory -------------------------------------------------------------------

Value* CodeGen::buffer_ptr(const Buffer& b) {
  auto it = buffers_.find(b.get());
  TESSERA_CHECK(it != buffers_.end(), "LLVM codegen: buffer '", b.name(),
                "' is neither a kernel parameter nor allocated around its use");
  return it->second;
}

Value* CodeGen::from_memory(DType d, Value* v) {
  switch (d) {
    case DType::Bool: return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    case DType::F16: return b_.CreateFPExt(v, like(v->getType(), b_.getFloatTy()));
    case DType::BF16: {
      Value* wide = b_.CreateZExt(v, like(v->getType(), b_.getInt32Ty()));
      Value* bits = b_.CreateShl(wide, llvm::ConstantInt::get(wide->getType(), 16));
      return b_.CreateBitCast(bits, like(v->getType(), b_.getFloatTy()));
    }
    default: return v;
  }
}

Value* CodeGen::to_memory(DType d, Value* v) {
  switch (d) {
    case DType::Bool: return b_.CreateZExt(v, like(v->getType(), b_.getInt8Ty()));
    case DType::F16: return b_.CreateFPTrunc(v, like(v->getType(), b_.getHalfTy()));  // exact: already rounded
    case DType::BF16: {
      Value* bits = b_.CreateBitCast(v, like(v->getType(), b_.getInt32Ty()));
      Value* top = b_.CreateLShr(bits, llvm::ConstantInt::get(bits->getType(), 16));
      return b_.CreateTrunc(top, like(v->getType(), b_.getInt16Ty()));
    }
    default: return v;
  }
}

bool CodeGen::private_window(const Buffer& b, const Expr& index, int lanes) const {
  auto it = stack_slots_.find(b.get());
  if (it == stack_slots_.end() || it->second.fn != fn_) return false;
  auto* r = index.as<RampNode>();
  const int64_t* base = r ? as_const_int(r->base) : nullptr;
  return base && *base >= 0 && *base + lanes <= it->second.count;
}

Value* CodeGen::contiguous_base(const Buffer& b, const Expr& index) {
  auto* r = index.as<RampNode>();
  if (!r || !is_const_int(r->stride, 1)) return nullptr;
  return b_.CreateInBoundsGEP(memory_type(b.dtype()), buffer_ptr(b), emit(r->base));
}

// Scalar loads and stores under a predicate branch around the access; vector
// ones use llvm.masked.{load,store} when contiguous, a wide load and a
// shuffle for unmasked loads with a stride of 2 to 4, llvm.masked.{gather,
// scatter} otherwise (scatter writes lanes in order, as the evaluator does).
Value* CodeGen::emit_load(const LoadNode* op) {
  DType d = op->buffer.dtype();
  const int lanes = op->type.lanes;
  llvm::Type* mt = memory_type(d);
  llvm::Type* vt = memory_vector(d, lanes);
  llvm::Align align(dtype_size(d));
  Value* ptr = buffer_ptr(op->buffer);
  Value* zero = llvm::Constant::getNullValue(vt);
  Value* raw = nullptr;
  if (lanes == 1) {
    Value* at = b_.CreateInBoundsGEP(mt, ptr, emit(op->index));
    auto read = [&]() -> Value* { return b_.CreateAlignedLoad(mt, at, align); };
    raw = op->predicate.defined() ? emit_guarded(emit(op->predicate), read, zero) : read();
  } else if (Value* base = contiguous_base(op->buffer, op->index)) {
    Value* vptr = b_.CreatePointerCast(base, vt->getPointerTo());
    if (op->predicate.defined() && private_window(op->buffer, op->index, lanes))
      raw = b_.CreateSelect(emit(op->predicate), b_.CreateAlignedLoad(vt, vptr, align), zero);
    else if (op->predicate.defined()) raw = b_.CreateMaskedLoad(vt, vptr, align, emit(op->predicate), zero);
    else raw = b_.CreateAlignedLoad(vt, vptr, align);
  } else if (const RampNode* r = op->index.as<RampNode>();
             r && as_const_int(r->stride) && *as_const_int(r->stride) > 1 && *as_const_int(r->stride) <= 4) {
    // A small constant stride: one contiguous load of the span the lanes
    // cover (not past the last lane; masked lanes masked in the span), then
    // every stride-th element.
    const int stride = static_cast<int>(*as_const_int(r->stride));
    const int span = (lanes - 1) * stride + 1;
    llvm::Type* st = memory_vector(d, span);
    Value* base = b_.CreatePointerCast(b_.CreateInBoundsGEP(mt, ptr, emit(r->base)), st->getPointerTo());
    Value* wide = nullptr;
    if (op->predicate.defined()) {
      Value* mask = emit(op->predicate);
      Value* none = llvm::Constant::getNullValue(mask->getType());
      std::vector<int> spread;  // span lane i*stride takes mask lane i, the others none's lane 0
      for (int j = 0; j < span; ++j) spread.push_back(j % stride == 0 ? j / stride : lanes);
      wide = b_.CreateMaskedLoad(st, base, align, b_.CreateShuffleVector(mask, none, spread),
                                 llvm::Constant::getNullValue(st));
    } else {
      wide = b_.CreateAlignedLoad(st, base, align);
    }
    std::vector<int> pick;
    for (int i = 0; i < lanes; ++i) pick.push_back(i * stride);
    raw = b_.CreateShuffleVector(wide, pick);
  } else {
    Value* ptrs = b_.CreateInBoundsGEP(mt, ptr, emit(op->index));
    Value* mask = op->predicate.defined() ? emit(op->predicate) : llvm::Constant::getAllOnesValue(llvm_type(bool_type(lanes)));
    raw = b_.CreateMaskedGather(vt, ptrs, align, mask, zero);
  }
  return from_memory(d, raw);
}

// An empty asm statement with side effects that takes the buffer's address
// and clobbers memory: the address escapes, so LLVM promotes none of its
// elements to registers, and every value stored before it is in memory
// after it (see loop::keep_in_memory). It emits no instruction.
void CodeGen::emit_keep_in_memory(const Buffer& buf) {
  Value* at = buffer_ptr(buf);
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), {at->getType()}, false);
  b_.CreateCall(type, llvm::InlineAsm::get(type, "", "r,~{memory}", /*hasSideEffects=*/true), {at});
}

// A prefetch (for reading, kept in all cache levels) of the line of each
// lane's element; contiguous lanes take one per 64-byte line they span.
void CodeGen::emit_prefetch(const LoadNode* op) {
  const int lanes = op->type.lanes;
  const int64_t esize = static_cast<int64_t>(dtype_size(op->buffer.dtype()));
  llvm::Type* mt = memory_type(op->buffer.dtype());
  auto fetch = [&](Value* at) {
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::prefetch, {at->getType()});
    b_.CreateCall(f, {at, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
  };
  if (lanes == 1) return fetch(b_.CreateInBoundsGEP(mt, buffer_ptr(op->buffer), emit(op->index)));
  if (Value* base = contiguous_base(op->buffer, op->index)) {
    Value* bytes = b_.CreatePointerCast(base, b_.getInt8PtrTy());
    const int64_t span = lanes * esize;
    for (int64_t off = 0; off < span; off += 64) fetch(b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), bytes, off));
    fetch(b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), bytes, span - 1));  // the last line when unaligned
    return;
  }
  Value* ptrs = b_.CreateInBoundsGEP(mt, buffer_ptr(op->buffer), emit(op->index));
  for (int i = 0; i < lanes; ++i) fetch(b_.CreateExtractElement(ptrs, static_cast<uint64_t>(i)));
}

void CodeGen::emit_store(const StoreNode* op) {
  DType d = op->buffer.dtype();
  const int lanes = op->value.type().lanes;
  llvm::Type* mt = memory_type(d);
  llvm::Type* vt = memory_vector(d, lanes);
  llvm::Align align(dtype_size(d));
  Value* ptr = buffer_ptr(op->buffer);
  Value* val = to_memory(d, emit(op->value));
  if (lanes == 1) {
    Value* at = b_.CreateInBoundsGEP(mt, ptr, emit(op->index));
    auto write = [&]() -> Value* {
      b_.CreateAlignedStore(val, at, align);
      return nullptr;
    };
    if (op->predicate.defined()) emit_guarded(emit(op->predicate), write, nullptr);
    else write();
  } else if (Value* base = contiguous_base(op->buffer, op->index)) {
    Value* vptr = b_.CreatePointerCast(base, vt->getPointerTo());
    if (op->predicate.defined() && private_window(op->buffer, op->index, lanes)) {
      // Masked-off lanes keep their old values: the same as a masked store.
      Value* old = b_.CreateAlignedLoad(vt, vptr, align);
      b_.CreateAlignedStore(b_.CreateSelect(emit(op->predicate), val, old), vptr, align);
    } else if (op->predicate.defined()) {
      b_.CreateMaskedStore(val, vptr, align, emit(op->predicate));
    } else {
      b_.CreateAlignedStore(val, vptr, align);
    }
  } else {
    Value* ptrs = b_.CreateInBoundsGEP(mt, ptr, emit(op->index));
    Value* mask = op->predicate.defined() ? emit(op->predicate) : llvm::Constant::getAllOnesValue(llvm_type(bool_type(lanes)));
    b_.CreateMaskedScatter(val, ptrs, align, mask);
  }
}

std::unique_ptr<llvm::Module> emit_kernel_module(const Kernel& kernel, llvm::LLVMContext& ctx,
                                                 const CodegenOptions& options) {
  TESSERA_CHECK(kernel.body.defined(), "LLVM codegen: kernel ", kernel.name, " has no body");
  auto module = std::make_unique<llvm::Module>("tessera." + kernel.name, ctx);
  CodeGen cg(ctx, *module, options);
  cg.emit_kernel(kernel);
  return module;
}

}  // namespace tessera::codegen
