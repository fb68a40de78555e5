// libmvec lookup: the functions glibc 2.35+ provides for AVX2 and AVX-512,
// their x86-64 vector ABI names, and their addresses through dlopen/dlsym.
#include "codegen/llvm/vector_math.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

namespace tessera::codegen {

namespace {

// libm name -> arity, for the functions libmvec has in float and double.
const std::map<std::string, int>& vector_functions() {
  static const std::map<std::string, int> fns = {
      {"exp", 1},  {"log", 1},  {"sin", 1},   {"cos", 1},   {"tan", 1},   {"tanh", 1},  {"erf", 1},
      {"asin", 1}, {"acos", 1}, {"atan", 1},  {"sinh", 1},  {"cosh", 1},  {"asinh", 1}, {"acosh", 1},
      {"atanh", 1}, {"log1p", 1}, {"expm1", 1}, {"exp2", 1}, {"log2", 1}, {"log10", 1}, {"pow", 2},
  };
  return fns;
}

void* libmvec() {
  static void* handle = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
  return handle;
}

}  // namespace

std::string vector_math_symbol(const std::string& name, bool f64, int lanes, bool avx512) {
  auto it = vector_functions().find(name);
  if (it == vector_functions().end()) return "";
  int native = (avx512 ? 512 : 256) / (f64 ? 64 : 32);
  if (lanes != native) return "";
  std::string sym = std::string("_ZGV") + (avx512 ? "e" : "d") + "N" + std::to_string(lanes) +
                    std::string(static_cast<size_t>(it->second), 'v') + "_" + name + (f64 ? "" : "f");
  return vector_math_address(sym) ? sym : "";
}

void* vector_math_address(const std::string& symbol) {
  static std::mutex mu;
  static std::map<std::string, void*> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(symbol);
  if (it != cache.end()) return it->second;
  void* h = libmvec();
  void* p = h ? dlsym(h, symbol.c_str()) : nullptr;
  cache[symbol] = p;
  return p;
}

}  // namespace tessera::codegen
