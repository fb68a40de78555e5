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

const LEVELS = ['all', 'extended', 'basic', 'disabled'];

// Minimal .npy reader: little-endian float32 and int64, C order, versions 1-3.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.readUInt8(0) !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') {
    throw new Error(`${file}: not a .npy file`);
  }
  const major = buf.readUInt8(6);
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString(major === 3 ? 'utf8' : 'latin1', start, start + headerLen);
  const descr = /'descr'\s*:\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) throw new Error(`${file}: cannot parse header ${header}`);
  if (fortran[1] === 'True') throw new Error(`${file}: Fortran order is not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const kinds = {'<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array]};
  const kind = kinds[descr[1]];
  if (!kind) throw new Error(`${file}: dtype ${descr[1]} is not supported (float32 and int64 only)`);
  const [type, Ctor] = kind;
  const offset = start + headerLen;
  if (buf.length - offset !== count * Ctor.BYTES_PER_ELEMENT) throw new Error(`${file}: size does not match shape`);
  // copy into a fresh, aligned ArrayBuffer
  const bytes = new Uint8Array(count * Ctor.BYTES_PER_ELEMENT);
  buf.copy(bytes, 0, offset);
  return {type, dims, data: new Ctor(bytes.buffer)};
}

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
