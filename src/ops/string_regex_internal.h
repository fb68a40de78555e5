// Internals of the RegexFullMatch matcher shared by its parser
// (string_regex_parse.cpp) and its compiler/simulator
// (string_regex_engine.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/string_regex_engine.h"

namespace tessera::regex_detail {

constexpr uint32_t kMaxRune = 0x10FFFF;
constexpr int kMaxRepeat = 1000;     // RE2's limit on {n,m}
constexpr int kMaxDepth = 1000;      // nesting of groups
constexpr size_t kMaxProgram = 100000;

enum AssertKind { kBeginText, kEndText, kBeginLine, kEndLine, kWordBoundary, kNotWordBoundary };

// Throws std::invalid_argument(why).
[[noreturn]] void bad(const std::string& why);
// Decodes UTF-8; an invalid byte becomes U+FFFD on its own.
std::vector<uint32_t> decode_utf8(const std::string& s);
// RE2's \w: ASCII letters, digits and '_'.
bool is_word(uint32_t c);

// Syntax tree.
struct Rx {
  enum Kind { Empty, Class, Concat, Alt, Repeat, Assert } kind = Empty;
  int cls = -1;                                // Class: index into the class table
  std::vector<std::unique_ptr<Rx>> kids;       // Concat / Alt; Repeat: kids[0]
  int min = 0, max = -1;                       // Repeat (max -1: unbounded)
  int assertion = 0;                           // Assert
};
using RxPtr = std::unique_ptr<Rx>;

// Parses an RE2 pattern; character classes are appended to `classes`.
RxPtr parse_regex(const std::string& pattern, std::vector<RegexMatcher::CharClass>& classes);

}  // namespace tessera::regex_detail
