// Recurrent models (issue 22): small language models exported by torch
// (tests/models/recurrent, written by make_models.py) — two LSTM layers, two
// GRU layers, a bidirectional LSTM, an RNN and an LSTM with their initial
// states as inputs — run by the compiled runtime with fusion and checked
// against the reference interpreter and against torch's own outputs. The
// fused plan is also forced (every profile cell fused): an LSTM fused with
// the Reshape before it, whose Y_h and Y_c no one reads, once failed to lower
// ("unordered_map::at") and silently ran unfused.
#include <gtest/gtest.h>

#include <cmath>

#include "driver/driver.h"
#include "frontend/onnx_tensor.h"
#include "fusion/partition.h"
#include "interp/interpreter.h"
#include "runtime/executor.h"
#include "support/error.h"

namespace tessera {
namespace {

const std::string kDir = TESSERA_RECURRENT_DIR;

struct RecurrentCase {
  std::string name;
  int inputs = 1, outputs = 1;
};

void PrintTo(const RecurrentCase& c, std::ostream* os) { *os << c.name; }

const RecurrentCase kCases[] = {
    {"lstm2", 1, 1}, {"gru2", 1, 1}, {"bilstm", 1, 1}, {"rnn2_states", 2, 2}, {"lstm2_states", 3, 3},
};

std::vector<Tensor> read_files(const std::string& name, const char* what, int count) {
  std::vector<Tensor> r;
  for (int i = 0; i < count; ++i) r.push_back(read_npy(kDir + "/" + name + "." + what + "_" + std::to_string(i) + ".npy"));
  return r;
}

// Largest |a - b| / (1 + |b|) over all elements (same shapes required).
double max_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_EQ(a[i].dims(), b[i].dims()) << "output " << i;
    if (a[i].dims() != b[i].dims()) return INFINITY;
    for (int64_t k = 0; k < a[i].numel(); ++k)
      worst = std::max(worst, std::fabs(a[i].get_double(k) - b[i].get_double(k)) / (1 + std::fabs(b[i].get_double(k))));
  }
  return worst;
}

bool is_recurrent(const Node& n) { return n.op_type == "LSTM" || n.op_type == "GRU" || n.op_type == "RNN"; }

class Recurrent : public ::testing::TestWithParam<RecurrentCase> {};

// The default compiled path (fusion planned, profile cells measured or taken
// from the database) against the interpreter and torch.
TEST_P(Recurrent, CompiledMatchesReferenceAndTorch) {
  const RecurrentCase& c = GetParam();
  std::vector<Tensor> ins = read_files(c.name, "input", c.inputs);
  std::vector<Tensor> torch_out = read_files(c.name, "output", c.outputs);
  runtime::Executor m(load_model(kDir + "/" + c.name + ".onnx"), {});
  std::vector<Tensor> got = m.run(ins);
  EXPECT_TRUE(m.last_plan()->fusion_fallbacks.empty()) << m.last_plan()->fusion_fallbacks.front();
  std::vector<Tensor> want = interpret(m.graph(), ins);
  EXPECT_LT(max_difference(got, want), 1e-5) << m.report();
  EXPECT_LT(max_difference(got, torch_out), 1e-4);
  EXPECT_LT(max_difference(want, torch_out), 1e-4);
}

// Every profile cell fused: each recurrent node shares a kernel with its
// neighbours (the Reshape or Squeeze before it), reading only some of its
// outputs; every block lowers as one kernel and the plan matches the
// interpreter.
TEST_P(Recurrent, EveryRecurrentNodeFusesAndMatchesReference) {
  const RecurrentCase& c = GetParam();
  std::vector<Tensor> ins = read_files(c.name, "input", c.inputs);
  std::unique_ptr<Graph> g = load_model(kDir + "/" + c.name + ".onnx");
  fusion::PartitionOptions po;
  po.profile = [](const std::vector<int>&, const std::vector<std::vector<int>>&) {
    return std::optional<fusion::ProfileEntry>(fusion::ProfileEntry{1e-6, 2e-6});  // fusing always pays
  };
  fusion::Partition part = fusion::partition_graph(*g, po);
  std::vector<std::vector<int>> blocks;
  int fused_recurrent = 0;
  for (const fusion::Block& b : part.blocks) {
    blocks.push_back(b.nodes);
    if (b.nodes.size() > 1)
      for (int n : b.nodes) fused_recurrent += is_recurrent(*g->nodes()[static_cast<size_t>(n)]);
  }
  EXPECT_GT(fused_recurrent, 0) << fusion::print_fusion(*g, part);
  auto plan = runtime::compile_plan(*g, ins, {}, nullptr, &blocks);
  EXPECT_TRUE(plan->fusion_fallbacks.empty()) << plan->fusion_fallbacks.front();
  EXPECT_EQ(plan->steps.size(), blocks.size());
  std::vector<Tensor> got = runtime::run_plan(*g, *plan, ins);
  EXPECT_LT(max_difference(got, interpret(*g, ins)), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Models, Recurrent, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<RecurrentCase>& i) { return i.param.name; });

// A fault inside compilation (here a schedule provider throwing a standard
// exception, as a bad map lookup would) is an error naming the node, never a
// bare "unordered_map::at" and never a silent fallback.
TEST(CompileErrors, FaultsNameTheNode) {
  struct Faulty final : runtime::ScheduleProvider {
    std::optional<schedule::Schedule> schedule_for(const compile::Task&) const override {
      throw std::out_of_range("unordered_map::at");
    }
  };
  runtime::ExecutorOptions opts;
  opts.schedule_providers.push_back(std::make_shared<Faulty>());
  runtime::Executor m(load_model(kDir + "/lstm2.onnx"), opts);
  try {
    m.run(read_files("lstm2", "input", 1));
    FAIL() << "the fault was not reported";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node '"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unordered_map::at"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tessera
