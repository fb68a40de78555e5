// The artifact container: round trips (empty and binary sections, the layout
// the header documents), and every error a damaged or foreign file must give
// (missing, bad magic, truncated at every length, corrupt section / table /
// trailer, absurd lengths, format and Tessera version mismatches), plus a
// seeded random-corruption loop that must only ever throw tessera::Error or
// load the original content; a mapped file's check, done in pieces, leaves
// its sections' pages out of memory and still catches a change in any piece.
#include "support/artifact.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "support/error.h"
#include "resident_pages.h"

namespace tessera::runtime {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void put_le(std::string& bytes, size_t at, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) bytes[at + static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// Offsets of the header fields, from the layout in artifact.h.
const std::string kVersion = TESSERA_VERSION;
const size_t kFormatAt = 4;
const size_t kVersionAt = 12;
const size_t kSizeAt = kVersionAt + kVersion.size();
const size_t kCountAt = kSizeAt + 8;
const size_t kFirstSectionAt = kCountAt + 4;

std::string binary_blob(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i % 3 == 0 ? 0 : rng() & 0xff);
  return s;
}

Artifact sample() {
  Artifact a;
  a.sections["code"] = "define void @main() { ret void }";
  a.sections["empty"] = "";
  a.sections["weights"] = binary_blob(1000, 1);
  a.sections[std::string("nul\0name", 8)] = std::string(16, '\0');
  return a;
}

class ArtifactTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tessera_artifact_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Saves the sample artifact and returns its bytes.
  std::string saved_sample(const std::string& name) {
    save_artifact(sample(), path(name));
    return read_bytes(path(name));
  }

  // Expects loading `p` to throw a tessera::Error naming the path and
  // containing every fragment.
  static void expect_error(const std::string& p, std::initializer_list<std::string> fragments) {
    try {
      load_artifact(p);
      ADD_FAILURE() << "loading " << p << " did not fail";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(p), std::string::npos) << msg;
      for (const std::string& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "want '" << f << "' in: " << msg;
    }
  }

  fs::path dir_;
};

TEST_F(ArtifactTest, RoundTrip) {
  const Artifact a = sample();
  save_artifact(a, path("model.tsra"));
  const Artifact b = load_artifact(path("model.tsra"));
  EXPECT_EQ(a.sections, b.sections);
  EXPECT_EQ(b.section("weights"), a.sections.at("weights"));
  EXPECT_EQ(b.section("empty"), "");

  // The documented layout: header, sections (each one's data 64-byte
  // aligned in the file), trailer.
  const std::string bytes = read_bytes(path("model.tsra"));
  size_t expected = kFirstSectionAt;
  for (const auto& [name, data] : a.sections) {
    expected += 4 + name.size() + 8 + 8;
    expected += (64 - expected % 64) % 64;
    EXPECT_EQ(bytes.substr(expected, data.size()), data);
    expected += data.size();
  }
  expected += 8;
  ASSERT_EQ(bytes.size(), expected);
  EXPECT_EQ(bytes.substr(0, 4), "TSRA");
  EXPECT_EQ(bytes.substr(kFormatAt, 4), std::string("\x02\0\0\0", 4));
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]), kVersion.size());
  EXPECT_EQ(bytes.substr(kVersionAt, kVersion.size()), kVersion);
  EXPECT_EQ(static_cast<unsigned char>(bytes[kSizeAt]), expected & 0xff);
  EXPECT_EQ(static_cast<unsigned char>(bytes[kSizeAt + 1]), (expected >> 8) & 0xff);
  EXPECT_EQ(static_cast<unsigned char>(bytes[kCountAt]), 4);
  // Sections in name order: "code" first.
  EXPECT_EQ(static_cast<unsigned char>(bytes[kFirstSectionAt]), 4);
  EXPECT_EQ(bytes.substr(kFirstSectionAt + 4, 4), "code");
  // No temporary file left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(ArtifactTest, RoundTripEmptyAndLarge) {
  save_artifact(Artifact{}, path("empty.tsra"));
  EXPECT_TRUE(load_artifact(path("empty.tsra")).sections.empty());

  Artifact big;
  big.sections["weights"] = binary_blob(3 << 20, 2);
  big.sections[""] = "unnamed";
  save_artifact(big, path("big.tsra"));
  EXPECT_EQ(load_artifact(path("big.tsra")).sections, big.sections);

  // Saving over an existing artifact replaces it.
  save_artifact(sample(), path("big.tsra"));
  EXPECT_EQ(load_artifact(path("big.tsra")).sections, sample().sections);
}

