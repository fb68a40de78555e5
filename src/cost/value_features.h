// Features per stored value, in the manner of Ansor's per-store vectors
// (research/costmodel.md §1.3): one row for every store statement of a
// loop-IR kernel, describing the computation of the value it writes, the
// loop annotations around it, its accesses of up to five buffers (bytes,
// unique bytes, cache lines, reuse, stride), the arithmetic-intensity curve
// over its loop levels, its temporary allocation and its outer loops. A
// program is the set of its rows (a matrix); learned cost models read it
// with the static model's program-level features (static_features.h) and a
// hardware vector (hardware_features below).
//
// Values are raw counts over the whole run (not log-compressed; a model
// applies slog itself). Counts of operations are element operations (a
// 16-lane add is 16), weighted by the trips of the enclosing loops.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cost/hardware.h"
#include "loop/stmt.h"

namespace tessera::cost {

// The columns before the buffer blocks: X(id, name, what it is).
#define TESSERA_VALUE_HEAD_FEATURES(X)                                                                          \
  /* 1. computation: element operations of the stored value, times the enclosing loops' trips */                 \
  X(FloatMad, "float_mad", "float multiply-adds (a multiply feeding an add, or fma)")                          \
  X(FloatAdd, "float_add", "float adds and subtracts")                                                          \
  X(FloatMul, "float_mul", "float multiplies")                                                                  \
  X(FloatDiv, "float_div", "float divides and modulos")                                                         \
  X(FloatCmp, "float_cmp", "float min, max and comparisons")                                                    \
  X(FloatMath, "float_math", "float intrinsic calls (exp, tanh, sqrt, ...)")                                    \
  X(FloatOther, "float_other", "casts to or from float")                                                        \
  X(IntOps, "int_ops", "integer arithmetic and comparisons outside buffer indices")                             \
  X(BoolOps, "bool_ops", "and, or, not")                                                                        \
  X(SelectOps, "select_ops", "selects")                                                                         \
  /* vectorize / unroll / parallel annotations */                                                                \
  X(VecLanes, "vec_lanes", "lanes of the stored value (1: scalar)")                                              \
  X(VecNum, "vec_num", "enclosing vectorized loops")                                                            \
  X(VecProd, "vec_prod", "product of their extents (1 when none)")                                              \
  X(VecLen, "vec_len", "extent of the innermost of them (0 when none)")                                         \
  X(UnrollNum, "unroll_num", "enclosing unrolled loops")                                                        \
  X(UnrollProd, "unroll_prod", "product of their extents (1 when none)")                                        \
  X(UnrollLen, "unroll_len", "extent of the innermost of them (0 when none)")                                   \
  X(ParallelNum, "parallel_num", "enclosing parallel loops")                                                    \
  X(ParallelProd, "parallel_prod", "product of their extents (1 when none)")                                    \
  X(ParallelLen, "parallel_len", "extent of the innermost of them (0 when none)")

// One buffer block (buffer slot k's columns are named "b<k>_<name>").
#define TESSERA_VALUE_BUFFER_FEATURES(X)                                                                        \
  X(IsRead, "read", "1: the value only reads the buffer")                                                       \
  X(IsWrite, "write", "1: the store only writes it")                                                            \
  X(IsReadWrite, "read_write", "1: both (an accumulation)")                                                     \
  X(Bytes, "bytes", "bytes accessed over the run (every access, every trip)")                                  \
  X(UniqueBytes, "unique_bytes", "distinct bytes accessed over the run")                                        \
  X(Lines, "lines",                                                                                            \
    "cache lines fetched: per access ceil(span/line) when the innermost loop's stride is a line or more, "       \
    "max(span, stride)/line below; an access the innermost loop does not move fetches once per run of that loop") \
  X(UniqueLines, "unique_lines", "distinct cache lines accessed over the run")                                  \
  X(ReuseLoop, "reuse_loop", "1: a loop the indices do not use repeats the accesses (loop reuse)")              \
  X(ReuseSerial, "reuse_serial", "1: no such loop, but other stores of the kernel access the buffer")           \
  X(ReuseNone, "reuse_none", "1: neither")                                                                      \
  X(ReuseDistIter, "reuse_dist_iter",                                                                          \
    "loop reuse: iterations between reuses (product of the loops inside the reuse loop)")                       \
  X(ReuseDistBytes, "reuse_dist_bytes", "loop reuse: distinct bytes the value accesses in between (all its buffers)") \
  X(ReuseCount, "reuse_count", "loop reuse: the reuse loop's extent; serial: stores accessing the buffer; else 0") \
  X(BytesPerReuse, "bytes_per_reuse", "bytes / max(reuse_count, 1)")                                            \
  X(UniqueBytesPerReuse, "unique_bytes_per_reuse", "unique_bytes / max(reuse_count, 1)")                        \
  X(LinesPerReuse, "lines_per_reuse", "lines / max(reuse_count, 1)")                                            \
  X(UniqueLinesPerReuse, "unique_lines_per_reuse", "unique_lines / max(reuse_count, 1)")                        \
  X(Stride, "stride",                                                                                          \
    "elements between lanes of a vector access, else the index's coefficient of the innermost loop that moves it " \
    "(0: none)")

// The columns after the buffer blocks (the curve's samples are named "ai_curve_<i>").
#define TESSERA_VALUE_TAIL_FEATURES(X)                                                                          \
  X(IsAlloc, "is_alloc", "1: the stored buffer is a temporary (an Allocate around the store)")                  \
  X(AllocBytes, "alloc_bytes", "its size in bytes (0 when not a temporary)")                                    \
  X(AllocOuterProd, "alloc_outer_prod", "product of the extents of the loops around the Allocate")              \
  X(AllocInnerProd, "alloc_inner_prod", "product of the extents of the loops between the Allocate and the store") \
  X(OuterProd, "outer_prod", "product of the extents of every enclosing loop (the store's executions)")        \
  X(NumLoops, "num_loops", "enclosing loops")                                                                   \
  X(InnermostExtent, "innermost_extent", "extent of the innermost enclosing loop (0 when none)")

enum class ValueHead : int {
#define TESSERA_VALUE_ENUM(id, name, doc) id,
  TESSERA_VALUE_HEAD_FEATURES(TESSERA_VALUE_ENUM) kCount
};
enum class BufferFeature : int { TESSERA_VALUE_BUFFER_FEATURES(TESSERA_VALUE_ENUM) kCount };
enum class ValueTail : int { TESSERA_VALUE_TAIL_FEATURES(TESSERA_VALUE_ENUM) kCount
#undef TESSERA_VALUE_ENUM
};

inline constexpr int kValueBuffers = 5;          // buffer slots, by bytes accessed (most first)
inline constexpr int kIntensitySamples = 10;     // samples of the arithmetic-intensity curve
inline constexpr int kHeadCount = static_cast<int>(ValueHead::kCount);
inline constexpr int kBufferFeatureCount = static_cast<int>(BufferFeature::kCount);
inline constexpr int kTailCount = static_cast<int>(ValueTail::kCount);
inline constexpr int kValueFeatureCount =
    kHeadCount + kValueBuffers * kBufferFeatureCount + kIntensitySamples + kTailCount;

// Column indices.
inline constexpr int column(ValueHead f) { return static_cast<int>(f); }
inline constexpr int column(int buffer_slot, BufferFeature f) {
  return kHeadCount + buffer_slot * kBufferFeatureCount + static_cast<int>(f);
}
// Sample i of the arithmetic-intensity curve: the value's float operations
// per distinct byte it accesses, measured at each loop level (innermost
// loop alone, then with the next one out, ..., every loop), sampled at 10
// evenly spaced points of the levels by linear interpolation (every sample
// the same with one level or none).
inline constexpr int intensity_column(int i) { return kHeadCount + kValueBuffers * kBufferFeatureCount + i; }
inline constexpr int column(ValueTail f) {
  return kHeadCount + kValueBuffers * kBufferFeatureCount + kIntensitySamples + static_cast<int>(f);
}

struct ColumnDoc {
  std::string name, doc;
};
// Every column's name and meaning, in row order.
const std::vector<ColumnDoc>& value_feature_columns();

struct ValueFeatures {
  std::vector<std::vector<double>> rows;  // one per store statement, kValueFeatureCount columns
  std::vector<std::string> stores;        // the buffer each row's store writes
};

// The rows of `kernel` (stores in program order); `hw` gives the cache line.
ValueFeatures value_features(const loop::Kernel& kernel, const HardwareDesc& hw);

// A machine as a fixed-length vector (its description's numbers, the ISA as
// 1 for AVX-512), with names "hw_<field>".
std::vector<double> hardware_features(const HardwareDesc& hw);
const std::vector<ColumnDoc>& hardware_feature_columns();

}  // namespace tessera::cost
