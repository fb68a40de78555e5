// A small regular-expression matcher for RegexFullMatch, following RE2's
// syntax and guarantees: the pattern compiles to an NFA that is simulated
// over the input's code points, so matching takes time linear in the input
// (no backtracking, no recursion over the input). The parser is in
// string_regex_parse.cpp, the compiler and simulation in string_regex_engine.cpp.
//
// Supported: literals and escapes (\n \t \r \f \v \a \xHH \x{H..} octal \123
// \Q..\E, escaped punctuation), . (not \n unless (?s)), classes [..] with
// ranges, negation, \d \w \s and their negations, [:alpha:]-style POSIX
// classes; groups ( ), (?: ), (?P<n> ), (?<n> ); alternation; * + ? {n}
// {n,} {n,m} and their lazy forms (greediness does not change whether a full
// match exists); ^ $ \A \z \b \B; flags i, m, s, U as (?flags) and
// (?flags:re). Case folding is ASCII-only. Unicode classes (\pL) and \C are
// rejected with an error, as are back-references (RE2 has none either).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

class RegexMatcher {
 public:
  // Throws std::invalid_argument describing the problem for a bad pattern.
  explicit RegexMatcher(const std::string& pattern);
  // True when the whole of `text` (UTF-8) matches the pattern.
  bool full_match(const std::string& text) const;

  struct CharClass {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive code point ranges
    bool negate = false;
    bool icase = false;
    bool matches(uint32_t c) const;
  };
  struct Inst {
    enum Op { Char, Split, Jmp, Assert, Match } op = Match;
    int x = 0, y = 0;  // Split/Jmp targets; Char: class index; Assert: kind
  };

 private:
  std::vector<CharClass> classes_;
  std::vector<Inst> prog_;
};

}  // namespace tessera
