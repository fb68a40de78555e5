// TfIdfVectorizer: counts the pool's n-grams (with skips) in each row of an
// integer or string tensor and weights the counts (TF, IDF or TF-IDF).
#include <algorithm>
#include <map>

#include "ops/op_helpers.h"
#include "ops/op_attrs.h"
#include "ops/string_ops.h"

namespace tessera {

namespace {

// The op's attributes, validated.
struct TfIdfConfig {
  std::string mode;
  int64_t min_n = 0, max_n = 0, max_skip = 0;
  bool strings = false;                 // pool_strings (else pool_int64s)
  std::vector<int64_t> counts;          // start of the n-grams of length k+1
  std::vector<int64_t> indexes;         // output column of each pool n-gram
  std::vector<int64_t> pool_ints;
  std::vector<std::string> pool_strings;
  std::vector<float> weights;
  int64_t width = 0;                    // output columns: max(indexes) + 1
};

TfIdfConfig read_config(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  TfIdfConfig k;
  k.mode = attrs.s("mode");
  TESSERA_CHECK(k.mode == "TF" || k.mode == "IDF" || k.mode == "TFIDF", n.describe(), ": mode '", k.mode,
                "' is not one of TF, IDF, TFIDF");
  k.min_n = attrs.i("min_gram_length");
  k.max_n = attrs.i("max_gram_length");
  k.max_skip = attrs.i("max_skip_count");
  TESSERA_CHECK(k.min_n >= 1 && k.min_n <= k.max_n, n.describe(), ": need 1 <= min_gram_length (", k.min_n,
                ") <= max_gram_length (", k.max_n, ")");
  TESSERA_CHECK(k.max_skip >= 0, n.describe(), ": max_skip_count must be >= 0, got ", k.max_skip);
  k.counts = attrs.ints("ngram_counts");
  k.indexes = attrs.ints("ngram_indexes");
  k.strings = attrs.has("pool_strings");
  TESSERA_CHECK(k.strings != attrs.has("pool_int64s"), n.describe(),
                ": exactly one of pool_strings and pool_int64s must be set");
  if (k.strings) {
    k.pool_strings = attrs.strings("pool_strings");
  } else {
    k.pool_ints = attrs.ints("pool_int64s");
  }
  int64_t pool = static_cast<int64_t>(k.strings ? k.pool_strings.size() : k.pool_ints.size());
  int64_t grams = 0;
  for (size_t i = 0; i < k.counts.size(); ++i) {
    int64_t start = k.counts[i], end = i + 1 < k.counts.size() ? k.counts[i + 1] : pool;
    int64_t len = static_cast<int64_t>(i) + 1;
    TESSERA_CHECK(start >= 0 && start <= end && end <= pool && (end - start) % len == 0, n.describe(),
                  ": ngram_counts ", i, " (", start, " to ", end, ") does not delimit whole ", len,
                  "-grams of the pool of ", pool);
    grams += (end - start) / len;
  }
  TESSERA_CHECK(static_cast<int64_t>(k.indexes.size()) == grams, n.describe(), ": ngram_indexes has ",
                k.indexes.size(), " entries but the pool holds ", grams, " n-grams");
  for (int64_t v : k.indexes) {
    TESSERA_CHECK(v >= 0 && v < (int64_t{1} << 31), n.describe(), ": ngram_indexes value ", v, " is out of range");
    k.width = std::max(k.width, v + 1);
  }
  k.weights = attrs.floats("weights");
  TESSERA_CHECK(k.weights.empty() || static_cast<int64_t>(k.weights.size()) >= k.width, n.describe(),
                ": weights has ", k.weights.size(), " entries for ", k.width, " output columns");
  return k;
}

void check_input(const Node& n, const TfIdfConfig& k, DType t, const Dims& d) {
  if (k.strings)
    TESSERA_CHECK(t == DType::String, n.describe(), ": pool_strings needs a string input, got ", dtype_name(t));
  else
    TESSERA_CHECK(t == DType::I32 || t == DType::I64, n.describe(),
                  ": pool_int64s needs an int32 or int64 input, got ", dtype_name(t));
  TESSERA_CHECK(d.size() == 1 || d.size() == 2, n.describe(), ": input must be 1-D or 2-D, got rank ", d.size());
}

void infer_tfidf(InferContext& c) {
  TfIdfConfig k = read_config(op_attrs(c));
  const TensorType& x = c.in(0);
  check_input(c.node, k, x.dtype, x.dims);
  Dims d = x.dims.size() == 1 ? Dims{k.width} : Dims{x.dims[0], k.width};
  c.out(0) = {DType::F32, d, true};
}

// Counts pool n-grams in rows of `tokens` (Key: int64 or string) into `freq`
// (rows x width).
template <class Key>
void count_ngrams(const TfIdfConfig& k, const std::vector<Key>& pool, const std::vector<Key>& tokens,
                  int64_t rows, int64_t cols, std::vector<double>& freq) {
  // Pool n-gram -> output column, per length.
  std::map<std::vector<Key>, int64_t> lookup;
  int64_t g = 0;
  int64_t pool_size = static_cast<int64_t>(pool.size());
  for (size_t i = 0; i < k.counts.size(); ++i) {
    int64_t start = k.counts[i], end = i + 1 < k.counts.size() ? k.counts[i + 1] : pool_size;
    size_t len = i + 1;
    for (int64_t p = start; p < end; p += static_cast<int64_t>(len), ++g) {
      std::vector<Key> gram(pool.begin() + p, pool.begin() + p + static_cast<int64_t>(len));
      lookup.emplace(std::move(gram), k.indexes[static_cast<size_t>(g)]);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const Key* row = tokens.data() + r * cols;
    for (int64_t s = 0; s < cols; ++s) {
      for (int64_t n = k.min_n; n <= k.max_n; ++n) {
        // A 1-gram is the same whatever the skip: count it once.
        int64_t skips = n == 1 ? 0 : k.max_skip;
        for (int64_t skip = 0; skip <= skips; ++skip) {
          int64_t last = s + (n - 1) * (skip + 1);
          if (last >= cols) break;
          std::vector<Key> gram;
          for (int64_t j = 0; j < n; ++j) gram.push_back(row[s + j * (skip + 1)]);
          auto it = lookup.find(gram);
          if (it != lookup.end()) freq[static_cast<size_t>(r * k.width + it->second)] += 1;
        }
      }
    }
  }
}

std::vector<Tensor> run_tfidf(const KernelContext& c) {
  TfIdfConfig k = read_config(op_attrs(c));
  const Tensor& x = c.in(0);
  check_input(c.node, k, x.dtype(), x.dims());
  int64_t rows = x.rank() == 1 ? 1 : x.dim(0);
  int64_t cols = x.dim(-1);
  std::vector<double> freq(static_cast<size_t>(rows * k.width), 0.0);
  if (k.strings) {
    count_ngrams<std::string>(k, k.pool_strings, x.strings(), rows, cols, freq);
  } else {
    count_ngrams<int64_t>(k, k.pool_ints, x.to_int_vector(), rows, cols, freq);
  }
  Dims d = x.rank() == 1 ? Dims{k.width} : Dims{rows, k.width};
  Tensor y(DType::F32, d);
  float* o = y.data<float>();
  for (size_t i = 0; i < freq.size(); ++i) {
    double w = k.weights.empty() ? 1.0 : static_cast<double>(k.weights[i % static_cast<size_t>(k.width)]);
    double v = freq[i];
    if (k.mode == "IDF") v = v > 0 ? w : 0.0;
    else if (k.mode == "TFIDF") v *= w;
    o[i] = static_cast<float>(v);
  }
  return {y};
}

// One probe of the pool per (start, length, skip) of each row.
double tfidf_flops(const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
  if (!ins[0]) return 0;
  const OpAttrs attrs(n, kAnyOpset);
  int64_t lens = std::max<int64_t>(attrs.i("max_gram_length") - attrs.i("min_gram_length") + 1, 1);
  int64_t skips = std::max<int64_t>(attrs.i("max_skip_count"), 0) + 1;
  return static_cast<double>(numel_of(ins[0]->dims)) * static_cast<double>(lens * skips);
}

}  // namespace

void register_string_tfidf_ops(OpRegistry& r) {
  // Every output count depends on many input tokens.
  r.add({.name = "TfIdfVectorizer", .min_opset = 9, .mapping = MappingType::ManyToMany, .infer = infer_tfidf,
         .reference = run_tfidf, .flops = tfidf_flops,
         .attributes = {int_attr("max_gram_length").required(), int_attr("max_skip_count").required(),
                        int_attr("min_gram_length").required(), string_attr("mode").required(),
                        ints_attr("ngram_counts").required(), ints_attr("ngram_indexes").required(),
                        ints_attr("pool_int64s"), strings_attr("pool_strings"), floats_attr("weights", {})}});
}

}  // namespace tessera
