// Schedule directives: builders and the text form.
#include "schedule/schedule.h"

#include <sstream>

#include <optional>

#include "support/checked_int.h"
#include "support/error.h"

namespace tessera::schedule {

namespace {

// Per kind: keyword, number of names, number of ints (-1 names: one or more).
struct DirectiveSyntax {
  DirectiveKind kind;
  std::string_view keyword;
  int names;
  int ints;
};
constexpr DirectiveSyntax kSyntax[] = {
    {DirectiveKind::Split, "split", 1, 1},           {DirectiveKind::SplitShift, "split_shift", 1, 1},
    {DirectiveKind::Fuse, "fuse", 2, 0},
    {DirectiveKind::Reorder, "reorder", -1, 0},      {DirectiveKind::Vectorize, "vectorize", 1, 0},
    {DirectiveKind::Unroll, "unroll", 1, 0},         {DirectiveKind::Parallel, "parallel", 1, 0},
    {DirectiveKind::ComputeAt, "compute_at", 2, 0},  {DirectiveKind::ComputeInline, "compute_inline", 0, 0},
    {DirectiveKind::ComputeRoot, "compute_root", 0, 0}, {DirectiveKind::CacheWrite, "cache_write", 0, 0},
    {DirectiveKind::CacheRead, "cache_read", 1, 0},  {DirectiveKind::Layout, "layout", 0, 2},
    {DirectiveKind::Pad, "pad", 0, 2},               {DirectiveKind::RFactor, "rfactor", 1, 1},
    {DirectiveKind::Accumulate, "accumulate", 1, 0}, {DirectiveKind::Prefetch, "prefetch", 4, 2},
};

const DirectiveSyntax& syntax_of(DirectiveKind k) {
  for (const auto& s : kSyntax)
    if (s.kind == k) return s;
  TESSERA_FAIL("schedule: unknown step kind ", static_cast<int>(k));
}

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c == ' ' || c == '\t' || c == '\n' || c == '#') return false;
  return true;
}

Directive make(DirectiveKind k, std::string stage, std::vector<std::string> names, std::vector<int64_t> ints) {
  return Directive{k, std::move(stage), std::move(names), std::move(ints)};
}

}  // namespace

std::string_view directive_kind_name(DirectiveKind k) { return syntax_of(k).keyword; }

std::string Directive::to_text() const {
  std::string s(directive_kind_name(kind));
  s += ' ';
  s += stage;
  for (const auto& n : names) s += ' ' + n;
  for (int64_t i : ints) s += ' ' + std::to_string(i);
  return s;
}

Schedule& Schedule::split(std::string stage, std::string loop, int64_t factor) {
  return add(make(DirectiveKind::Split, std::move(stage), {std::move(loop)}, {factor}));
}
Schedule& Schedule::split_shift(std::string stage, std::string loop, int64_t factor) {
  return add(make(DirectiveKind::SplitShift, std::move(stage), {std::move(loop)}, {factor}));
}
bool has_shifted_split(const Schedule& s) {
  for (const Directive& st : s.directives)
    if (st.kind == DirectiveKind::SplitShift) return true;
  return false;
}
Schedule& Schedule::fuse(std::string stage, std::string outer, std::string inner) {
  return add(make(DirectiveKind::Fuse, std::move(stage), {std::move(outer), std::move(inner)}, {}));
}
Schedule& Schedule::reorder(std::string stage, std::vector<std::string> loops) {
  return add(make(DirectiveKind::Reorder, std::move(stage), std::move(loops), {}));
}
Schedule& Schedule::vectorize(std::string stage, std::string loop) {
  return add(make(DirectiveKind::Vectorize, std::move(stage), {std::move(loop)}, {}));
}
Schedule& Schedule::unroll(std::string stage, std::string loop) {
  return add(make(DirectiveKind::Unroll, std::move(stage), {std::move(loop)}, {}));
}
Schedule& Schedule::parallel(std::string stage, std::string loop) {
  return add(make(DirectiveKind::Parallel, std::move(stage), {std::move(loop)}, {}));
}
Schedule& Schedule::compute_at(std::string stage, std::string target, std::string loop) {
  return add(make(DirectiveKind::ComputeAt, std::move(stage), {std::move(target), std::move(loop)}, {}));
}
Schedule& Schedule::compute_inline(std::string stage) {
  return add(make(DirectiveKind::ComputeInline, std::move(stage), {}, {}));
}
Schedule& Schedule::compute_root(std::string stage) {
  return add(make(DirectiveKind::ComputeRoot, std::move(stage), {}, {}));
}
Schedule& Schedule::cache_write(std::string stage) {
  return add(make(DirectiveKind::CacheWrite, std::move(stage), {}, {}));
}
Schedule& Schedule::cache_read(std::string stage, std::string consumer) {
  return add(make(DirectiveKind::CacheRead, std::move(stage), {std::move(consumer)}, {}));
}
Schedule& Schedule::rfactor(std::string stage, std::string axis, int64_t factor) {
  return add(make(DirectiveKind::RFactor, std::move(stage), {std::move(axis)}, {factor}));
}
Schedule& Schedule::accumulate(std::string stage, std::string loop) {
  return add(make(DirectiveKind::Accumulate, std::move(stage), {std::move(loop)}, {}));
}
Schedule& Schedule::prefetch(std::string stage, std::string input, std::string loop, std::string target,
                             std::string target_loop, int64_t ahead, int64_t spread) {
  return add(make(DirectiveKind::Prefetch, std::move(stage),
                  {std::move(input), std::move(loop), std::move(target), std::move(target_loop)}, {ahead, spread}));
}

