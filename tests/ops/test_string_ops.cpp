// String ops on hand-computed cases: StringNormalizer, StringConcat,
// StringSplit, RegexFullMatch, TfIdfVectorizer.
#include "ops/op_test_util.h"
#include "ops/string_regex_engine.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Tensor str(Dims d, std::vector<std::string> v) {
  Tensor t(DType::String, std::move(d));
  t.strings() = std::move(v);
  return t;
}
void expect_strings(const Tensor& t, Dims d, std::vector<std::string> v) {
  ASSERT_EQ(t.dtype(), DType::String);
  ASSERT_EQ(dims_to_string(t.dims()), dims_to_string(d));
  EXPECT_EQ(t.strings(), v);
}
Attribute ai(int64_t v) { return Attribute::of_int(v); }
Attribute as(std::string v) { return Attribute::of_string(std::move(v)); }
Attribute ais(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
Attribute afs(std::vector<float> v) { return Attribute::of_floats(std::move(v)); }
Attribute astrs(std::vector<std::string> v) { return Attribute::of_strings(std::move(v)); }
}  // namespace

// ---------------------------------------------------------------- StringNormalizer

TEST(StringNormalizer, CaseSensitiveStopwordsAndLower) {
  auto out = run_op({.op = "StringNormalizer", .inputs = {str({4}, {"Monday", "monday", "TUEsday", "x1Y"})},
                     .attrs = {{"case_change_action", as("LOWER")},
                               {"is_case_sensitive", ai(1)},
                               {"stopwords", astrs({"monday"})}},
                     .opset = 10});
  expect_strings(out[0], {3}, {"monday", "tuesday", "x1y"});
}

TEST(StringNormalizer, CaseInsensitiveUpperOnRow) {
  // Default is_case_sensitive = 0: "MONDAY" and "Monday" are stop words too.
  auto out = run_op({.op = "StringNormalizer", .inputs = {str({1, 4}, {"MONDAY", "a-b", "Monday", "zz"})},
                     .attrs = {{"case_change_action", as("UPPER")}, {"stopwords", astrs({"monday"})}}});
  expect_strings(out[0], {1, 2}, {"A-B", "ZZ"});
}

TEST(StringNormalizer, NoActionKeepsNonAsciiBytes) {
  auto out = run_op({.op = "StringNormalizer", .inputs = {str({2}, {"\xC3\x84rger", "Ab"})}});
  expect_strings(out[0], {2}, {"\xC3\x84rger", "Ab"});
  auto low = run_op({.op = "StringNormalizer", .inputs = {str({1}, {"\xC3\x84Rger"})},
                     .attrs = {{"case_change_action", as("LOWER")}}});
  expect_strings(low[0], {1}, {"\xC3\x84rger"});  // only ASCII letters change
}

TEST(StringNormalizer, AllDroppedGivesOneEmptyString) {
  auto v = run_op({.op = "StringNormalizer", .inputs = {str({2}, {"a", "A"})}, .attrs = {{"stopwords", astrs({"a"})}}});
  expect_strings(v[0], {1}, {""});
  auto m = run_op({.op = "StringNormalizer", .inputs = {str({1, 2}, {"a", "a"})},
                   .attrs = {{"stopwords", astrs({"a"})}, {"is_case_sensitive", ai(1)}}});
  expect_strings(m[0], {1, 1}, {""});
}

TEST(StringNormalizer, InferenceLeavesFilteredLengthUnknown) {
  auto t = infer_op({.op = "StringNormalizer", .inputs = {str({1, 3}, {"a", "b", "c"})},
                     .attrs = {{"stopwords", astrs({"a"})}}});
  EXPECT_EQ(t[0].to_string(), TensorType({DType::String, {1, -1}, true}).to_string());
  auto same = infer_op({.op = "StringNormalizer", .inputs = {str({3}, {"a", "b", "c"})}});
  EXPECT_EQ(same[0].dims, (Dims{3}));
}

TEST(StringNormalizer, Errors) {
  EXPECT_THROW(run_op({.op = "StringNormalizer", .inputs = {str({2, 2}, {"a", "b", "c", "d"})}}), Error);
  EXPECT_THROW(run_op({.op = "StringNormalizer", .inputs = {str({1}, {"a"})},
                       .attrs = {{"case_change_action", as("TITLE")}}}),
               Error);
  EXPECT_THROW(run_op({.op = "StringNormalizer", .inputs = {f32({1}, {1})}}), Error);
}

// ---------------------------------------------------------------- StringConcat

