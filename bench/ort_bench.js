#!/usr/bin/env node
// ONNX Runtime timed alone, as a user's script would time it: create the
// session (the options of bench/ort_worker.js), read the inputs, warm up,
// then time --runs runs back to back. Prints one JSON line:
//   {"load_ms", "first_run_ms", "median_ms", "samples": [...], "threads"}
// With --profile PREFIX the session is created with enableProfiling (ONNX
// Runtime's own profiler; its trace goes to PREFIX_<date>.json) and the line
// also has "profile_file": that file. Profiling slows the runs down: the
// timing of a profiled run is not the cell's time (bench/zoo.py runs it apart).
//
// Setup (once):  cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci
// Usage:         node bench/ort_bench.js --model-dir DIR --threads N [--runs 10] [--warmup 2] [--profile PREFIX]
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const {readNpy} = require('./npy');

function parseArgs(argv) {
  const o = {modelDir: null, threads: 0, runs: 10, warmup: 2, profile: null};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--model-dir') o.modelDir = argv[++i];
    else if (a === '--threads') o.threads = Number(argv[++i]);
    else if (a === '--runs') o.runs = Number(argv[++i]);
    else if (a === '--warmup') o.warmup = Number(argv[++i]);
    else if (a === '--profile') o.profile = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.modelDir || !(o.threads >= 1) || !(o.runs >= 1) || !(o.warmup >= 0)) {
    throw new Error('usage: node bench/ort_bench.js --model-dir DIR --threads N [--runs N] [--warmup N] [--profile PREFIX]');
  }
  return o;
}

const msSince = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const options = {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: o.threads,
    interOpNumThreads: 1, executionMode: 'sequential', logSeverityLevel: 3,
  };
  if (o.profile) {
    options.enableProfiling = true;
    options.profileFilePrefix = o.profile;
  }
  let t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(path.join(o.modelDir, 'model.onnx'), options);
  const loadMs = msSince(t0);
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const a = readNpy(path.join(o.modelDir, `input_${i}.npy`));
    feeds[name] = new ort.Tensor(a.type, a.data, a.dims);
  });
  t0 = process.hrtime.bigint();
  await session.run(feeds);
  const firstMs = msSince(t0);
  for (let i = 0; i < o.warmup; i++) await session.run(feeds);
  const samples = [];
  for (let i = 0; i < o.runs; i++) {
    t0 = process.hrtime.bigint();
    await session.run(feeds);
    samples.push(msSince(t0));
  }
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  const out = {load_ms: loadMs, first_run_ms: firstMs, median_ms: median, samples, threads: o.threads};
  if (o.profile) {
    session.endProfiling();
    // the trace is PREFIX_<date>.json: the newest such file in PREFIX's directory
    const dir = path.dirname(o.profile), base = path.basename(o.profile) + '_';
    const files = fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json'))
        .map((f) => path.join(dir, f)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
    out.profile_file = files[0] || null;
  }
  await session.release();
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stderr.write(`error ${String(e && e.message ? e.message : e).split('\n')[0]}\n`);
  process.exit(1);
});
