// dnnl_bench: times oneDNN's f32 matmul and forward convolution on given
// shapes, the way its benchdnn does: the primitive is created with memory
// format `any` for source, weights and destination (oneDNN picks its preferred,
// usually blocked, layouts), the data is reordered into those layouts once,
// outside the timing, and only the primitive's execution is timed (warm-up
// runs, then the median of the timed runs).
//
// Usage:
//   dnnl_bench [--isa avx512|avx2|all] [--threads N] [--runs R] [--warmup W] [SHAPE...]
// Each SHAPE argument, or else each line of standard input, is one request:
//   matmul ID BATCH M K N CONST_B BIAS [RUNS [WARMUP]]
//       src [BATCH,]M x K, weights [BATCH,]K x N (BATCH 1: plain 2-D); CONST_B 1
//       means B is constant weights (format `any`, packed once, like a model's
//       initializer), 0 that B is an activation (plain row-major, batched).
//   conv ID N C H W K KH KW SH SW PT PL PB PR DH DW G BIAS [RUNS [WARMUP]]
//       NCHW input, K output channels, KHxKW kernel, strides, pads (top, left,
//       bottom, right as in ONNX), dilations (ONNX's: 1 = none), G groups.
//   quit
// Lines starting with '#' and empty lines are skipped. Output, one line each
// (flushed at once, so a harness can keep the process and feed it shapes):
//   ready dnnl=2.6.3 isa=avx512_core threads=2
//   result ID status=ok ms=MEDIAN p10_ms=.. p90_ms=.. min_ms=.. runs=R create_ms=.. impl=NAME src=.. wei=.. dst=..
//   result ID status=error msg=TEXT
//
// The number of threads is OpenMP's (Debian's oneDNN uses the OpenMP runtime):
// --threads calls omp_set_num_threads. --isa caps oneDNN's instruction set with
// dnnl::set_max_cpu_isa (avx512 = avx512_core, avx2 = avx2), before any
// primitive is made; the effective ISA is printed in the ready line.
//
// Built by bench/kernel_bench.py with plain g++:
//   g++ -O2 -std=c++17 dnnl_bench.cpp -o dnnl_bench -ldnnl -fopenmp -pthread
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_debug.h>

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

struct Options {
  std::string isa = "all";
  int threads = 1;
  int runs = 20;
  int warmup = 5;
};

// A format string like oneDNN's verbose mode prints: dimensions as letters in
// memory order from outermost, upper case where blocked, then the inner blocks
// ("aBcd16b": NCHW with channels blocked by 16).
std::string format_of(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked) return dnnl_fmt_kind2str(d.format_kind);
  const auto& b = d.format_desc.blocking;
  int nd = d.ndims;
  std::vector<bool> blocked(static_cast<size_t>(nd), false);
  for (int k = 0; k < b.inner_nblks; ++k) blocked[static_cast<size_t>(b.inner_idxs[k])] = true;
  std::vector<int> order(static_cast<size_t>(nd));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return b.strides[x] > b.strides[y]; });
  std::string s;
  for (int i : order) s += static_cast<char>((blocked[static_cast<size_t>(i)] ? 'A' : 'a') + i);
  for (int k = 0; k < b.inner_nblks; ++k)
    s += std::to_string(b.inner_blks[k]) + static_cast<char>('a' + b.inner_idxs[k]);
  return s;
}

