// Loop IR printer.
#include "loop/printer.h"

#include <charconv>
#include <cmath>
#include <sstream>

namespace tessera::loop {

namespace {

// Binding strength of an expression's top node; atoms bind tightest.
int precedence(ExprKind k) {
  switch (k) {
    case ExprKind::Or: return 1;
    case ExprKind::And: return 2;
    case ExprKind::EQ: case ExprKind::NE: case ExprKind::LT:
    case ExprKind::LE: case ExprKind::GT: case ExprKind::GE: return 3;
    case ExprKind::Add: case ExprKind::Sub: return 4;
    case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod: return 5;
    case ExprKind::Not: return 6;
    default: return 7;
  }
}

std::string_view op_symbol(ExprKind k) {
  switch (k) {
    case ExprKind::Add: return " + ";
    case ExprKind::Sub: return " - ";
    case ExprKind::Mul: return "*";
    case ExprKind::Div: return "/";
    case ExprKind::Mod: return "%";
    case ExprKind::EQ: return " == ";
    case ExprKind::NE: return " != ";
    case ExprKind::LT: return " < ";
    case ExprKind::LE: return " <= ";
    case ExprKind::GT: return " > ";
    case ExprKind::GE: return " >= ";
    case ExprKind::And: return " && ";
    case ExprKind::Or: return " || ";
    default: return " ? ";
  }
}

// Shortest round-trip text of a float constant: 1.5f (f32), 1.5 (f64), (f16)1.5.
std::string float_text(double v, DType t) {
  std::string s = "nan";
  if (!std::isnan(v)) {
    char buf[64];
    auto r = t == DType::F64 ? std::to_chars(buf, buf + sizeof buf, v)
                             : std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
    s.assign(buf, r.ptr);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";  // 2 -> 2.0; keeps inf, 1e+20
  }
  if (t == DType::F32) return s + 'f';
  if (t == DType::F64) return s;
  std::string typed = "(";
  typed += dtype_name(t);
  typed += ')';
  return typed + s;
}

class ExprPrinter {
 public:
  std::ostringstream os;

  void print(const Expr& e) {
    if (!e.defined()) {
      os << "<undefined>";
      return;
    }
    switch (e.kind()) {
      case ExprKind::IntImm: {
        auto* op = e.as<IntImmNode>();
        if (op->type.is_bool()) os << (op->value ? "true" : "false");
        else if (op->type.dtype == DType::I64) os << op->value;
        else if (op->type.dtype == DType::U64) os << "(u64)" << static_cast<uint64_t>(op->value);
        else os << "(" << dtype_name(op->type.dtype) << ")" << op->value;
        return;
      }
      case ExprKind::FloatImm: os << float_text(e.as<FloatImmNode>()->value, e.type().dtype); return;
      case ExprKind::Var: os << e.as<VarNode>()->name; return;
      case ExprKind::Cast:
        os << e.type().to_string() << "(";
        print(e.as<CastNode>()->value);
        os << ")";
        return;
      case ExprKind::Not:
        os << "!";
        print_operand(e.as<NotNode>()->a, precedence(ExprKind::Not));
        return;
      case ExprKind::Select: {
        auto* op = e.as<SelectNode>();
        os << "select(";
        print(op->cond);
        os << ", ";
        print(op->true_value);
        os << ", ";
        print(op->false_value);
        os << ")";
        return;
      }
      case ExprKind::Load: {
        auto* op = e.as<LoadNode>();
        os << op->buffer.name() << "[";
        print(op->index);
        if (op->predicate.defined()) {
          os << " if ";
          print(op->predicate);
        }
        os << "]";
        return;
      }
      case ExprKind::Ramp: {
        auto* op = e.as<RampNode>();
        os << "ramp(";
        print(op->base);
        os << ", ";
        print(op->stride);
        os << ", " << op->lanes << ")";
        return;
      }
      case ExprKind::Broadcast: {
        auto* op = e.as<BroadcastNode>();
        os << "x" << op->lanes << "(";
        print(op->value);
        os << ")";
        return;
      }
      case ExprKind::Call: {
        auto* op = e.as<CallNode>();
        os << op->name << "(";
        for (size_t i = 0; i < op->args.size(); ++i) {
          if (i) os << ", ";
          print(op->args[i]);
        }
        os << ")";
        return;
      }
      case ExprKind::Let: {
        auto* op = e.as<LetNode>();
        os << "(let " << op->var.name() << " = ";
        print(op->value);
        os << " in ";
        print(op->body);
        os << ")";
        return;
      }
      case ExprKind::ProducerLoad: {
        auto* op = e.as<ProducerLoadNode>();
        os << op->producer->producer_name();
        if (op->value_index) os << "#" << op->value_index;
        os << "[";
        for (size_t i = 0; i < op->indices.size(); ++i) {
          if (i) os << ", ";
          print(op->indices[i]);
        }
        os << "]";
        return;
      }
      case ExprKind::Reduce: {
        auto* op = e.as<ReduceNode>();
        os << reduce_op_name(op->op) << "(";
        print(op->source);
        os << " over ";
        for (size_t i = 0; i < op->axes.size(); ++i) {
          if (i) os << ", ";
          os << op->axes[i].var.name() << " in [";
          print(op->axes[i].min);
          os << ", +";
          print(op->axes[i].extent);
          os << ")";
        }
        if (op->condition.defined()) {
          os << " where ";
          print(op->condition);
        }
        if (!equal(op->init, reduce_identity(op->op, op->type))) {
          os << " init ";
          print(op->init);
        }
        os << ")";
        return;
      }
      case ExprKind::Min:
      case ExprKind::Max: {
        auto* op = e.as<BinaryNode>();
        os << (e.kind() == ExprKind::Min ? "min(" : "max(");
        print(op->a);
        os << ", ";
        print(op->b);
        os << ")";
        return;
      }
      default: {
        // Left operand may share the precedence (left-associative); the right
        // one must bind tighter, so `a - (b - c)` and `a + (b + c)` keep parens.
        auto* op = e.as<BinaryNode>();
        int p = precedence(e.kind());
        bool chain = !is_comparison(e.kind());
        print_operand(op->a, chain ? p : p + 1);
        os << op_symbol(e.kind());
        print_operand(op->b, p + 1);
        return;
      }
    }
  }

