#include "support/artifact.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <vector>

#include "support/error.h"
#include "support/file_pages.h"
#include "support/int_div.h"

namespace tessera {

namespace {

constexpr uint64_t kMul[4] = {0x9E3779B97F4A7C15ull, 0xD6E8FEB86659FD93ull, 0xBF58476D1CE4E5B9ull,
                              0x94D049BB133111EBull};
constexpr size_t kMaxVersionLength = 256;
// Bytes a section takes besides its name and data.
constexpr uint64_t kSectionOverhead = 4 + 8 + 8;
// A mapped file's sections are checked this many bytes at a time, each
// piece's pages dropped once summed (a multiple of the checksum's block).
constexpr size_t kCheckPiece = size_t{4} << 20;

uint64_t load_le64(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
  return w;
}

// A bijective 64-bit finalizer (xorshift-multiply).
uint64_t avalanche(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7FB5D329728EA185ull;
  x ^= x >> 27;
  x *= 0x81DADEF4BC2DD44Dull;
  x ^= x >> 33;
  return x;
}

// Four independent lanes over 32-byte blocks; every step is a bijection of
// the lane for a fixed word and of the word for a fixed lane.
void mix_block(uint64_t lanes[4], const unsigned char* p) {
  for (int k = 0; k < 4; ++k) {
    uint64_t x = (lanes[k] ^ load_le64(p + 8 * k)) * kMul[k];
    lanes[k] = x ^ (x >> 29);
  }
}

// The checksum fed in pieces: every piece but the last a multiple of 32
// bytes, so that any split of the bytes gives artifact_checksum's value.
class ChecksumStream {
 public:
  void blocks(const unsigned char* p, size_t n) {
    for (size_t i = 0; i + 32 <= n; i += 32) mix_block(lanes_, p + i);
    size_ += round_down(n, 32);
  }
  uint64_t finish(const unsigned char* p, size_t n) {
    blocks(p, n);
    const size_t done = round_down(n, 32);
    if (done < n) {
      unsigned char tail[32] = {};
      std::memcpy(tail, p + done, n - done);
      mix_block(lanes_, tail);
      size_ += n - done;
    }
    uint64_t h = avalanche(size_ ^ kMul[0]);
    for (int k = 0; k < 4; ++k) h = (h ^ avalanche(lanes_[k])) * kMul[(k + 1) % 4];
    return avalanche(h);
  }

 private:
  uint64_t lanes_[4] = {kMul[1], kMul[2], kMul[3], kMul[0]};
  uint64_t size_ = 0;
};

// The checksum of a section's bytes. With `drop_pages` (the bytes are a
// file mapping nothing has written through), summed kCheckPiece bytes at a
// time, each piece's whole pages dropped from the process behind it: checking
// a file of weights leaves none of them resident — they come back from the
// page cache when something reads them.
uint64_t section_checksum(std::string_view bytes, bool drop_pages) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (!drop_pages) return artifact_checksum(p, bytes.size());
  const uintptr_t page = page_bytes();
  const unsigned char* dropped = p;  // the pages before it are dropped (from the first whole one)
  auto drop_to = [&](const unsigned char* end) {
    const auto* to = reinterpret_cast<const unsigned char*>(round_down(reinterpret_cast<uintptr_t>(end), page));
    if (to > dropped && drop_file_pages(dropped, static_cast<size_t>(to - dropped))) dropped = to;
  };
  ChecksumStream sum;
  size_t at = 0;
  for (; bytes.size() - at > kCheckPiece; at += kCheckPiece) {
    sum.blocks(p + at, kCheckPiece);
    drop_to(p + at + kCheckPiece);
  }
  const uint64_t h = sum.finish(p + at, bytes.size() - at);
  drop_to(p + bytes.size());
  return h;
}

// s with non-printable bytes as \xNN, cut after 64 bytes (names and
// versions read from a corrupt file may hold anything).
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > 64) out += "...";
  return out;
}

