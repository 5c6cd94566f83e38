#!/usr/bin/env node
// ort_server.mjs - the peer server for the vmserve load benchmark: ONNX Runtime (onnxruntime-node, CPU EP)
// behind a small HTTP/1.1 server speaking the subset of the KServe v2 / Open Inference Protocol that
// vmserve speaks.
//
// usage:
//   node bench/serve/ort_server.mjs [NAME=]MODEL.onnx [more...] --port P [--threads N] [--workers K]
//        [--host 127.0.0.1]
//
//   NAME         model name in URLs (default: the file's base name without .onnx)
//   --threads N  intraOpNumThreads of every session (default 1); interOpNumThreads is 1, execution sequential
//   --workers K  K server processes (node:cluster) sharing the port, each with its own sessions (default 1)
//
// endpoints:
//   GET  /v2                                   server metadata
//   GET  /v2/health/live, /v2/health/ready     200, empty body
//   GET  /v2/models/NAME[/versions/1]          model metadata (symbolic dims as -1)
//   GET  /v2/models/NAME[/versions/1]/ready    200, empty body
//   POST /v2/models/NAME[/versions/1]/infer    inference; JSON body, or the binary tensor extension
//                                              (header Inference-Header-Content-Length: JSON length)
// Outputs are binary when the request's top-level parameters.binary_data_output is true or the output's own
// parameters.binary_data is true (the per-output flag wins when both are given).
// Errors: 400 {"error": "..."} for bad requests and failed runs, 404 unknown model or path, 405 wrong method,
// 413 body over 1 GiB.
//
// Concurrency: onnxruntime-node's session.run returns a promise but runs the model synchronously on the
// JavaScript thread (backend.js defers it with setImmediate), so one process runs one request at a time
// (with N intra-op threads) while others queue in the event loop. --workers K gives K processes, hence up to
// K runs at once; the cluster primary hands each new connection to the next worker (round robin), so a
// keep-alive connection stays on one worker: use at least K client connections.
// onnxruntime-node is loaded from $ORT_NODE_DIR (default ~/.cache/onnxruntime-node).

import { createRequire } from 'node:module';
import cluster from 'node:cluster';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { dieWith, printUsage } from './cli.mjs';

const ortDir = process.env.ORT_NODE_DIR || path.join(process.env.HOME || '/root', '.cache', 'onnxruntime-node');
const require = createRequire(path.join(ortDir, 'package.json'));
const ort = require('onnxruntime-node');

const MAX_BODY = 1 << 30;

const die = dieWith('ort_server');
const usage = () => printUsage(import.meta.url);

function parseArgs(argv) {
  const o = { models: [], port: null, host: '127.0.0.1', threads: 1, workers: 1 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) die(`missing value after ${a}`);
      return argv[++i];
    };
    switch (a) {
      case '--port': o.port = Number(next()); break;
      case '--host': o.host = next(); break;
      case '--threads': o.threads = Number(next()); break;
      case '--workers': o.workers = Number(next()); break;
      case '-h': case '--help': usage(); break;
      default: {
        if (a.startsWith('-')) die(`unknown option ${a}`);
        // NAME=MODEL.onnx, unless the '=' belongs to the path (no such file named NAME=...)
        const eq = a.indexOf('=');
        let name = null, file = a;
        if (eq > 0 && !fs.existsSync(a)) { name = a.slice(0, eq); file = a.slice(eq + 1); }
        if (!name) name = path.basename(file).replace(/\.onnx$/i, '');
        if (!fs.existsSync(file)) die(`no such model file: ${file}`);
        if (o.models.some((m) => m.name === name)) die(`model name '${name}' given twice`);
        o.models.push({ name, file });
      }
    }
  }
  if (!o.models.length) die('no model given (see --help)');
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) die('--port P is required (0..65535)');
  if (!Number.isInteger(o.threads) || o.threads < 1) die('--threads must be an integer >= 1');
  if (!Number.isInteger(o.workers) || o.workers < 1) die('--workers must be an integer >= 1');
  return o;
}

// ---------------- datatypes ----------------
// KServe datatype -> onnxruntime tensor type, typed array, element size.
const KS = {
  FP32: { ort: 'float32', arr: Float32Array },
  FP64: { ort: 'float64', arr: Float64Array },
  FP16: { ort: 'float16', arr: Uint16Array, noJson: true },
  INT8: { ort: 'int8', arr: Int8Array },
  INT16: { ort: 'int16', arr: Int16Array },
  INT32: { ort: 'int32', arr: Int32Array },
  INT64: { ort: 'int64', arr: BigInt64Array, big: true },
  UINT8: { ort: 'uint8', arr: Uint8Array },
  UINT16: { ort: 'uint16', arr: Uint16Array },
  UINT32: { ort: 'uint32', arr: Uint32Array },
  UINT64: { ort: 'uint64', arr: BigUint64Array, big: true },
  BOOL: { ort: 'bool', arr: Uint8Array, bool: true },
};
const ORT2KS = {
  float32: 'FP32', float64: 'FP64', float16: 'FP16', bfloat16: 'BF16', int8: 'INT8', int16: 'INT16',
  int32: 'INT32', int64: 'INT64', uint8: 'UINT8', uint16: 'UINT16', uint32: 'UINT32', uint64: 'UINT64',
  bool: 'BOOL', string: 'BYTES',
};

