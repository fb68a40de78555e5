// RE2-syntax parser for the RegexFullMatch matcher: pattern -> syntax tree.
#include <algorithm>
#include <stdexcept>

#include "ops/string_regex_internal.h"

namespace tessera::regex_detail {

namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// Complement of a set of ranges over [0, kMaxRune].
Ranges complement(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  uint32_t next = 0;
  for (auto [lo, hi] : r) {
    if (lo > next) out.push_back({next, lo - 1});
    if (hi + 1 > next) next = hi + 1;
  }
  if (next <= kMaxRune) out.push_back({next, kMaxRune});
  return out;
}

// \d \w \s (RE2: ASCII only) and POSIX classes.
bool perl_class(uint32_t letter, Ranges& r) {
  switch (letter) {
    case 'd': r = {{'0', '9'}}; return true;
    case 'w': r = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; return true;
    case 's': r = {{'\t', '\n'}, {'\f', '\r'}, {' ', ' '}}; return true;
    default: return false;
  }
}

bool posix_class(const std::string& name, Ranges& r) {
  static const std::vector<std::pair<std::string, Ranges>> table = {
      {"alnum", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}}},
      {"alpha", {{'A', 'Z'}, {'a', 'z'}}},
      {"ascii", {{0, 0x7F}}},
      {"blank", {{'\t', '\t'}, {' ', ' '}}},
      {"cntrl", {{0, 0x1F}, {0x7F, 0x7F}}},
      {"digit", {{'0', '9'}}},
      {"graph", {{'!', '~'}}},
      {"lower", {{'a', 'z'}}},
      {"print", {{' ', '~'}}},
      {"punct", {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}}},
      {"space", {{'\t', '\r'}, {' ', ' '}}},
      {"upper", {{'A', 'Z'}}},
      {"word", {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}},
      {"xdigit", {{'0', '9'}, {'A', 'F'}, {'a', 'f'}}}};
  for (const auto& [n, v] : table)
    if (n == name) {
      r = v;
      return true;
    }
  return false;
}

struct Flags {
  bool icase = false, multiline = false, dotall = false;
};


RxPtr make(Rx::Kind k) {
  auto r = std::make_unique<Rx>();
  r->kind = k;
  return r;
}

class Parser {
 public:
  Parser(const std::string& pattern, std::vector<RegexMatcher::CharClass>& classes)
      : p_(decode_utf8(pattern)), classes_(classes) {}

  RxPtr parse() {
    Flags f;
    RxPtr r = parse_alt(f, 0);
    if (pos_ < p_.size()) bad("unmatched ')'");
    return r;
  }

 private:
  bool at_end() const { return pos_ >= p_.size(); }
  uint32_t peek() const { return p_[pos_]; }
  bool eat(uint32_t c) {
    if (!at_end() && peek() == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  RxPtr class_node(Ranges r, bool negate, bool icase) {
    RegexMatcher::CharClass c;
    c.ranges = std::move(r);
    c.negate = negate;
    c.icase = icase;
    classes_.push_back(std::move(c));
    auto n = make(Rx::Class);
    n->cls = static_cast<int>(classes_.size()) - 1;
    return n;
  }
  RxPtr literal(uint32_t c, const Flags& f) { return class_node({{c, c}}, false, f.icase); }
  RxPtr assertion(int kind) {
    auto n = make(Rx::Assert);
    n->assertion = kind;
    return n;
  }

  // alternation of concatenations, up to ')' or the end. `f` is updated by
  // (?flags) for the rest of the enclosing group.
  RxPtr parse_alt(Flags& f, int depth) {
    if (depth > kMaxDepth) bad("pattern nests too deeply");
    auto alt = make(Rx::Alt);
    alt->kids.push_back(parse_concat(f, depth));
    while (eat('|')) alt->kids.push_back(parse_concat(f, depth));
    if (alt->kids.size() == 1) return std::move(alt->kids[0]);
    return alt;
  }

  RxPtr parse_concat(Flags& f, int depth) {
    auto cat = make(Rx::Concat);
    while (!at_end() && peek() != '|' && peek() != ')') {
      uint32_t c = peek();
      if (c == '*' || c == '+' || c == '?') bad("missing argument to repetition operator");
      if (c == '{' && is_repeat_spec()) bad("missing argument to repetition operator");
      RxPtr atom = parse_atom(f, depth);
      if (!atom) continue;  // a flag group such as (?i)
      cat->kids.push_back(parse_quantifiers(std::move(atom)));
    }
    return cat;
  }

  // Whether "{...}" at pos_ is a valid {n}, {n,} or {n,m}.
  bool is_repeat_spec() const {
    size_t i = pos_ + 1;
    size_t digits = 0;
    while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9') ++i, ++digits;
    if (digits == 0) return false;
    if (i < p_.size() && p_[i] == '}') return true;
    if (i >= p_.size() || p_[i] != ',') return false;
    ++i;
    while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9') ++i;
    return i < p_.size() && p_[i] == '}';
  }

  int read_int() {
    int64_t v = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepeat) bad("bad repetition count (more than 1000)");
      ++pos_;
    }
    return static_cast<int>(v);
  }

