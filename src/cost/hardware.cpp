// Hardware descriptions: text and JSON forms, the probe, the hand-written table.
#include "cost/hardware.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <thread>
#include <variant>

#include <nlohmann/json.hpp>

#include "support/error.h"

namespace tessera::cost {

namespace {

// --- the fields, once: name and member, for both text forms -------------------

using Member = std::variant<std::string HardwareDesc::*, Isa HardwareDesc::*, int HardwareDesc::*,
                            int64_t HardwareDesc::*, double HardwareDesc::*>;
struct Field {
  std::string_view key;
  Member member;
};
const std::array<Field, 15> kFields{{
    {"name", &HardwareDesc::name},
    {"isa", &HardwareDesc::isa},
    {"vector_bytes", &HardwareDesc::vector_bytes},
    {"vector_registers", &HardwareDesc::vector_registers},
    {"fma_units", &HardwareDesc::fma_units},
    {"l1d", &HardwareDesc::l1d},
    {"l2", &HardwareDesc::l2},
    {"l3", &HardwareDesc::l3},
    {"line_bytes", &HardwareDesc::line_bytes},
    {"cores", &HardwareDesc::cores},
    {"ghz", &HardwareDesc::ghz},
    {"mem_gbps", &HardwareDesc::mem_gbps},
    {"l1_bytes_per_cycle", &HardwareDesc::l1_bytes_per_cycle},
    {"l2_bytes_per_cycle", &HardwareDesc::l2_bytes_per_cycle},
    {"l3_bytes_per_cycle", &HardwareDesc::l3_bytes_per_cycle},
}};

// Shortest text that reads back to the same double.
std::string double_text(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

template <class T>
T parse_number(std::string_view key, std::string_view s) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  TESSERA_CHECK(ec == std::errc() && end == s.data() + s.size(), "hardware description: field '", key,
                "' is not a number: '", s, "'");
  return v;
}

// Sets a field from its text value.
void set_field(HardwareDesc& h, const Field& f, std::string_view value) {
  std::visit(
      [&](auto m) {
        using T = std::remove_cvref_t<decltype(h.*m)>;
        if constexpr (std::is_same_v<T, std::string>) h.*m = std::string(value);
        else if constexpr (std::is_same_v<T, Isa>) {
          h.*m = isa_from_name(value);
          TESSERA_CHECK(h.*m != Isa::Host, "hardware description: isa must be concrete, got '", value, "'");
        } else h.*m = parse_number<T>(f.key, value);
      },
      f.member);
}

std::string field_text(const HardwareDesc& h, const Field& f) {
  return std::visit(
      [&](auto m) -> std::string {
        using T = std::remove_cvref_t<decltype(h.*m)>;
        if constexpr (std::is_same_v<T, std::string>) return h.*m;
        else if constexpr (std::is_same_v<T, Isa>) return std::string(isa_name(h.*m));
        else if constexpr (std::is_same_v<T, double>) return double_text(h.*m);
        else return std::to_string(h.*m);
      },
      f.member);
}

void check_valid(const HardwareDesc& h) {
  TESSERA_CHECK(!h.name.empty() && h.name.find_first_of(" \t\n=") == std::string::npos,
                "hardware description: name must be non-empty without spaces or '=', got '", h.name, "'");
  TESSERA_CHECK(h.vector_bytes > 0 && h.vector_registers > 0 && h.fma_units > 0 && h.l1d > 0 && h.l2 > 0 &&
                    h.l3 > 0 && h.line_bytes > 0 && h.cores > 0 && h.ghz > 0 && h.mem_gbps > 0 &&
                    h.l1_bytes_per_cycle > 0 && h.l2_bytes_per_cycle > 0 && h.l3_bytes_per_cycle > 0,
                "hardware description '", h.name, "': every size, count and rate must be positive");
}

// --- the probe ----------------------------------------------------------------

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The clock: a chain of dependent register-to-register integer adds runs
// one per cycle on every x86 core, so adds per second is the frequency. Best
// of a few short runs. Not adds of an immediate: recent Intel cores fold
// chains of those in the renamer, several per cycle (a Xeon of this
// machine's kind measured 22.5 "GHz" that way).
double measure_ghz() {
  constexpr int64_t kIters = 100000;  // x 32 adds: about 1 ms at 3 GHz
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    uint64_t x = 0, one = 1;
    asm volatile("" : "+r"(one));  // not a constant the compiler can see
    auto t0 = Clock::now();
    for (int64_t i = 0; i < kIters; ++i) asm volatile(".rept 32\n\taddq %1, %0\n\t.endr" : "+r"(x) : "r"(one));
    double s = seconds_since(t0);
    if (x != static_cast<uint64_t>(kIters) * 32) return 0;
    best = std::max(best, static_cast<double>(kIters) * 32 / s / 1e9);
  }
  return best;
}

// Vectors of 8 and 16 floats (GCC's vector extension), for AVX2 and AVX-512:
// code on them is generated for the ISA of the function it is inlined into.
typedef float Floats8 __attribute__((vector_size(32)));
typedef float Floats16 __attribute__((vector_size(64)));

// One step of an FMA chain, a = a * m + c, as the instruction itself (on ymm
// or zmm registers, by the vector's width): ISO C++ does not contract a * m + c.
template <class V>
[[gnu::always_inline]] inline void fma_step(V& a, const V& m, const V& c) {
  asm("vfmadd213ps %2, %1, %0" : "+v"(a) : "v"(m), "v"(c));
}

// Vector FMAs per second with 12 independent accumulators (more than latency
// x units on every current core), for vectors V of the caller's ISA.
template <class V>
[[gnu::always_inline]] inline double fma_rate(int64_t iters) {
  const V m = V{} + 0.9999f, c = V{} + 1e-4f;
  V a0 = V{} + 1.0f, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0,
    a11 = a0;
  auto t0 = Clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    fma_step(a0, m, c); fma_step(a1, m, c); fma_step(a2, m, c); fma_step(a3, m, c); fma_step(a4, m, c);
    fma_step(a5, m, c); fma_step(a6, m, c); fma_step(a7, m, c); fma_step(a8, m, c); fma_step(a9, m, c);
    fma_step(a10, m, c); fma_step(a11, m, c);
    asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    asm volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  double s = seconds_since(t0);
  const V sum = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));
  volatile float sink = sum[0];
  (void)sink;
  return static_cast<double>(iters) * 12 / s;
}

