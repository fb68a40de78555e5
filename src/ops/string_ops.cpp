// Ops on string tensors: StringNormalizer, StringConcat, StringSplit here;
// RegexFullMatch (string_regex.cpp) and TfIdfVectorizer (string_tfidf.cpp).
#include "ops/string_ops.h"

#include <algorithm>
#include <set>

#include "ops/op_attrs.h"
#include "ops/op_helpers.h"

namespace tessera {

std::string ascii_lower(std::string s) {
  for (char& ch : s)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  return s;
}

std::string ascii_upper(std::string s) {
  for (char& ch : s)
    if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
  return s;
}

namespace {

void check_string(const Node& n, DType t, const char* what) {
  TESSERA_CHECK(t == DType::String, n.describe(), ": ", what, " must be a string tensor, got ", dtype_name(t));
}

// ---------------------------------------------------------------- StringNormalizer

// The case_change_action attribute: "NONE", "LOWER" or "UPPER".
std::string case_action(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  std::string a = attrs.s("case_change_action");
  TESSERA_CHECK(a == "NONE" || a == "LOWER" || a == "UPPER", n.describe(), ": case_change_action '", a,
                "' is not one of NONE, LOWER, UPPER");
  return a;
}

// Input must be [C] or [1, C] (dims may be unknown at inference time).
void check_normalizer_shape(const Node& n, const Dims& d) {
  TESSERA_CHECK(d.size() == 1 || (d.size() == 2 && d[0] <= 1 && d[0] != 0), n.describe(),
                ": input must have shape [C] or [1, C], got ", dims_to_string(d));
}

void infer_string_normalizer(InferContext& c) {
  const TensorType& x = c.in(0);
  check_string(c.node, x.dtype, "input");
  check_normalizer_shape(c.node, x.dims);
  case_action(op_attrs(c));
  Dims d = x.dims;
  // Removing stop words (or an empty input, which becomes one empty string)
  // makes the length data-dependent.
  bool same = op_attrs(c).strings("stopwords").empty() && d.back() > 0;
  if (!same) d.back() = -1;
  c.out(0) = {DType::String, d, true};
}

std::vector<Tensor> run_string_normalizer(const KernelContext& c) {
  const Tensor& x = c.in(0);
  check_string(c.node, x.dtype(), "input");
  check_normalizer_shape(c.node, x.dims());
  std::string action = case_action(op_attrs(c));
  bool case_sensitive = op_attrs(c).i("is_case_sensitive") != 0;
  std::set<std::string> stop;
  for (const std::string& s : op_attrs(c).strings("stopwords")) stop.insert(case_sensitive ? s : ascii_lower(s));
  std::vector<std::string> kept;
  for (const std::string& s : x.strings()) {
    if (stop.count(case_sensitive ? s : ascii_lower(s))) continue;
    kept.push_back(action == "LOWER" ? ascii_lower(s) : action == "UPPER" ? ascii_upper(s) : s);
  }
  // Everything dropped: one empty string, keeping the input's rank.
  if (kept.empty()) kept.push_back("");
  Dims d = x.dims();
  d.back() = static_cast<int64_t>(kept.size());
  Tensor y(DType::String, d);
  y.strings() = std::move(kept);
  return {y};
}

// ---------------------------------------------------------------- StringConcat

void infer_string_concat(InferContext& c) {
  check_string(c.node, c.in(0).dtype, "input X");
  check_string(c.node, c.in(1).dtype, "input Y");
  c.out(0) = broadcast_types(c.node, c.input_types);
}

std::vector<Tensor> run_string_concat(const KernelContext& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  check_string(c.node, a.dtype(), "input X");
  check_string(c.node, b.dtype(), "input Y");
  Dims d = broadcast_dims(c.node, a.dims(), b.dims());
  Tensor y(DType::String, d);
  BroadcastIndexer ia(a.dims(), d), ib(b.dims(), d);
  for (int64_t i = 0; i < y.numel(); ++i)
    y.strings()[static_cast<size_t>(i)] =
        a.strings()[static_cast<size_t>(ia(i))] + b.strings()[static_cast<size_t>(ib(i))];
  return {y};
}

// ---------------------------------------------------------------- StringSplit

bool is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'; }

// Python's str.split(sep, maxsplit): an empty `sep` splits on runs of
// whitespace and drops leading/trailing whitespace (except in the unsplit
// rest after maxsplit pieces); maxsplit < 0 = no limit.
std::vector<std::string> split_string(const std::string& s, const std::string& sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (sep.empty()) {
    size_t i = 0, n = s.size();
    while (true) {
      while (i < n && is_space(s[i])) ++i;
      if (i == n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.push_back(s.substr(i));  // the rest, trailing whitespace included
        break;
      }
      size_t j = i;
      while (j < n && !is_space(s[j])) ++j;
      parts.push_back(s.substr(i, j - i));
      i = j;
    }
    return parts;
  }
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    size_t p = s.find(sep, start);
    if (p == std::string::npos) break;
    parts.push_back(s.substr(start, p - start));
    start = p + sep.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

void infer_string_split(InferContext& c) {
  const TensorType& x = c.in(0);
  check_string(c.node, x.dtype, "input");
  Dims d = x.dims;
  d.push_back(-1);  // the largest number of pieces is data-dependent
  c.out(0) = {DType::String, d, true};
  c.out(1) = {DType::I64, x.dims, true};
}

std::vector<Tensor> run_string_split(const KernelContext& c) {
  const Tensor& x = c.in(0);
  check_string(c.node, x.dtype(), "input");
  std::string sep = op_attrs(c).s("delimiter");
  int64_t maxsplit = op_attrs(c).i("maxsplit");  // absent: no limit
  std::vector<std::vector<std::string>> parts;
  size_t widest = 0;
  for (const std::string& s : x.strings()) {
    parts.push_back(split_string(s, sep, maxsplit));
    widest = std::max(widest, parts.back().size());
  }
  Dims d = x.dims();
  d.push_back(static_cast<int64_t>(widest));
  Tensor y(DType::String, d);
  Tensor len(DType::I64, x.dims());
  for (size_t i = 0; i < parts.size(); ++i) {
    len.data<int64_t>()[i] = static_cast<int64_t>(parts[i].size());
    for (size_t k = 0; k < parts[i].size(); ++k) y.strings()[i * widest + k] = std::move(parts[i][k]);
  }
  return {y, len};
}

}  // namespace

void register_string_ops(OpRegistry& r) {
  // Output elements are the kept input elements, case-mapped one by one.
  r.add({.name = "StringNormalizer", .min_opset = 10, .mapping = MappingType::OneToOne,
         .infer = infer_string_normalizer, .reference = run_string_normalizer,
         .attributes = {string_attr("case_change_action", "NONE"), int_attr("is_case_sensitive", 0),
                        string_attr("locale"), strings_attr("stopwords", {})}});
  r.add({.name = "StringConcat", .min_opset = 20, .mapping = MappingType::OneToOne, .broadcasts = true,
         .infer = infer_string_concat, .reference = run_string_concat});
  // Each input string becomes a row of pieces.
  r.add({.name = "StringSplit", .min_opset = 20, .mapping = MappingType::OneToMany, .infer = infer_string_split,
         .reference = run_string_split, .attributes = {string_attr("delimiter", ""), int_attr("maxsplit", -1)}});
  register_string_regex_ops(r);
  register_string_tfidf_ops(r);
}

}  // namespace tessera