TEST(StringConcat, Broadcasts) {
  auto out = run_op({.op = "StringConcat", .inputs = {str({2, 1}, {"a", "bc"}), str({3}, {"x", "", "yz"})},
                     .opset = 20});
  expect_strings(out[0], {2, 3}, {"ax", "a", "ayz", "bcx", "bc", "bcyz"});
  auto scalar = run_op({.op = "StringConcat", .inputs = {str({}, {"cat"}), str({}, {"s"})}, .opset = 20});
  expect_strings(scalar[0], {}, {"cats"});
}

TEST(StringConcat, Errors) {
  EXPECT_THROW(run_op({.op = "StringConcat", .inputs = {str({2}, {"a", "b"}), str({3}, {"a", "b", "c"})},
                       .opset = 20}),
               Error);
  EXPECT_THROW(run_op({.op = "StringConcat", .inputs = {str({1}, {"a"}), f32({1}, {1})}, .opset = 20}), Error);
  EXPECT_THROW(run_op({.op = "StringConcat", .inputs = {str({1}, {"a"}), str({1}, {"b"})}, .opset = 19}), Error);
}

// ---------------------------------------------------------------- StringSplit

TEST(StringSplit, DelimiterPadsToWidest) {
  auto out = run_op({.op = "StringSplit", .inputs = {str({3}, {"a,b,,c", "", "xyz"})},
                     .attrs = {{"delimiter", as(",")}}, .num_outputs = 2, .opset = 20});
  // "" split on "," is one empty piece (Python semantics).
  expect_strings(out[0], {3, 4}, {"a", "b", "", "c", "", "", "", "", "xyz", "", "", ""});
  expect_near(out[1], i64({3}, {4, 1, 1}));
}

TEST(StringSplit, MultiCharDelimiterAndMaxsplit) {
  auto out = run_op({.op = "StringSplit", .inputs = {str({2}, {"1<>2<>3<>4", "<>"})},
                     .attrs = {{"delimiter", as("<>")}, {"maxsplit", ai(2)}}, .num_outputs = 2, .opset = 20});
  expect_strings(out[0], {2, 3}, {"1", "2", "3<>4", "", "", ""});
  expect_near(out[1], i64({2}, {3, 2}));
}

TEST(StringSplit, WhitespaceWithoutDelimiter) {
  auto out = run_op({.op = "StringSplit", .inputs = {str({1, 3}, {"  a \t b  ", "   ", " x  y  z "})},
                     .attrs = {{"maxsplit", ai(1)}}, .num_outputs = 2, .opset = 20});
  // Leading whitespace is skipped; after maxsplit the rest is kept as is
  // (Python's str.split); all-blank strings give no pieces.
  expect_strings(out[0], {1, 3, 2}, {"a", "b  ", "", "", "x", "y  z "});
  expect_near(out[1], Tensor::from<int64_t>({1, 3}, {2, 0, 2}));
  auto none = run_op({.op = "StringSplit", .inputs = {str({0}, {})}, .num_outputs = 2, .opset = 20});
  expect_strings(none[0], {0, 0}, {});
}

TEST(StringSplit, InferenceAndErrors) {
  auto t = infer_op({.op = "StringSplit", .inputs = {str({2}, {"a", "b"})}, .num_outputs = 2, .opset = 20});
  EXPECT_EQ(t[0].dims, (Dims{2, -1}));
  EXPECT_EQ(t[1].to_string(), TensorType({DType::I64, {2}, true}).to_string());
  EXPECT_THROW(run_op({.op = "StringSplit", .inputs = {i64({1}, {1})}, .num_outputs = 2, .opset = 20}), Error);
}

// ---------------------------------------------------------------- RegexFullMatch

TEST(RegexFullMatch, MatchesWholeString) {
  auto out = run_op({.op = "RegexFullMatch", .inputs = {str({2, 2}, {"ab12", "ab12x", "x", ""})},
                     .attrs = {{"pattern", as("[a-z]+\\d*")}}, .opset = 20});
  expect_near(out[0], Tensor::from<bool>({2, 2}, {true, false, true, false}));
  auto alt = run_op({.op = "RegexFullMatch", .inputs = {str({3}, {"cat", "dog", "cow"})},
                     .attrs = {{"pattern", as("c(a|o)[tw]|dog")}}, .opset = 20});
  expect_near(alt[0], Tensor::from<bool>({3}, {true, true, true}));
}