class HttpError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}
const bad = (msg) => new HttpError(400, msg);

// ---------------- models ----------------
async function loadModels(specs, threads) {
  const so = {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: threads,
    interOpNumThreads: 1, executionMode: 'sequential',
  };
  const models = new Map();
  for (const { name, file } of specs) {
    let session;
    try {
      session = await ort.InferenceSession.create(file, so);
    } catch (e) {
      die(`cannot load ${file}: ${String(e?.message ?? e).split('\n')[0]}`);
    }
    const describe = (names, meta) => names.map((n, i) => {
      const m = meta?.find((x) => x.name === n) ?? meta?.[i];
      if (!m || m.isTensor === false || !m.shape) return { name: n, datatype: m?.type ? ORT2KS[m.type] ?? m.type : '', shape: [] };
      return {
        name: n, datatype: ORT2KS[m.type] ?? String(m.type),
        shape: m.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : -1)),
      };
    });
    const inputs = describe(session.inputNames, session.inputMetadata);
    const outputs = describe(session.outputNames, session.outputMetadata);
    models.set(name, {
      name, session, inputs, outputs,
      meta: JSON.stringify({ name, versions: ['1'], platform: 'onnxruntime', inputs, outputs }),
    });
  }
  return models;
}

// ---------------- request decoding ----------------
function flatten(v, out) {
  if (Array.isArray(v)) for (const x of v) flatten(x, out);
  else out.push(v);
  return out;
}

function checkShape(name, shape) {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw bad(`input '${name}': shape must be an array of non-negative integers`);
  }
  return shape.reduce((a, b) => a * b, 1);
}

function jsonToTyped(name, dt, t, data, count) {
  if (t.noJson) throw bad(`input '${name}': ${dt} data must be sent as binary`);
  const flat = flatten(data, []);
  if (flat.length !== count) throw bad(`input '${name}': ${flat.length} values for shape of ${count} elements`);
  const a = new t.arr(count);
  for (let i = 0; i < count; i++) {
    const v = flat[i];
    if (t.bool) {
      if (typeof v !== 'boolean' && typeof v !== 'number') throw bad(`input '${name}': BOOL data must be true/false`);
      a[i] = v ? 1 : 0;
    } else if (typeof v !== 'number') {
      throw bad(`input '${name}': data must be numbers`);
    } else if (t.big) {
      if (!Number.isInteger(v)) throw bad(`input '${name}': ${dt} data must be integers`);
      a[i] = BigInt(v);
    } else {
      a[i] = v;
    }
  }
  return a;
}

// A typed array over body[off, off+bytes): a view when aligned, else an aligned copy.
function binaryToTyped(t, body, off, count) {
  const bytes = count * t.arr.BYTES_PER_ELEMENT;
  const start = body.byteOffset + off;
  if (start % t.arr.BYTES_PER_ELEMENT === 0) return new t.arr(body.buffer, start, count);
  const a = new t.arr(count);
  new Uint8Array(a.buffer).set(body.subarray(off, off + bytes));
  return a;
}

