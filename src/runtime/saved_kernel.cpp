// The text of a saved kernel's description, and linking a saved kernel.
#include "runtime/saved_kernel.h"

#include <sstream>

#include "codegen/llvm/object_check.h"
#include "schedule/schedule.h"
#include "support/checked_int.h"
#include "support/error.h"

namespace tessera::runtime {

namespace {

// "f32 1x3x8x8 name" ("scalar": no dims; the name is the rest of the line).
std::string buffer_text(const loop::Buffer& b) {
  return std::string(dtype_name(b.dtype())) + " " + dims_to_string(b.dims()) + " " + b.name();
}

loop::Buffer parse_buffer(const std::string& s, const std::string& what) {
  auto sp1 = s.find(' ');
  auto sp2 = sp1 == std::string::npos ? std::string::npos : s.find(' ', sp1 + 1);
  TESSERA_CHECK(sp2 != std::string::npos, what, ": malformed buffer '", s, "'");
  DType dt = dtype_from_name(s.substr(0, sp1));
  TESSERA_CHECK(dt != DType::Undefined, what, ": buffer '", s, "' has an unknown type");
  std::string d = s.substr(sp1 + 1, sp2 - sp1 - 1);
  Dims dims;
  if (d != "scalar") {
    std::istringstream in(d);
    for (std::string w; std::getline(in, w, 'x');) {
      std::optional<int64_t> v = parse_int64(w);
      TESSERA_CHECK(v && *v >= 0, what, ": buffer '", s, "' has malformed dims");
      dims.push_back(*v);
    }
  }
  return loop::Buffer(s.substr(sp2 + 1), dt, std::move(dims));
}

std::vector<int64_t> parse_ints(const std::string& s, const std::string& what) {
  std::vector<int64_t> r;
  std::istringstream in(s);
  for (std::string w; in >> w;) {
    std::optional<int64_t> v = parse_int64(w);
    TESSERA_CHECK(v && *v >= 0, what, ": malformed number '", w, "'");
    r.push_back(*v);
  }
  return r;
}

}  // namespace

std::string saved_kernel_text(const TaskKernel& k) {
  std::string s = "name " + k.kernel->name() + "\nsymbol " + k.kernel->symbol() + "\n";
  if (k.prepack) s += "prepack_name " + k.prepack->name() + "\nprepack_symbol " + k.prepack->symbol() + "\n";
  s += "internal_bytes " + std::to_string(k.internal_bytes) + "\nin_place";
  for (bool b : k.in_place) s += b ? " 1" : " 0";
  s += "\nprepack_params";
  for (int i : k.prepack_params) s += " " + std::to_string(i);
  s += "\nreads";
  for (bool b : k.reads) s += b ? " 1" : " 0";
  s += "\n";
  for (const loop::Buffer& b : k.params) s += "param " + buffer_text(b) + "\n";
  for (const loop::Buffer& b : k.packed) s += "packed " + buffer_text(b) + "\n";
  for (const loop::Buffer& b : k.scratch) s += "scratch " + buffer_text(b) + "\n";
  if (k.prepack)
    for (const loop::Buffer& b : k.prepack->params()) s += "prepack_param " + buffer_text(b) + "\n";
  std::istringstream sched(schedule::to_text(k.schedule));
  for (std::string line; std::getline(sched, line);) s += "schedule " + line + "\n";
  return s;
}

SavedKernel parse_saved_kernel(const std::string& text, const std::string& what) {
  SavedKernel k;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto sp = line.find(' ');
    std::string key = line.substr(0, sp), rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "name") k.name = rest;
    else if (key == "symbol") k.symbol = rest;
    else if (key == "prepack_name") k.prepack_name = rest;
    else if (key == "prepack_symbol") k.prepack_symbol = rest;
    else if (key == "internal_bytes") {
      std::optional<int64_t> v = parse_int64(rest);
      TESSERA_CHECK(v && *v >= 0, what, ": malformed internal_bytes '", rest, "'");
      k.internal_bytes = *v;
    } else if (key == "in_place") {
      for (int64_t v : parse_ints(rest, what)) {
        TESSERA_CHECK(v <= 1, what, ": malformed in_place flag ", v);
        k.in_place.push_back(v == 1);
      }
    } else if (key == "reads") {
      for (int64_t v : parse_ints(rest, what)) {
        TESSERA_CHECK(v <= 1, what, ": malformed reads flag ", v);
        k.reads.push_back(v == 1);
      }
    } else if (key == "prepack_params") {
      for (int64_t v : parse_ints(rest, what)) k.prepack_params.push_back(static_cast<int>(std::min<int64_t>(v, INT32_MAX)));
    } else if (key == "param") k.params.push_back(parse_buffer(rest, what));
    else if (key == "packed") k.packed.push_back(parse_buffer(rest, what));
    else if (key == "scratch") k.scratch.push_back(parse_buffer(rest, what));
    else if (key == "prepack_param") k.prepack_kernel_params.push_back(parse_buffer(rest, what));
    else if (key == "schedule") k.schedule += rest + "\n";
    else TESSERA_FAIL(what, ": unknown line '", line, "' in the kernel's description");
  }
  TESSERA_CHECK(!k.name.empty() && !k.symbol.empty(), what, ": the kernel's description names no kernel or symbol");
  TESSERA_CHECK(k.reads.size() <= k.params.size(), what, ": kernel ", k.name, " has ", k.reads.size(),
                " read flags for ", k.params.size(), " parameters");
  TESSERA_CHECK(k.in_place.size() <= k.params.size(), what, ": kernel ", k.name, " has ", k.in_place.size(),
                " in-place flags for ", k.params.size(), " parameters");
  for (int i : k.prepack_params)
    TESSERA_CHECK(i < static_cast<int>(k.params.size()), what, ": kernel ", k.name, " packs parameter ", i, " of ",
                  k.params.size());
  return k;
}

void check_saved_kernel(const SavedKernel& k, const std::string& what) {
  std::string bad = codegen::check_object(k.object, k.symbol);
  TESSERA_CHECK(bad.empty(), what, ": the machine code of kernel ", k.name, " is malformed: ", bad);
  if (k.prepack_object.empty()) return;
  bad = codegen::check_object(k.prepack_object, k.prepack_symbol);
  TESSERA_CHECK(bad.empty(), what, ": the machine code of weight-packing kernel ", k.prepack_name,
                " is malformed: ", bad);
}

std::shared_ptr<TaskKernel> link_saved_kernel(const SavedKernel& s, codegen::Isa isa, bool with_prepack) {
  auto k = std::make_shared<TaskKernel>();
  k->kernel = codegen::jit_link(s.object, {s.name, s.symbol, isa, s.params});
  if (with_prepack && !s.prepack_object.empty())
    k->prepack = codegen::jit_link(s.prepack_object, {s.prepack_name, s.prepack_symbol, isa, s.prepack_kernel_params});
  try {
    k->schedule = schedule::parse_schedule(s.schedule);
  } catch (const std::exception& e) {
    TESSERA_FAIL("kernel ", s.name, ": malformed schedule: ", e.what());
  }
  k->packed = s.packed;
  k->prepack_params = s.prepack_params;
  k->scratch = s.scratch;
  k->in_place = s.in_place;
  k->reads = s.reads;  // empty (an older artifact): every param counts as read
  k->params = s.params;
  k->internal_bytes = s.internal_bytes;
  return k;
}

}  // namespace tessera::runtime
