// Parallel loops: the body of a Parallel for is outlined into its own
// function `void body(i64 begin, i64 end, i8* closure)` that runs the
// iterations [begin, end), and handed to the runtime's thread pool through
// tessera_parallel_for (src/support/thread_pool.h), which calls it once per
// chunk of [0, extent) and returns when all have run.
//
// The closure is a struct on the caller's stack holding the loop's min and
// every value the body reads from the enclosing scope: the element pointers
// of the buffers it touches (parameters and temporaries) and the let-bound
// and loop variables it uses. The body counts i over its chunk and adds min.
#include <llvm/IR/DerivedTypes.h>

#include <unordered_set>

#include "codegen/llvm/codegen_impl.h"
#include "loop/visitor.h"
#include "support/error.h"

namespace tessera::codegen {

using namespace loop;
using llvm::Value;

namespace {

// The variables and buffers a statement mentions, in order of first mention.
class UseCollector : public IRVisitor {
 public:
  using IRVisitor::visit;
  std::vector<const VarNode*> vars;
  std::vector<const BufferNode*> buffers;

  void visit(const VarNode* op) override {
    if (seen_vars_.insert(op).second) vars.push_back(op);
  }
  void visit(const LoadNode* op) override {
    add(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    add(op->buffer);
    IRVisitor::visit(op);
  }

 private:
  void add(const Buffer& b) {
    if (seen_buffers_.insert(b.get()).second) buffers.push_back(b.get());
  }
  std::unordered_set<const VarNode*> seen_vars_;
  std::unordered_set<const BufferNode*> seen_buffers_;
};

}  // namespace

void CodeGen::emit_parallel_for(const ForNode* op) {
  TESSERA_CHECK(op->var.type().lanes == 1 && op->var.type().is_int(), "LLVM codegen: parallel loop variable ",
                op->var.name(), " must be a scalar integer, got ", op->var.type().to_string());
  const bool is_signed_var = is_signed(op->var.type().dtype);
  Value* lo = emit(op->min);
  Value* extent = b_.CreateIntCast(emit(op->extent), b_.getInt64Ty(), is_signed_var, op->var.name() + ".extent");

  // What the body reads from here: the min, then the buffers and variables in scope.
  UseCollector uses;
  uses.visit(op->body);
  std::vector<Value*> captured = {lo};
  std::vector<const BufferNode*> cap_buffers;
  std::vector<const VarNode*> cap_vars;
  for (const BufferNode* b : uses.buffers)
    if (auto it = buffers_.find(b); it != buffers_.end()) {
      cap_buffers.push_back(b);
      captured.push_back(it->second);
    }
  for (const VarNode* v : uses.vars)
    if (auto it = vars_.find(v); it != vars_.end() && v != op->var.node()) {
      cap_vars.push_back(v);
      captured.push_back(it->second);
    }
  std::vector<llvm::Type*> fields;
  for (Value* v : captured) fields.push_back(v->getType());
  llvm::StructType* closure_type = llvm::StructType::create(ctx_, fields, fn_->getName().str() + "." + op->var.name() + ".closure");

  // The closure, filled here.
  llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  llvm::AllocaInst* closure = eb.CreateAlloca(closure_type, nullptr, op->var.name() + ".closure");
  for (size_t f = 0; f < captured.size(); ++f)
    b_.CreateStore(captured[f], b_.CreateStructGEP(closure_type, closure, static_cast<unsigned>(f)));

  // The outlined body, emitted with only the captured bindings visible.
  llvm::Type* i8p = b_.getInt8PtrTy();
  auto* body_type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getInt64Ty(), b_.getInt64Ty(), i8p}, false);
  llvm::Function* body = llvm::Function::Create(body_type, llvm::Function::InternalLinkage,
                                                fn_->getName() + "." + op->var.name() + ".par", module_);
  body->addFnAttr(llvm::Attribute::NoUnwind);
  if (!options_.cpu.empty()) body->addFnAttr("target-cpu", options_.cpu);
  if (!options_.features.empty()) body->addFnAttr("target-features", options_.features);
  body->addParamAttr(2, llvm::Attribute::NoCapture);
  body->addParamAttr(2, llvm::Attribute::ReadOnly);

  llvm::Function* saved_fn = fn_;
  llvm::IRBuilderBase::InsertPoint saved_ip = b_.saveIP();
  auto saved_vars = std::move(vars_);
  auto saved_buffers = std::move(buffers_);
  vars_.clear();
  buffers_.clear();

  fn_ = body;
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body));
  Value* cl = b_.CreatePointerCast(body->getArg(2), closure_type->getPointerTo(), "closure");
  auto field = [&](size_t f, const std::string& name) {
    return b_.CreateLoad(fields[f], b_.CreateStructGEP(closure_type, cl, static_cast<unsigned>(f)), name);
  };
  Value* body_lo = field(0, op->var.name() + ".min");
  size_t f = 1;
  for (const BufferNode* b : cap_buffers) buffers_[b] = field(f++, b->name);
  for (const VarNode* v : cap_vars) vars_[v] = field(f++, v->name);
  // for (i = begin; i < end; ++i) body(min + i)
  Value* begin = body->getArg(0);
  Value* end = body->getArg(1);
  llvm::BasicBlock* entry = b_.GetInsertBlock();
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx_, op->var.name() + ".chunk", body);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, op->var.name() + ".done", body);
  b_.CreateCondBr(b_.CreateICmpSLT(begin, end), loop, exit);
  b_.SetInsertPoint(loop);
  llvm::PHINode* i64 = b_.CreatePHI(b_.getInt64Ty(), 2, op->var.name() + ".i");
  i64->addIncoming(begin, entry);
  Value* i = b_.CreateIntCast(i64, body_lo->getType(), is_signed_var);
  bind(op->var.node(), b_.CreateAdd(body_lo, i, op->var.name(), /*HasNUW=*/false, /*HasNSW=*/true));
  emit(op->body);
  Value* next = b_.CreateAdd(i64, b_.getInt64(1), op->var.name() + ".next", /*HasNUW=*/true, /*HasNSW=*/true);
  i64->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpSLT(next, end), loop, exit);
  b_.SetInsertPoint(exit);
  b_.CreateRetVoid();

  fn_ = saved_fn;
  b_.restoreIP(saved_ip);
  vars_ = std::move(saved_vars);
  buffers_ = std::move(saved_buffers);

  auto* dispatch_type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getInt64Ty(), body->getType(), i8p}, false);
  b_.CreateCall(runtime_function("tessera_parallel_for", dispatch_type),
                {extent, body, b_.CreatePointerCast(closure, i8p)});
}

}  // namespace tessera::codegen
