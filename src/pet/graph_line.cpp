// A graph as one line of text and back (see graph_line.h for the form).
#include "pet/graph_line.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "support/error.h"

namespace tessera::pet {

namespace {

constexpr const char* kVersion = "g1";
// Bounds a line must keep (a malformed one must not make the reader allocate
// without end): dims per tensor, and elements per tensor.
constexpr int64_t kMaxRank = 16;
constexpr int64_t kMaxElements = int64_t{1} << 26;  // a mask of a 2048x1024x3x3 kernel is 19M

// Names and strings: [A-Za-z0-9_/] as they are, any other byte as %XX, the
// empty string as "." ("-" stands for an absent input or output).
std::string escape(const std::string& s) {
  if (s.empty()) return ".";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '/') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// escape's inverse; nullopt for a token escape does not write.
std::optional<std::string> unescape(const std::string& t) {
  if (t == ".") return "";
  std::string s;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '%') {
      s += t[i];
      continue;
    }
    const int hi = i + 2 < t.size() ? hex_digit(t[i + 1]) : -1, lo = i + 2 < t.size() ? hex_digit(t[i + 2]) : -1;
    if (hi < 0 || lo < 0) return std::nullopt;
    s += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return s;
}

class Writer {
 public:
  void token(const std::string& t) { out_ += (out_.empty() ? "" : " ") + t; }
  void num(int64_t v) { token(std::to_string(v)); }
  void str(const std::string& s) { token(escape(s)); }
  void f32(float f) { num(static_cast<int64_t>(std::bit_cast<uint32_t>(f))); }
  void type(const TensorType& t) {
    num(static_cast<int64_t>(t.dtype));
    num(t.rank_known ? 1 : 0);
    num(t.rank());
    for (int64_t d : t.dims) num(d);
  }
  // Elements as runs: count, then the element's bytes in hex.
  bool tensor(const Tensor& t) {
    if (t.defined() && dtype_size(t.dtype()) == 0) return false;  // strings
    num(static_cast<int64_t>(t.dtype()));
    num(t.rank());
    for (int64_t d : t.dims()) num(d);
    if (!t.defined()) return true;
    const size_t size = dtype_size(t.dtype());
    const auto* bytes = static_cast<const unsigned char*>(t.raw());
    std::vector<std::pair<int64_t, size_t>> runs;  // count, first element
    for (int64_t i = 0; i < t.numel(); ++i) {
      const size_t at = static_cast<size_t>(i) * size;
      if (!runs.empty() && std::memcmp(bytes + runs.back().second, bytes + at, size) == 0) ++runs.back().first;
      else runs.push_back({1, at});
    }
    num(static_cast<int64_t>(runs.size()));
    for (const auto& [count, at] : runs) {
      num(count);
      std::string h;
      for (size_t b = 0; b < size; ++b) {
        char buf[3];
        std::snprintf(buf, sizeof buf, "%02x", bytes[at + b]);
        h += buf;
      }
      token(h);
    }
    return true;
  }
  bool attribute(const Attribute& a) {
    using K = Attribute::Kind;
    num(static_cast<int64_t>(a.kind));
    switch (a.kind) {
      case K::Int: num(a.i); return true;
      case K::Float: f32(a.f); return true;
      case K::String: str(a.s); return true;
      case K::Ints:
        num(static_cast<int64_t>(a.ints.size()));
        for (int64_t v : a.ints) num(v);
        return true;
      case K::Floats:
        num(static_cast<int64_t>(a.floats.size()));
        for (float v : a.floats) f32(v);
        return true;
      case K::Strings:
        num(static_cast<int64_t>(a.strings.size()));
        for (const std::string& s : a.strings) str(s);
        return true;
      case K::Tensor: return tensor(a.t);
      default: return false;  // subgraphs, tensor lists
    }
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& line) : in_(line) {}

