// The tab-separated store behind the fusion profile and PET's database
// (support/tsv_store.h): persistence, later lines winning, refused lines
// ignored, an unwritable file only losing persistence.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "pet/pet_db.h"
#include "support/tsv_store.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& tag) {
  fs::path dir = fs::temp_directory_path() / ("tessera_tsv_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

TEST(TsvStore, PersistsAndLaterLinesWin) {
  const fs::path dir = fresh_dir("persist");
  const std::string path = (dir / "sub" / "store.tsv").string();
  {
    TsvStore s(path, 2, "a test store");
    EXPECT_FALSE(s.find("a\tb"));
    s.put("a\tb", {"1", "x"});
    s.put("a\tc", {"2"});
    s.put("a\tb", {"3", "y"});
    EXPECT_EQ(*s.find("a\tb"), (TsvStore::Fields{"3", "y"}));
  }
  TsvStore again(path, 2, "a test store");
  EXPECT_EQ(again.size(), 2u);
  EXPECT_EQ(*again.find("a\tb"), (TsvStore::Fields{"3", "y"}));
  EXPECT_EQ(*again.find("a\tc"), (TsvStore::Fields{"2"}));
  EXPECT_EQ(again.hits(), 2);
  EXPECT_FALSE(again.find("a\tb", /*count=*/false) == std::nullopt);
  EXPECT_EQ(again.hits(), 2);
  fs::remove_all(dir);
}

TEST(TsvStore, RefusedAndTornLinesAreIgnored) {
  const fs::path dir = fresh_dir("torn");
  fs::create_directories(dir);
  const std::string path = (dir / "store.tsv").string();
  {
    std::ofstream out(path);
    out << "k1\t1.5\n"      // good
        << "k1\tnot-a-number\n"  // refused by the validator: the earlier one stays
        << "k2\n"           // no value
        << "k3\t2.5\n"
        << "k3\t4";         // torn at the end, still a number
  }
  TsvStore s(path, 1, "a test store", [](const TsvStore::Fields&, const TsvStore::Fields& v) {
    size_t used = 0;
    std::stod(v[0], &used);  // throws for a word: refused like a false
    return v.size() == 1 && used == v[0].size();
  });
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ((*s.find("k1"))[0], "1.5");
  EXPECT_EQ((*s.find("k3"))[0], "4");
  EXPECT_FALSE(s.find("k2"));
  fs::remove_all(dir);
}

TEST(TsvStore, AnUnwritableFileOnlyLosesPersistence) {
  TsvStore s("/proc/tessera-cannot-write-here/store.tsv", 1, "a test store");
  testing::internal::CaptureStderr();
  s.put("k", {"v"});
  s.put("k2", {"v"});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ((*s.find("k"))[0], "v");
  // Warned once, naming the store.
  EXPECT_NE(err.find("cannot write a test store"), std::string::npos) << err;
  EXPECT_EQ(err.find("cannot write", err.find("cannot write") + 1), std::string::npos) << err;
}

TEST(PetDb, CostsAndChoicesPersistInTheSharedStore) {
  const fs::path dir = fresh_dir("petdb");
  const std::string path = (dir / "pet.tsv").string();
  {
    pet::PetDb db(path);
    db.record_cost("t:00ab", 1.25e-3);
    db.record_choice("t:sub1", {0x1234, 0xabcdef});
    db.record_choice("t:sub2", {});
  }
  pet::PetDb db(path);
  ASSERT_TRUE(db.cost("t:00ab"));
  EXPECT_DOUBLE_EQ(*db.cost("t:00ab"), 1.25e-3);
  EXPECT_FALSE(db.cost("t:sub1"));  // a choice is not a cost
  EXPECT_EQ(*db.choice("t:sub1"), (std::vector<uint64_t>{0x1234, 0xabcdef}));
  ASSERT_TRUE(db.choice("t:sub2"));
  EXPECT_TRUE(db.choice("t:sub2")->empty());
  EXPECT_FALSE(db.choice("t:00ab"));
  EXPECT_EQ(db.hits(), 2);  // cost lookups only
  EXPECT_EQ(db.misses(), 1);
  // The file is the one line format the fusion profile uses: kind, key, value.
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "cost\tt:00ab\t0.00125");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera
