#include "pet/verifier.h"

#include <cmath>
#include <random>

#include "interp/interpreter.h"
#include "pet/boxes.h"
#include "pet/field.h"
#include "pet/field_eval.h"
#include "support/error.h"

namespace tessera::pet {

std::string verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Equivalent: return "equivalent";
    case Verdict::Partial: return "partial";
    case Verdict::Different: return "different";
  }
  return "?";
}

int64_t VerifyResult::wrong_boxes() const {
  int64_t n = 0;
  for (const OutputCheck& o : outputs) n += static_cast<int64_t>(o.wrong.size());
  return n;
}

int64_t VerifyResult::wrong_elements() const {
  int64_t n = 0;
  for (const OutputCheck& o : outputs) n += o.wrong_elements;
  return n;
}

namespace {

VerifyResult different(std::string reason) {
  VerifyResult r;
  r.verdict = Verdict::Different;
  r.reason = std::move(reason);
  return r;
}

// Empty when the signatures match, else what differs.
std::string signature_mismatch(const Graph& a, const Graph& b) {
  auto side = [](const char* what, const std::vector<Value*>& x, const std::vector<Value*>& y) -> std::string {
    if (x.size() != y.size())
      return std::string("the original has ") + std::to_string(x.size()) + " " + what + "s, the mutant " +
             std::to_string(y.size());
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i]->type.dtype != y[i]->type.dtype || x[i]->type.dims != y[i]->type.dims ||
          !x[i]->type.rank_known || !y[i]->type.rank_known)
        return std::string(what) + " " + std::to_string(i) + " is " + x[i]->type.to_string() + " in the original and " +
               y[i]->type.to_string() + " in the mutant";
    return "";
  };
  std::string s = side("input", a.inputs(), b.inputs());
  return s.empty() ? side("output", a.outputs(), b.outputs()) : s;
}

}  // namespace

// What the Verifier keeps of the original between mutants.
struct Verifier::State {
  const Graph& original;
  VerifyOptions options;
  std::string refused;                // why the original cannot be verified ("" when it can)
  LinearPlan plan;
  std::vector<Splits> splits;
  std::vector<std::unique_ptr<FieldEvaluator>> evaluators;  // per test, memo kept across mutants
};

Verifier::Verifier(const Graph& original, const VerifyOptions& options)
    : s_(std::make_unique<State>(State{original, options, "", {}, {}, {}})) {
  TESSERA_CHECK(options.tests >= 1, "pet: verify needs at least one test, got ", options.tests);
  try {
    s_->plan = plan_linear(original);
    s_->splits = infer_splitting_points(s_->plan);
  } catch (const std::exception& e) {
    s_->refused = std::string("original: ") + e.what();
    return;
  }
  for (int t = 0; t < options.tests; ++t)
    s_->evaluators.push_back(
        std::make_unique<FieldEvaluator>(s_->plan, field::mix64(options.seed + static_cast<uint64_t>(t))));
}

Verifier::~Verifier() = default;

VerifyResult Verifier::check(const Graph& mutant) {
  const VerifyOptions& options = s_->options;
  if (std::string m = signature_mismatch(s_->original, mutant); !m.empty()) return different("signatures differ: " + m);
  if (!s_->refused.empty()) return different(s_->refused);
  const std::vector<Splits>& sa = s_->splits;
  LinearPlan pb;
  std::vector<Splits> sb;
  try {
    pb = plan_linear(mutant);
    sb = infer_splitting_points(pb);
  } catch (const std::exception& e) {
    return different(std::string("mutant: ") + e.what());
  }
  VerifyResult r;
  std::vector<Splits> grid(sa.size());
  std::vector<std::vector<AtomBox>> all(sa.size());
  for (size_t o = 0; o < sa.size(); ++o) {
    grid[o] = union_splits(sa[o], sb[o]);
    const int64_t n = box_count(grid[o]);
    if (n > options.max_boxes)
      return different("output " + std::to_string(o) + " splits into " + std::to_string(n) + " boxes, above the limit of " +
                       std::to_string(options.max_boxes));
    all[o] = atom_boxes(grid[o]);
  }
  r.outputs.resize(sa.size());
  std::vector<std::vector<char>> wrong(sa.size());
  for (size_t o = 0; o < sa.size(); ++o) wrong[o].assign(all[o].size(), 0);
  int64_t wrong_volume = 0;
  try {
    for (int t = 0; t < options.tests && !r.gave_up; ++t) {
      FieldEvaluator& ea = *s_->evaluators[static_cast<size_t>(t)];
      FieldEvaluator eb(pb, field::mix64(options.seed + static_cast<uint64_t>(t)));
      for (size_t o = 0; o < all.size() && !r.gave_up; ++o)
        for (size_t b = 0; b < all[o].size() && !r.gave_up; ++b) {
          if (wrong[o][b]) continue;  // already known wrong
          for (const auto& pos : box_positions(grid[o], all[o][b])) {
            if (t == 0) ++r.positions;
            if (ea.at(static_cast<int>(o), pos) != eb.at(static_cast<int>(o), pos)) {
              wrong[o][b] = 1;
              wrong_volume += all[o][b].volume();
              r.gave_up = options.max_wrong_elements >= 0 && wrong_volume > options.max_wrong_elements;
              break;
            }
          }
        }
    }
  } catch (const std::exception& e) {
    return different(std::string("evaluation failed: ") + e.what());
  }
  for (size_t o = 0; o < all.size(); ++o) {
    OutputCheck& c = r.outputs[o];
    c.boxes = static_cast<int64_t>(all[o].size());
    for (size_t b = 0; b < all[o].size(); ++b)
      if (wrong[o][b]) {
        c.wrong_elements += all[o][b].volume();
        for (Box& x : to_boxes(grid[o], all[o][b])) c.wrong.push_back(std::move(x));
      }
  }
  r.verdict = r.wrong_boxes() ? Verdict::Partial : Verdict::Equivalent;
  return r;
}