  std::string token(const char* what) {
    std::string t;
    TESSERA_CHECK(in_ >> t, "PET database graph line: ended where ", what, " was expected");
    return t;
  }
  int64_t num(const char* what, int64_t lo = std::numeric_limits<int64_t>::min(),
              int64_t hi = std::numeric_limits<int64_t>::max()) {
    const std::string t = token(what);
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(t, &used, 10);
    } catch (const std::exception&) {
      used = 0;
    }
    TESSERA_CHECK(used == t.size() && !t.empty() && v >= lo && v <= hi, "PET database graph line: bad ", what, " '",
                  t, "'");
    return v;
  }
  std::string str(const char* what) { return unescaped(token(what), what); }
  static std::string unescaped(const std::string& t, const char* what) {
    std::optional<std::string> s = unescape(t);
    TESSERA_CHECK(s, "PET database graph line: bad escape in ", what, " '", t, "'");
    return *s;
  }
  float f32(const char* what) { return std::bit_cast<float>(static_cast<uint32_t>(num(what, 0, 0xffffffffll))); }
  DType dtype(const char* what) {
    const auto d = static_cast<DType>(num(what, 0, 64));
    TESSERA_CHECK(d == DType::Undefined || !dtype_name(d).empty(), "PET database graph line: unknown dtype in ", what);
    return d;
  }
  Dims dims(const char* what) {
    const int64_t rank = num(what, 0, kMaxRank);
    Dims d;
    for (int64_t i = 0; i < rank; ++i) d.push_back(num(what, -1, kMaxElements));
    return d;
  }
  TensorType type(const char* what) {
    TensorType t;
    t.dtype = dtype(what);
    t.rank_known = num(what, 0, 1) == 1;
    t.dims = dims(what);
    return t;
  }
  Tensor tensor(const char* what) {
    const DType d = dtype(what);
    Dims dims;
    for (int64_t n = num(what, 0, kMaxRank); n > 0; --n) dims.push_back(num(what, 0, kMaxElements));
    if (d == DType::Undefined) {
      TESSERA_CHECK(dims.empty(), "PET database graph line: undefined tensor with dims in ", what);
      return Tensor();
    }
    const size_t size = dtype_size(d);
    TESSERA_CHECK(size > 0, "PET database graph line: string tensor in ", what);
    int64_t elements = 1;
    for (int64_t x : dims) {
      TESSERA_CHECK(x == 0 || elements <= kMaxElements / x, "PET database graph line: tensor too large in ", what);
      elements *= x;
    }
    Tensor t(d, dims);
    auto* bytes = static_cast<unsigned char*>(t.raw());
    int64_t at = 0;
    for (int64_t runs = num(what, 0, elements); runs > 0; --runs) {
      const int64_t count = num(what, 1, elements - at);
      const std::string h = token(what);
      TESSERA_CHECK(h.size() == 2 * size, "PET database graph line: element of ", h.size() / 2, " bytes in ", what);
      unsigned char e[16];
      for (size_t b = 0; b < size; ++b) {
        const int hi = hex_digit(h[2 * b]), lo = hex_digit(h[2 * b + 1]);
        TESSERA_CHECK(hi >= 0 && lo >= 0, "PET database graph line: bad element '", h, "' in ", what);
        e[b] = static_cast<unsigned char>(hi * 16 + lo);
      }
      for (int64_t k = 0; k < count; ++k, ++at) std::memcpy(bytes + static_cast<size_t>(at) * size, e, size);
    }
    TESSERA_CHECK(at == elements, "PET database graph line: ", at, " of ", elements, " elements in ", what);
    return t;
  }
  Attribute attribute(const char* what) {
    using K = Attribute::Kind;
    const auto kind = static_cast<K>(num(what, 0, static_cast<int64_t>(K::Graphs)));
    Attribute a;
    switch (kind) {
      case K::Int: a = Attribute::of_int(num(what)); break;
      case K::Float: a = Attribute::of_float(f32(what)); break;
      case K::String: a = Attribute::of_string(str(what)); break;
      case K::Ints: {
        std::vector<int64_t> v;
        for (int64_t n = count(what); n > 0; --n) v.push_back(num(what));
        a = Attribute::of_ints(std::move(v));
        break;
      }
      case K::Floats: {
        std::vector<float> v;
        for (int64_t n = count(what); n > 0; --n) v.push_back(f32(what));
        a = Attribute::of_floats(std::move(v));
        break;
      }
      case K::Strings: {
        std::vector<std::string> v;
        for (int64_t n = count(what); n > 0; --n) v.push_back(str(what));
        a = Attribute::of_strings(std::move(v));
        break;
      }
      case K::Tensor: a = Attribute::of_tensor(tensor(what)); break;
      default: TESSERA_FAIL("PET database graph line: attribute kind it does not write in ", what);
    }
    return a;
  }
  // A count of items that follow: at most the characters left.
  int64_t count(const char* what) { return num(what, 0, left()); }
  bool at_end() {
    std::string t;
    return !(in_ >> t);
  }

 private:
  int64_t left() {
    const std::streampos p = in_.tellg();
    return p < 0 ? 0 : static_cast<int64_t>(in_.str().size()) - static_cast<int64_t>(p);
  }
  std::istringstream in_;
};

}  // namespace