TEST(RegexFullMatch, Re2Spellings) {
  auto icase = run_op({.op = "RegexFullMatch", .inputs = {str({2}, {"HeLLo", "help"})},
                       .attrs = {{"pattern", as("(?i)hello")}}, .opset = 20});
  expect_near(icase[0], Tensor::from<bool>({2}, {true, false}));
  auto named = run_op({.op = "RegexFullMatch", .inputs = {str({2}, {"id-42", "id-x"})},
                       .attrs = {{"pattern", as("\\Aid-(?P<num>[0-9]+)\\z")}}, .opset = 20});
  expect_near(named[0], Tensor::from<bool>({2}, {true, false}));
}

namespace {
bool full(const std::string& pattern, const std::string& text) { return RegexMatcher(pattern).full_match(text); }
}  // namespace

TEST(RegexFullMatch, EngineSyntax) {
  EXPECT_TRUE(full("a|b|", ""));
  EXPECT_TRUE(full("x{2,3}y{2}z{1,}", "xxxyyzz"));
  EXPECT_FALSE(full("x{2,3}", "xxxx"));
  EXPECT_TRUE(full("a{,2}", "a{,2}"));  // not a repeat: literal braces
  EXPECT_TRUE(full("[]a-c]+", "]ab"));
  EXPECT_TRUE(full("[^\\d\\s]+", "ab-_"));
  EXPECT_FALSE(full("[^\\d\\s]+", "a b"));
  EXPECT_TRUE(full("[[:upper:][:digit:]]+[[:^alpha:]]", "AB1!"));
  EXPECT_TRUE(full("\\w+\\b\\W\\b\\w", "ab c"));
  EXPECT_FALSE(full("a\\Bb\\b", "a b"));
  EXPECT_TRUE(full("\\x41\\x{42}\\101\\t\\Q.*\\E", "ABA\t.*"));
  EXPECT_TRUE(full("(?i)ab(?-i:c)", "ABc"));
  EXPECT_FALSE(full("(?i)ab(?-i:c)", "ABC"));
  EXPECT_TRUE(full("(?s)a.b", "a\nb"));
  EXPECT_FALSE(full("a.b", "a\nb"));
  EXPECT_TRUE(full("(?m)a$\\n^b", "a\nb"));
  EXPECT_FALSE(full("a$\\n^b", "a\nb"));
  EXPECT_TRUE(full("(?P<x>a+?)(?:b)*?c", "aabbc"));
  // '.' and negated classes match whole UTF-8 code points.
  EXPECT_TRUE(full("\xC3\xA9.[^a]", "\xC3\xA9\xE2\x82\xAC\xC3\xA9"));
  EXPECT_FALSE(full("...", "\xC3\xA9x"));
}

TEST(RegexFullMatch, LinearTimeOnHardCases) {
  // Exponential for a backtracking matcher; linear here.
  EXPECT_FALSE(full("(a|aa)*b", std::string(5000, 'a')));
  EXPECT_TRUE(full("(a|b)*", std::string(200000, 'a')));
  EXPECT_FALSE(full("((a?){20})*c", std::string(2000, 'a')));
}

TEST(RegexFullMatch, EngineErrors) {
  for (const char* p : {"a**", "*a", "(a", "a)", "(?=a)", "\\1", "\\pL", "[z-a]", "x{2,1}", "a{1001}", "[a",
                        "\\", "\\q", "(?P<a-b>x)", "[[:nope:]]"})
    EXPECT_THROW(RegexMatcher{p}, std::invalid_argument) << p;
  EXPECT_THROW(RegexMatcher(std::string(2000, '(') + std::string(2000, ')')), std::invalid_argument);
  EXPECT_THROW(RegexMatcher("((a{1000}){1000}){1000}"), std::invalid_argument);
}

TEST(RegexFullMatch, Errors) {
  EXPECT_THROW(run_op({.op = "RegexFullMatch", .inputs = {str({1}, {"a"})}, .attrs = {{"pattern", as("(a")}},
                       .opset = 20}),
               Error);
  EXPECT_THROW(run_op({.op = "RegexFullMatch", .inputs = {str({1}, {"a"})}, .opset = 20}), Error);
  EXPECT_THROW(run_op({.op = "RegexFullMatch", .inputs = {f32({1}, {1})}, .attrs = {{"pattern", as("a")}},
                       .opset = 20}),
               Error);
}

// ---------------------------------------------------------------- TfIdfVectorizer