__attribute__((target("avx2,fma"))) double fma_rate_avx2(int64_t iters) { return fma_rate<Floats8>(iters); }
__attribute__((target("avx512f"))) double fma_rate_avx512(int64_t iters) { return fma_rate<Floats16>(iters); }

// FMA units: full-width FMAs per cycle, a whole number within [1, 4]. Each
// run is about 5 ms of FMAs (a 0.1 ms burst meets the vector units'
// power-up and the AVX-512 clock change); the first run only warms them up,
// then the median of five.
double measure_fma_units(Isa isa, double ghz) {
  constexpr int64_t kIters = 2500000;  // x 12 FMAs: 30 M, about 5 ms at 6 G FMA/s
  auto rate = [&] { return isa == Isa::AVX512 ? fma_rate_avx512(kIters) : fma_rate_avx2(kIters); };
  rate();
  std::vector<double> rates;
  for (int rep = 0; rep < 5; ++rep) rates.push_back(rate());
  std::nth_element(rates.begin(), rates.begin() + 2, rates.end());
  double per_cycle = rates[2] / (ghz * 1e9);
  return std::clamp(std::round(per_cycle), 1.0, 4.0);
}

// Streaming read bandwidth in GB/s: every core sums its slice of a buffer of
// 4x the last level (64 MiB to 256 MiB), best of two passes.
double measure_mem_gbps(int64_t l3, int cores) {
  int64_t bytes = std::clamp<int64_t>(4 * l3, int64_t{64} << 20, int64_t{256} << 20);
  std::vector<uint64_t> buf(static_cast<size_t>(bytes / 8), 1);  // written: every page is mapped before timing
  int threads = std::clamp(cores, 1, 16);
  std::atomic<uint64_t> total{0};
  double best = 0;
  for (int pass = 0; pass < 2; ++pass) {
    auto t0 = Clock::now();
    std::vector<std::thread> pool;
    size_t per = buf.size() / static_cast<size_t>(threads);
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        uint64_t s = 0;
        const uint64_t* p = buf.data() + per * static_cast<size_t>(t);
        for (size_t i = 0; i < per; ++i) s += p[i];
        total += s;
      });
    for (std::thread& th : pool) th.join();
    best = std::max(best, static_cast<double>(per * static_cast<size_t>(threads) * 8) / seconds_since(t0) / 1e9);
  }
  TESSERA_CHECK(total.load() > 0, "hardware probe: the bandwidth pass read nothing");
  return best;
}

}  // namespace

