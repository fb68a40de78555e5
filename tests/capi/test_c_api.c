/* The C API from a C program (compiled as C99, not C++): a session from a
 * path and from bytes, its signature, runs against the sums computed here,
 * an artifact compiled and loaded, and every kind of bad call returning its
 * status with a message. Usage: test_c_api ADD_MODEL.onnx TMP_DIR
 * (ADD_MODEL: the ONNX backend case node/test_add, z = x + y over f32[3x4x5]). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/tessera.h"

static int failures = 0;

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                        \
    }                                                                    \
  } while (0)

/* A call that must succeed; prints the message when it does not. */
#define OK(call)                                                                           \
  do {                                                                                     \
    TesseraStatus st_ = (call);                                                            \
    if (st_ != TESSERA_OK) {                                                               \
      fprintf(stderr, "%s:%d: %s failed (%d): %s\n", __FILE__, __LINE__, #call, (int)st_, \
              tessera_last_error());                                                       \
      ++failures;                                                                          \
    }                                                                                      \
  } while (0)

static const int64_t kDims[3] = {3, 4, 5};
enum { kCount = 60 };

static char* read_all(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* p = malloc((size_t)n);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return p;
}

/* Runs z = x + y and checks every element against the sum computed here. */
static void check_add(TesseraSession* s, float scale) {
  float x[kCount], y[kCount];
  for (int i = 0; i < kCount; ++i) {
    x[i] = scale * (float)i;
    y[i] = 0.5f - (float)(i % 7);
  }
  TesseraInput in[2] = {{"y", TESSERA_FLOAT, kDims, 3, y}, {"x", TESSERA_FLOAT, kDims, 3, x}};  /* any order */
  TesseraOutputs* outs = NULL;
  OK(tessera_session_run(s, in, 2, &outs));
  if (!outs) return;
  CHECK(tessera_outputs_count(outs) == 1);
  TesseraTensor z;
  OK(tessera_outputs_get(outs, 0, &z));
  CHECK(strcmp(z.name, "sum") == 0);
  CHECK(z.dtype == TESSERA_FLOAT && z.rank == 3 && z.nbytes == kCount * sizeof(float));
  CHECK(z.dims[0] == 3 && z.dims[1] == 4 && z.dims[2] == 5);
  const float* zf = (const float*)z.data;
  for (int i = 0; i < kCount; ++i) CHECK(zf[i] == x[i] + y[i]);
  tessera_outputs_release(outs);
}

static void check_signature(const TesseraSession* s) {
  CHECK(tessera_session_input_count(s) == 2);
  CHECK(tessera_session_output_count(s) == 1);
  TesseraValueInfo info;
  OK(tessera_session_input_info(s, 1, &info));
  CHECK(strcmp(info.name, "y") == 0);
  CHECK(info.dtype == TESSERA_FLOAT && info.rank_known && info.rank == 3);
  CHECK(info.dims[0] == 3 && info.dims[1] == 4 && info.dims[2] == 5);
  CHECK(info.dim_names && strcmp(info.dim_names[0], "") == 0);  /* static dims have no name */
  OK(tessera_session_output_info(s, 0, &info));
  CHECK(strcmp(info.name, "sum") == 0);
}

/* A failing call: the status, and both last errors containing `text`. */
static void check_error(TesseraStatus got, TesseraStatus want, const TesseraSession* s, const char* text) {
  CHECK(got == want);
  if (!strstr(tessera_last_error(), text)) {
    fprintf(stderr, "expected an error containing \"%s\", got \"%s\"\n", text, tessera_last_error());
    ++failures;
  }
  if (s && !strstr(tessera_session_last_error(s), text)) {
    fprintf(stderr, "expected the session's error to contain \"%s\", got \"%s\"\n", text,
            tessera_session_last_error(s));
    ++failures;
  }
}

