// The machine kernels are compiled for (see target.h).
#include "support/target.h"

#include <sched.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <fstream>
#include <thread>

#include "support/error.h"

namespace tessera {

namespace {

// Vectors and registers per ISA (Host resolved before lookup).
struct IsaFacts {
  Isa isa;
  std::string_view name;
  int vector_bytes, vector_registers;
};
constexpr std::array<IsaFacts, 4> kIsas{{
    {Isa::Host, "host", 0, 0},
    {Isa::Generic, "x86-64", 16, 16},
    {Isa::AVX2, "avx2", 32, 16},
    {Isa::AVX512, "avx512", 64, 32},
}};

const IsaFacts& facts(Isa isa) {
  for (const IsaFacts& f : kIsas)
    if (f.isa == isa) return f;
  TESSERA_FAIL("target: unknown ISA ", static_cast<int>(isa));
}

// A cache size from /sys ("48K", "1024K", "32M"); 0 when absent.
int64_t sys_cache_size(int index, int level, std::string_view type) {
  const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
  std::ifstream lv(dir + "level"), ty(dir + "type"), sz(dir + "size");
  int l = 0;
  std::string t, s;
  if (!(lv >> l) || !(ty >> t) || !(sz >> s) || l != level || (t != type && t != "Unified")) return 0;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc()) return 0;
  if (end != s.data() + s.size()) v <<= *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
  return v;
}

// The kernel's description first: glibc's sysconf derives sizes from CPUID,
// which in virtual machines can describe another cache (320 MiB of L3 for a
// guest whose host and lscpu say 32 MiB).
int64_t cache_size(int sysconf_name, int level, std::string_view type) {
  for (int index = 0; index < 8; ++index)
    if (int64_t s = sys_cache_size(index, level, type)) return s;
  long v = sysconf(sysconf_name);
  return v > 0 ? v : 0;
}

// The value of `key=` in a space-separated description.
int64_t field(std::string_view text, std::string_view key) {
  const std::string k = " " + std::string(key) + "=";
  size_t at = text.find(k);
  TESSERA_CHECK(at != std::string_view::npos, "target: '", text, "' has no ", key);
  at += k.size();
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), v);
  TESSERA_CHECK(ec == std::errc() && (end == text.data() + text.size() || *end == ' '), "target: '", text,
                "': bad value of ", key);
  return v;
}

}  // namespace

std::string_view isa_name(Isa isa) { return facts(isa).name; }

Isa isa_from_name(std::string_view name) {
  if (name.empty()) return Isa::Host;
  if (name == "generic" || name == "x86-64") return Isa::Generic;
  for (const IsaFacts& f : kIsas)
    if (f.name == name) return f.isa;
  TESSERA_FAIL("target: unknown ISA '", name, "' (available: host, avx2, avx512, generic)");
}

Isa host_isa_detected() {
#if defined(__x86_64__) || defined(__i386__)
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return Isa::AVX512;
    if (__builtin_cpu_supports("avx2")) return Isa::AVX2;
    return Isa::Generic;
  }();
  return isa;
#else
  return Isa::Generic;
#endif
}

CacheSizes detect_caches() {
  static const CacheSizes c = [] {
    CacheSizes r;
    r.l1d = cache_size(_SC_LEVEL1_DCACHE_SIZE, 1, "Data");
    r.l2 = cache_size(_SC_LEVEL2_CACHE_SIZE, 2, "Unified");
    r.l3 = cache_size(_SC_LEVEL3_CACHE_SIZE, 3, "Unified");
    if (r.l1d <= 0) r.l1d = kReferenceCaches.l1d;
    if (r.l2 <= 0) r.l2 = kReferenceCaches.l2;
    if (r.l3 <= 0) r.l3 = kReferenceCaches.l3;
    return r;
  }();
  return c;
}

int detect_cores() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0) return CPU_COUNT(&allowed);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

Target Target::host() { return for_isa(Isa::Host); }

Target Target::for_isa(Isa isa) {
  if (isa == Isa::Host) isa = host_isa_detected();
  Target t;
  t.isa = isa;
  t.vector_bytes = facts(isa).vector_bytes;
  t.vector_registers = facts(isa).vector_registers;
  t.caches = detect_caches();
  t.planned = kReferenceCaches;
  t.cores = detect_cores();
  return t;
}

std::string Target::to_string() const {
  return std::string(isa_name(isa)) + " vector_bytes=" + std::to_string(vector_bytes) +
         " vector_registers=" + std::to_string(vector_registers) + " l1d=" + std::to_string(caches.l1d) +
         " l2=" + std::to_string(caches.l2) + " l3=" + std::to_string(caches.l3) +
         " planned_l1d=" + std::to_string(planned.l1d) + " planned_l2=" + std::to_string(planned.l2) +
         " planned_l3=" + std::to_string(planned.l3) + " cores=" + std::to_string(cores);
}

Target Target::parse(std::string_view text) {
  Target t;
  t.isa = isa_from_name(text.substr(0, text.find(' ')));
  TESSERA_CHECK(t.isa != Isa::Host, "target: '", text, "' names no concrete ISA");
  t.vector_bytes = static_cast<int>(field(text, "vector_bytes"));
  t.vector_registers = static_cast<int>(field(text, "vector_registers"));
  t.caches = {field(text, "l1d"), field(text, "l2"), field(text, "l3")};
  t.planned = {field(text, "planned_l1d"), field(text, "planned_l2"), field(text, "planned_l3")};
  t.cores = static_cast<int>(field(text, "cores"));
  return t;
}

}  // namespace tessera