// Plain memory filled with values in [-1, 1) (a fixed LCG: no denormals, no NaN).
dnnl::memory filled(const memory::desc& md, const dnnl::engine& eng, uint32_t seed) {
  dnnl::memory m(md, eng);
  float* p = static_cast<float*>(m.get_data_handle());
  size_t n = md.get_size() / sizeof(float);
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<float>(x >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return m;
}

// The data in `plain` reordered into `want` (outside any timing); `plain`
// itself when the layouts agree.
dnnl::memory in_layout(const dnnl::memory& plain, const memory::desc& want, const dnnl::engine& eng,
                       dnnl::stream& s) {
  if (plain.get_desc() == want) return plain;
  dnnl::memory m(want, eng);
  dnnl::reorder(plain, m).execute(s, const_cast<dnnl::memory&>(plain), m);
  s.wait();
  return m;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

struct Prepared {
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;
  std::string impl, src, wei, dst;
  double create_ms = 0;
};

// The primitive of `pd` (created since t0), the implementation and layouts
// oneDNN chose, and its arguments: source and weights filled in plain
// layouts and reordered into the chosen ones, the bias when given, the
// destination and the scratchpad.
template <class Prim, class PD>
Prepared prepare(const PD& pd, std::chrono::steady_clock::time_point t0, const memory::desc& src_plain,
                 const memory::desc& wei_plain, const memory::desc* bias_md, const dnnl::engine& eng,
                 dnnl::stream& s) {
  Prepared p;
  p.prim = Prim(pd);
  p.create_ms = ms_since(t0);
  p.impl = pd.impl_info_str();
  p.src = format_of(pd.src_desc());
  p.wei = format_of(pd.weights_desc());
  p.dst = format_of(pd.dst_desc());
  p.args[DNNL_ARG_SRC] = in_layout(filled(src_plain, eng, 1), pd.src_desc(), eng, s);
  p.args[DNNL_ARG_WEIGHTS] = in_layout(filled(wei_plain, eng, 2), pd.weights_desc(), eng, s);
  if (bias_md) p.args[DNNL_ARG_BIAS] = in_layout(filled(*bias_md, eng, 3), pd.bias_desc(), eng, s);
  p.args[DNNL_ARG_DST] = dnnl::memory(pd.dst_desc(), eng);
  if (pd.scratchpad_desc().get_size() > 0) p.args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pd.scratchpad_desc(), eng);
  return p;
}

Prepared make_matmul(const std::vector<int64_t>& a, const dnnl::engine& eng, dnnl::stream& s) {
  // a: BATCH M K N CONST_B BIAS
  if (a.size() != 6) throw std::runtime_error("matmul needs BATCH M K N CONST_B BIAS");
  int64_t batch = a[0], m = a[1], k = a[2], n = a[3];
  bool const_b = a[4] != 0, bias = a[5] != 0;
  if (batch < 1 || m < 1 || k < 1 || n < 1) throw std::runtime_error("matmul dimensions must be positive");
  bool batched = batch > 1;
  memory::dims sd = batched ? memory::dims{batch, m, k} : memory::dims{m, k};
  memory::dims wd = batched ? memory::dims{batch, k, n} : memory::dims{k, n};
  memory::dims dd = batched ? memory::dims{batch, m, n} : memory::dims{m, n};
  memory::dims bd = batched ? memory::dims{1, 1, n} : memory::dims{1, n};
  tag plain = batched ? tag::abc : tag::ab;
  memory::desc src_any(sd, dt::f32, tag::any), dst_any(dd, dt::f32, tag::any);
  // constant weights in the layout oneDNN prefers (packed once); an activation B as it comes
  memory::desc wei_md(wd, dt::f32, const_b ? tag::any : plain);
  memory::desc bias_md(bd, dt::f32, plain);
  auto t0 = std::chrono::steady_clock::now();
  dnnl::matmul::primitive_desc pd =
      bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_any, wei_md, bias_md, dst_any), eng)
           : dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_any, wei_md, dst_any), eng);
  return prepare<dnnl::matmul>(pd, t0, memory::desc(sd, dt::f32, plain), memory::desc(wd, dt::f32, plain),
                               bias ? &bias_md : nullptr, eng, s);
}

