/* Tessera's C API: open a model, look at its inputs and outputs, run it.
 * Plain C (C99), for C programs and any language's foreign-function
 * interface. It wraps the C++ API (tessera/runtime.h); no C++ exception
 * crosses it.
 *
 *   TesseraSession* s = NULL;
 *   if (tessera_session_create("model.onnx", NULL, &s) != TESSERA_OK)
 *     fprintf(stderr, "%s\n", tessera_last_error());
 *   int64_t dims[2] = {1, 16};
 *   TesseraInput in = {"x", TESSERA_FLOAT, dims, 2, data};
 *   TesseraOutputs* outs = NULL;
 *   tessera_session_run(s, &in, 1, &outs);
 *   TesseraTensor y;
 *   tessera_outputs_get(outs, 0, &y);   // y.data: y.dims ... of y.dtype
 *   tessera_outputs_release(outs);
 *   tessera_session_release(s);
 *
 * Errors: every call that can fail returns a TesseraStatus; on failure its
 * one-line message (naming the file, the input, or the node and op that
 * failed) is kept twice: for the calling thread (tessera_last_error) and,
 * for calls given a session, for that session (tessera_session_last_error).
 * Both stay valid until the next failing call on that thread / session.
 *
 * Ownership: handles are released by their _release function (NULL is
 * accepted). Strings and arrays a session hands out (names, dims) live as
 * long as the session. Input buffers are the caller's and are read only
 * during tessera_session_run (no copy is kept); output buffers belong to the
 * TesseraOutputs and live until it is released.
 *
 * Threads: one session may be run by many threads at once (see
 * tessera/runtime.h); options and outputs handles are not shared.
 */
#ifndef TESSERA_TESSERA_H
#define TESSERA_TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum TesseraStatus {
  TESSERA_OK = 0,
  TESSERA_INVALID_ARGUMENT = 1, /* a null handle or pointer, an index out of range, a bad option value */
  TESSERA_MODEL_ERROR = 2,      /* the model or artifact cannot be read, imported, compiled or written */
  TESSERA_RUN_ERROR = 3,        /* inputs do not match the model (an unknown, missing or repeated name,
                                   a wrong dtype or shape), or a node failed while running */
  TESSERA_OUT_OF_MEMORY = 4,
  TESSERA_INTERNAL_ERROR = 5    /* an unexpected failure (please report it) */
} TesseraStatus;

/* Element types; the values are ONNX's TensorProto.DataType codes. */
typedef enum TesseraDType {
  TESSERA_UNDEFINED = 0,
  TESSERA_FLOAT = 1,
  TESSERA_UINT8 = 2,
  TESSERA_INT8 = 3,
  TESSERA_UINT16 = 4,
  TESSERA_INT16 = 5,
  TESSERA_INT32 = 6,
  TESSERA_INT64 = 7,
  TESSERA_STRING = 8, /* not accepted or returned by this API */
  TESSERA_BOOL = 9,   /* one byte per element, 0 or 1 */
  TESSERA_FLOAT16 = 10,
  TESSERA_DOUBLE = 11,
  TESSERA_UINT32 = 12,
  TESSERA_UINT64 = 13,
  TESSERA_BFLOAT16 = 16
} TesseraDType;

typedef struct TesseraOptions TesseraOptions;
typedef struct TesseraSession TesseraSession;
typedef struct TesseraOutputs TesseraOutputs;

/* A model input or output. Pointers are owned by the session. */
typedef struct TesseraValueInfo {
  const char* name;
  TesseraDType dtype;
  int rank_known;               /* 0: the rank itself is unknown (rank and dims are then 0 / NULL) */
  size_t rank;
  const int64_t* dims;          /* -1 for a dynamic dimension */
  const char* const* dim_names; /* per dimension: a dynamic one's name from the model, "" if none */
} TesseraValueInfo;

/* An input for tessera_session_run: row-major, contiguous, data read during the call only. */
typedef struct TesseraInput {
  const char* name;
  TesseraDType dtype;
  const int64_t* dims;
  size_t rank;
  const void* data;
} TesseraInput;