Schedule& Schedule::layout(std::string stage, int64_t dim, int64_t factor) {
  return add(make(DirectiveKind::Layout, std::move(stage), {}, {dim, factor}));
}
Schedule& Schedule::pad(std::string stage, int64_t dim, int64_t multiple) {
  return add(make(DirectiveKind::Pad, std::move(stage), {}, {dim, multiple}));
}

std::string to_text(const Schedule& s) {
  std::string out;
  for (const Directive& st : s.directives) out += st.to_text() + "\n";
  return out;
}

Schedule parse_schedule(const std::string& text) {
  Schedule sched;
  std::istringstream lines(text);
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.empty()) continue;
    const DirectiveSyntax* syn = nullptr;
    for (const auto& s : kSyntax)
      if (s.keyword == w[0]) syn = &s;
    TESSERA_CHECK(syn, "schedule line ", line_no, ": unknown step '", w[0], "'");
    TESSERA_CHECK(w.size() >= 2, "schedule line ", line_no, ": '", w[0], "' needs a stage name");
    Directive st;
    st.kind = syn->kind;
    st.stage = w[1];
    size_t rest = w.size() - 2;
    if (syn->names < 0) {
      TESSERA_CHECK(rest >= 1, "schedule line ", line_no, ": '", w[0], "' needs at least one loop");
      st.names.assign(w.begin() + 2, w.end());
    } else {
      TESSERA_CHECK(rest == static_cast<size_t>(syn->names + syn->ints), "schedule line ", line_no, ": '", w[0],
                    "' takes ", syn->names + syn->ints, " arguments after the stage, got ", rest);
      st.names.assign(w.begin() + 2, w.begin() + 2 + syn->names);
      for (size_t i = 2 + static_cast<size_t>(syn->names); i < w.size(); ++i) {
        const std::string& x = w[i];
        std::optional<int64_t> v = parse_int64(x);
        TESSERA_CHECK(v, "schedule line ", line_no, ": '", x, "' is not an integer");
        // Schedules come from files (artifacts, tuning records): a factor or
        // dim beyond any loop's is refused here; lowering checks each
        // against its loop's extent.
        TESSERA_CHECK(*v >= 0 && *v <= kMaxScheduleInt, "schedule line ", line_no, ": ", x, " is out of range (0 to ",
                      kMaxScheduleInt, ")");
        st.ints.push_back(*v);
      }
    }
    for (const auto& n : st.names) TESSERA_CHECK(valid_name(n), "schedule line ", line_no, ": bad name '", n, "'");
    sched.directives.push_back(std::move(st));
  }
  return sched;
}

}  // namespace tessera::schedule