  void print_operand(const Expr& e, int min_prec) {
    bool parens = e.defined() && precedence(e.kind()) < min_prec;
    if (parens) os << "(";
    print(e);
    if (parens) os << ")";
  }
};

class StmtPrinter {
 public:
  std::ostringstream os;

  void line(int indent) { os << std::string(static_cast<size_t>(indent) * 2, ' '); }

  void print(const Stmt& s, int indent) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::For: {
        auto* op = s.as<ForNode>();
        line(indent);
        os << "for (" << op->var.name() << ", " << to_string(op->min) << ", " << to_string(op->extent) << ") ";
        if (op->for_kind != ForKind::Serial) os << for_kind_name(op->for_kind) << " ";
        os << "{\n";
        print(op->body, indent + 1);
        line(indent);
        os << "}\n";
        return;
      }
      case StmtKind::Store: {
        auto* op = s.as<StoreNode>();
        line(indent);
        os << op->buffer.name() << "[" << to_string(op->index);
        if (op->predicate.defined()) os << " if " << to_string(op->predicate);
        os << "] = " << to_string(op->value) << "\n";
        return;
      }
      case StmtKind::LetStmt: {
        auto* op = s.as<LetStmtNode>();
        line(indent);
        os << "let " << op->var.name() << " = " << to_string(op->value) << "\n";
        print(op->body, indent);
        return;
      }
      case StmtKind::IfThenElse: {
        auto* op = s.as<IfThenElseNode>();
        line(indent);
        os << "if (" << to_string(op->cond) << ") {\n";
        print(op->then_case, indent + 1);
        if (op->else_case.defined()) {
          line(indent);
          os << "} else {\n";
          print(op->else_case, indent + 1);
        }
        line(indent);
        os << "}\n";
        return;
      }
      case StmtKind::Allocate: {
        auto* op = s.as<AllocateNode>();
        line(indent);
        os << "allocate " << op->buffer.name() << ": " << dtype_name(op->buffer.dtype()) << "["
           << to_string(op->extent) << "] {\n";
        print(op->body, indent + 1);
        line(indent);
        os << "}\n";
        return;
      }
      case StmtKind::Block:
        for (const Stmt& st : s.as<BlockNode>()->stmts) print(st, indent);
        return;
      case StmtKind::Evaluate:
        line(indent);
        os << to_string(s.as<EvaluateNode>()->value) << "\n";
        return;
    }
  }
};

std::string buffer_decl(const Buffer& b) {
  std::string s = b.name() + ": " + std::string(dtype_name(b.dtype())) + "[";
  s += b.dims().empty() ? "*" : dims_to_string(b.dims());
  return s + "]";
}

}  // namespace

std::string to_string(const Expr& e) {
  ExprPrinter p;
  p.print(e);
  return p.os.str();
}

std::string to_string(const Stmt& s, int indent) {
  StmtPrinter p;
  p.print(s, indent);
  return p.os.str();
}

std::string to_string(const Kernel& k) {
  std::string s = "kernel " + k.name + "(";
  for (size_t i = 0; i < k.inputs.size(); ++i) s += (i ? ", " : "") + buffer_decl(k.inputs[i]);
  s += ") -> (";
  for (size_t i = 0; i < k.outputs.size(); ++i) s += (i ? ", " : "") + buffer_decl(k.outputs[i]);
  s += ") {\n" + to_string(k.body, 1) + "}\n";
  return s;
}

}  // namespace tessera::loop