static void check_bad_calls(TesseraSession* s, const char* model_bytes, size_t size) {
  float data[kCount] = {0};
  double wide[kCount] = {0};
  int64_t short_dims[3] = {3, 4, 4};
  TesseraOutputs* outs = NULL;
  TesseraInput unknown[2] = {{"x", TESSERA_FLOAT, kDims, 3, data}, {"w", TESSERA_FLOAT, kDims, 3, data}};
  check_error(tessera_session_run(s, unknown, 2, &outs), TESSERA_RUN_ERROR, s, "has no input 'w'");
  CHECK(outs == NULL);
  check_error(tessera_session_run(s, unknown, 1, &outs), TESSERA_RUN_ERROR, s, "input 'y' of model");
  TesseraInput dtype[2] = {{"x", TESSERA_DOUBLE, kDims, 3, wide}, {"y", TESSERA_FLOAT, kDims, 3, data}};
  check_error(tessera_session_run(s, dtype, 2, &outs), TESSERA_RUN_ERROR, s, "'x'");
  TesseraInput shape[2] = {{"x", TESSERA_FLOAT, kDims, 3, data}, {"y", TESSERA_FLOAT, short_dims, 3, data}};
  check_error(tessera_session_run(s, shape, 2, &outs), TESSERA_RUN_ERROR, s, "'y'");
  TesseraInput twice[2] = {{"x", TESSERA_FLOAT, kDims, 3, data}, {"x", TESSERA_FLOAT, kDims, 3, data}};
  check_error(tessera_session_run(s, twice, 2, &outs), TESSERA_RUN_ERROR, s, "given twice");
  check_error(tessera_session_run(s, NULL, 2, &outs), TESSERA_INVALID_ARGUMENT, s, "inputs is NULL");
  TesseraValueInfo info;
  check_error(tessera_session_input_info(s, 2, &info), TESSERA_INVALID_ARGUMENT, s, "out of range");

  TesseraSession* bad = NULL;
  check_error(tessera_session_create_from_bytes(model_bytes, size / 2, NULL, &bad), TESSERA_MODEL_ERROR, NULL, "");
  CHECK(bad == NULL && strlen(tessera_last_error()) > 0);
  check_error(tessera_session_create("/nonexistent/model.onnx", NULL, &bad), TESSERA_MODEL_ERROR, NULL,
              "/nonexistent/model.onnx");
  check_error(tessera_session_create(NULL, NULL, &bad), TESSERA_INVALID_ARGUMENT, NULL, "path is NULL");
  TesseraOptions* o = NULL;
  OK(tessera_options_create(&o));
  check_error(tessera_options_set_isa(o, "sse"), TESSERA_INVALID_ARGUMENT, NULL, "unknown isa 'sse'");
  check_error(tessera_options_set_threads(o, -1), TESSERA_INVALID_ARGUMENT, NULL, "threads");
  tessera_options_release(o);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s ADD_MODEL.onnx TMP_DIR\n", argv[0]);
    return 2;
  }
  CHECK(strcmp(tessera_version(), TESSERA_EXPECTED_VERSION) == 0);
  CHECK(tessera_dtype_size(TESSERA_FLOAT) == 4 && tessera_dtype_size(TESSERA_STRING) == 0);

  TesseraOptions* o = NULL;
  OK(tessera_options_create(&o));
  OK(tessera_options_set_threads(o, 1));
  OK(tessera_options_set_isa(o, "avx2"));
  OK(tessera_options_set_fusion(o, 0));
  OK(tessera_options_set_pet(o, 0));
  OK(tessera_options_set_records(o, NULL));

  TesseraSession* s = NULL;
  OK(tessera_session_create(argv[1], o, &s));
  if (!s) return 1;
  check_signature(s);
  check_add(s, 1.0f);
  check_add(s, -0.25f);
  char* report = NULL;
  OK(tessera_session_report(s, &report));
  CHECK(report && strlen(report) > 0);
  tessera_free(report);

  size_t size = 0;
  char* bytes = read_all(argv[1], &size);
  CHECK(bytes != NULL);
  TesseraSession* from_bytes = NULL;
  OK(tessera_session_create_from_bytes(bytes, size, NULL, &from_bytes));
  if (from_bytes) {
    check_signature(from_bytes);
    check_add(from_bytes, 3.0f);
  }

  /* An artifact: compiled, loaded, run. */
  char tsr[4096];
  snprintf(tsr, sizeof tsr, "%s/add.tsr", argv[2]);
  OK(tessera_compile(argv[1], tsr, o));
  TesseraSession* loaded = NULL;
  OK(tessera_session_create(tsr, NULL, &loaded));
  if (loaded) {
    check_signature(loaded);
    check_add(loaded, 2.0f);
  }
  snprintf(tsr, sizeof tsr, "%s/saved.tsr", argv[2]);
  OK(tessera_session_save(s, tsr));

  check_bad_calls(s, bytes, size);
  check_add(s, 1.5f);  /* still runs after the failures */

  tessera_session_release(loaded);
  tessera_session_release(from_bytes);
  tessera_session_release(s);
  tessera_session_release(NULL);
  tessera_options_release(o);
  free(bytes);
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  else printf("C API: all checks passed\n");
  return failures ? 1 : 0;
}
