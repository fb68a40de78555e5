// A machine as the static cost model sees it: vector width and FMA units,
// caches, cores, clock and memory bandwidth. Measured on this machine by
// probe_hardware(), written by hand for others (known_hardware()). The text
// and JSON forms are stable and round-trip; the model's fitted coefficients
// are keyed by the description's name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/target.h"

namespace tessera::cost {

struct HardwareDesc {
  std::string name = "unknown";  // a key: [a-z0-9._-] only (no spaces), e.g. "host-avx512", "xeon-8272cl"
  Isa isa = Isa::AVX2;           // never Host
  int vector_bytes = 32;         // widest vector register: 64 AVX-512, 32 AVX2
  int vector_registers = 16;     // 32 zmm, 16 ymm
  // Full-width vector FMAs a core starts per cycle (2 on most server cores;
  // 1 where 512-bit FMAs are split in two halves or only one port has them;
  // the probe rounds it to a whole number).
  double fma_units = 2;
  int64_t l1d = 32 << 10, l2 = 1 << 20, l3 = 16 << 20;  // bytes: per core, per core, whole chip
  int line_bytes = 64;
  int cores = 1;
  // The core clock (probe: the scalar clock of a chain of dependent adds, so
  // the turbo clock; a core under AVX-512 load may run slower, which the
  // probe's fma_units, whole FMAs per scalar cycle, absorbs).
  double ghz = 2.5;
  double mem_gbps = 20;          // whole-chip streaming read bandwidth, GB/s (1e9 bytes)
  // Sustained bytes per cycle a core moves from each level (reads): used for
  // the time of the traffic the footprint model predicts at that level.
  double l1_bytes_per_cycle = 64, l2_bytes_per_cycle = 32, l3_bytes_per_cycle = 16;

  // One line, stable, that parse() reads back: "name=x isa=avx2 vector_bytes=32 ...".
  std::string to_string() const;
  static HardwareDesc parse(std::string_view text);
  // A JSON object with the same fields (strings for name and isa, numbers otherwise).
  std::string to_json() const;
  static HardwareDesc from_json(std::string_view json);
  bool operator==(const HardwareDesc&) const = default;
};

// A description of this machine: ISA, registers, caches and cores from
// Target::host() (or `isa` when given, e.g. AVX2 on an AVX-512 host); the
// clock from a timed chain of dependent adds, FMA units from a timed run of
// independent vector FMAs, memory bandwidth from a timed streaming read of a
// buffer several times the last-level cache (by `cores` threads: 0, every
// core this process may run on). Takes a few hundred milliseconds at most.
// Named "host-<isa>"; its cores are `cores` when given.
HardwareDesc probe_hardware(Isa isa = Isa::Host, int cores = 0);

// Hand-written descriptions of common server CPUs (vendor figures, rounded;
// see hardware.cpp for each row's source and caveats).
const std::vector<HardwareDesc>& known_hardware();
// The known description named `name`; throws tessera::Error listing the names
// when there is none.
HardwareDesc find_hardware(std::string_view name);

}  // namespace tessera::cost