function parseInfer(model, body, headerLenStr) {
  let jsonEnd = body.length;
  if (headerLenStr !== undefined) {
    const L = Number(headerLenStr);
    if (!Number.isInteger(L) || L < 0 || L > body.length) {
      throw bad(`Inference-Header-Content-Length ${headerLenStr} is invalid for a body of ${body.length} bytes`);
    }
    jsonEnd = L;
  }
  let req;
  try {
    req = JSON.parse(body.toString('utf8', 0, jsonEnd));
  } catch (e) {
    throw bad(`malformed JSON: ${String(e.message).split('\n')[0]}`);
  }
  if (!req || typeof req !== 'object' || !Array.isArray(req.inputs)) throw bad("request needs an 'inputs' array");

  const feeds = {};
  let off = jsonEnd;
  for (const inp of req.inputs) {
    if (!inp || typeof inp.name !== 'string') throw bad('every input needs a name');
    const name = inp.name;
    const spec = model.inputs.find((x) => x.name === name);
    if (!spec) throw bad(`model '${model.name}' has no input '${name}' (inputs: ${model.inputs.map((x) => x.name).join(', ')})`);
    if (name in feeds) throw bad(`input '${name}' given twice`);
    const dt = inp.datatype;
    const t = KS[dt];
    if (!t) throw bad(`input '${name}': unsupported datatype ${JSON.stringify(dt)}`);
    if (spec.datatype && spec.datatype !== dt) throw bad(`input '${name}': datatype ${dt}, model wants ${spec.datatype}`);
    const count = checkShape(name, inp.shape);
    const bsize = inp.parameters?.binary_data_size;
    let data;
    if (bsize !== undefined) {
      if (headerLenStr === undefined) throw bad(`input '${name}': binary_data_size without Inference-Header-Content-Length`);
      const want = count * t.arr.BYTES_PER_ELEMENT;
      if (bsize !== want) throw bad(`input '${name}': binary_data_size ${bsize}, shape [${inp.shape}] ${dt} needs ${want}`);
      if (off + bsize > body.length) throw bad(`input '${name}': binary data runs past the end of the body`);
      data = binaryToTyped(t, body, off, count);
      off += bsize;
    } else {
      if (inp.data === undefined) throw bad(`input '${name}' has neither data nor parameters.binary_data_size`);
      data = jsonToTyped(name, dt, t, inp.data, count);
    }
    feeds[name] = new ort.Tensor(t.ort, data, inp.shape);
  }
  if (off !== body.length) throw bad(`${body.length - off} bytes of binary data left over after the inputs`);
  for (const s of model.inputs) if (!(s.name in feeds)) throw bad(`missing input '${s.name}'`);

  const binAll = req.parameters?.binary_data_output === true;
  let outs;
  if (req.outputs !== undefined) {
    if (!Array.isArray(req.outputs)) throw bad("'outputs' must be an array");
    outs = req.outputs.map((o) => {
      if (!o || typeof o.name !== 'string') throw bad('every requested output needs a name');
      if (!model.outputs.some((x) => x.name === o.name)) throw bad(`model '${model.name}' has no output '${o.name}'`);
      const b = o.parameters?.binary_data;
      return { name: o.name, binary: typeof b === 'boolean' ? b : binAll };
    });
  } else {
    outs = model.outputs.map((x) => ({ name: x.name, binary: binAll }));
  }
  return { id: req.id, feeds, outs };
}

// ---------------- response encoding ----------------
function jsonData(t) {
  const d = t.data;
  if (t.type === 'bool') return `[${Array.from(d, (v) => (v ? 'true' : 'false')).join(',')}]`;
  if (t.type === 'string') return JSON.stringify(Array.from(d));
  if (t.type === 'float16' || t.type === 'bfloat16') throw bad(`output type ${t.type} can only be returned as binary`);
  if (d instanceof BigInt64Array || d instanceof BigUint64Array) return `[${d.join(',')}]`;
  // JSON has no NaN/Infinity: like JSON.stringify, write them as null
  let s = d.join(',');
  if (s.includes('N') || s.includes('I')) s = Array.from(d, (v) => (Number.isFinite(v) ? String(v) : 'null')).join(',');
  return `[${s}]`;
}

function binaryData(t) {
  if (t.type === 'string') { // BYTES: each element as a 4-byte little-endian length and the bytes
    const parts = [];
    for (const s of t.data) {
      const b = Buffer.from(String(s), 'utf8');
      const n = Buffer.alloc(4); n.writeUInt32LE(b.length, 0);
      parts.push(n, b);
    }
    return Buffer.concat(parts);
  }
  const d = t.data;
  return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
}

function sendJson(res, status, obj) {
  const b = Buffer.from(typeof obj === 'string' ? obj : JSON.stringify(obj));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': b.length });
  res.end(b);
}

function sendEmpty(res, status) {
  res.writeHead(status, { 'Content-Length': 0 });
  res.end();
}

async function infer(model, body, headerLen, res) {
  const { id, feeds, outs } = parseInfer(model, body, headerLen);
  let results;
  try {
    results = await model.session.run(feeds, outs.map((o) => o.name));
  } catch (e) {
    throw bad(`inference failed: ${String(e?.message ?? e).split('\n')[0]}`);
  }
  const bins = [];
  const parts = [];
  for (const o of outs) {
    const t = results[o.name];
    const dt = ORT2KS[t.type] ?? String(t.type);
    const head = `{"name":${JSON.stringify(o.name)},"datatype":"${dt}","shape":[${t.dims.join(',')}]`;
    if (o.binary) {
      const b = binaryData(t);
      bins.push(b);
      parts.push(`${head},"parameters":{"binary_data_size":${b.length}}}`);
    } else {
      parts.push(`${head},"data":${jsonData(t)}}`);
    }
  }
  const idPart = typeof id === 'string' ? `,"id":${JSON.stringify(id)}` : '';
  const header = Buffer.from(`{"model_name":${JSON.stringify(model.name)},"model_version":"1"${idPart},"outputs":[${parts.join(',')}]}`);
  if (!bins.length) {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': header.length });
    res.end(header);
    return;
  }
  const total = bins.reduce((a, b) => a + b.length, header.length);
  res.writeHead(200, {
    'Content-Type': 'application/octet-stream', 'Content-Length': total,
    'Inference-Header-Content-Length': header.length,
  });
  res.write(header);
  for (const b of bins) res.write(b);
  res.end();
}

