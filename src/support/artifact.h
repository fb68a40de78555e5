// The compiled-model artifact: a versioned binary container of named byte
// sections (code, weights, plans, metadata ...), checksummed so that a
// truncated, corrupt or foreign file is reported, never misread.
//
// Layout (integers little-endian):
//   "TSRA"                      magic, 4 bytes
//   u32 format version          kArtifactFormatVersion
//   u32 n, n bytes              the Tessera version that wrote the file
//   u64 file size               of the whole file, trailer included
//   u32 section count
//   per section, in increasing name order (names are unique):
//     u32 n, n bytes            name
//     u64 n                     data size
//     u64                       checksum of the data
//     zero bytes                (version 2) padding, so that the data starts
//                               at a file offset that is a multiple of 64
//     n bytes                   data
//   u64 trailer                 checksum of every byte before it except the
//                               section data (which the section checksums
//                               cover), so it covers the whole file
// The magic, format version and Tessera version come first and keep this
// layout in every format version, so an old or new file is always told apart
// from a corrupt one. The checksum is a 64-bit multiply-xorshift hash over
// 8-byte words (several GB/s), which detects any change confined to one
// 8-byte word with certainty.
//
// Version 1 (no padding) is still read. The padding lets a reader that maps
// the file use a section's bytes in place: tensors, say, 64-byte aligned as
// Tessera's own.
//
// Reading bounds every length by the bytes left in the file, so no input
// makes it crash or allocate more than the file size. map_artifact maps the
// file instead of reading it: its sections are views of the mapping, checked
// as load_artifact checks them, and nothing large is copied. The check reads
// every byte; the sections the caller names have their pages dropped from
// the process behind it (summed 4 MiB at a time), so that checking a file of
// weights does not hold them all in memory at once: a dropped section's pages
// come back from the page cache as something reads it, and one nothing reads
// (weights only ever used packed) stays out.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace tessera {

inline constexpr char kArtifactMagic[4] = {'T', 'S', 'R', 'A'};
inline constexpr uint32_t kArtifactFormatVersion = 2;
inline constexpr uint32_t kOldestArtifactFormatVersion = 1;
inline constexpr uint64_t kArtifactSectionAlign = 64;  // version 2: where section data starts

struct Artifact {
  std::map<std::string, std::string> sections;

  // The named section; throws tessera::Error naming it when there is none.
  const std::string& section(const std::string& name) const;
};

// Writes the artifact to path (through a temporary file renamed over path,
// so a failed save leaves no partial file); throws tessera::Error naming the
// path when it cannot be written.
void save_artifact(const Artifact& artifact, const std::string& path);

// Reads an artifact written by save_artifact. Throws tessera::Error naming
// the path when the file is missing or unreadable, is not an artifact (bad
// magic), is truncated, is corrupt (a checksum or structure mismatch), has
// another format version, or was written by another Tessera version.
Artifact load_artifact(const std::string& path);
// The same from the file's bytes (`name` stands for the path in errors).
Artifact parse_artifact(const std::string& bytes, const std::string& name);

// An artifact mapped into memory (private and copy-on-write, so writing
// through a view never reaches the file): its sections are views of the
// mapping, which stays mapped while `file` or any copy of it lives (hand it
// to whatever keeps a view, such as a tensor over a section's bytes).
struct MappedArtifact {
  std::shared_ptr<void> file;
  size_t size = 0;  // the mapping's bytes, from file.get()
  std::map<std::string, std::string_view> sections;

  // The named section; throws tessera::Error naming it when there is none.
  std::string_view section(const std::string& name) const;
};

// Which sections (by name) a mapped artifact's check drops the pages of.
using SectionFilter = std::function<bool(const std::string& name)>;

// Maps and checks the artifact at path, with load_artifact's errors; the
// pages of the sections `drop_pages` names (none when empty) are left out of
// the process by the check (see above), the others stay mapped.
MappedArtifact map_artifact(const std::string& path, const SectionFilter& drop_pages = {});

// The checksum used by the format (exposed for tools and tests).
uint64_t artifact_checksum(const void* data, size_t size);

}  // namespace tessera
