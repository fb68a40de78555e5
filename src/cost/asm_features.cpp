// Machine-code features from assembly text (see asm_features.h).
#include "cost/asm_features.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <vector>

namespace tessera::cost {

namespace {

constexpr std::array<std::string_view, kAsmOpCount> kAsmOpNames{
    "instructions", "fma", "float_arith", "scalar_float", "loads", "stores", "broadcasts", "shuffles",
    "gathers", "spills", "reloads", "calls", "anchor", "mem_elements", "chain"};

// A call is counted as a transcendental function of this many element
// operations, as loop_features.cpp counts one (kMathExpansion there).
constexpr double kCallElements = 15;

// Mnemonic prefixes of each instruction class (AT&T mnemonics, as LLVM prints them).
constexpr std::string_view kFmaPrefixes[] = {"vfmadd", "vfmsub", "vfnmadd", "vfnmsub"};
constexpr std::string_view kArithPrefixes[] = {"vadd", "vsub", "vmul", "vdiv", "vmax", "vmin", "vsqrt", "vrcp",
                                               "vrsqrt", "vround", "vrndscale", "vcmp", "vblendv", "vscalef",
                                               "vgetexp", "vgetmant", "vfixupimm", "vreduce"};
constexpr std::string_view kShufflePrefixes[] = {"vperm", "vpperm", "vshuf", "vpshuf", "vunpck", "vpunpck",
                                                 "vinsert", "vextract", "valign", "vpalignr", "vmovshdup",
                                                 "vmovsldup", "vmovddup", "vmovhlps", "vmovlhps", "vcompress",
                                                 "vexpand", "vpermil", "vpack"};
constexpr std::string_view kBroadcastPrefixes[] = {"vbroadcast", "vpbroadcast"};
constexpr std::string_view kGatherPrefixes[] = {"vgather", "vpgather", "vscatter", "vpscatter"};
constexpr std::string_view kNoMemory[] = {"lea", "nop", "prefetch"};
constexpr std::string_view kReadsLast[] = {"cmp", "test", "bt", "ucomis", "vucomis", "comis", "vcomis"};

template <size_t N>
bool starts_with_any(std::string_view s, const std::string_view (&prefixes)[N]) {
  return std::any_of(std::begin(prefixes), std::end(prefixes), [&](std::string_view p) { return s.starts_with(p); });
}

struct Instr {
  std::string_view mnemonic;
  std::vector<std::string_view> operands;
};

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r");
  return b == std::string_view::npos ? std::string_view{} : s.substr(b, e - b + 1);
}

// Operands split at commas outside parentheses and braces.
std::vector<std::string_view> split_operands(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    char c = i < s.size() ? s[i] : ',';
    if (c == '(' || c == '{') ++depth;
    else if (c == ')' || c == '}') --depth;
    else if (c == ',' && depth == 0) {
      if (std::string_view op = trim(s.substr(start, i - start)); !op.empty()) out.push_back(op);
      start = i + 1;
    }
  }
  return out;
}

int register_width(std::string_view op) {
  if (op.find("%zmm") != std::string_view::npos) return 64;
  if (op.find("%ymm") != std::string_view::npos) return 32;
  if (op.find("%xmm") != std::string_view::npos) return 16;
  return 0;
}
bool is_memory(std::string_view op) { return op.find('(') != std::string_view::npos; }
bool is_stack(std::string_view op) {
  return op.find("(%rsp") != std::string_view::npos || op.find("(%rbp") != std::string_view::npos;
}

// Elements one float instruction works on, from its suffix and register width.
double float_elements(std::string_view m, int width) {
  if (m.ends_with("ss") || m.ends_with("sd")) return 1;
  if (width == 0) width = 16;
  return m.ends_with("pd") ? width / 8.0 : width / 4.0;
}
bool float_suffix(std::string_view m) {
  return m.ends_with("ps") || m.ends_with("pd") || m.ends_with("ss") || m.ends_with("sd");
}

void classify(const Instr& in, AsmCounts& c) {
  std::string_view m = in.mnemonic;
  c[AsmOp::Instructions] += 1;
  int width = 0;
  for (std::string_view op : in.operands) width = std::max(width, register_width(op));
  bool broadcast = starts_with_any(m, kBroadcastPrefixes) ||
                   std::any_of(in.operands.begin(), in.operands.end(),
                               [](std::string_view op) { return op.find("{1to") != std::string_view::npos; });

  if (m.starts_with("call")) {
    c[AsmOp::Calls] += 1;
    c[AsmOp::Anchor] += kCallElements;
  } else if (starts_with_any(m, kFmaPrefixes)) {
    c[AsmOp::Fma] += 1;
    c[AsmOp::Anchor] += float_elements(m, width);
    if (float_elements(m, width) == 1) c[AsmOp::ScalarFloat] += 1;
  } else if (starts_with_any(m, kGatherPrefixes)) {
    c[AsmOp::Gathers] += 1;
  } else if (starts_with_any(m, kShufflePrefixes)) {
    c[AsmOp::Shuffles] += 1;
  } else if ((starts_with_any(m, kArithPrefixes) && float_suffix(m)) || m.starts_with("vcvt")) {
    c[AsmOp::FloatArith] += 1;
    double e = float_elements(m, width);
    c[AsmOp::Anchor] += e;
    if (e == 1) c[AsmOp::ScalarFloat] += 1;
  }
  if (broadcast) c[AsmOp::Broadcasts] += 1;

  // Memory: AT&T puts the destination last.
  if (starts_with_any(m, kNoMemory)) return;
  bool load = false, store = false, stack_load = false, stack_store = false;
  for (size_t i = 0; i < in.operands.size(); ++i) {
    std::string_view op = in.operands[i];
    if (!is_memory(op)) continue;
    bool last = i + 1 == in.operands.size() && !starts_with_any(m, kReadsLast);
    (last ? store : load) = true;
    if (is_stack(op)) (last ? stack_store : stack_load) = true;
  }
  if (m.starts_with("push")) store = true;
  if (m.starts_with("pop")) load = true;
  double elems = broadcast || m.ends_with("ss") || m.ends_with("sd") ? 1 : width > 0 ? width / 4.0 : 1;
  if (load) {
    c[AsmOp::Loads] += 1;
    c[AsmOp::MemElements] += elems;
  }
  if (store) {
    c[AsmOp::Stores] += 1;
    c[AsmOp::MemElements] += elems;
  }
  if (width > 0 && stack_store && m.starts_with("vmov")) c[AsmOp::Spills] += 1;
  if (width > 0 && stack_load) c[AsmOp::Reloads] += 1;
}