// ---------------- routing ----------------
function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let n = 0;
    req.on('data', (c) => {
      n += c.length;
      if (n > MAX_BODY) { reject(new HttpError(413, `body over ${MAX_BODY} bytes`)); req.destroy(); return; }
      chunks.push(c);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, n)));
    req.on('error', reject);
  });
}

function makeHandler(models) {
  const serverMeta = JSON.stringify({ name: 'ort_server', version: ort.env?.versions?.common ?? '', extensions: ['binary_tensor_data'] });
  return async (req, res) => {
    try {
      const url = new URL(req.url, 'http://x');
      const p = url.pathname.replace(/\/+$/, '');
      const method = req.method;
      const want = (m) => { if (method !== m) throw new HttpError(405, `${method} not allowed on ${p}`); };
      if (p === '/v2') { want('GET'); return sendJson(res, 200, serverMeta); }
      if (p === '/v2/health/live' || p === '/v2/health/ready') { want('GET'); return sendEmpty(res, 200); }
      const m = /^\/v2\/models\/([^/]+)(?:\/versions\/([^/]+))?(\/ready|\/infer)?$/.exec(p);
      if (!m) throw new HttpError(404, `no such path: ${p}`);
      const name = decodeURIComponent(m[1]);
      const model = models.get(name);
      if (!model) throw new HttpError(404, `unknown model '${name}'`);
      if (m[2] !== undefined && m[2] !== '1') throw new HttpError(404, `model '${name}' has no version '${m[2]}'`);
      if (!m[3]) { want('GET'); return sendJson(res, 200, model.meta); }
      if (m[3] === '/ready') { want('GET'); return sendEmpty(res, 200); }
      want('POST');
      const body = await readBody(req);
      await infer(model, body, req.headers['inference-header-content-length'], res);
    } catch (e) {
      if (!(e instanceof HttpError)) process.stderr.write(`ort_server: ${e?.stack ?? e}\n`);
      const status = e instanceof HttpError ? e.status : 500;
      if (res.headersSent) { res.destroy(); return; }
      // drain what is left of the request so the connection stays usable
      req.resume();
      sendJson(res, status, { error: String(e?.message ?? e).split('\n')[0] });
    }
  };
}

function readyLine(host, port) {
  const h = host.includes(':') ? `[${host}]` : host;
  process.stdout.write(`ort_server: listening on http://${h}:${port}\n`);
}

// --workers K > 1: this process only forks the workers, prints the ready line once all listen, and stops them.
function primary(o) {
  let listening = 0, stopping = false;
  for (let i = 0; i < o.workers; i++) cluster.fork();
  cluster.on('message', (w, msg) => {
    if (msg?.listening !== undefined && ++listening === o.workers) readyLine(o.host, msg.listening);
  });
  cluster.on('exit', (w, code, signal) => {
    if (stopping) {
      if (!Object.keys(cluster.workers).length) process.exit(0);
      return;
    }
    process.stderr.write(`ort_server: worker ${w.process.pid} exited (${signal ?? code}); stopping\n`);
    for (const x of Object.values(cluster.workers)) x.process.kill('SIGTERM');
    process.exit(listening === o.workers ? 1 : 2);
  });
  const stop = () => {
    if (stopping) return;
    stopping = true;
    const ws = Object.values(cluster.workers);
    if (!ws.length) process.exit(0);
    for (const w of ws) w.process.kill('SIGTERM');
    setTimeout(() => process.exit(0), 3000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

async function serve(o) {
  const models = await loadModels(o.models, o.threads);
  const server = http.createServer({ keepAliveTimeout: 75_000 }, makeHandler(models));
  server.keepAliveTimeout = 75_000;
  server.headersTimeout = 80_000;
  server.on('error', (e) => die(`${e.message}`));
  server.listen(o.port, o.host, () => {
    const { port } = server.address();
    if (cluster.isWorker) process.send({ listening: port });
    else readyLine(o.host, port);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  // a terminal's Ctrl-C reaches the workers too: they leave stopping to the primary
  process.on('SIGINT', cluster.isWorker ? () => {} : stop);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.workers > 1 && cluster.isPrimary) primary(o);
  else await serve(o);
}

main().catch((e) => die(e?.stack ?? String(e)));
