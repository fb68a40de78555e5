// Loop IR statements (for, store, let, if, allocate, block, evaluate) and the
// Kernel they make up: a named function over flat parameter buffers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loop/expr.h"

namespace tessera::loop {

enum class StmtKind : uint8_t { For, Store, LetStmt, IfThenElse, Allocate, Block, Evaluate };
enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled };
std::string_view for_kind_name(ForKind k);  // "serial", "parallel", ...

struct StmtNode {
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
  const StmtKind kind;
};

// A handle to an immutable statement node; copies share the node.
class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const StmtNode* get() const { return node_.get(); }
  StmtKind kind() const { return node_->kind; }
  bool same_as(const Stmt& o) const { return node_ == o.node_; }
  template <class T> const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const StmtNode> node_;
};

struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  ForNode(Var v, Expr m, Expr e, ForKind k, Stmt b)
      : StmtNode(kKind), var(std::move(v)), min(std::move(m)), extent(std::move(e)), for_kind(k), body(std::move(b)) {}
  const Var var;
  const Expr min, extent;  // var runs over [min, min + extent)
  const ForKind for_kind;
  const Stmt body;
};
struct StoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  StoreNode(Buffer b, Expr v, Expr i, Expr p)
      : StmtNode(kKind), buffer(std::move(b)), value(std::move(v)), index(std::move(i)), predicate(std::move(p)) {}
  const Buffer buffer;
  const Expr value, index;
  const Expr predicate;  // undefined: every lane is written
};
struct LetStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LetStmt;
  LetStmtNode(Var v, Expr val, Stmt b) : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  const Var var;
  const Expr value;
  const Stmt body;
};
struct IfThenElseNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  const Expr cond;
  const Stmt then_case;
  const Stmt else_case;  // may be undefined
};
struct AllocateNode : StmtNode {  // a temporary buffer live for the body
  static constexpr StmtKind kKind = StmtKind::Allocate;
  AllocateNode(Buffer b, Expr e, Stmt s) : StmtNode(kKind), buffer(std::move(b)), extent(std::move(e)), body(std::move(s)) {}
  const Buffer buffer;
  const Expr extent;  // elements
  const Stmt body;
};
struct BlockNode : StmtNode {  // a sequence; the empty block is the no-op
  static constexpr StmtKind kKind = StmtKind::Block;
  explicit BlockNode(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
  const std::vector<Stmt> stmts;
};
struct EvaluateNode : StmtNode {  // an expression run for its effect (runtime calls)
  static constexpr StmtKind kKind = StmtKind::Evaluate;
  explicit EvaluateNode(Expr v) : StmtNode(kKind), value(std::move(v)) {}
  const Expr value;
};

// --- construction (checks types) -------------------------------------------------
Stmt for_loop(Var var, Expr min, Expr extent, ForKind kind, Stmt body);
Stmt store(Buffer buf, Expr value, Expr index, Expr predicate = {});
Stmt let_stmt(Var var, Expr value, Stmt body);
Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case = {});
Stmt allocate(Buffer buf, Expr extent, Stmt body);
Stmt block(std::vector<Stmt> stmts);
Stmt eval_stmt(Expr value);
// A hint to bring the memory `load` would read into the cache: it reads and
// changes nothing (the evaluator skips it; codegen prefetches each cache line
// the lanes cover).
Stmt prefetch(Expr load);
// The load a prefetch names (a LoadNode), or undefined when `s` is not a prefetch.
Expr prefetched(const Stmt& s);
Expr prefetched(const EvaluateNode* s);
// A point the buffer's elements pass in memory, not in registers: it reads
// and changes nothing (the evaluator skips it); codegen emits a compiler
// barrier that takes the buffer's address and is no instruction, so LLVM
// neither promotes the elements to registers nor carries them in registers
// across it. For a tile of totals joined once per block of a long
// reduction, beside a tile of accumulators that fills the register file:
// promoted too, the totals pushed accumulators out to the stack inside the
// block's loops.
Stmt keep_in_memory(Buffer buf);
// The buffer a keep_in_memory names, or undefined when `s` is not one.
Buffer kept_in_memory(const Stmt& s);
Buffer kept_in_memory(const EvaluateNode* s);
// A prefetch or a keep_in_memory: a hint that computes nothing.
bool is_hint(const Stmt& s);
bool is_hint(const EvaluateNode* s);
Stmt no_op();  // the empty block
bool is_no_op(const Stmt& s);

// A loop-IR function: it reads `inputs` and writes `outputs`, all flat buffers;
// parameters are bound in the order inputs, then outputs.
struct Kernel {
  std::string name;
  std::vector<Buffer> inputs;
  std::vector<Buffer> outputs;
  Stmt body;

  std::vector<Buffer> params() const;
};

}  // namespace tessera::loop
