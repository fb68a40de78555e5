// A tester for schedule rules in the manner of XNNPACK's GEMM micro-kernel
// tester: one op (built through the op registry's expression, for its
// concrete input types) is scheduled at points of its schedule space, each
// lowered, JIT-compiled for an ISA and run against the op's reference
// kernel. Set the op and its inputs, then sweep.
//
//   RuleTester("MatMul").input({37, 29}).input({29, 45}).sweep();
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "codegen/llvm/jit.h"
#include "ir/graph.h"
#include "schedule/default_schedule.h"
#include "support/target.h"

namespace tessera::testing {

class RuleTester {
 public:
  explicit RuleTester(std::string op, std::string domain = "") : op_(std::move(op)), domain_(std::move(domain)) {}
  // A random input of these dims (F32 unless given), constant (weights) when asked.
  RuleTester& input(Dims dims, bool constant = false, DType dtype = DType::F32);
  // An input of this value (an axes list: constant by default).
  RuleTester& value(Tensor t, bool constant = true);
  RuleTester& attr(const std::string& name, Attribute a);
  RuleTester& tolerance(double rtol, double atol);
  // Samples of the cross product besides the one-knob sweeps.
  RuleTester& samples(int n);
  // Values swept per knob at most (the default's neighbours, ends, random others).
  RuleTester& max_values(int n);

  // Stages scheduled by `rule` in the program of this op for `isa`.
  std::vector<schedule::StageSpace> space(Isa isa, const std::string& rule = "") const;
  // The schedule at `point` for `isa`; nullopt when the point is invalid.
  std::optional<schedule::Schedule> schedule(Isa isa, const schedule::SchedulePoint& point) const;
  // The schedule at `point` for `isa`, checked against the reference; false
  // (adding failures) on a mismatch, nullopt when the point is invalid.
  std::optional<bool> check(Isa isa, const schedule::SchedulePoint& point) const;
  // Every knob of every stage one at a time (others at their defaults),
  // then `samples` random points, on `isa`; expects at least one knob of
  // rule `rule` (when given). Returns the number of points run.
  int sweep(Isa isa, const std::string& rule = "");
  // The default point's schedule is the default schedule.
  void expect_default_is_default(Isa isa) const;

 private:
  struct Program;
  Program build(Isa isa) const;

  std::string op_, domain_;
  std::vector<Tensor> inputs_;
  std::vector<bool> constant_;
  AttrMap attrs_;
  double rtol_ = 1e-4, atol_ = 1e-4;
  int samples_ = 4, max_values_ = 6;
  mutable std::mt19937 rng_{7};
};

// A test run once per ISA (its parameter), skipped where the host cannot
// run that ISA's code.
class PerIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!codegen::host_supports(GetParam()))
      GTEST_SKIP() << "the host cannot run " << isa_name(GetParam()) << " code";
  }
  Isa isa() const { return GetParam(); }
  int64_t lanes() const { return isa() == Isa::AVX512 ? 16 : 8; }  // f32 lanes of a vector
};

}  // namespace tessera::testing