VerifyResult verify(const Graph& original, const Graph& mutant, const VerifyOptions& options) {
  return Verifier(original, options).check(mutant);
}

int64_t FloatDiff::count() const {
  int64_t n = 0;
  for (const auto& d : differing) n += static_cast<int64_t>(d.size());
  return n;
}

FloatDiff brute_force_diff(const Graph& original, const Graph& mutant, uint64_t seed, double rtol, int trials) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  FloatDiff d;
  std::vector<std::vector<char>> differs;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<Tensor> inputs;
    for (const Value* v : original.inputs()) {
      TESSERA_CHECK(v->type.dtype == DType::F32 && v->type.fully_known(), "pet: brute force needs f32 inputs of known dims, '",
                    v->name, "' is ", v->type.to_string());
      Tensor t(DType::F32, v->type.dims);
      for (float& x : t.span<float>()) x = u(rng);
      inputs.push_back(t);
    }
    const std::vector<Tensor> a = interpret(original, inputs), b = interpret(mutant, inputs);
    TESSERA_CHECK(a.size() == b.size(), "pet: the programs have ", a.size(), " and ", b.size(), " outputs");
    for (size_t o = 0; o < a.size(); ++o) {
      TESSERA_CHECK(a[o].dims() == b[o].dims(), "pet: output ", o, " has dims ", dims_to_string(a[o].dims()), " and ",
                    dims_to_string(b[o].dims()));
      if (trial == 0) {
        d.dims.push_back(a[o].dims());
        differs.emplace_back(static_cast<size_t>(a[o].numel()), 0);
      }
      double scale = 0;
      for (int64_t i = 0; i < a[o].numel(); ++i)
        if (std::isfinite(a[o].get_double(i))) scale = std::max(scale, std::fabs(a[o].get_double(i)));
      const double tol = rtol * (1 + scale);
      for (int64_t i = 0; i < a[o].numel(); ++i) {
        const double x = a[o].get_double(i), y = b[o].get_double(i);
        if (std::isnan(x) != std::isnan(y) || (!std::isnan(x) && !(std::fabs(x - y) <= tol)))
          differs[o][static_cast<size_t>(i)] = 1;
      }
    }
  }
  for (const auto& m : differs) {
    d.differing.emplace_back();
    for (size_t i = 0; i < m.size(); ++i)
      if (m[i]) d.differing.back().push_back(static_cast<int64_t>(i));
  }
  return d;
}

std::vector<std::vector<char>> wrong_mask(const VerifyResult& r, const std::vector<Dims>& dims) {
  std::vector<std::vector<char>> m;
  for (size_t o = 0; o < dims.size(); ++o) {
    m.emplace_back(static_cast<size_t>(numel_of(dims[o])), 0);
    if (o >= r.outputs.size()) continue;
    const Dims st = strides_of(dims[o]);
    for (const Box& b : r.outputs[o].wrong) {
      // Odometer over the box's elements.
      std::vector<int64_t> i = b.lo;
      if (b.empty()) continue;
      for (;;) {
        int64_t f = 0;
        for (size_t d = 0; d < i.size(); ++d) f += i[d] * st[d];
        m.back()[static_cast<size_t>(f)] = 1;
        bool done = true;
        for (size_t d = i.size(); d-- > 0;) {
          if (++i[d] < b.hi[d]) {
            done = false;
            break;
          }
          i[d] = b.lo[d];
        }
        if (done) break;
      }
    }
  }
  return m;
}

}  // namespace tessera::pet
