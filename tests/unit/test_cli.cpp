// The tessera CLI end to end: run with files and random inputs, outputs as .pb
// and .npy, info, and clear errors with a non-zero exit code for bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/onnx_tensor.h"
#include "opexpr/expr_registry.h"
#include "support/file_util.h"
#include "unit/cli_runner.h"
#include "unit/onnx_builder.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

using testing::cli;
using testing::CliResult;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    model_ = (dir_ / "m.onnx").string();
    write_file(model_, testing::bytes_of(testing::add_relu_model()));
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string model_;
};

TEST_F(Cli, RunWithInputFilesWritesOutputs) {
  fs::create_directories(dir_ / "in");
  write_tensor_pb((dir_ / "in" / "input_0.pb").string(), Tensor::from<float>({2, 3}, {-2, -1, 0, 1, 2, 3}), "x");
  auto r = cli("run " + model_ + " --inputs " + (dir_ / "in").string() + " --outputs " + (dir_ / "out").string() +
               " --npy");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("output 0 'y' f32[2x3]"), std::string::npos) << r.out;
  Tensor y = read_tensor_pb((dir_ / "out" / "output_0.pb").string());
  Tensor y2 = read_npy((dir_ / "out" / "output_0.npy").string());
  std::vector<float> want = {0, 0, 1, 2, 3, 4};
  for (int i = 0; i < 6; ++i) {
    EXPECT_FLOAT_EQ(y.data<float>()[i], want[static_cast<size_t>(i)]);
    EXPECT_FLOAT_EQ(y2.data<float>()[i], want[static_cast<size_t>(i)]);
  }
  // Same through an explicit .npy file list.
  write_npy((dir_ / "x.npy").string(), Tensor::from<float>({2, 3}, {-2, -1, 0, 1, 2, 3}));
  r = cli("run " + model_ + " --inputs " + (dir_ / "x.npy").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("checksum 10"), std::string::npos) << r.out;
}

TEST_F(Cli, RandomInputsAreSeeded) {
  auto a = cli("run " + model_ + " --seed 7");
  auto b = cli("run " + model_ + " --seed 7");
  auto c = cli("run " + model_ + " --seed 8");
  ASSERT_EQ(a.code, 0) << a.out;
  auto checksum_line = [](const std::string& s) { return s.substr(s.find("checksum")); };
  EXPECT_EQ(checksum_line(a.out), checksum_line(b.out));
  EXPECT_NE(checksum_line(a.out), checksum_line(c.out));
}

TEST_F(Cli, InfoPrintsSignatureAndHistogram) {
  auto r = cli("info " + model_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("parameters 3.00 (3)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("f32[2x3]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Relu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FLOPs      12.00"), std::string::npos) << r.out;
}

TEST_F(Cli, ErrorsAreClearAndExitNonZero) {
  auto r = cli("run " + (dir_ / "missing.onnx").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("error: cannot open"), std::string::npos) << r.out;

  write_file((dir_ / "junk.onnx").string(), "definitely not protobuf");
  r = cli("run " + (dir_ / "junk.onnx").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("malformed or truncated"), std::string::npos) << r.out;

  std::string full = testing::bytes_of(testing::add_relu_model());
  write_file((dir_ / "trunc.onnx").string(), full.substr(0, full.size() / 2));
  r = cli("run " + (dir_ / "trunc.onnx").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("error:"), std::string::npos) << r.out;

  auto m = testing::add_relu_model();
  m.mutable_graph()->mutable_node(1)->set_op_type("NoSuchOp");
  write_file((dir_ / "unsupported.onnx").string(), testing::bytes_of(m));
  r = cli("info " + (dir_ / "unsupported.onnx").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("NoSuchOp node 'relu0' (opset 13): op 'NoSuchOp' is not supported"), std::string::npos) << r.out;

  write_tensor_pb((dir_ / "bad.pb").string(), Tensor::from<float>({3}, {1, 2, 3}), "x");
  r = cli("run " + model_ + " --inputs " + (dir_ / "bad.pb").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("input 'x' must have shape f32[2x3] but has 3"), std::string::npos) << r.out;

  r = cli("run " + model_ + " --shape x=2x");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("malformed shape"), std::string::npos) << r.out;

  r = cli("run zoo:no_such_model");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("unknown zoo model"), std::string::npos) << r.out;
}