TEST_F(ArtifactTest, MissingSectionNamed) {
  try {
    sample().section("plan");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no section 'plan'"), std::string::npos) << e.what();
  }
}

TEST_F(ArtifactTest, MissingFileOrDirectory) {
  expect_error(path("nope.tsra"), {"no such file"});
  expect_error(dir_.string(), {"directory"});
}

TEST_F(ArtifactTest, SaveToMissingDirectoryFails) {
  const std::string p = path("no/such/dir/model.tsra");
  try {
    save_artifact(sample(), p);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST_F(ArtifactTest, BadMagic) {
  write_bytes(path("text.tsra"), "hello, this is not an artifact at all");
  expect_error(path("text.tsra"), {"not a Tessera artifact", "bad magic"});
  write_bytes(path("short.tsra"), "TX");
  expect_error(path("short.tsra"), {"not a Tessera artifact"});
  std::string bytes = saved_sample("model.tsra");
  bytes[3] = 'B';
  write_bytes(path("model.tsra"), bytes);
  expect_error(path("model.tsra"), {"not a Tessera artifact"});
}

TEST_F(ArtifactTest, TruncatedAtEveryLength) {
  const std::string bytes = saved_sample("model.tsra");
  for (size_t n = 0; n < bytes.size(); ++n) {
    write_bytes(path("cut.tsra"), bytes.substr(0, n));
    SCOPED_TRACE("cut at " + std::to_string(n));
    expect_error(path("cut.tsra"), {"truncated"});
    if (HasFailure()) break;
  }
  write_bytes(path("cut.tsra"), bytes.substr(0, bytes.size() - 100));
  expect_error(path("cut.tsra"), {"truncated (" + std::to_string(bytes.size() - 100) + " of " +
                                  std::to_string(bytes.size()) + " bytes)"});
}

TEST_F(ArtifactTest, TrailingBytesAreCorrupt) {
  write_bytes(path("model.tsra"), saved_sample("model.tsra") + "x");
  expect_error(path("model.tsra"), {"corrupt"});
}

TEST_F(ArtifactTest, FlippedSectionByteIsCorrupt) {
  const std::string bytes = saved_sample("model.tsra");
  const size_t weights = bytes.rfind(sample().sections.at("weights"));
  ASSERT_NE(weights, std::string::npos);
  for (size_t at : {weights, weights + 1, weights + 500, weights + 999}) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    write_bytes(path("bad.tsra"), bad);
    expect_error(path("bad.tsra"), {"is corrupt", "checksum mismatch in section 'weights'", "tessera compile"});
  }
}

TEST_F(ArtifactTest, FlippedTableOrTrailerByteIsCorrupt) {
  const std::string bytes = saved_sample("model.tsra");
  // A section name, the stored data checksum of "code", and the trailer.
  const size_t name_at = kFirstSectionAt + 4;
  const size_t code_checksum_at = kFirstSectionAt + 4 + 4 + 8;
  for (size_t at : {name_at + 1, code_checksum_at, code_checksum_at + 7, bytes.size() - 1, bytes.size() - 8}) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x01);
    write_bytes(path("bad.tsra"), bad);
    SCOPED_TRACE("byte " + std::to_string(at));
    expect_error(path("bad.tsra"), {"corrupt"});
  }
}

TEST_F(ArtifactTest, AbsurdLengthsAreRejected) {
  const std::string bytes = saved_sample("model.tsra");
  struct Edit {
    size_t at;
    uint64_t value;
    int width;
    std::string message;
  };
  const size_t code_length_at = kFirstSectionAt + 4 + 4;
  const Edit edits[] = {
      {kCountAt, 0xffffffffu, 4, "corrupt"},                       // section count
      {kFirstSectionAt, 0xffffffffu, 4, "corrupt"},                // name length
      {code_length_at, uint64_t{1} << 63, 8, "corrupt"},           // data length
      {code_length_at, ~uint64_t{0}, 8, "corrupt"},
      {code_length_at, bytes.size(), 8, "corrupt"},
      {kSizeAt, ~uint64_t{0}, 8, "truncated"},                     // recorded file size
      {kSizeAt, 10, 8, "corrupt"},
      {8, 0xffffffffu, 4, "corrupt"},                              // version length
  };
  for (const Edit& e : edits) {
    std::string bad = bytes;
    put_le(bad, e.at, e.value, e.width);
    write_bytes(path("bad.tsra"), bad);
    SCOPED_TRACE("field at " + std::to_string(e.at));
    expect_error(path("bad.tsra"), {e.message});
  }
}