std::string HardwareDesc::to_string() const {
  std::string s;
  for (const Field& f : kFields) s += (s.empty() ? "" : " ") + std::string(f.key) + "=" + field_text(*this, f);
  return s;
}

HardwareDesc HardwareDesc::parse(std::string_view text) {
  HardwareDesc h;
  std::vector<bool> seen(kFields.size(), false);
  size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ' ') { ++pos; continue; }
    size_t end = std::min(text.find(' ', pos), text.size());
    std::string_view item = text.substr(pos, end - pos);
    size_t eq = item.find('=');
    TESSERA_CHECK(eq != std::string_view::npos, "hardware description: '", item, "' is not key=value");
    std::string_view key = item.substr(0, eq);
    auto it = std::find_if(kFields.begin(), kFields.end(), [&](const Field& f) { return f.key == key; });
    TESSERA_CHECK(it != kFields.end(), "hardware description: unknown field '", key, "'");
    set_field(h, *it, item.substr(eq + 1));
    seen[static_cast<size_t>(it - kFields.begin())] = true;
    pos = end;
  }
  for (size_t i = 0; i < kFields.size(); ++i)
    TESSERA_CHECK(seen[i], "hardware description: field '", kFields[i].key, "' is missing in '", text, "'");
  check_valid(h);
  return h;
}

std::string HardwareDesc::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const Field& f : kFields)
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(this->*m)>;
          if constexpr (std::is_same_v<T, Isa>) j[std::string(f.key)] = std::string(isa_name(this->*m));
          else j[std::string(f.key)] = this->*m;
        },
        f.member);
  return j.dump();
}

HardwareDesc HardwareDesc::from_json(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  TESSERA_CHECK(j.is_object(), "hardware description: not a JSON object: '", json, "'");
  HardwareDesc h;
  for (const Field& f : kFields) {
    auto it = j.find(std::string(f.key));
    TESSERA_CHECK(it != j.end(), "hardware description: field '", f.key, "' is missing in JSON");
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(h.*m)>;
          if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, Isa>) {
            TESSERA_CHECK(it->is_string(), "hardware description: field '", f.key, "' must be a string");
            set_field(h, f, it->template get<std::string>());
          } else {
            TESSERA_CHECK(it->is_number(), "hardware description: field '", f.key, "' must be a number");
            h.*m = it->template get<T>();
          }
        },
        f.member);
  }
  check_valid(h);
  return h;
}

