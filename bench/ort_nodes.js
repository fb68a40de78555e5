#!/usr/bin/env node
// ONNX Runtime side of bench/FUSION.md: for each model.onnx given, creates an
// onnxruntime-node InferenceSession with graphOptimizationLevel "all",
// intraOpNumThreads 2 and optimizedModelFilePath <dir>/ort_optimized.onnx, runs
// it once on <dir>/input_0.npy, input_1.npy ... and compares the first output
// with <dir>/torch_output.npy. Prints one JSON object per model (one a line).
// If a level's session cannot be created or its optimized model is not
// written, the next lower level is tried and the level actually saved is
// reported. Node counting is left to bench/fusion_models.py nodes (python onnx).
//
// Setup (once):  cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci
// Usage:         node bench/ort_nodes.js [--level all|extended|basic] [--threads 2] bench/out/fusion/<name>/model.onnx ...
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const {readNpy} = require('./npy');

const LEVELS = ['all', 'extended', 'basic', 'disabled'];

function parseArgs(argv) {
  const opts = {level: 'all', threads: 2, models: []};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--level') opts.level = argv[++i];
    else if (argv[i] === '--threads') opts.threads = Number(argv[++i]);
    else if (argv[i] === '-h' || argv[i] === '--help') opts.help = true;
    else opts.models.push(argv[i]);
  }
  if (!LEVELS.includes(opts.level)) throw new Error(`unknown level ${opts.level}`);
  return opts;
}

async function tryLevel(model, level, threads) {
  const dir = path.dirname(model);
  const optimized = path.join(dir, 'ort_optimized.onnx');
  fs.rmSync(optimized, {force: true});
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: level,
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    optimizedModelFilePath: optimized,
    logSeverityLevel: 3,
  });
  const sessionMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (!fs.existsSync(optimized)) throw new Error(`level ${level}: ${optimized} was not written`);
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const a = readNpy(path.join(dir, `input_${i}.npy`));
    feeds[name] = new ort.Tensor(a.type, a.data, a.dims);
  });
  const t1 = process.hrtime.bigint();
  const outputs = await session.run(feeds);
  const runMs = Number(process.hrtime.bigint() - t1) / 1e6;
  const got = outputs[session.outputNames[0]];
  const want = readNpy(path.join(dir, 'torch_output.npy'));
  const result = {
    model, level, optimized, ort_version: ort.env.versions.node || ort.env.versions.common,
    session_ms: Math.round(sessionMs), run_ms: Math.round(runMs),
    output_dims: got.dims, torch_dims: want.dims,
  };
  if (got.dims.join('x') !== want.dims.join('x') || got.data.length !== want.data.length) {
    result.error = 'output shape differs from torch_output.npy';
    return result;
  }
  let maxDiff = 0;
  let maxAbs = 0;
  let nonFinite = 0;
  for (let i = 0; i < got.data.length; i++) {
    const w = Number(want.data[i]);
    const d = Math.abs(Number(got.data[i]) - w);
    if (!Number.isFinite(d)) nonFinite++;
    else if (d > maxDiff) maxDiff = d;
    if (Math.abs(w) > maxAbs) maxAbs = Math.abs(w);
  }
  result.max_abs_diff = maxDiff;
  if (nonFinite) result.non_finite_diffs = nonFinite;
  result.max_abs_torch = maxAbs;
  await session.release();
  return result;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.help || opts.models.length === 0) {
    console.error('usage: node bench/ort_nodes.js [--level all|extended|basic] [--threads N] model.onnx ...');
    process.exit(opts.help ? 0 : 2);
  }
  let failed = false;
  for (const model of opts.models) {
    const failures = [];
    let result = null;
    for (const level of LEVELS.slice(LEVELS.indexOf(opts.level))) {
      try {
        result = await tryLevel(model, level, opts.threads);
        break;
      } catch (e) {
        failures.push({level, error: String(e && e.message ? e.message : e)});
      }
    }
    if (!result) {
      result = {model, error: 'no optimization level could be saved'};
      failed = true;
    }
    if (failures.length) result.failed_levels = failures;
    console.log(JSON.stringify(result));
  }
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