Prepared make_conv(const std::vector<int64_t>& a, const dnnl::engine& eng, dnnl::stream& s) {
  // a: N C H W K KH KW SH SW PT PL PB PR DH DW G BIAS
  if (a.size() != 17) throw std::runtime_error("conv needs N C H W K KH KW SH SW PT PL PB PR DH DW G BIAS");
  int64_t n = a[0], c = a[1], h = a[2], w = a[3], k = a[4], kh = a[5], kw = a[6], sh = a[7], sw = a[8];
  int64_t pt = a[9], pl = a[10], pb = a[11], pr = a[12], dh = a[13], dw = a[14], g = a[15];
  bool bias = a[16] != 0;
  if (g < 1 || c % g || k % g) throw std::runtime_error("groups must divide C and K");
  if (sh < 1 || sw < 1 || dh < 1 || dw < 1) throw std::runtime_error("strides and dilations must be >= 1");
  int64_t oh = (h + pt + pb - (dh * (kh - 1) + 1)) / sh + 1;
  int64_t ow = (w + pl + pr - (dw * (kw - 1) + 1)) / sw + 1;
  if (oh < 1 || ow < 1) throw std::runtime_error("empty output");
  memory::dims sd{n, c, h, w}, dd{n, k, oh, ow}, bd{k};
  memory::dims wd = g > 1 ? memory::dims{g, k / g, c / g, kh, kw} : memory::dims{k, c, kh, kw};
  tag wplain = g > 1 ? tag::goihw : tag::oihw;
  memory::desc src_any(sd, dt::f32, tag::any), wei_any(wd, dt::f32, tag::any), dst_any(dd, dt::f32, tag::any);
  memory::desc bias_md(bd, dt::f32, tag::x);
  // oneDNN counts dilation from 0 (0 = dense), ONNX from 1
  memory::dims strides{sh, sw}, dil{dh - 1, dw - 1}, pad_l{pt, pl}, pad_r{pb, pr};
  auto t0 = std::chrono::steady_clock::now();
  auto prop = dnnl::prop_kind::forward_inference;
  auto alg = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::desc d =
      bias ? dnnl::convolution_forward::desc(prop, alg, src_any, wei_any, bias_md, dst_any, strides, dil, pad_l, pad_r)
           : dnnl::convolution_forward::desc(prop, alg, src_any, wei_any, dst_any, strides, dil, pad_l, pad_r);
  dnnl::convolution_forward::primitive_desc pd(d, eng);
  return prepare<dnnl::convolution_forward>(pd, t0, memory::desc(sd, dt::f32, tag::nchw),
                                            memory::desc(wd, dt::f32, wplain), bias ? &bias_md : nullptr, eng, s);
}

// One request line -> one result line.
std::string handle(const std::string& line, const Options& opt, const dnnl::engine& eng, dnnl::stream& s) {
  std::istringstream in(line);
  std::string kind, id;
  in >> kind >> id;
  if (id.empty()) return "result ? status=error msg=missing_id";
  std::vector<int64_t> v;
  for (std::string t; in >> t;) {
    try {
      size_t used = 0;
      v.push_back(std::stoll(t, &used));
      if (used != t.size()) throw std::invalid_argument(t);
    } catch (const std::exception&) {
      return "result " + id + " status=error msg=not_an_integer:" + t;
    }
  }
  size_t fixed = kind == "matmul" ? 6 : kind == "conv" ? 17 : 0;
  if (fixed == 0) return "result " + id + " status=error msg=unknown_kind:" + kind;
  int runs = opt.runs, warmup = opt.warmup;
  if (v.size() > fixed) runs = static_cast<int>(v[fixed]);
  if (v.size() > fixed + 1) warmup = static_cast<int>(v[fixed + 1]);
  if (v.size() > fixed + 2) return "result " + id + " status=error msg=too_many_fields";
  v.resize(std::min(v.size(), fixed));
  if (runs < 1 || warmup < 0) return "result " + id + " status=error msg=bad_runs";
  try {
    Prepared p = kind == "matmul" ? make_matmul(v, eng, s) : make_conv(v, eng, s);
    for (int i = 0; i < warmup; ++i) {
      p.prim.execute(s, p.args);
      s.wait();
    }
    std::vector<double> ms;
    ms.reserve(static_cast<size_t>(runs));
    for (int i = 0; i < runs; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      p.prim.execute(s, p.args);
      s.wait();
      ms.push_back(ms_since(t0));
    }
    char buf[512];
    std::snprintf(buf, sizeof buf, "status=ok ms=%.5f p10_ms=%.5f p90_ms=%.5f min_ms=%.5f runs=%d create_ms=%.2f",
                  percentile(ms, 0.5), percentile(ms, 0.1), percentile(ms, 0.9), percentile(ms, 0.0), runs,
                  p.create_ms);
    std::string impl = p.impl;
    std::replace(impl.begin(), impl.end(), ' ', '_');
    return "result " + id + " " + buf + " impl=" + impl + " src=" + p.src + " wei=" + p.wei + " dst=" + p.dst;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    return "result " + id + " status=error msg=" + msg;
  }
}