TEST_F(ArtifactTest, FormatVersionMismatch) {
  std::string bytes = saved_sample("model.tsra");
  put_le(bytes, kFormatAt, 3, 4);
  write_bytes(path("new.tsra"), bytes);
  expect_error(path("new.tsra"), {"format version 3", "reads versions 1 to 2", "recompile with `tessera compile`"});
}

// Version 1 (section data right after its header, no padding) still loads.
TEST_F(ArtifactTest, FormatVersion1StillLoads) {
  const Artifact a = sample();
  std::string covered = "TSRA", file;
  auto le = [](uint64_t v, int width) {
    std::string b(static_cast<size_t>(width), '\0');
    put_le(b, 0, v, width);
    return b;
  };
  covered += le(1, 4) + le(kVersion.size(), 4) + kVersion + le(0, 8) + le(a.sections.size(), 4);
  std::vector<std::pair<size_t, std::string>> data_at;  // where each section's data goes in the file
  size_t size = covered.size();
  for (const auto& [name, data] : a.sections) {
    covered += le(name.size(), 4) + name + le(data.size(), 8) + le(artifact_checksum(data.data(), data.size()), 8);
    size += 4 + name.size() + 16;
    data_at.emplace_back(covered.size(), data);
    size += data.size();
  }
  size += 8;
  put_le(covered, kSizeAt, size, 8);
  size_t pos = 0;
  for (const auto& [at, data] : data_at) {
    file += covered.substr(pos, at - pos) + data;
    pos = at;
  }
  file += covered.substr(pos) + le(artifact_checksum(covered.data(), covered.size()), 8);
  ASSERT_EQ(file.size(), size);
  write_bytes(path("v1.tsra"), file);
  EXPECT_EQ(load_artifact(path("v1.tsra")).sections, a.sections);
}

// map_artifact: sections are views of the mapped file, each 64-byte aligned,
// and stay valid while the mapping's owner lives.
TEST_F(ArtifactTest, MappedSectionsAreAlignedViews) {
  const Artifact a = sample();
  save_artifact(a, path("model.tsra"));
  std::shared_ptr<void> keep;
  std::string_view weights;
  {
    MappedArtifact m = map_artifact(path("model.tsra"));
    ASSERT_EQ(m.sections.size(), a.sections.size());
    for (const auto& [name, data] : a.sections) {
      EXPECT_EQ(std::string(m.section(name)), data);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(m.section(name).data()) % kArtifactSectionAlign, 0u) << name;
    }
    keep = m.file;
    weights = m.section("weights");
  }
  EXPECT_EQ(std::string(weights), a.sections.at("weights"));
}

// map_artifact checks a section it is asked to drop several MiB at a time,
// dropping the pages it has summed: after the check none of a large
// section's whole pages is in memory (its end pages hold header bytes too),
// they come back as it is read, a section not named stays mapped, and a
// change in any piece is still caught — the sum in pieces is the sum over
// the whole section that save_artifact wrote and parse_artifact (bytes in
// memory, summed at once) checks.
TEST_F(ArtifactTest, MappedSectionsAreCheckedInPiecesAndLeftOutOfMemory) {
  Artifact a;
  a.sections["a"] = "small";
  a.sections["weights"] = binary_blob((size_t{9} << 20) + 37, 5);  // three pieces, the last not whole blocks
  a.sections["z"] = binary_blob(5000, 6);
  save_artifact(a, path("big.tsra"));
  const int64_t page = sysconf(_SC_PAGESIZE);
  size_t at = 0;  // where the weights start in the file
  {
    MappedArtifact m = map_artifact(path("big.tsra"), [](const std::string& name) { return name == "weights"; });
    std::string_view w = m.section("weights");
    std::string_view z = m.section("z");
    EXPECT_GE(tessera::testing::resident_bytes(z.data(), z.size()), static_cast<int64_t>(z.size()));
    at = static_cast<size_t>(w.data() - static_cast<const char*>(m.file.get()));
    EXPECT_LE(tessera::testing::resident_bytes(w.data(), w.size()), 2 * page);
    EXPECT_TRUE(std::string(w) == a.sections.at("weights"));
    EXPECT_GE(tessera::testing::resident_bytes(w.data(), w.size()), static_cast<int64_t>(w.size()));
    EXPECT_EQ(std::string(m.section("z")), a.sections.at("z"));
  }
  const std::string bytes = read_bytes(path("big.tsra"));
  EXPECT_EQ(parse_artifact(bytes, "big.tsra").sections, a.sections);
  const size_t n = a.sections.at("weights").size();
  for (size_t k : {size_t{0}, (size_t{4} << 20) + 1, (size_t{8} << 20) + 5, n - 1}) {
    std::string bad = bytes;
    bad[at + k] = static_cast<char>(bad[at + k] ^ 0x10);
    write_bytes(path("bad.tsra"), bad);
    expect_error(path("bad.tsra"), {"checksum mismatch in section 'weights'"});
    try {
      map_artifact(path("bad.tsra"), [](const std::string&) { return true; });
      ADD_FAILURE() << "a change at " << k << " was not caught";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("checksum mismatch in section 'weights'"), std::string::npos) << e.what();
    }
  }
}