// The vector register an operand names ("%ymm3 {%k1}" -> 3), or -1.
int vector_register(std::string_view op) {
  if (op.size() < 5 || op[0] != '%' || op.substr(2, 2) != "mm") return -1;
  int r = 0;
  auto [end, ec] = std::from_chars(op.data() + 4, op.data() + op.size(), r);
  return ec == std::errc() ? r : -1;
}

// The longest chain of dependent float instructions one iteration of the loop
// [first, last] adds to a value carried from the previous iteration (an
// accumulator, possibly moving between registers as LLVM renames it).
// Registers the loop never writes hold invariants and carry nothing.
double carried_chain(const std::vector<Instr>& instrs, size_t first, size_t last) {
  constexpr int kRegs = 32;
  std::array<bool, kRegs> written{}, carried{};
  std::array<double, kRegs> depth{};
  for (size_t i = first; i <= last; ++i)
    if (!instrs[i].operands.empty())
      if (int d = vector_register(instrs[i].operands.back()); d >= 0 && d < kRegs) written[static_cast<size_t>(d)] = true;
  carried = written;  // live-in values of registers the loop rewrites came from the previous iteration
  double longest = 0;
  for (size_t i = first; i <= last; ++i) {
    const Instr& in = instrs[i];
    if (in.operands.empty()) continue;
    int d = vector_register(in.operands.back());
    if (d < 0 || d >= kRegs) continue;
    bool fma = starts_with_any(in.mnemonic, kFmaPrefixes);
    bool fp = fma || (starts_with_any(in.mnemonic, kArithPrefixes) && float_suffix(in.mnemonic));
    bool in_carried = false;
    double in_depth = 0;
    size_t sources = fma ? in.operands.size() : in.operands.size() - 1;
    for (size_t k = 0; k < sources; ++k) {
      int r = vector_register(in.operands[k]);
      if (r < 0 || r >= kRegs || !carried[static_cast<size_t>(r)]) continue;
      in_carried = true;
      in_depth = std::max(in_depth, depth[static_cast<size_t>(r)]);
    }
    bool zero_idiom = sources == 2 && in.operands[0] == in.operands[1] && in.mnemonic.starts_with("vxor");
    carried[static_cast<size_t>(d)] = in_carried && !zero_idiom;
    depth[static_cast<size_t>(d)] = carried[static_cast<size_t>(d)] ? in_depth + (fp ? 1 : 0) : 0;
    if (carried[static_cast<size_t>(d)]) longest = std::max(longest, depth[static_cast<size_t>(d)]);
  }
  return longest;
}

}  // namespace

std::string_view asm_op_name(AsmOp op) { return kAsmOpNames.at(static_cast<size_t>(op)); }

AsmFeatures asm_features(std::string_view text) {
  std::vector<Instr> instrs;
  std::unordered_map<std::string_view, size_t> labels;  // label -> index of the next instruction
  std::vector<std::pair<size_t, std::string_view>> jumps;  // instruction index, target label
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    if (line.back() == ':') {
      labels[line.substr(0, line.size() - 1)] = instrs.size();
      continue;
    }
    if (line.front() == '.') continue;  // a directive
    size_t sp = line.find_first_of(" \t");
    Instr in;
    in.mnemonic = line.substr(0, sp);
    if (sp != std::string_view::npos) in.operands = split_operands(line.substr(sp + 1));
    if (in.mnemonic.starts_with("j") && in.operands.size() == 1 && in.operands[0].starts_with("."))
      jumps.emplace_back(instrs.size(), in.operands[0]);
    instrs.push_back(std::move(in));
  }

  AsmFeatures f;
  std::vector<std::pair<size_t, size_t>> loops;  // [first, last] instruction
  for (const auto& [at, label] : jumps) {
    auto it = labels.find(label);
    if (it != labels.end() && it->second <= at) loops.emplace_back(it->second, at);
  }
  std::sort(loops.begin(), loops.end());
  loops.erase(std::unique(loops.begin(), loops.end()), loops.end());
  f.loops = static_cast<int>(loops.size());
  for (const Instr& in : instrs) classify(in, f.whole);
  for (const auto& l : loops) {
    bool inner = std::none_of(loops.begin(), loops.end(), [&](const auto& o) {
      return o != l && o.first >= l.first && o.second <= l.second;
    });
    if (!inner) continue;
    ++f.innermost_loops;
    for (size_t i = l.first; i <= l.second; ++i) classify(instrs[i], f.inner);
    double longest = carried_chain(instrs, l.first, l.second);
    f.inner[AsmOp::Chain] += longest;
  }
  return f;
}

}  // namespace tessera::cost