TEST_F(Cli, DynamicInputNeedsShape) {
  write_file(model_, testing::bytes_of(testing::add_relu_model({-1, 3})));
  auto r = cli("run " + model_);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--shape x=DIMS"), std::string::npos) << r.out;
  r = cli("run " + model_ + " --shape x=5x3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("f32[5x3]"), std::string::npos) << r.out;
}

// Hostile command lines: each is a clear sentence and a non-zero exit, found
// before the run (the run may take minutes), never a raw filesystem error,
// std::bad_alloc or a storm of threads.
TEST_F(Cli, HostileArgumentsAreClearErrors) {
  // Runs `args`, expecting a non-zero exit whose output holds `message` and
  // no output checksum (the error came before the run).
  auto expect_error = [](const std::string& args, const std::string& message) {
    auto r = cli(args);
    EXPECT_NE(r.code, 0) << args;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
    EXPECT_EQ(r.out.find("checksum"), std::string::npos) << "ran before failing: " << args << "\n" << r.out;
  };
  // --outputs naming an existing file, or a path under one (used to fail
  // after the run with a raw filesystem error).
  const std::string file = (dir_ / "afile").string();
  write_file(file, "x");
  expect_error("run " + model_ + " --outputs " + file,
               "error: --outputs '" + file + "' is an existing file, not a directory");
  expect_error("run " + model_ + " --backend reference --outputs " + file + "/sub",
               "error: --outputs '" + file + "/sub': cannot create the directory: Not a directory");
  // A directory given as the model (used to say "the model file is empty").
  expect_error("run " + dir_.string(), "'" + dir_.string() + "' is a directory, not a file");
  // Inputs no machine of this kind could hold: named, with the size.
  write_file(model_, testing::bytes_of(testing::add_relu_model({-1, 3, 224, 224})));
  for (const char* backend : {"compiled", "reference"})
    expect_error("run " + model_ + " --shape x=100000x3x224x224 --backend " + backend,
                 "error: input 'x' needs 56.1 GiB (100000x3x224x224 f32), more than this machine's memory");
  expect_error("run " + model_ + " --shape x=99999999999999999999x3x224x224",
               "dimension '99999999999999999999' is too large");
  // Threads beyond any sensible pool.
  expect_error("run " + model_ + " --shape x=1x3x224x224 --threads 100000", "error: --threads: Value 100000 not in range 0 to");
  expect_error("run " + model_ + " --no-such-option", "error: The following argument was not expected: --no-such-option");
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST_F(Cli, CompiledRunMatchesReference) {
  auto c = cli("run " + model_ + " --seed 3 --outputs " + (dir_ / "c").string());
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("compile "), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("(compiled"), std::string::npos) << c.out;
  auto r = cli("run " + model_ + " --seed 3 --backend reference --outputs " + (dir_ / "r").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("reference interpreter"), std::string::npos) << r.out;
  Tensor a = read_tensor_pb((dir_ / "c" / "output_0.pb").string());
  Tensor b = read_tensor_pb((dir_ / "r" / "output_0.pb").string());
  ASSERT_EQ(a.dims(), b.dims());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_FLOAT_EQ(a.data<float>()[i], b.data<float>()[i]);
  auto e = cli("run " + model_ + " --backend compiled --seed 3");
  EXPECT_EQ(e.code, 0) << e.out;
}

TEST_F(Cli, CompileToArtifactAndRunIt) {
  std::string tsr = (dir_ / "m.tsr").string();
  auto c = cli("compile " + model_ + " -o " + tsr);
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("wrote"), std::string::npos) << c.out;
  auto a = cli("run " + tsr + " --seed 9 --report --outputs " + (dir_ / "a").string());
  ASSERT_EQ(a.code, 0) << a.out;
  // The load split: the saved machine code linked, nothing compiled.
  EXPECT_NE(a.out.find("opened "), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("kernels linked, 0 compiled"), std::string::npos) << a.out;
  auto b = cli("run " + model_ + " --seed 9 --outputs " + (dir_ / "b").string());
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_TRUE(same_bits(read_tensor_pb((dir_ / "a" / "output_0.pb").string()),
                        read_tensor_pb((dir_ / "b" / "output_0.pb").string())));
  // The artifact runs through the interpreter too.
  auto r = cli("run " + tsr + " --seed 9 --backend reference");
  EXPECT_EQ(r.code, 0) << r.out;

  std::string bytes = read_file(tsr);
  bytes[bytes.size() / 2] ^= 1;
  write_file(tsr, bytes);
  auto bad = cli("run " + tsr);
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("error: "), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("corrupt"), std::string::npos) << bad.out;
}

