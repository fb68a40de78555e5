// The sanitizer builds stop at the first report (scripts/sanitizers.sh, the
// TESSERA_ASAN and TESSERA_TSAN options): a deliberate error of each kind the
// build checks must end the process with the sanitizer's report, so a report
// in a real test can never pass unnoticed (say, if UBSan were built to
// recover and go on). Compiled into tessera_tests and
// tessera_concurrency_tests; in a build without sanitizers it has no tests.
#include <gtest/gtest.h>

#include <climits>
#include <thread>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define TESSERA_TEST_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define TESSERA_TEST_TSAN 1
#endif
#if defined(__has_feature)  // clang names them so
#if __has_feature(address_sanitizer)
#define TESSERA_TEST_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define TESSERA_TEST_TSAN 1
#endif
#endif

namespace {

#if defined(TESSERA_TEST_ASAN) || defined(TESSERA_TEST_TSAN)
// Each death test runs its statement in a fresh copy of the test binary
// (the process may already have the thread pool's threads).
class SanitizerDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};
// The values come through volatile reads, so the compiler cannot see the
// error at compile time and fold it away.
volatile int g_index = 4;
#endif

#if defined(TESSERA_TEST_ASAN)
volatile int g_int_max = INT_MAX;
volatile double g_huge = 1e20;

TEST_F(SanitizerDeathTest, HeapOverflowIsFatal) {
  EXPECT_DEATH(
      {
        int* p = new int[4];
        p[g_index] = 1;
        delete[] p;
      },
      // UBSan's object-size check may see it before ASan does.
      "AddressSanitizer: heap-buffer-overflow|insufficient space for an object");
}

TEST_F(SanitizerDeathTest, UseAfterFreeIsFatal) {
  EXPECT_DEATH(
      {
        int* p = new int[4];
        delete[] p;
        p[g_index - 4] = 1;
      },
      "AddressSanitizer: heap-use-after-free");
}

// UBSan's checks are built without recovery (-fno-sanitize-recover=all).
TEST_F(SanitizerDeathTest, SignedOverflowIsFatal) {
  EXPECT_DEATH(
      {
        int x = g_int_max;
        g_index = x + 1;
      },
      "runtime error: signed integer overflow");
}

TEST_F(SanitizerDeathTest, FloatToIntOutOfRangeIsFatal) {
  EXPECT_DEATH({ g_index = static_cast<int>(g_huge); }, "runtime error: .* is outside the range");
}

#if defined(_GLIBCXX_ASSERTIONS)
TEST_F(SanitizerDeathTest, VectorIndexPastSizeIsFatal) {
  std::vector<int> v(8);
  v.resize(4);  // capacity stays 8: ASan alone would not see v[4]
  EXPECT_DEATH({ g_index = v[g_index]; }, "__n < this->size\\(\\)");
}
#endif
#endif  // TESSERA_TEST_ASAN

#if defined(TESSERA_TEST_TSAN)
TEST_F(SanitizerDeathTest, DataRaceIsFatal) {
  EXPECT_DEATH(
      {
        int shared = 0;
        std::thread t([&] { shared = 1; });
        shared = 2;
        t.join();
        g_index = shared;
      },
      "ThreadSanitizer: data race");
}
#endif

}  // namespace
