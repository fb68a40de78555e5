// A C++ program built against the installed Tessera (tests/install): compiles
// the ONNX case node/test_matmul_2d (Y = A x B, f32 [3x4] x [4x3]) with the
// C++ API, runs it on small integers, whose products and sums float holds
// exactly, and checks Y against the product computed here; then checks that a
// failure reaches the caller as a std::runtime_error naming the file (the
// exception crosses the shared library's boundary).
// Usage: matmul MATMUL_2D_MODEL.onnx
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/runtime.h"

static int failures = 0;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MATMUL_2D_MODEL.onnx\n", argv[0]);
    return 2;
  }
  const int64_t M = 3, K = 4, N = 3;
  std::vector<float> a(M * K), b(K * N);
  for (int64_t i = 0; i < M * K; ++i) a[i] = static_cast<float>(i % 7 - 3);
  for (int64_t i = 0; i < K * N; ++i) b[i] = static_cast<float>(i % 5 - 2);
  try {
    tessera::CompiledModel model = tessera::CompiledModel::compile(argv[1]);
    std::vector<tessera::TensorInfo> ins = model.inputs();
    CHECK(ins.size() == 2 && ins[0].dims == tessera::Dims({M, K}) && ins[1].dims == tessera::Dims({K, N}));
    std::vector<tessera::Tensor> outs =
        model.run({tessera::Tensor::from<float>({M, K}, a), tessera::Tensor::from<float>({K, N}, b)});
    CHECK(outs.size() == 1 && outs[0].dtype() == tessera::DType::F32 && outs[0].dims() == tessera::Dims({M, N}));
    CHECK(model.compiled_steps() >= 1);  // the JIT ran it, not only the reference kernels
    if (outs.size() == 1 && outs[0].numel() == M * N) {
      const float* y = outs[0].data<float>();
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          float want = 0;
          for (int64_t k = 0; k < K; ++k) want += a[i * K + k] * b[k * N + j];
          if (y[i * N + j] != want) {
            std::fprintf(stderr, "Y[%lld,%lld] = %g, expected %g\n", (long long)i, (long long)j, y[i * N + j], want);
            ++failures;
          }
        }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    return 1;
  }

  const std::string missing = "/nonexistent/tessera-install-test.onnx";
  try {
    tessera::CompiledModel::compile(missing);
    std::fprintf(stderr, "compiling %s did not throw\n", missing.c_str());
    ++failures;
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(missing) != std::string::npos);
  }
  std::printf("%s\n", failures ? "FAILED" : "matmul: ok");
  return failures ? 1 : 0;
}