namespace {
// Pool: 1-grams {94, 17}, 2-grams {(94, 12), (17, 36)}; columns 0..3.
AttrMap tfidf_attrs(std::string mode, int64_t min_n, int64_t max_n, int64_t skip) {
  return {{"mode", as(std::move(mode))},
          {"min_gram_length", ai(min_n)},
          {"max_gram_length", ai(max_n)},
          {"max_skip_count", ai(skip)},
          {"ngram_counts", ais({0, 2})},
          {"ngram_indexes", ais({0, 1, 2, 3})},
          {"pool_int64s", ais({94, 17, 94, 12, 17, 36})}};
}
}  // namespace

TEST(TfIdfVectorizer, SkipsReachFartherBigrams) {
  // Spec example: [94, 17, 36, 12, 28]. Skip 0 bigrams: (94,17) (17,36) (36,12)
  // (12,28); skip 1 adds (94,36) (17,12) (36,28); skip 2 adds (94,12) (17,28).
  Tensor x = i64({5}, {94, 17, 36, 12, 28});
  auto s0 = run_op({.op = "TfIdfVectorizer", .inputs = {x}, .attrs = tfidf_attrs("TF", 2, 2, 0), .opset = 9});
  expect_near(s0[0], f32({4}, {0, 0, 0, 1}));
  auto s2 = run_op({.op = "TfIdfVectorizer", .inputs = {x}, .attrs = tfidf_attrs("TF", 2, 2, 2), .opset = 9});
  expect_near(s2[0], f32({4}, {0, 0, 1, 1}));
  // 1-grams are counted once whatever the skip.
  auto uni = run_op({.op = "TfIdfVectorizer", .inputs = {i64({4}, {17, 5, 17, 17})},
                     .attrs = tfidf_attrs("TF", 1, 2, 3), .opset = 9});
  expect_near(uni[0], f32({4}, {0, 3, 0, 0}));
}

TEST(TfIdfVectorizer, BatchInt32AndWeights) {
  Tensor x = Tensor::from<int32_t>({2, 3}, {94, 12, 94, 17, 17, 36});
  AttrMap a = tfidf_attrs("TFIDF", 1, 2, 0);
  a["weights"] = afs({0.5f, 2, 3, 4});
  auto tfidf = run_op({.op = "TfIdfVectorizer", .inputs = {x}, .attrs = a, .opset = 9});
  // Row 0: 94 x2, (94,12) x1. Row 1: 17 x2, (17,36) x1.
  expect_near(tfidf[0], f32({2, 4}, {1, 0, 3, 0, 0, 4, 0, 4}));
  a["mode"] = as("IDF");
  auto idf = run_op({.op = "TfIdfVectorizer", .inputs = {x}, .attrs = a, .opset = 9});
  expect_near(idf[0], f32({2, 4}, {0.5f, 0, 3, 0, 0, 2, 0, 4}));
}

TEST(TfIdfVectorizer, StringPoolAndIndexMapping) {
  AttrMap a = {{"mode", as("TF")},           {"min_gram_length", ai(1)},     {"max_gram_length", ai(2)},
               {"max_skip_count", ai(0)},    {"ngram_counts", ais({0, 1})}, {"ngram_indexes", ais({2, 0})},
               {"pool_strings", astrs({"a", "a", "b"})}};
  // Unigram "a" -> column 2, bigram ("a","b") -> column 0; column 1 unused.
  auto out = run_op({.op = "TfIdfVectorizer", .inputs = {str({5}, {"a", "b", "a", "a", "b"})}, .attrs = a, .opset = 9});
  expect_near(out[0], f32({3}, {2, 0, 3}));
}

TEST(TfIdfVectorizer, Errors) {
  AttrMap bad_mode = tfidf_attrs("BM25", 1, 1, 0);
  EXPECT_THROW(run_op({.op = "TfIdfVectorizer", .inputs = {i64({1}, {1})}, .attrs = bad_mode, .opset = 9}), Error);
  AttrMap bad_counts = tfidf_attrs("TF", 1, 2, 0);
  bad_counts["ngram_counts"] = ais({0, 1});  // 5 values left for 2-grams
  EXPECT_THROW(run_op({.op = "TfIdfVectorizer", .inputs = {i64({1}, {1})}, .attrs = bad_counts, .opset = 9}), Error);
  // Integer pool, string input.
  EXPECT_THROW(run_op({.op = "TfIdfVectorizer", .inputs = {str({1}, {"a"})}, .attrs = tfidf_attrs("TF", 1, 1, 0),
                       .opset = 9}),
               Error);
  EXPECT_THROW(run_op({.op = "TfIdfVectorizer", .inputs = {f32({1}, {1})}, .attrs = tfidf_attrs("TF", 1, 1, 0),
                       .opset = 9}),
               Error);
}

}  // namespace tessera::testing