/* An output of a run; data, dims and name are owned by the TesseraOutputs. */
typedef struct TesseraTensor {
  const char* name;
  TesseraDType dtype;
  size_t rank;
  const int64_t* dims;
  const void* data;
  size_t nbytes;
} TesseraTensor;

/* "0.1.0": the library's version. */
const char* tessera_version(void);
/* The message of the last failing call on this thread ("" if none). */
const char* tessera_last_error(void);
/* Bytes per element of a dtype (0 for undefined and string). */
size_t tessera_dtype_size(TesseraDType dtype);

/* --- options (NULL options everywhere mean the defaults) ----------------- */
TesseraStatus tessera_options_create(TesseraOptions** out);
void tessera_options_release(TesseraOptions* options);
/* Threads for parallel kernels; 0 (default): all cores. */
TesseraStatus tessera_options_set_threads(TesseraOptions* options, int threads);
/* "avx512", "avx2", "generic" or "host"; NULL or "": the host's best (an artifact: its own). */
TesseraStatus tessera_options_set_isa(TesseraOptions* options, const char* isa);
/* DNNFusion's fused kernels (default 1). */
TesseraStatus tessera_options_set_fusion(TesseraOptions* options, int enabled);
/* PET's search for faster equivalent subprograms (default 0). */
TesseraStatus tessera_options_set_pet(TesseraOptions* options, int enabled);
/* A tuning records file (tessera tune); NULL or "": none. */
TesseraStatus tessera_options_set_records(TesseraOptions* options, const char* path);
/* Fixes a dynamic input's shape when compiling (not for artifacts). */
TesseraStatus tessera_options_set_input_shape(TesseraOptions* options, const char* input, const int64_t* dims,
                                              size_t rank);

/* --- sessions ------------------------------------------------------------ */
/* An ONNX file, "zoo:NAME" (an embedded model) or a .tsr artifact. */
TesseraStatus tessera_session_create(const char* path, const TesseraOptions* options, TesseraSession** out);
/* The bytes of an ONNX model or a .tsr artifact (copied; free them after the call). */
TesseraStatus tessera_session_create_from_bytes(const void* data, size_t size, const TesseraOptions* options,
                                                TesseraSession** out);
void tessera_session_release(TesseraSession* session);
/* The message of the last failing call given this session ("" if none). */
const char* tessera_session_last_error(const TesseraSession* session);

size_t tessera_session_input_count(const TesseraSession* session);
size_t tessera_session_output_count(const TesseraSession* session);
TesseraStatus tessera_session_input_info(const TesseraSession* session, size_t index, TesseraValueInfo* out);
TesseraStatus tessera_session_output_info(const TesseraSession* session, size_t index, TesseraValueInfo* out);

/* Runs the model on every input, given by name in any order. On success
 * *outputs holds every model output in model order. */
TesseraStatus tessera_session_run(TesseraSession* session, const TesseraInput* inputs, size_t input_count,
                                  TesseraOutputs** outputs);
/* Compiled and reference steps, reasons and memory, as text; free with tessera_free. */
TesseraStatus tessera_session_report(const TesseraSession* session, char** out);
/* Writes the compiled session to a .tsr artifact. */
TesseraStatus tessera_session_save(const TesseraSession* session, const char* path);

size_t tessera_outputs_count(const TesseraOutputs* outputs);
TesseraStatus tessera_outputs_get(const TesseraOutputs* outputs, size_t index, TesseraTensor* out);
void tessera_outputs_release(TesseraOutputs* outputs);

/* --- artifacts ----------------------------------------------------------- */
/* Compiles a model (path or "zoo:NAME") and, when its input shapes are
 * static (after tessera_options_set_input_shape), its kernels; writes a
 * .tsr artifact that tessera_session_create loads. */
TesseraStatus tessera_compile(const char* model, const char* out_path, const TesseraOptions* options);

/* Frees a string returned by this API. */
void tessera_free(void* p);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_TESSERA_H */
