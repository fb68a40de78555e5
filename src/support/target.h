// The machine kernels are compiled for: instruction set, vector registers,
// caches and cores. Schedules, the fusion planner and code generation read
// one Target; the tuner stores its description with every record.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

// Instruction set to compile for. Host resolves to the best one the host
// supports; the others force that baseline. AVX2 is Haswell (16 ymm
// registers); AVX512 is Skylake-AVX512 (32 zmm); Generic is baseline x86-64
// (SSE2, 16 xmm).
enum class Isa { Host, Generic, AVX2, AVX512 };
std::string_view isa_name(Isa isa);  // "host", "x86-64", "avx2", "avx512"
// The ISA named by isa_name (also "generic", and "" for Host); throws on an unknown name.
Isa isa_from_name(std::string_view name);

// Cache sizes in bytes: a core's first-level data cache and second level,
// and the last level.
struct CacheSizes {
  int64_t l1d = 0, l2 = 0, l3 = 0;
  bool operator==(const CacheSizes&) const = default;
};

// The caches the default schedules' heuristics were measured against (a
// Zen 5 core: 48 KiB L1d, 1 MiB L2; 16 MiB of last level counted on per
// product). Default schedules plan for these on every machine, so a default
// schedule, and with it every output bit, is the same wherever it is
// compiled; a tuner may plan for the detected caches instead.
inline constexpr CacheSizes kReferenceCaches{48 << 10, 1 << 20, 16 << 20};

struct Target {
  Isa isa = Isa::AVX512;      // never Host
  int vector_bytes = 64;      // 64 AVX-512, 32 AVX2, 16 SSE2
  int vector_registers = 32;  // 32 zmm, 16 ymm / xmm
  CacheSizes caches = kReferenceCaches;   // detected on the machine (kReferenceCaches when unknown)
  CacheSizes planned = kReferenceCaches;  // what schedules block for (see kReferenceCaches)
  int cores = 1;              // online CPUs this process may run on

  // The host: its best ISA, detected caches and cores.
  static Target host();
  // The host's caches and cores with the vectors and registers of `isa`
  // (Host: the host's ISA).
  static Target for_isa(Isa isa);
  // The registers a kernel's live values may take: the file less four
  // kept for operands (28 zmm, 12 ymm).
  int register_budget() const { return vector_registers - 4; }

  // One line, stable, that parse() reads back: "avx512 vector_bytes=64
  // vector_registers=32 l1d=49152 l2=1048576 l3=... planned_l2=... cores=2".
  std::string to_string() const;
  static Target parse(std::string_view text);
  bool operator==(const Target&) const = default;
};

// The ISA the host supports at best (CPUID through the compiler's
// __builtin_cpu_supports: AVX512 with AVX-512F, else AVX2, else Generic).
Isa host_isa_detected();

// The host's caches (/sys/devices/system/cpu/cpu0/cache, then sysconf;
// kReferenceCaches for any level neither reports) and online cores.
CacheSizes detect_caches();
int detect_cores();

}  // namespace tessera