  RxPtr parse_quantifiers(RxPtr atom) {
    bool quantified = false;
    while (!at_end()) {
      uint32_t c = peek();
      int mn = 0, mx = -1;
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        ++pos_;
        mn = 1;
      } else if (c == '?') {
        ++pos_;
        mx = 1;
      } else if (c == '{' && is_repeat_spec()) {
        ++pos_;
        mn = read_int();
        mx = mn;
        if (eat(',')) mx = (!at_end() && peek() == '}') ? -1 : read_int();
        eat('}');
        if (mx >= 0 && mx < mn) bad("bad repetition operator: max below min");
      } else {
        break;
      }
      if (quantified) bad("bad repetition operator: repeated quantifier");
      quantified = true;
      eat('?');  // lazy: same full-match answer
      auto rep = make(Rx::Repeat);
      rep->min = mn;
      rep->max = mx;
      rep->kids.push_back(std::move(atom));
      atom = std::move(rep);
    }
    return atom;
  }

  // Returns null for a flag-only group.
  RxPtr parse_atom(Flags& f, int depth) {
    uint32_t c = p_[pos_++];
    switch (c) {
      case '(': return parse_group(f, depth);
      case '[': return parse_class(f);
      case '.': return class_node(f.dotall ? Ranges{{0, kMaxRune}} : Ranges{{0, '\n' - 1}, {'\n' + 1, kMaxRune}},
                                  false, false);
      case '^': return assertion(f.multiline ? kBeginLine : kBeginText);
      case '$': return assertion(f.multiline ? kEndLine : kEndText);
      case '\\': return parse_escape(f);
      default: return literal(c, f);
    }
  }

  RxPtr parse_group(Flags& f, int depth) {
    Flags inner = f;
    if (eat('?')) {
      if (eat('P') || (!at_end() && peek() == '<')) {
        if (!eat('<')) bad("invalid named group");
        while (!at_end() && peek() != '>') {
          if (!is_word(peek())) bad("invalid character in group name");
          ++pos_;
        }
        if (!eat('>')) bad("unterminated group name");
      } else {
        // Flags: [imsU]* optionally '-' [imsU]*, then ')' or ':'.
        bool negate = false, any = false;
        while (true) {
          if (at_end()) bad("missing ')' after flags");
          uint32_t c = p_[pos_++];
          if (c == 'i') inner.icase = !negate;
          else if (c == 'm') inner.multiline = !negate;
          else if (c == 's') inner.dotall = !negate;
          else if (c == 'U') {
          } else if (c == '-' && !negate) {
            negate = true;
            continue;
          } else if (c == ')' && any) {
            f = inner;  // applies to the rest of the current group
            return nullptr;
          } else if (c == ':') {
            break;
          } else {
            bad("unsupported group syntax (look-around and other Perl extensions are not RE2)");
          }
          any = true;
        }
      }
    }
    RxPtr body = parse_alt(inner, depth + 1);
    if (!eat(')')) bad("missing ')'");
    return body;
  }

  // Code point of a simple escape (\n, \x41, \101, \.); false if not one.
  bool char_escape(uint32_t e, uint32_t& out) {
    switch (e) {
      case 'n': out = '\n'; return true;
      case 't': out = '\t'; return true;
      case 'r': out = '\r'; return true;
      case 'f': out = '\f'; return true;
      case 'v': out = '\v'; return true;
      case 'a': out = 7; return true;
      case 'x': {
        uint32_t v = 0;
        auto hex = [&](uint32_t h, uint32_t& d) {
          if (h >= '0' && h <= '9') d = h - '0';
          else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
          else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
          else return false;
          return true;
        };
        uint32_t d = 0;
        if (eat('{')) {
          int count = 0;
          while (!at_end() && hex(peek(), d)) {
            v = v * 16 + d;
            if (v > kMaxRune) bad("\\x{...} is beyond U+10FFFF");
            ++pos_, ++count;
          }
          if (count == 0 || !eat('}')) bad("invalid \\x{...} escape");
        } else {
          for (int k = 0; k < 2; ++k) {
            if (at_end() || !hex(peek(), d)) bad("invalid \\x escape");
            v = v * 16 + d;
            ++pos_;
          }
        }
        out = v;
        return true;
      }
      default: break;
    }
    if (e >= '0' && e <= '7') {
      // \0, or octal with two or three digits (a lone \1..\7 would be a back-reference).
      if (e != '0' && (at_end() || peek() < '0' || peek() > '7')) bad("back-references are not supported");
      uint32_t v = e - '0';
      for (int k = 0; k < 2 && !at_end() && peek() >= '0' && peek() <= '7'; ++k) v = v * 8 + (p_[pos_++] - '0');
      out = v;
      return true;
    }
    if (e < 0x80 && !is_word(e)) {  // escaped punctuation stands for itself
      out = e;
      return true;
    }
    return false;
  }

  RxPtr parse_escape(Flags& f) {
    if (at_end()) bad("trailing backslash");
    uint32_t e = p_[pos_++];
    Ranges r;
    if (perl_class(e | 0x20, r) && (e == 'd' || e == 'w' || e == 's' || e == 'D' || e == 'W' || e == 'S'))
      return class_node(r, e < 'a', false);
    switch (e) {
      case 'A': return assertion(kBeginText);
      case 'z': return assertion(kEndText);
      case 'b': return assertion(kWordBoundary);
      case 'B': return assertion(kNotWordBoundary);
      case 'Q': {
        auto cat = make(Rx::Concat);
        while (!at_end()) {
          if (peek() == '\\' && pos_ + 1 < p_.size() && p_[pos_ + 1] == 'E') {
            pos_ += 2;
            break;
          }
          cat->kids.push_back(literal(p_[pos_++], f));
        }
        return cat;
      }
      case 'E': return make(Rx::Empty);
      case 'p':
      case 'P': bad("Unicode classes (\\p, \\P) are not supported");
      case 'C': bad("\\C (any byte) is not supported");
      default: break;
    }
    uint32_t c = 0;
    if (!char_escape(e, c)) bad("invalid escape sequence");
    return literal(c, f);
  }

  RxPtr parse_class(const Flags& f) {
    bool negate = eat('^');
    Ranges r;
    bool first = true;
    while (true) {
      if (at_end()) bad("missing ']' in character class");
      uint32_t c = peek();
      if (c == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      if (c == '[' && pos_ + 1 < p_.size() && p_[pos_ + 1] == ':') {
        size_t close = pos_ + 2;
        while (close + 1 < p_.size() && !(p_[close] == ':' && p_[close + 1] == ']')) ++close;
        if (close + 1 >= p_.size()) bad("invalid POSIX class");
        std::string name;
        for (size_t k = pos_ + 2; k < close; ++k) name += static_cast<char>(p_[k]);
        bool neg = !name.empty() && name[0] == '^';
        Ranges pr;
        if (!posix_class(neg ? name.substr(1) : name, pr)) bad("invalid POSIX class [:" + name + ":]");
        if (neg) pr = complement(pr);
        r.insert(r.end(), pr.begin(), pr.end());
        pos_ = close + 2;
        continue;
      }
      uint32_t lo = 0;
      if (!class_char(lo, r)) continue;  // a \d-style class was added
      uint32_t hi = lo;
      if (pos_ + 1 < p_.size() && peek() == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        Ranges dummy;
        if (!class_char(hi, dummy)) bad("invalid character class range");
        if (hi < lo) bad("invalid character class range (end before start)");
      }
      r.push_back({lo, hi});
    }
    return class_node(r, negate, f.icase);
  }

  // One class member: a character (returns true) or a \d-style class
  // appended to r (returns false).
  bool class_char(uint32_t& out, Ranges& r) {
    uint32_t c = p_[pos_++];
    if (c != '\\') {
      out = c;
      return true;
    }
    if (at_end()) bad("trailing backslash");
    uint32_t e = p_[pos_++];
    Ranges pr;
    if ((e == 'd' || e == 'w' || e == 's' || e == 'D' || e == 'W' || e == 'S') && perl_class(e | 0x20, pr)) {
      if (e < 'a') pr = complement(pr);
      r.insert(r.end(), pr.begin(), pr.end());
      return false;
    }
    if (e == 'p' || e == 'P') bad("Unicode classes (\\p, \\P) are not supported");
    if (!char_escape(e, out)) bad("invalid escape sequence in character class");
    return true;
  }

  std::vector<uint32_t> p_;
  size_t pos_ = 0;
  std::vector<RegexMatcher::CharClass>& classes_;
};

}  // namespace

RxPtr parse_regex(const std::string& pattern, std::vector<RegexMatcher::CharClass>& classes) {
  return Parser(pattern, classes).parse();
}

}  // namespace tessera::regex_detail