std::string quote_name(const std::string& s) { return "'" + printable(s) + "'"; }

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_le(const std::string& bytes) {
  uint64_t v = 0;
  for (size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

// Walks the file's bytes front to back, bounding every read by the bytes
// left and collecting the bytes the trailer covers.
class Reader {
 public:
  Reader(const char* data, uint64_t size, const std::string& path) : p_(data), path_(path), left_(size) {}

  uint64_t left() const { return left_; }
  uint64_t offset() const { return offset_; }
  const std::string& covered() const { return covered_; }

  // The next n bytes; when fewer are left, fails with `short_message`.
  std::string_view read(uint64_t n, bool covered, const std::string& short_message) {
    TESSERA_CHECK(n <= left_, "artifact '", path_, "' ", short_message);
    std::string_view v(p_ + offset_, static_cast<size_t>(n));
    offset_ += n;
    left_ -= n;
    if (covered) covered_ += v;
    return v;
  }

  uint64_t read_int(int bytes, const std::string& short_message) {
    std::string_view v = read(static_cast<uint64_t>(bytes), true, short_message);
    return get_le(std::string(v));
  }

 private:
  const char* p_;
  const std::string& path_;
  uint64_t left_, offset_ = 0;
  std::string covered_;
};

[[noreturn]] void fail_corrupt(const std::string& path, const std::string& what) {
  TESSERA_FAIL("artifact '", path, "' is corrupt: ", what, " (recompile with `tessera compile`)");
}

// Checks the artifact in `data` and returns its sections as views of it;
// data is a file mapping when `drop_pages` is given: the sections it names
// have their pages dropped as they are checked (section_checksum). Defined below.
std::map<std::string, std::string_view> read_artifact(const char* data, uint64_t size, const std::string& path,
                                                      const SectionFilter& drop_pages);

Artifact copy_sections(const std::map<std::string, std::string_view>& views) {
  Artifact a;
  for (const auto& [name, data] : views) a.sections.emplace_hint(a.sections.end(), name, std::string(data));
  return a;
}

// Zero bytes that bring `offset` to the next multiple of kArtifactSectionAlign.
uint64_t padding(uint64_t offset) { return (kArtifactSectionAlign - offset % kArtifactSectionAlign) % kArtifactSectionAlign; }

}  // namespace

uint64_t artifact_checksum(const void* data, size_t size) {
  return ChecksumStream().finish(static_cast<const unsigned char*>(data), size);
}

const std::string& Artifact::section(const std::string& name) const {
  auto it = sections.find(name);
  TESSERA_CHECK(it != sections.end(), "artifact has no section ", quote_name(name));
  return it->second;
}

void save_artifact(const Artifact& artifact, const std::string& path) {
  const std::string version = TESSERA_VERSION;
  TESSERA_CHECK(artifact.sections.size() <= std::numeric_limits<uint32_t>::max(), "cannot save artifact '", path,
                "': too many sections");
  // The bytes the trailer covers, with the file size patched in below.
  std::string meta(kArtifactMagic, 4);
  put_u32(meta, kArtifactFormatVersion);
  put_u32(meta, static_cast<uint32_t>(version.size()));
  meta += version;
  const size_t size_field = meta.size();
  put_u64(meta, 0);
  put_u32(meta, static_cast<uint32_t>(artifact.sections.size()));
  uint64_t file_size = meta.size();  // so far: the offset in the file where meta ends
  std::vector<size_t> section_ends;  // in meta, where each section's data follows
  for (const auto& [name, data] : artifact.sections) {
    TESSERA_CHECK(name.size() <= std::numeric_limits<uint32_t>::max(), "cannot save artifact '", path,
                  "': section name too long");
    put_u32(meta, static_cast<uint32_t>(name.size()));
    meta += name;
    put_u64(meta, data.size());
    put_u64(meta, artifact_checksum(data.data(), data.size()));
    file_size += kSectionOverhead + name.size();
    uint64_t pad = padding(file_size);
    meta.append(static_cast<size_t>(pad), '\0');
    section_ends.push_back(meta.size());
    file_size += pad + data.size();
  }
  file_size += 8;
  std::string size_bytes;
  put_u64(size_bytes, file_size);
  meta.replace(size_field, 8, size_bytes);
  std::string trailer;
  put_u64(trailer, artifact_checksum(meta.data(), meta.size()));

  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    TESSERA_CHECK(out.is_open(), "cannot save artifact '", path, "': cannot create ", tmp, ": ",
                  std::strerror(errno));
    size_t pos = 0, k = 0;
    for (const auto& entry : artifact.sections) {
      out.write(meta.data() + pos, static_cast<std::streamsize>(section_ends[k] - pos));
      out.write(entry.second.data(), static_cast<std::streamsize>(entry.second.size()));
      pos = section_ends[k++];
    }
    out.write(meta.data() + pos, static_cast<std::streamsize>(meta.size() - pos));
    out.write(trailer.data(), 8);
    out.close();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      TESSERA_FAIL("cannot save artifact '", path, "': write error (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    TESSERA_FAIL("cannot save artifact '", path, "': ", ec.message());
  }
}

Artifact load_artifact(const std::string& path) {
  MappedArtifact m = map_artifact(path);
  return copy_sections(m.sections);
}

Artifact parse_artifact(const std::string& bytes, const std::string& name) {
  return copy_sections(read_artifact(bytes.data(), bytes.size(), name, {}));
}

std::string_view MappedArtifact::section(const std::string& name) const {
  auto it = sections.find(name);
  TESSERA_CHECK(it != sections.end(), "artifact has no section ", quote_name(name));
  return it->second;
}

MappedArtifact map_artifact(const std::string& path, const SectionFilter& drop_pages) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  TESSERA_CHECK(fs::exists(st), "cannot load artifact '", path, "': no such file");
  TESSERA_CHECK(!fs::is_directory(st), "cannot load artifact '", path, "': it is a directory");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  TESSERA_CHECK(fd >= 0, "cannot load artifact '", path, "': ", std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || info.st_size < 0) {
    int err = errno;
    ::close(fd);
    TESSERA_FAIL("cannot load artifact '", path, "': cannot determine its size: ", std::strerror(err));
  }
  const auto size = static_cast<uint64_t>(info.st_size);
  MappedArtifact m;
  if (size == 0) {
    ::close(fd);
    m.file = std::make_shared<char>(0);
    m.sections = read_artifact(static_cast<const char*>(m.file.get()), 0, path, {});
    return m;
  }
  // Private and writable: a view written through (a constant tensor, say)
  // gets a page of its own, the file stays as it is; a page only read is the
  // page cache's, shared. Nothing is populated ahead: the check below reads
  // every section (faulting its pages in) and drops the pages of those
  // `drop_pages` names behind it, so those are resident only once something
  // reads them again.
  void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  TESSERA_CHECK(p != MAP_FAILED, "cannot load artifact '", path, "': cannot map it: ", std::strerror(err));
  m.file = std::shared_ptr<void>(p, [size](void* q) { ::munmap(q, static_cast<size_t>(size)); });
  m.size = static_cast<size_t>(size);
  m.sections = read_artifact(static_cast<const char*>(p), size, path, drop_pages);
  return m;
}

