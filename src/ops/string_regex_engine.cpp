// Thompson-NFA compiler and linear-time simulation for RegexFullMatch (see
// the header); the parser is in string_regex_parse.cpp.
#include <cstdint>
#include <stdexcept>

#include "ops/string_regex_engine.h"
#include "ops/string_regex_internal.h"

namespace tessera {

namespace regex_detail {

void bad(const std::string& why) { throw std::invalid_argument(why); }

// Decodes UTF-8; an invalid byte becomes U+FFFD on its own.
std::vector<uint32_t> decode_utf8(const std::string& s) {
  std::vector<uint32_t> out;
  size_t i = 0, n = s.size();
  while (i < n) {
    auto b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    uint32_t c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    bool ok = len > 0 && i + static_cast<size_t>(len) <= n;
    for (int k = 1; ok && k < len; ++k) {
      auto cb = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      ok = (cb & 0xC0) == 0x80;
      c = (c << 6) | (cb & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(c);
    i += static_cast<size_t>(len);
  }
  return out;
}

bool is_word(uint32_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

}  // namespace regex_detail

namespace {

using namespace regex_detail;

// Thompson construction.
class Compiler {
 public:
  explicit Compiler(std::vector<RegexMatcher::Inst>& prog) : prog_(prog) {}

  void compile(const Rx& r, int depth) {
    if (depth > 4 * kMaxDepth) bad("pattern nests too deeply");
    if (prog_.size() > kMaxProgram) bad("pattern is too large once repetitions are expanded");
    using I = RegexMatcher::Inst;
    switch (r.kind) {
      case Rx::Empty: break;
      case Rx::Class: emit(I::Char, r.cls); break;
      case Rx::Assert: emit(I::Assert, r.assertion); break;
      case Rx::Concat:
        for (const auto& k : r.kids) compile(*k, depth + 1);
        break;
      case Rx::Alt: {
        // split L1, next; L1: a; jmp end; next: split L2, next2 ...; last: z
        std::vector<size_t> jumps;
        for (size_t i = 0; i < r.kids.size(); ++i) {
          if (i + 1 < r.kids.size()) {
            size_t split = emit(I::Split);
            prog_[split].x = static_cast<int>(prog_.size());
            compile(*r.kids[i], depth + 1);
            jumps.push_back(emit(I::Jmp));
            prog_[split].y = static_cast<int>(prog_.size());
          } else {
            compile(*r.kids[i], depth + 1);
          }
        }
        for (size_t j : jumps) prog_[j].x = static_cast<int>(prog_.size());
        break;
      }
      case Rx::Repeat: {
        const Rx& x = *r.kids[0];
        for (int i = 0; i < r.min; ++i) compile(x, depth + 1);
        if (r.max < 0) {  // x*: L: split body, end; body: x; jmp L
          size_t split = emit(I::Split);
          prog_[split].x = static_cast<int>(prog_.size());
          compile(x, depth + 1);
          size_t j = emit(I::Jmp);
          prog_[j].x = static_cast<int>(split);
          prog_[split].y = static_cast<int>(prog_.size());
        } else {  // (x(x(x)?)?)? for the optional copies
          std::vector<size_t> splits;
          for (int i = r.min; i < r.max; ++i) {
            size_t split = emit(I::Split);
            prog_[split].x = static_cast<int>(prog_.size());
            splits.push_back(split);
            compile(x, depth + 1);
          }
          for (size_t s : splits) prog_[s].y = static_cast<int>(prog_.size());
        }
        break;
      }
    }
  }

  size_t emit(RegexMatcher::Inst::Op op, int x = 0) {
    RegexMatcher::Inst in;
    in.op = op;
    in.x = x;
    prog_.push_back(in);
    return prog_.size() - 1;
  }

 private:
  std::vector<RegexMatcher::Inst>& prog_;
};

uint32_t ascii_fold(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 'a' + 'A';
  if (c >= 'A' && c <= 'Z') return c - 'A' + 'a';
  return c;
}

}  // namespace

bool RegexMatcher::CharClass::matches(uint32_t c) const {
  auto in = [&](uint32_t v) {
    for (auto [lo, hi] : ranges)
      if (v >= lo && v <= hi) return true;
    return false;
  };
  bool hit = in(c) || (icase && ascii_fold(c) != c && in(ascii_fold(c)));
  return hit != negate;
}

RegexMatcher::RegexMatcher(const std::string& pattern) {
  RxPtr tree = parse_regex(pattern, classes_);
  Compiler comp(prog_);
  comp.compile(*tree, 0);
  comp.emit(Inst::Match);
}

bool RegexMatcher::full_match(const std::string& text) const {
  std::vector<uint32_t> s = decode_utf8(text);
  size_t n = s.size();
  std::vector<size_t> mark(prog_.size(), SIZE_MAX);  // generation that added the pc
  std::vector<int> cur, next, stack;
  auto holds = [&](int kind, size_t pos) {
    bool prev_word = pos > 0 && is_word(s[pos - 1]);
    bool next_word = pos < n && is_word(s[pos]);
    switch (kind) {
      case kBeginText: return pos == 0;
      case kEndText: return pos == n;
      case kBeginLine: return pos == 0 || s[pos - 1] == '\n';
      case kEndLine: return pos == n || s[pos] == '\n';
      case kWordBoundary: return prev_word != next_word;
      default: return prev_word == next_word;
    }
  };
  // Adds pc and everything reachable from it without consuming input.
  auto add = [&](std::vector<int>& list, int start, size_t pos) {
    stack.push_back(start);
    while (!stack.empty()) {
      int pc = stack.back();
      stack.pop_back();
      if (mark[static_cast<size_t>(pc)] == pos) continue;
      mark[static_cast<size_t>(pc)] = pos;
      const Inst& in = prog_[static_cast<size_t>(pc)];
      switch (in.op) {
        case Inst::Jmp: stack.push_back(in.x); break;
        case Inst::Split:
          stack.push_back(in.y);
          stack.push_back(in.x);
          break;
        case Inst::Assert:
          if (holds(in.x, pos)) stack.push_back(pc + 1);
          break;
        default: list.push_back(pc); break;
      }
    }
  };
  add(cur, 0, 0);
  for (size_t pos = 0; pos < n && !cur.empty(); ++pos) {
    next.clear();
    for (int pc : cur) {
      const Inst& in = prog_[static_cast<size_t>(pc)];
      if (in.op == Inst::Char && classes_[static_cast<size_t>(in.x)].matches(s[pos])) add(next, pc + 1, pos + 1);
    }
    std::swap(cur, next);
  }
  // cur holds threads at position n unless they all died earlier (then it is empty).
  for (int pc : cur)
    if (prog_[static_cast<size_t>(pc)].op == Inst::Match) return true;
  return false;
}

}  // namespace tessera