[[noreturn]] void usage(const std::string& msg) {
  std::fprintf(stderr,
               "%s\nusage: dnnl_bench [--isa avx512|avx2|all] [--threads N] [--runs R] [--warmup W] [SHAPE...]\n"
               "  SHAPE: 'matmul ID BATCH M K N CONST_B BIAS [RUNS [WARMUP]]'\n"
               "         'conv ID N C H W K KH KW SH SW PT PL PB PR DH DW G BIAS [RUNS [WARMUP]]'\n"
               "  without SHAPE arguments, one request per line of standard input\n",
               msg.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::vector<std::string> shapes;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value for " + a);
      return argv[++i];
    };
    if (a == "--isa") opt.isa = value();
    else if (a == "--threads") opt.threads = std::atoi(value().c_str());
    else if (a == "--runs") opt.runs = std::atoi(value().c_str());
    else if (a == "--warmup") opt.warmup = std::atoi(value().c_str());
    else if (a == "-h" || a == "--help") usage("dnnl_bench: oneDNN f32 matmul and convolution timings");
    else if (!a.empty() && a[0] == '-') usage("unknown option " + a);
    else shapes.push_back(a);
  }
  if (opt.threads < 1 || opt.runs < 1 || opt.warmup < 0) usage("--threads and --runs must be >= 1");

  // before anything else of oneDNN: the ISA cap takes effect only then
  dnnl::cpu_isa cap = dnnl::cpu_isa::all;
  if (opt.isa == "avx512") cap = dnnl::cpu_isa::avx512_core;
  else if (opt.isa == "avx2") cap = dnnl::cpu_isa::avx2;
  else if (opt.isa != "all") usage("unknown --isa " + opt.isa);
  if (cap != dnnl::cpu_isa::all && dnnl::set_max_cpu_isa(cap) != dnnl::status::success) {
    std::printf("error cannot cap oneDNN's ISA at %s\n", opt.isa.c_str());
    return 2;
  }
  omp_set_num_threads(opt.threads);

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const dnnl_version_t* ver = dnnl::version();
  std::string effective = dnnl_cpu_isa2str(static_cast<dnnl_cpu_isa_t>(dnnl::get_effective_cpu_isa()));
  std::printf("ready dnnl=%d.%d.%d isa=%s threads=%d omp_max_threads=%d\n", ver->major, ver->minor, ver->patch,
              effective.c_str(), opt.threads, omp_get_max_threads());
  std::fflush(stdout);
  if (cap == dnnl::cpu_isa::avx512_core && effective.find("avx512") == std::string::npos) return 2;
  if (cap == dnnl::cpu_isa::avx2 && effective.find("avx2") == std::string::npos) return 2;

  auto serve = [&](const std::string& line) {
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') return true;
    if (line.compare(first, 4, "quit") == 0) return false;
    std::printf("%s\n", handle(line.substr(first), opt, eng, s).c_str());
    std::fflush(stdout);
    return true;
  };
  if (!shapes.empty()) {
    for (const auto& sh : shapes)
      if (!serve(sh)) break;
  } else {
    for (std::string line; std::getline(std::cin, line);)
      if (!serve(line)) break;
  }
  return 0;
}