TEST_F(ArtifactTest, TesseraVersionMismatch) {
  std::string bytes = saved_sample("model.tsra");
  // Same length, last character changed.
  std::string other = kVersion;
  other.back() = other.back() == '7' ? '8' : '7';
  bytes.replace(kVersionAt, kVersion.size(), other);
  write_bytes(path("old.tsra"), bytes);
  expect_error(path("old.tsra"), {"compiled by Tessera " + other + ", this is " + kVersion +
                                  ": recompile with `tessera compile`"});

  // A longer version string: the rest of the file need not even parse.
  bytes = saved_sample("model.tsra");
  const std::string longer = "10.20.30-dev";
  bytes.replace(kVersionAt, kVersion.size(), longer);
  put_le(bytes, 8, longer.size(), 4);
  write_bytes(path("old.tsra"), bytes);
  expect_error(path("old.tsra"), {"compiled by Tessera 10.20.30-dev, this is " + kVersion});
}

TEST_F(ArtifactTest, RandomCorruptionNeverCrashes) {
  const Artifact original = sample();
  const std::string bytes = saved_sample("model.tsra");
  std::mt19937_64 rng(99);
  auto pick = [&](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
  int rejected = 0, loaded = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    std::string bad = bytes;
    const int edits = static_cast<int>(pick(1, 3));
    for (int e = 0; e < edits && !bad.empty(); ++e) {
      const size_t at = pick(0, bad.size() - 1);
      switch (pick(0, 5)) {
        case 0: bad[at] = static_cast<char>(bad[at] ^ (1 << pick(0, 7))); break;
        case 1: bad[at] = static_cast<char>(pick(0, 255)); break;
        case 2: bad.resize(at); break;
        case 3: bad.insert(at, std::string(pick(1, 16), static_cast<char>(pick(0, 255)))); break;
        case 4: bad.erase(at, pick(1, 16)); break;
        default:  // a plausible-looking huge length
          if (at + 8 <= bad.size()) put_le(bad, at, uint64_t{1} << pick(20, 63), 8);
          break;
      }
    }
    write_bytes(path("fuzz.tsra"), bad);
    try {
      const Artifact got = load_artifact(path("fuzz.tsra"));
      EXPECT_EQ(got.sections, original.sections) << "trial " << trial << " loaded different content";
      ++loaded;
    } catch (const Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "trial " << trial << ": " << e.what();
    }
    if (HasFailure()) break;
  }
  EXPECT_GT(rejected, 1400);
  EXPECT_EQ(loaded + rejected, 1500);
}

TEST(ArtifactChecksum, DetectsEveryByteChange) {
  std::string data = binary_blob(100, 3);
  const uint64_t base = artifact_checksum(data.data(), data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      data[i] = static_cast<char>(data[i] ^ (1 << bit));
      EXPECT_NE(artifact_checksum(data.data(), data.size()), base) << "byte " << i << " bit " << bit;
      data[i] = static_cast<char>(data[i] ^ (1 << bit));
    }
  }
  // Zero padding is told apart by the length.
  EXPECT_NE(artifact_checksum("a", 1), artifact_checksum("a\0", 2));
  EXPECT_NE(artifact_checksum("", 0), artifact_checksum("\0", 1));
}

}  // namespace
}  // namespace tessera::runtime