namespace {

// Named `path` in errors.
std::map<std::string, std::string_view> read_artifact(const char* data, uint64_t actual_size,
                                                      const std::string& path, const SectionFilter& drop_pages) {
  Reader r(data, actual_size, path);
  const std::string truncated = "is truncated (" + std::to_string(actual_size) + " bytes, ends inside the header)";

  std::string_view magic = r.read(std::min<uint64_t>(4, actual_size), true, truncated);
  TESSERA_CHECK(std::memcmp(magic.data(), kArtifactMagic, magic.size()) == 0, "'", path,
                "' is not a Tessera artifact (bad magic)");
  TESSERA_CHECK(magic.size() == 4, "artifact '", path, "' ", truncated);

  const uint64_t format = r.read_int(4, truncated);
  TESSERA_CHECK(format >= kOldestArtifactFormatVersion && format <= kArtifactFormatVersion, "artifact '", path,
                "' has format version ", format, ", this Tessera (", TESSERA_VERSION, ") reads versions ",
                kOldestArtifactFormatVersion, " to ", kArtifactFormatVersion, ": recompile with `tessera compile`");
  const uint64_t version_length = r.read_int(4, truncated);
  if (version_length > kMaxVersionLength)
    fail_corrupt(path, "version string of " + std::to_string(version_length) + " bytes");
  std::string version(r.read(version_length, true, truncated));
  TESSERA_CHECK(version == TESSERA_VERSION, "artifact '", path, "' was compiled by Tessera ", printable(version),
                ", this is ", TESSERA_VERSION, ": recompile with `tessera compile`");

  const uint64_t recorded_size = r.read_int(8, truncated);
  TESSERA_CHECK(actual_size >= recorded_size, "artifact '", path, "' is truncated (", actual_size, " of ",
                recorded_size, " bytes)");
  if (actual_size != recorded_size)
    fail_corrupt(path, std::to_string(actual_size) + " bytes, but the header records " +
                           std::to_string(recorded_size));

  // From here the size is right, so running out of bytes means corruption.
  const std::string overrun = "is corrupt: a length runs past the end of the file";
  const uint64_t count = r.read_int(4, overrun);
  if (count > r.left() / kSectionOverhead) fail_corrupt(path, "section count " + std::to_string(count));
  std::map<std::string, std::string_view> sections;
  for (uint64_t s = 0; s < count; ++s) {
    const uint64_t name_length = r.read_int(4, overrun);
    std::string name(r.read(name_length, true, overrun));
    if (!sections.empty() && !(sections.rbegin()->first < name))
      fail_corrupt(path, "section " + quote_name(name) + " out of order or repeated");
    const uint64_t data_length = r.read_int(8, overrun);
    const uint64_t checksum = r.read_int(8, overrun);
    if (format >= 2) {
      std::string_view pad = r.read(padding(r.offset()), true, overrun);
      if (pad.find_first_not_of('\0') != std::string_view::npos)
        fail_corrupt(path, "non-zero padding before section " + quote_name(name));
    }
    // Leave room for the trailer.
    if (data_length > r.left() || r.left() - data_length < 8)
      fail_corrupt(path, "section " + quote_name(name) + " runs past the end of the file");
    std::string_view bytes = r.read(data_length, false, overrun);
    if (section_checksum(bytes, drop_pages && drop_pages(name)) != checksum)
      fail_corrupt(path, "checksum mismatch in section " + quote_name(name));
    sections.emplace_hint(sections.end(), std::move(name), bytes);
  }
  if (r.left() != 8) fail_corrupt(path, std::to_string(r.left()) + " unexpected bytes after the last section");
  const uint64_t expected = artifact_checksum(r.covered().data(), r.covered().size());
  const uint64_t trailer = r.read_int(8, overrun);
  if (trailer != expected) fail_corrupt(path, "checksum mismatch in the file header or section table");
  return sections;
}

}  // namespace

}  // namespace tessera
