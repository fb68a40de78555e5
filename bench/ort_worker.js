#!/usr/bin/env node
// ONNX Runtime (onnxruntime-node, CPU) as a runtime of bench/perf_harness.py,
// kept loaded in its own process and driven by the line protocol of
// `tessera serve` (tools/serve.h):
//   first line    ready compile_ms C first_run_ms F threads T
//                 (C: InferenceSession.create; F: its first run), or
//                 "error MESSAGE" if the session cannot be created or run (then exit 1)
//   run N      -> times t1 ... tN     (milliseconds, one session.run each)
//   callers K N -> elapsed MS         (K concurrent loops of N session.run each on the one
//                                      session, as a server's callers: wall time)
//   save DIR   -> saved K             (DIR/output_0.npy ... output_{K-1}.npy)
//   quit / EOF -> exit 0
// A failing request replies "error MESSAGE" and the loop goes on.
// Session: graphOptimizationLevel "all", intraOpNumThreads N, interOpNumThreads 1,
// executionMode "sequential"; inputs <model-dir>/input_0.npy, input_1.npy ...
//
// Setup (once):  cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci
// Usage:         node bench/ort_worker.js --model-dir bench/out/perf/<model> --threads N
//                node bench/ort_worker.js --version
'use strict';

const fs = require('fs');
const path = require('path');
const readline = require('readline');
const ort = require('onnxruntime-node');
const {readNpy, writeNpy} = require('./npy');

function reply(line) {
  process.stdout.write(line + '\n');  // synchronous for pipes on Linux
}

function firstLine(e) {
  const text = String(e && e.message ? e.message : e).trim() || 'unknown error';
  return text.split('\n')[0].replace(/\s+/g, ' ');
}

function parseArgs(argv) {
  const opts = {modelDir: null, threads: 0};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--model-dir') opts.modelDir = argv[++i];
    else if (argv[i] === '--threads') opts.threads = Number(argv[++i]);
    else if (argv[i] === '--version') opts.version = true;
    else if (argv[i] === '-h' || argv[i] === '--help') opts.help = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return opts;
}

function msSince(t0) {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

async function load(modelDir, threads) {
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(path.join(modelDir, 'model.onnx'), {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    logSeverityLevel: 3,
  });
  const loadMs = msSince(t0);
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const file = path.join(modelDir, `input_${i}.npy`);
    if (!fs.existsSync(file)) throw new Error(`no ${file} for graph input ${name}`);
    const a = readNpy(file);
    feeds[name] = new ort.Tensor(a.type, a.data, a.dims);
  });
  return {session, feeds, loadMs};
}

async function handle(s, line) {
  const words = line.trim().split(/\s+/);
  if (words[0] === 'run') {
    const n = words.length === 2 ? Number(words[1]) : NaN;
    if (!Number.isInteger(n) || n < 1 || n > 100000) {
      throw new Error(`'run' expects a count from 1 to 100000, got '${line.trim()}'`);
    }
    const times = [];
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint();
      await s.session.run(s.feeds);
      times.push(msSince(t0));
    }
    return 'times ' + times.map((t) => t.toPrecision(6)).join(' ');
  }
  if (words[0] === 'callers') {
    const k = words.length === 3 ? Number(words[1]) : NaN, n = words.length === 3 ? Number(words[2]) : NaN;
    if (!Number.isInteger(k) || k < 1 || k > 64 || !Number.isInteger(n) || n < 1 || n > 100000) {
      throw new Error(`'callers' expects K (1 to 64) and N (1 to 100000), got '${line.trim()}'`);
    }
    const t0 = process.hrtime.bigint();
    const loop = async () => {
      for (let i = 0; i < n; i++) await s.session.run(s.feeds);
    };
    await Promise.all(Array.from({length: k}, loop));
    return 'elapsed ' + msSince(t0).toPrecision(6);
  }
  if (words[0] === 'save') {
    const dir = line.trim().slice('save'.length).trim();
    if (!dir) throw new Error("'save' expects a directory");
    fs.mkdirSync(dir, {recursive: true});
    const outputs = await s.session.run(s.feeds);
    s.session.outputNames.forEach((name, i) => {
      const t = outputs[name];
      writeNpy(path.join(dir, `output_${i}.npy`), t.dims, t.data);
    });
    return `saved ${s.session.outputNames.length}`;
  }
  throw new Error(`unknown request '${words[0]}' (requests: run N, callers K N, save DIR, quit)`);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.version) {
    reply(`onnxruntime-node ${ort.env.versions.node || ort.env.versions.common}`);
    return 0;
  }
  if (opts.help || !opts.modelDir || !(opts.threads >= 1)) {
    console.error('usage: node bench/ort_worker.js --model-dir DIR --threads N');
    return opts.help ? 0 : 2;
  }
  let s;
  let firstMs;
  try {  // a model that loads but cannot run counts as not loadable: "error" before "ready"
    s = await load(opts.modelDir, opts.threads);
    const t0 = process.hrtime.bigint();
    await s.session.run(s.feeds);
    firstMs = msSince(t0);
  } catch (e) {
    reply('error ' + firstLine(e));
    return 1;
  }
  reply(`ready compile_ms ${s.loadMs.toFixed(1)} first_run_ms ${firstMs.toFixed(1)} threads ${opts.threads}`);
  const rl = readline.createInterface({input: process.stdin, terminal: false});
  for await (const line of rl) {  // one request at a time, in order
    if (!line.trim()) continue;
    if (line.trim().startsWith('quit')) break;
    try {
      reply(await handle(s, line));
    } catch (e) {
      reply('error ' + firstLine(e));
    }
  }
  rl.close();
  await s.session.release();
  return 0;
}

main().then((code) => process.exit(code), (e) => {
  console.error(e);
  process.exit(1);
});