TEST_F(Cli, BenchPrintsLatencyAndMemory) {
  auto r = cli("bench " + model_ + " --runs 5 --warmup 1 --threads 1");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* s : {"median", "p10", "p90", "(5 runs)", "peak activations", "peak RSS", "1 threads"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  r = cli("bench " + model_ + " --runs 2 --backend reference");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("median"), std::string::npos) << r.out;
  // Per-step profile: time per op and the slowest steps, with their node names.
  r = cli("bench " + model_ + " --runs 3 --warmup 0 --profile 2 --no-fusion");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* s : {"profile  medians per step", "GFLOP/s", "slowest 2 steps"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  r = cli("bench " + model_ + " --runs 2 --warmup 0 --vs-reference");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* s : {"reference median", "speedup", "over the reference interpreter"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  r = cli("bench " + model_ + " --runs 2 --backend reference --profile 2");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--profile needs the compiled backend"), std::string::npos) << r.out;
}

// $TESSERA_MEMORY_TRACE: one line per phase of the load, in order, on
// stderr; nothing without it.
TEST_F(Cli, MemoryTraceListsTheLoadsPhases) {
  ::setenv("TESSERA_MEMORY_TRACE", "1", 1);
  auto r = cli("run " + model_);
  ::unsetenv("TESSERA_MEMORY_TRACE");
  ASSERT_EQ(r.code, 0) << r.out;
  size_t at = 0;
  for (const char* phase : {"parsing the ONNX file", "import", "load passes", "target passes", "types and tasks",
                            "kernels", "packing", "release"}) {
    size_t found = r.out.find(std::string("memory after ") + phase + ": RSS ", at);
    ASSERT_NE(found, std::string::npos) << phase << "\n" << r.out;
    at = found;
  }
  EXPECT_NE(r.out.find(", heap ", at), std::string::npos) << r.out;
  r = cli("run " + model_);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("memory after "), std::string::npos) << r.out;
}

// serve: one reply line per request — run times, per-step medians (one per
// plan step, as bench --profile lists them), saved outputs equal to run's,
// concurrent callers' wall time, and errors that leave the loop going.
TEST_F(Cli, ServeAnswersRequests) {
  const fs::path requests = dir_ / "requests.txt", out = dir_ / "served";
  write_file(requests.string(), "run 2\nprofile 3\nprofile 0\nbogus\nsave " + out.string() + "\ncallers 3 2\ncallers 0 1\nquit\n");
  auto r = cli("serve " + model_ + " --threads 1 --no-fusion < " + requests.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::istringstream lines(r.out);
  std::vector<std::string> got;
  for (std::string l; std::getline(lines, l);) got.push_back(l);
  ASSERT_EQ(got.size(), 8u) << r.out;
  EXPECT_EQ(got[0].rfind("ready compile_ms", 0), 0u) << got[0];
  EXPECT_NE(got[0].find(" load_ms "), std::string::npos) << got[0];
  auto numbers = [](const std::string& line, const std::string& head) {
    std::istringstream w(line);
    std::string first;
    w >> first;
    EXPECT_EQ(first, head) << line;
    std::vector<double> xs;
    for (double x; w >> x;) xs.push_back(x);
    for (double x : xs) EXPECT_GT(x, 0.0) << line;
    return xs.size();
  };
  EXPECT_EQ(numbers(got[1], "times"), 2u);
  EXPECT_EQ(numbers(got[2], "steps"), 2u);  // Add, Relu: two steps without fusion
  EXPECT_NE(got[3].find("error 'profile' expects a count"), std::string::npos) << got[3];
  EXPECT_NE(got[4].find("error unknown request 'bogus'"), std::string::npos) << got[4];
  EXPECT_EQ(got[5], "saved 1");
  EXPECT_TRUE(fs::exists(out / "output_0.npy"));
  EXPECT_EQ(numbers(got[6], "elapsed"), 1u);  // three callers sharing the model, two runs each
  EXPECT_NE(got[7].find("error 'callers' expects a count"), std::string::npos) << got[7];
}

// Fusion from the command line: the plan dumped block by block, switched
// off, drawn by Graphviz (SVG, and DOT text), and timed against no fusion.
TEST_F(Cli, FusionPlanDumpVizAndSwitches) {
  std::string tsr = (dir_ / "m.tsr").string();
  auto r = cli("compile zoo:squeezenet1_1 --shape input=1x3x64x64 -o " + tsr + " --dump-fusion --threads 1");
  ASSERT_EQ(r.code, 0) << r.out;
  // 66 ops: the model's 65, its convolutions in the blocked layout, and one
  // reorder back to NCHW before the classifier's Flatten.
  for (const char* s : {"block 0  ", "seed Relu", "ConvBlocked node", "many-to-many", "one-to-one",
                        "fusion: 66 ops -> ", "intermediate results"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  r = cli("compile zoo:squeezenet1_1 --shape input=1x3x64x64 -o " + tsr +
          " --dump-fusion --no-fusion --no-rewrite --no-blocked-layout");
  ASSERT_EQ(r.code, 0) << r.out;
  // The eight fire modules' concats are done in place: steps without a
  // kernel, which the fusion plan does not count either.
  EXPECT_NE(r.out.find("fusion: 65 ops -> 57 kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("57 compiled kernels"), std::string::npos) << r.out;
  r = cli("compile zoo:squeezenet1_1 --shape input=1x3x64x64 -o " + tsr +
          " --no-fusion --no-rewrite --no-blocked-layout --no-concat-in-place");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("65 compiled kernels"), std::string::npos) << r.out;
  std::string svg = (dir_ / "plan.svg").string();
  r = cli("viz zoo:squeezenet1_1 --shape input=1x3x64x64 --fusion -o " + svg);
  ASSERT_EQ(r.code, 0) << r.out;
  std::string text = read_file(svg);
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("block "), std::string::npos) << "fused blocks are labelled clusters";
  std::string dot = (dir_ / "graph.dot").string();
  r = cli("viz " + model_ + " -o " + dot);
  ASSERT_EQ(r.code, 0) << r.out;
  text = read_file(dot);
  EXPECT_NE(text.find("digraph"), std::string::npos);
  EXPECT_NE(text.find("Relu"), std::string::npos);
  EXPECT_EQ(text.find("cluster"), std::string::npos) << "no plan without --fusion";
  r = cli("viz " + model_ + " -o " + (dir_ / "x.bmp").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("unknown output format"), std::string::npos) << r.out;
  r = cli("bench " + model_ + " --runs 3 --warmup 1 --vs-no-fusion");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* s : {"fusion on", "fusion off", "outputs max |on - off| 0"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST_F(Cli, DumpsKernels) {
  for (const char* op : {"Relu", "Add"}) {
    const ExprDef* d = expr_registry().find(op);
    ASSERT_TRUE(d && d->expr) << op << " has no expression";
  }
  auto r = cli("run " + model_ + " --dump-ir --no-fusion");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("loop IR of kernel relu0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loop IR of kernel add0"), std::string::npos) << r.out;
  // Fused, the block's kernel is named after its first node and dumped by any of its nodes' names.
  r = cli("run " + model_ + " --dump-ir --kernel relu");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("loop IR of kernel add0.fused"), std::string::npos) << r.out;
  r = cli("run " + model_ + " --dump-llvm --dump-asm --kernel relu --no-fusion");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("LLVM IR of kernel relu0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("assembly of kernel relu0"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("kernel add0"), std::string::npos) << r.out;
}

TEST_F(Cli, CompiledBackendErrors) {
  auto r = cli("run " + model_ + " --backend bogus");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("unknown --backend 'bogus'"), std::string::npos) << r.out;
  r = cli("run " + model_ + " --backend reference --dump-ir");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("need --backend compiled"), std::string::npos) << r.out;
  r = cli("run " + model_ + " --isa sse9");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("unknown ISA 'sse9'"), std::string::npos) << r.out;
  write_file((dir_ / "junk.tsr").string(), "not an artifact at all, just text");
  r = cli("run " + (dir_ / "junk.tsr").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("error: "), std::string::npos) << r.out;
}

// The pass manager from the command line: the table, graph dumps after named
// passes, verification, the flags generated from the table, and errors.
TEST_F(Cli, ListsPassesAndDumpsTheGraphAfterOne) {
  auto r = cli("passes");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* s : {"fold-constants", "fold-batchnorm", "simplify", "math-rewrite", "--no-rewrite", "blocked-layout",
                        "--no-blocked-layout", "winograd", "--no-winograd", "fold-channel-scale", "target pipeline:"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;

  r = cli("print " + model_ + " --dump-after simplify --dump-after fold-constants --verify-each");
  ASSERT_EQ(r.code, 0) << r.out;
  auto simplify = r.out.find("--- graph after pass simplify (");
  auto fold = r.out.find("--- graph after pass fold-constants (");
  ASSERT_NE(simplify, std::string::npos) << r.out;
  ASSERT_NE(fold, std::string::npos) << r.out;
  EXPECT_LT(fold, simplify) << r.out;  // in pipeline order
  EXPECT_NE(r.out.find("Relu", simplify), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("after pass math-rewrite"), std::string::npos) << r.out;

  // A target pass: dumped when the model is compiled, or said not to run.
  r = cli("run " + model_ + " --dump-after blocked-layout --no-blocked-layout -v");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("pass blocked-layout did not run (disabled (--no-blocked-layout))"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pass fold-constants "), std::string::npos) << r.out;  // -v: one line per pass
  r = cli("run " + model_ + " --no-rewrite --no-fold-batchnorm --no-winograd --no-fold-channel-scale --verify-each");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("checksum"), std::string::npos) << r.out;

  r = cli("print " + model_ + " --dump-after nope");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("error: unknown pass 'nope' (passes: fold-constants, fold-batchnorm"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tessera
