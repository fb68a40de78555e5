// DNNFusion's mathematical-property rules (associative, commutative,
// distributive), kept as data: each rule is a pattern and a replacement
// written as term strings over ONNX ops, parsed once into term trees.
//
// Term syntax:
//   Op(t, ...)     an ONNX op node; Add and Mul match either input order
//   Op@r(t)        a reduction whose attributes and axes input are carried to
//                  the replacement's op with the same label r
//   Square(t)      Mul of one value by itself (ONNX has no Square op)
//   A, B, X1       a variable: any value; every occurrence binds the same one
//   c, c1          a lower-case variable: a constant value only
//   1, -0.5        a literal: a one-element constant equal to it (created as a
//                  scalar of the root's element type in replacements)
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::rewrite {

struct Term {
  enum class Kind { Op, Var, Literal };
  Kind kind = Kind::Var;
  std::string name;   // op type (or "Square") for Op, variable name for Var
  std::string label;  // Op only: attribute-carrying label, "" when none
  double number = 0;  // Literal only
  std::vector<Term> args;

  bool is_constant_var() const { return kind == Kind::Var && !name.empty() && name[0] >= 'a' && name[0] <= 'z'; }
};

// Parses one term; throws Error naming the position on a syntax error or an
// op the rules do not support.
Term parse_term(std::string_view text);
// The term back in the syntax above (canonical spacing).
std::string to_string(const Term& t);
// Add and Mul: the matcher tries both input orders.
bool is_commutative(const std::string& op);

struct Rule {
  std::string name;
  std::string pattern_text, replacement_text;
  Term pattern, replacement;
  std::set<std::string> scalars;  // variables that must bind one-element values
  // Where the identity holds in real arithmetic, "" for every real input. The
  // pass cannot check it; the tests draw inputs from it.
  std::string domain;
};

// The rule table, parsed and validated on first use (a malformed entry is a
// programming error and throws).
const std::vector<Rule>& rules();

}  // namespace tessera::rewrite
