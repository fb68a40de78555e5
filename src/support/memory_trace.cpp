// Memory phase lines for $TESSERA_MEMORY_TRACE and the heap trim.
#include "support/memory_trace.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "support/memory.h"

namespace tessera {

namespace {

std::atomic<int64_t> g_trims{0};

// "Key:   1234 kB" of /proc/self/status in bytes.
std::optional<int64_t> status_field(const std::string& text, const char* key) {
  const size_t klen = std::strlen(key);
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (end - pos > klen && text.compare(pos, klen, key) == 0 && text[pos + klen] == ':') {
      long long kb = 0;
      if (std::sscanf(text.c_str() + pos + klen + 1, "%lld kB", &kb) == 1 && kb >= 0) return kb * 1024;
      return std::nullopt;
    }
    pos = end + 1;
  }
  return std::nullopt;
}

// The size="N" of the last element of malloc_info's XML that starts with
// `tag` (the totals follow the per-arena lines), 0 when there is none.
int64_t xml_total(const std::string& xml, const char* tag) {
  size_t at = xml.rfind(tag);
  if (at == std::string::npos) return 0;
  size_t sz = xml.find("size=\"", at);
  if (sz == std::string::npos) return 0;
  return std::strtoll(xml.c_str() + sz + 6, nullptr, 10);
}

}  // namespace

MemorySnapshot memory_snapshot() {
  MemorySnapshot s;
  std::ifstream in("/proc/self/status");
  if (in) {
    std::ostringstream text;
    text << in.rdbuf();
    s.rss = status_field(text.str(), "VmRSS");
    s.peak = status_field(text.str(), "VmHWM");
  }
#ifdef __GLIBC__
  // malloc_info's closing totals cover every arena (mallinfo2 only the main
  // one, and the compile threads allocate in their own).
  char* text = nullptr;
  size_t size = 0;
  if (FILE* f = open_memstream(&text, &size)) {
    bool ok = malloc_info(0, f) == 0;
    std::fclose(f);
    if (ok && text) {
      std::string xml(text, size);
      int64_t fast = xml_total(xml, "<total type=\"fast\""), rest = xml_total(xml, "<total type=\"rest\"");
      int64_t mmapped = xml_total(xml, "<total type=\"mmap\""), current = xml_total(xml, "<system type=\"current\"");
      s.heap_free = fast + rest;
      s.heap_mapped = mmapped;
      s.heap_used = current - s.heap_free + mmapped;
    }
    std::free(text);
  }
#endif
  return s;
}

bool memory_trace_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TESSERA_MEMORY_TRACE");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

std::string format_memory_phase(std::string_view phase, const MemorySnapshot& s) {
  auto b = [](const std::optional<int64_t>& v) { return v ? format_bytes(*v) : std::string("n/a"); };
  std::string line = "memory after " + std::string(phase) + ": RSS " + b(s.rss) + ", peak " + b(s.peak);
  line += ", heap " + format_bytes(s.heap_used) + " in use + " + format_bytes(s.heap_free) + " free, mapped " +
          format_bytes(s.heap_mapped);
  return line;
}

void mark_memory_phase(std::string_view phase) {
  if (!memory_trace_enabled()) return;
  std::string line = format_memory_phase(phase, memory_snapshot());
  std::fprintf(stderr, "%s\n", line.c_str());
}

bool release_free_heap() {
  g_trims.fetch_add(1, std::memory_order_relaxed);
#ifdef __GLIBC__
  return malloc_trim(0) != 0;
#else
  return false;
#endif
}

int64_t trims_done() { return g_trims.load(std::memory_order_relaxed); }

}  // namespace tessera
