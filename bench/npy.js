// Minimal .npy reading and writing for the Node scripts of bench/
// (ort_nodes.js, ort_worker.js): little-endian float32 and int64, C order,
// format versions 1-3 read, version 1 written.
'use strict';

const fs = require('fs');

const KINDS = {'<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array]};

// Returns {type: 'float32'|'int64', dims: [..], data: Float32Array|BigInt64Array}.
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
  const kind = KINDS[descr[1]];
  if (!kind) throw new Error(`${file}: dtype ${descr[1]} is not supported (float32 and int64 only)`);
  const [type, Ctor] = kind;
  const offset = start + headerLen;
  if (buf.length - offset !== count * Ctor.BYTES_PER_ELEMENT) throw new Error(`${file}: size does not match shape`);
  // copy into a fresh, aligned ArrayBuffer
  const bytes = new Uint8Array(count * Ctor.BYTES_PER_ELEMENT);
  buf.copy(bytes, 0, offset);
  return {type, dims, data: new Ctor(bytes.buffer)};
}

// Writes a Float32Array or BigInt64Array with the given dims as a version 1 .npy file.
function writeNpy(file, dims, data) {
  const descr = data instanceof Float32Array ? '<f4' : data instanceof BigInt64Array ? '<i8' : null;
  if (!descr) throw new Error(`${file}: only Float32Array and BigInt64Array can be written`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64 bytes
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head.writeUInt8(1, 6);
  head.writeUInt8(0, 7);
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

module.exports = {readNpy, writeNpy};