HardwareDesc probe_hardware(Isa isa, int cores) {
  Target t = Target::for_isa(isa);
  TESSERA_CHECK(t.isa == Isa::AVX2 || t.isa == Isa::AVX512, "hardware probe: needs AVX2 or AVX-512, got ",
                isa_name(t.isa));
  TESSERA_CHECK(t.isa != Isa::AVX512 || host_isa_detected() == Isa::AVX512,
                "hardware probe: the host lacks AVX-512");
  HardwareDesc h;
  h.name = "host-" + std::string(isa_name(t.isa));
  h.isa = t.isa;
  h.vector_bytes = t.vector_bytes;
  h.vector_registers = t.vector_registers;
  h.l1d = t.caches.l1d;
  h.l2 = t.caches.l2;
  h.l3 = t.caches.l3;
  h.line_bytes = 64;
  h.cores = cores > 0 ? cores : t.cores;
  double ghz = measure_ghz();
  h.ghz = ghz > 0.1 ? ghz : 2.5;  // a clock too slow to believe: the timer misbehaved
  h.fma_units = measure_fma_units(t.isa, h.ghz);
  h.mem_gbps = measure_mem_gbps(h.l3, h.cores);
  // Cache rates are not measured: two vector loads per cycle from L1, one vector
  // per cycle from L2, 16 bytes from L3 (typical of current x86 cores).
  h.l1_bytes_per_cycle = 2.0 * h.vector_bytes;
  h.l2_bytes_per_cycle = h.vector_bytes;
  h.l3_bytes_per_cycle = 16;
  check_valid(h);
  return h;
}

// Vendor figures, rounded. Cores are those of the instance the TenSet data set
// was measured on where it names one (research/costmodel.md §1.1), else the
// chip's; memory bandwidth is a sustained estimate below the channels' peak
// (a VM gets its share only); ghz is the base clock.
const std::vector<HardwareDesc>& known_hardware() {
  static const std::vector<HardwareDesc> table = [] {
    auto row = [](std::string name, Isa isa, double fma, int64_t l1k, int64_t l2k, int64_t l3k, int cores,
                  double ghz, double gbps, double l1bpc, double l2bpc, double l3bpc) {
      HardwareDesc h;
      h.name = std::move(name);
      h.isa = isa;
      h.vector_bytes = isa == Isa::AVX512 ? 64 : 32;
      h.vector_registers = isa == Isa::AVX512 ? 32 : 16;
      h.fma_units = fma;
      h.l1d = l1k << 10;
      h.l2 = l2k << 10;
      h.l3 = l3k << 10;
      h.cores = cores;
      h.ghz = ghz;
      h.mem_gbps = gbps;
      h.l1_bytes_per_cycle = l1bpc;
      h.l2_bytes_per_cycle = l2bpc;
      h.l3_bytes_per_cycle = l3bpc;
      return h;
    };
    //   name                   isa          fma  L1d KiB L2 KiB  L3 KiB  cores GHz   GB/s  B/cycle L1 L2  L3
    return std::vector<HardwareDesc>{
        // Cascade Lake SP; TenSet's "platinum-8272" (Azure D32s_v4, 16 cores).
        row("xeon-platinum-8272cl", Isa::AVX512, 2, 32, 1024, 36608, 16, 2.6, 80, 128, 64, 16),
        // Broadwell EP; TenSet's "e5-2673" (Azure F16s, 8 cores).
        row("xeon-e5-2673-v4", Isa::AVX2, 2, 32, 256, 51200, 8, 2.3, 50, 64, 32, 16),
        // Zen 2 (L3 per 4-core complex); TenSet's "epyc-7452" (Azure D16as_v4, 4 cores).
        row("epyc-7452", Isa::AVX2, 2, 32, 512, 16384, 4, 2.35, 30, 64, 32, 32),
        // Ice Lake SP, 40 cores.
        row("xeon-platinum-8380", Isa::AVX512, 2, 48, 1280, 61440, 40, 2.3, 160, 128, 64, 16),
        // Zen 4 Genoa (512-bit FMAs in two 256-bit halves: one per cycle; L3 per 8-core die), 96 cores.
        row("epyc-9654", Isa::AVX512, 1, 32, 1024, 32768, 96, 2.4, 350, 64, 32, 32),
    };
  }();
  return table;
}

HardwareDesc find_hardware(std::string_view name) {
  std::string names;
  for (const HardwareDesc& h : known_hardware()) {
    if (h.name == name) return h;
    names += (names.empty() ? "" : ", ") + h.name;
  }
  TESSERA_FAIL("no hardware description named '", name, "' (known: ", names, ")");
}

}  // namespace tessera::cost