std::optional<std::string> encode_graph_line(const Graph& g) {
  if (!g.captures.empty()) return std::nullopt;
  Writer w;
  w.token(kVersion);
  w.str(g.name);
  w.num(g.opset);
  w.num(g.ir_version);
  w.num(static_cast<int64_t>(g.extra_opsets.size()));
  for (const auto& [domain, version] : g.extra_opsets) w.str(domain), w.num(version);
  w.num(static_cast<int64_t>(g.inputs().size()));
  for (const Value* v : g.inputs()) {
    if (v->is_constant()) return std::nullopt;
    w.str(v->name);
    w.type(v->type);
  }
  int64_t constants = 0;
  for (const auto& v : g.values()) constants += v->is_constant();
  w.num(constants);
  for (const auto& v : g.values()) {
    if (!v->is_constant()) continue;
    if (v->is_graph_input || v->producer) return std::nullopt;
    w.str(v->name);
    if (!w.tensor(*v->constant)) return std::nullopt;
  }
  w.num(static_cast<int64_t>(g.nodes().size()));
  for (const auto& n : g.nodes()) {
    w.str(n->op_type);
    w.str(n->domain);
    w.str(n->name);
    w.num(n->num_inputs());
    for (const Value* v : n->inputs) v ? w.str(v->name) : w.token("-");
    w.num(static_cast<int64_t>(n->outputs.size()));
    for (const Value* v : n->outputs) {
      if (!v) {
        w.token("-");
        continue;
      }
      w.str(v->name);
      w.type(v->type);
    }
    w.num(static_cast<int64_t>(n->attrs.size()));
    for (const auto& [key, a] : n->attrs) {
      w.str(key);
      if (!w.attribute(a)) return std::nullopt;
    }
  }
  w.num(static_cast<int64_t>(g.outputs().size()));
  for (const Value* v : g.outputs()) w.str(v->name);
  return w.take();
}

std::unique_ptr<Graph> decode_graph_line(const std::string& line) {
  Reader r(line);
  const std::string version = r.token("the version");
  TESSERA_CHECK(version == kVersion, "PET database graph line: version '", version, "', expected ", kVersion);
  auto g = std::make_unique<Graph>();
  g->name = r.str("the graph's name");
  g->opset = r.num("the opset", 1, 1000);
  g->ir_version = r.num("the IR version", 0, 1000);
  for (int64_t n = r.count("opsets"); n > 0; --n) {
    std::string domain = r.str("a domain");
    g->extra_opsets[domain] = r.num("a domain's opset", 0, 1000);
  }
  std::map<std::string, Value*> by_name;
  auto define = [&](Value* v) {
    TESSERA_CHECK(by_name.emplace(v->name, v).second, "PET database graph line: value '", v->name,
                  "' defined twice");
  };
  auto fresh_name = [&](const char* what) {
    std::string name = r.str(what);
    TESSERA_CHECK(!name.empty() && !by_name.count(name), "PET database graph line: ", what, " '", name,
                  "' empty or defined twice");
    return name;
  };
  for (int64_t n = r.count("inputs"); n > 0; --n) {
    std::string name = fresh_name("an input");
    define(g->add_input(std::move(name), r.type("an input's type")));
  }
  for (int64_t n = r.count("constants"); n > 0; --n) {
    std::string name = fresh_name("a constant");
    define(g->add_constant(std::move(name), r.tensor("a constant")));
  }
  for (int64_t n = r.count("nodes"); n > 0; --n) {
    std::string op = r.str("an op");
    std::string domain = r.str("a domain");
    std::string name = r.str("a node's name");
    std::vector<Value*> ins;
    for (int64_t k = r.count("a node's inputs"); k > 0; --k) {
      const std::string in = r.token("a node's input");
      if (in == "-") {
        ins.push_back(nullptr);
        continue;
      }
      const std::string in_name = Reader::unescaped(in, "a node's input");
      auto it = by_name.find(in_name);
      TESSERA_CHECK(it != by_name.end(), "PET database graph line: node '", name, "' reads '", in_name,
                    "', not defined before it");
      ins.push_back(it->second);
    }
    std::vector<std::string> outs;
    std::vector<TensorType> types;
    for (int64_t k = r.count("a node's outputs"); k > 0; --k) {
      const std::string out = r.token("a node's output");
      if (out == "-") {
        outs.emplace_back();
        types.emplace_back();
        continue;
      }
      outs.push_back(Reader::unescaped(out, "a node's output"));
      TESSERA_CHECK(!outs.back().empty() && !by_name.count(outs.back()), "PET database graph line: output '",
                    outs.back(), "' of node '", name, "' empty or defined twice");
      types.push_back(r.type("an output's type"));
    }
    AttrMap attrs;
    for (int64_t k = r.count("attributes"); k > 0; --k) {
      std::string key = r.str("an attribute's name");
      attrs[key] = r.attribute("an attribute");
    }
    Node* node = g->add_node(std::move(op), std::move(ins), outs, std::move(attrs), std::move(name));
    node->domain = std::move(domain);
    for (size_t k = 0; k < node->outputs.size(); ++k)
      if (Value* v = node->outputs[k]) {
        v->type = types[k];
        define(v);
      }
  }
  for (int64_t n = r.count("outputs"); n > 0; --n) {
    const std::string name = r.str("an output");
    auto it = by_name.find(name);
    TESSERA_CHECK(it != by_name.end(), "PET database graph line: output '", name, "' not defined");
    g->add_output(it->second);
  }
  TESSERA_CHECK(r.at_end(), "PET database graph line: text after the outputs");
  verify_graph(*g);
  return g;
}

}  // namespace tessera::pet
