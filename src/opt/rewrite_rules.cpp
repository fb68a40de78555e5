// The rule table and the term parser. Every rule is an exact identity in real
// arithmetic on the domain stated with it; the pass applies a rule only where
// it strictly lowers the FLOP count, so reassociations (which can go either
// way) fire where they combine small or constant operands first.
#include "opt/rewrite_rules.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>

#include "ops/registry.h"
#include "support/error.h"

namespace tessera::rewrite {

namespace {

struct RuleSpec {
  const char* name;
  const char* pattern;
  const char* replacement;
  const char* scalars;  // space-separated variable names
  const char* domain;
};

// clang-format off
const RuleSpec kRules[] = {
  // Distributivity: one multiplication instead of two.
  {"distribute_mul_add", "Add(Mul(A,B), Mul(A,C))", "Mul(A, Add(B,C))", "", ""},
  {"distribute_mul_sub", "Sub(Mul(A,B), Mul(A,C))", "Mul(A, Sub(B,C))", "", ""},
  {"factor_add_self",    "Add(A, Mul(A,B))",        "Mul(A, Add(B,1))", "", ""},
  {"factor_sub_self",    "Sub(Mul(A,B), A)",        "Mul(A, Sub(B,1))", "", ""},
  {"factor_self_sub",    "Sub(A, Mul(A,B))",        "Mul(A, Sub(1,B))", "", ""},
  {"common_divisor_add", "Add(Div(A,C), Div(B,C))", "Div(Add(A,B), C)", "", "C != 0"},
  {"common_divisor_sub", "Sub(Div(A,C), Div(B,C))", "Div(Sub(A,B), C)", "", "C != 0"},
  // Associativity: combine the small (often constant) operands first.
  {"assoc_mul",     "Mul(Mul(A,B), C)", "Mul(A, Mul(B,C))", "", ""},
  {"assoc_add",     "Add(Add(A,B), C)", "Add(A, Add(B,C))", "", ""},
  {"assoc_add_sub", "Sub(Add(A,B), C)", "Add(A, Sub(B,C))", "", ""},
  {"assoc_sub_add", "Add(Sub(A,B), C)", "Add(A, Sub(C,B))", "", ""},
  {"assoc_sub_sub", "Sub(Sub(A,B), C)", "Sub(A, Add(B,C))", "", ""},
  {"assoc_div_div", "Div(Div(A,B), C)", "Div(A, Mul(B,C))", "", "B != 0, C != 0"},
  {"assoc_mul_div", "Mul(Div(A,B), C)", "Mul(A, Div(C,B))", "", "B != 0"},
  {"assoc_div_mul", "Div(Mul(A,B), C)", "Mul(A, Div(B,C))", "", "C != 0"},
  // Negation folding.
  {"neg_neg",      "Neg(Neg(A))",           "A",            "", ""},
  {"add_neg",      "Add(A, Neg(B))",        "Sub(A,B)",     "", ""},
  {"sub_neg",      "Sub(A, Neg(B))",        "Add(A,B)",     "", ""},
  {"neg_sub",      "Neg(Sub(A,B))",         "Sub(B,A)",     "", ""},
  {"mul_neg_neg",  "Mul(Neg(A), Neg(B))",   "Mul(A,B)",     "", ""},
  {"div_neg_neg",  "Div(Neg(A), Neg(B))",   "Div(A,B)",     "", "B != 0"},
  {"mul_neg_move", "Mul(Neg(A), B)",        "Mul(A, Neg(B))", "", ""},
  {"div_neg_move", "Div(Neg(A), B)",        "Div(A, Neg(B))", "", "B != 0"},
  {"neg_into_mul", "Neg(Mul(A,B))",         "Mul(A, Neg(B))", "", ""},
  // Exponentials: exp(a) exp(b) = exp(a + b), prod exp = exp sum.
  {"exp_mul",         "Mul(Exp(A), Exp(B))", "Exp(Add(A,B))", "", ""},
  {"exp_div",         "Div(Exp(A), Exp(B))", "Exp(Sub(A,B))", "", ""},
  {"exp_reduce_prod", "ReduceProd@r(Exp(A))", "Exp(ReduceSum@r(A))", "", ""},
  // Square roots and reciprocals.
  {"sqrt_cancel",       "Mul(Mul(A, Sqrt(B)), Mul(Sqrt(B), C))", "Mul(Mul(A,B), C)", "", "B >= 0"},
  {"sqrt_mul",          "Mul(Sqrt(A), Sqrt(B))", "Sqrt(Mul(A,B))", "", "A >= 0, B >= 0"},
  {"sqrt_div",          "Div(Sqrt(A), Sqrt(B))", "Sqrt(Div(A,B))", "", "A >= 0, B > 0"},
  {"sqrt_square",       "Sqrt(Square(A))",       "Abs(A)",         "", ""},
  {"reciprocal_square", "Mul(Reciprocal(A), Reciprocal(Mul(A,B)))",
                        "Mul(Square(Reciprocal(A)), Reciprocal(B))", "", "A != 0, B != 0"},
  {"div_reciprocal",    "Div(A, Reciprocal(B))", "Mul(A,B)", "", "B != 0"},
  // Reductions: a one-element factor or a negation moves out of a sum.
  {"reduce_sum_mul_scalar", "ReduceSum@r(Mul(A,c))", "Mul(ReduceSum@r(A), c)", "c", ""},
  {"reduce_sum_div_scalar", "ReduceSum@r(Div(A,c))", "Div(ReduceSum@r(A), c)", "c", "c != 0"},
  {"reduce_sum_neg",        "ReduceSum@r(Neg(A))",   "Neg(ReduceSum@r(A))",    "",  ""},
};
// clang-format on

// Ops the terms may use, with their arity.
const std::map<std::string, int> kArity = {
    {"Add", 2}, {"Sub", 2}, {"Mul", 2}, {"Div", 2}, {"Neg", 1}, {"Abs", 1}, {"Exp", 1},
    {"Sqrt", 1}, {"Reciprocal", 1}, {"Square", 1}, {"ReduceSum", 1}, {"ReduceProd", 1}};

bool is_reduce(const std::string& op) { return op == "ReduceSum" || op == "ReduceProd"; }

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Term parse() {
    Term t = term();
    skip_space();
    if (i_ != s_.size()) fail("unexpected '" + std::string(1, s_[i_]) + "'");
    return t;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    TESSERA_FAIL("rewrite term '", s_, "' at ", i_, ": ", what);
  }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  std::string ident() {
    skip_space();
    size_t b = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
    if (b == i_ || !std::isalpha(static_cast<unsigned char>(s_[b]))) fail("expected a name");
    return std::string(s_.substr(b, i_ - b));
  }
  Term term() {
    skip_space();
    if (i_ >= s_.size()) fail("unexpected end");
    char c = s_[i_];
    Term t;
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.') {
      std::string rest(s_.substr(i_));
      char* end = nullptr;
      t.kind = Term::Kind::Literal;
      t.number = std::strtod(rest.c_str(), &end);
      if (end == rest.c_str()) fail("expected a number");
      i_ += static_cast<size_t>(end - rest.c_str());
      return t;
    }
    t.name = ident();
    skip_space();
    bool is_op = i_ < s_.size() && (s_[i_] == '(' || s_[i_] == '@');
    if (!is_op) return t;
    t.kind = Term::Kind::Op;
    auto arity = kArity.find(t.name);
    if (arity == kArity.end()) fail("op '" + t.name + "' is not supported by the rewrite rules");
    if (eat('@')) t.label = ident();
    if (is_reduce(t.name) != !t.label.empty())
      fail("'" + t.name + "': reductions, and only they, take an @label");
    if (!eat('(')) fail("expected '('");
    do t.args.push_back(term());
    while (eat(','));
    if (!eat(')')) fail("expected ')' or ','");
    if (static_cast<int>(t.args.size()) != arity->second)
      fail("'" + t.name + "' takes " + std::to_string(arity->second) + " argument(s)");
    return t;
  }

