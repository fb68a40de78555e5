#!/usr/bin/env node
// Times onnxruntime-node's InferenceSession.create on one model, N times in
// this process (the first includes ONNX Runtime's one-time set-up), with the
// session options of bench/ort_worker.js. Prints the times and their median.
// Usage: node bench/ort_session_time.js MODEL.onnx [N=5] [THREADS=2]
'use strict';
const ort = require('onnxruntime-node');

(async () => {
  const [file, n, threads] = [process.argv[2], Number(process.argv[3] || 5), Number(process.argv[4] || 2)];
  if (!file) throw new Error('usage: node bench/ort_session_time.js MODEL.onnx [N] [THREADS]');
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const s = await ort.InferenceSession.create(file, {
      executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: threads,
      interOpNumThreads: 1, executionMode: 'sequential', logSeverityLevel: 3,
    });
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    await s.release();
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(`${file} create_ms ${times.map(t => t.toFixed(0)).join(' ')} median ${sorted[Math.floor(n / 2)].toFixed(0)}`);
})().catch(e => { console.error(String(e)); process.exit(1); });