  std::string_view s_;
  size_t i_ = 0;
};

void collect(const Term& t, std::set<std::string>& vars, std::set<std::string>& labels) {
  if (t.kind == Term::Kind::Var) vars.insert(t.name);
  if (!t.label.empty()) labels.insert(t.label);
  for (const Term& a : t.args) collect(a, vars, labels);
}

// A pattern's ops must belong to a fusible region: one-to-one ops and the
// two reductions the rules know.
void check_region_ops(const Rule& r, const Term& t) {
  if (t.kind != Term::Kind::Op) return;
  const std::string op = t.name == "Square" ? "Mul" : t.name;
  const OpDef* def = op_registry().find(op);
  TESSERA_CHECK(def, "rewrite rule '", r.name, "': op ", op, " is not registered");
  TESSERA_CHECK(def->mapping == MappingType::OneToOne || is_reduce(op), "rewrite rule '", r.name, "': ", op,
                " is neither one-to-one nor ReduceSum/ReduceProd");
  for (const Term& a : t.args) check_region_ops(r, a);
}

Rule make_rule(const RuleSpec& s) {
  Rule r;
  r.name = s.name;
  r.pattern_text = s.pattern;
  r.replacement_text = s.replacement;
  r.pattern = parse_term(s.pattern);
  r.replacement = parse_term(s.replacement);
  r.domain = s.domain;
  std::string sc = s.scalars;
  for (size_t b = 0; b < sc.size();) {
    size_t e = sc.find(' ', b);
    if (e == std::string::npos) e = sc.size();
    if (e > b) r.scalars.insert(sc.substr(b, e - b));
    b = e + 1;
  }
  TESSERA_CHECK(r.pattern.kind == Term::Kind::Op, "rewrite rule '", r.name, "': the pattern must be an op");
  check_region_ops(r, r.pattern);
  check_region_ops(r, r.replacement);
  std::set<std::string> pv, pl, rv, rl;
  collect(r.pattern, pv, pl);
  collect(r.replacement, rv, rl);
  for (const auto& v : rv)
    TESSERA_CHECK(pv.count(v), "rewrite rule '", r.name, "': replacement variable ", v, " is not in the pattern");
  for (const auto& l : rl)
    TESSERA_CHECK(pl.count(l), "rewrite rule '", r.name, "': replacement label @", l, " is not in the pattern");
  for (const auto& v : r.scalars)
    TESSERA_CHECK(pv.count(v), "rewrite rule '", r.name, "': scalar ", v, " is not a pattern variable");
  return r;
}

}  // namespace

Term parse_term(std::string_view text) { return Parser(text).parse(); }

std::string to_string(const Term& t) {
  switch (t.kind) {
    case Term::Kind::Var: return t.name;
    case Term::Kind::Literal: {
      char buf[32];
      auto r = std::to_chars(buf, buf + sizeof buf, t.number);  // shortest round-trip form
      return std::string(buf, r.ptr);
    }
    case Term::Kind::Op: break;
  }
  std::string s = t.name + (t.label.empty() ? "" : "@" + t.label) + "(";
  for (size_t i = 0; i < t.args.size(); ++i) s += (i ? ", " : "") + to_string(t.args[i]);
  return s + ")";
}

bool is_commutative(const std::string& op) { return op == "Add" || op == "Mul"; }

const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = [] {
    std::vector<Rule> v;
    std::set<std::string> names;
    for (const RuleSpec& s : kRules) {
      TESSERA_CHECK(names.insert(s.name).second, "rewrite rule '", s.name, "' is listed twice");
      v.push_back(make_rule(s));
    }
    return v;
  }();
  return table;
}

}  // namespace tessera::rewrite
