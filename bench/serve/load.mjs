#!/usr/bin/env node
// load.mjs - load client for the vmserve benchmark: drives a KServe v2 / Open Inference Protocol server
// (vmserve or ort_server.mjs) with variable-length traffic over HTTP/1.1 keep-alive.
//
// usage:
//   node bench/serve/load.mjs --url http://127.0.0.1:8000 --model NAME --input SPEC [--input SPEC...]
//        [--widths WSPEC] --concurrency C (--requests N | --duration S) [--warmup K] [--seed S]
//        [--const SPEC...] [--pad-to W[,W...]] [--timeout S] [--json]
//
// input SPEC:  name=SHAPE:DTYPE[=VALUE]
//   SHAPE   dims joined by 'x' or ','; a dim is an integer or {W} (the request's width); empty or 'scalar'
//           for a rank-0 tensor. e.g. x=1x3x48x{W}:FP32, state=2x1x128:FP32, sr=:INT64=16000
//   DTYPE   FP32 FP64 INT64 INT32 INT16 INT8 UINT8 BOOL (or float32, int64, ... as ort_run.mjs spells them)
//   VALUE   fill every element with VALUE; without it floats are U[-1,1), integers U[0,10), bools 0/1,
//           from a seeded generator (one buffer per input made at start; a request sends a prefix of it)
//   --const SPEC is the same as --input (for inputs that do not vary, e.g. --const 'sr=scalar:INT64=16000').
// WSPEC (how each request's width W is drawn; needed when a shape has {W}):
//   lognormal:MEDIAN:SIGMA:MIN:MAX   round(MEDIAN * exp(SIGMA * z)), z ~ N(0,1), clamped to [MIN, MAX]
//   uniform:MIN:MAX                  integers in [MIN, MAX]
//   list:A,B,C                       one of the values, uniformly
//   fixed:V
// Widths come from a seeded generator (mulberry32, --seed, default 1) in the order requests are issued, so
// two servers driven with the same seed get the same sequence of widths (warmup draws from its own stream).
// --pad-to W[,W...]  padding baseline: a request's {W} becomes the smallest listed width >= the drawn one;
//                    padding_waste = 1 - sum(drawn widths) / sum(sent widths).
// --warmup K         requests before measuring (default 2*C), not counted.
// --timeout S        per-request timeout in seconds (default 60).
//
// Inputs are sent as binary (Inference-Header-Content-Length) and outputs asked as binary
// (parameters.binary_data_output); C workers send requests back to back over keep-alive connections.
// A request fails when the connection fails, the status is not 200, or the response lacks an output's
// binary_data_size or its sizes do not add up. Latencies and throughput are over successful requests.
// Prints one human line (to stderr with --json) and, with --json, one JSON line on stdout:
//   {model, concurrency, requests, failures, seconds, throughput_rps, p50_ms, p90_ms, p99_ms, mean_ms,
//    mean_width, padding_waste}
// A refused connection (server gone) stops the run early.
// Exit status: 0, 1 when any measured request failed, 2 on bad usage or an unreachable server/model.

import http from 'node:http';

import { dieWith, printUsage } from './cli.mjs';
import { performance } from 'node:perf_hooks';

const die = dieWith('load');
const usage = () => printUsage(import.meta.url);

function parseArgs(argv) {
  const o = {
    url: null, model: null, inputs: [], widths: null, concurrency: 1, requests: null, duration: null,
    warmup: null, seed: 1, padTo: null, timeout: 60, json: false,
  };
  const num = (a, s, isInt) => {
    const v = Number(s);
    if (!Number.isFinite(v) || (isInt && !Number.isInteger(v))) die(`${a} wants a number, got '${s}'`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) die(`missing value after ${a}`);
      return argv[++i];
    };
    switch (a) {
      case '--url': o.url = next(); break;
      case '--model': o.model = next(); break;
      case '--input': case '--const': o.inputs.push(next()); break;
      case '--widths': o.widths = next(); break;
      case '--concurrency': case '-c': o.concurrency = num(a, next(), true); break;
      case '--requests': case '-n': o.requests = num(a, next(), true); break;
      case '--duration': o.duration = num(a, next(), false); break;
      case '--warmup': o.warmup = num(a, next(), true); break;
      case '--seed': o.seed = num(a, next(), true); break;
      case '--pad-to': o.padTo = next(); break;
      case '--timeout': o.timeout = num(a, next(), false); break;
      case '--json': o.json = true; break;
      case '-h': case '--help': usage(); break;
      default: die(`unknown argument ${a} (see --help)`);
    }
  }
  if (!o.url) die('--url is required');
  if (!o.model) die('--model is required');
  if (!o.inputs.length) die('at least one --input is required');
  if (o.concurrency < 1) die('--concurrency must be >= 1');
  if ((o.requests === null) === (o.duration === null)) die('give exactly one of --requests N and --duration S');
  if (o.requests !== null && o.requests < 1) die('--requests must be >= 1');
  if (o.duration !== null && !(o.duration > 0)) die('--duration must be > 0');
  if (o.warmup === null) o.warmup = 2 * o.concurrency;
  if (o.warmup < 0) die('--warmup must be >= 0');
  if (!(o.timeout > 0)) die('--timeout must be > 0');
  return o;
}

// ---------------- seeded random ----------------
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function hashStr(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return h >>> 0;
}

// ---------------- widths ----------------
// Returns { draw(rng) -> integer width, min, max }.
function parseWidths(spec) {
  const p = spec.split(':');
  const ints = (xs, what) => xs.map((s) => {
    const v = Number(s);
    if (!Number.isInteger(v) || v < 0) die(`--widths ${spec}: ${what} '${s}' is not a non-negative integer`);
    return v;
  });
  switch (p[0]) {
    case 'lognormal': {
      if (p.length !== 5) die(`--widths ${spec}: want lognormal:MEDIAN:SIGMA:MIN:MAX`);
      const median = Number(p[1]), sigma = Number(p[2]);
      if (!(median > 0) || !(sigma >= 0)) die(`--widths ${spec}: MEDIAN must be > 0 and SIGMA >= 0`);
      const [min, max] = ints(p.slice(3), 'bound');
      if (min > max) die(`--widths ${spec}: MIN > MAX`);
      return {
        min, max,
        draw(rng) {
          const u1 = 1 - rng(), u2 = rng(); // Box-Muller; u1 in (0, 1]
          const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
          return Math.min(max, Math.max(min, Math.round(median * Math.exp(sigma * z))));
        },
      };
    }
    case 'uniform': {
      if (p.length !== 3) die(`--widths ${spec}: want uniform:MIN:MAX`);
      const [min, max] = ints(p.slice(1), 'bound');
      if (min > max) die(`--widths ${spec}: MIN > MAX`);
      return { min, max, draw: (rng) => min + Math.floor(rng() * (max - min + 1)) };
    }
    case 'list': {
      if (p.length !== 2 || !p[1]) die(`--widths ${spec}: want list:A,B,...`);
      const xs = ints(p[1].split(','), 'value');
      return { min: Math.min(...xs), max: Math.max(...xs), draw: (rng) => xs[Math.floor(rng() * xs.length)] };
    }
    case 'fixed': {
      if (p.length !== 2) die(`--widths ${spec}: want fixed:V`);
      const [v] = ints([p[1]], 'value');
      return { min: v, max: v, draw: () => v };
    }
    default: die(`--widths ${spec}: unknown form (lognormal, uniform, list, fixed)`);
  }
}

// ---------------- inputs ----------------
const DT = {
  FP32: { arr: Float32Array, float: true },
  FP64: { arr: Float64Array, float: true },
  INT64: { arr: BigInt64Array, big: true },
  INT32: { arr: Int32Array },
  INT16: { arr: Int16Array },
  INT8: { arr: Int8Array },
  UINT8: { arr: Uint8Array },
  BOOL: { arr: Uint8Array, bool: true },
};
const DT_ALIAS = {
  float32: 'FP32', float: 'FP32', float64: 'FP64', double: 'FP64', int64: 'INT64', int32: 'INT32',
  int16: 'INT16', int8: 'INT8', uint8: 'UINT8', bool: 'BOOL',
};
// bytes per element of the datatypes a response may carry (for checking binary_data_size)
const ELEM = { FP32: 4, FP64: 8, FP16: 2, BF16: 2, INT64: 8, INT32: 4, INT16: 2, INT8: 1, UINT64: 8, UINT32: 4, UINT16: 2, UINT8: 1, BOOL: 1 };

// name=SHAPE:DTYPE[=VALUE] -> { name, dims: [int | 'W'], datatype, value }
function parseInput(spec) {
  const eq = spec.indexOf('=');
  if (eq <= 0) die(`bad input spec '${spec}' (want name=SHAPE:DTYPE[=VALUE])`);
  const name = spec.slice(0, eq);
  let rest = spec.slice(eq + 1);
  let value = null;
  const eq2 = rest.indexOf('=');
  if (eq2 >= 0) { value = rest.slice(eq2 + 1); rest = rest.slice(0, eq2); }
  const c = rest.lastIndexOf(':');
  if (c < 0) die(`bad input spec '${spec}': no ':DTYPE'`);
  const shapeStr = rest.slice(0, c).trim();
  const dtStr = rest.slice(c + 1).trim();
  const datatype = DT[dtStr.toUpperCase()] ? dtStr.toUpperCase() : DT_ALIAS[dtStr.toLowerCase()];
  if (!datatype) die(`input '${name}': unsupported datatype '${dtStr}'`);
  let dims = [];
  if (!(shapeStr === '' || shapeStr === 'scalar' || shapeStr === '[]' || shapeStr === '()')) {
    dims = shapeStr.split(/[x,]/).map((d) => {
      if (d === '{W}') return 'W';
      const v = Number(d);
      if (!Number.isInteger(v) || v < 0) die(`input '${name}': bad dim '${d}' in '${shapeStr}'`);
      return v;
    });
  }
  if (value !== null) {
    if (DT[datatype].big ? !/^-?\d+$/.test(value) : !Number.isFinite(Number(value))) die(`input '${name}': bad value '${value}'`);
  }
  return { name, dims, datatype, value };
}

// One buffer per input, big enough for the largest width; a request sends a prefix of it.
function makePool(inp, maxElems, seed) {
  const t = DT[inp.datatype];
  const a = new t.arr(Math.max(1, maxElems));
  if (inp.value !== null) {
    a.fill(t.big ? BigInt(inp.value) : Number(inp.value));
  } else {
    const rng = mulberry32((seed ^ hashStr(inp.name)) >>> 0);
    for (let i = 0; i < a.length; i++) {
      const u = rng();
      if (t.float) a[i] = 2 * u - 1;
      else if (t.bool) a[i] = u < 0.5 ? 0 : 1;
      else if (t.big) a[i] = BigInt(Math.floor(10 * u));
      else a[i] = Math.floor(10 * u);
    }
  }
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

// ---------------- HTTP ----------------
function getJson(agent, url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) return reject(new Error(`GET ${url}: ${res.statusCode} ${text.slice(0, 200)}`));
        try { resolve(JSON.parse(text)); } catch { reject(new Error(`GET ${url}: body is not JSON`)); }
      });
      res.on('error', reject);
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on('error', reject);
  });
}

// Checks a binary response; returns null when good, else why not.
function checkResponse(status, headers, body) {
  if (status !== 200) {
    let why = body.toString('utf8', 0, Math.min(body.length, 300));
    try { why = JSON.parse(why).error ?? why; } catch { /* keep the raw text */ }
    return { kind: 'http', why: `HTTP ${status}: ${why}` };
  }
  const hl = headers['inference-header-content-length'];
  const L = hl === undefined ? body.length : Number(hl);
  if (!Number.isInteger(L) || L > body.length) return { kind: 'bad', why: `bad Inference-Header-Content-Length ${hl}` };
  let r;
  try { r = JSON.parse(body.toString('utf8', 0, L)); } catch { return { kind: 'bad', why: 'response header is not JSON' }; }
  if (!Array.isArray(r.outputs) || !r.outputs.length) return { kind: 'bad', why: 'response has no outputs' };
  let sum = 0;
  for (const out of r.outputs) {
    const n = out?.parameters?.binary_data_size;
    if (!Number.isInteger(n) || n < 0) return { kind: 'bad', why: `output '${out?.name}' has no binary_data_size` };
    const e = ELEM[out.datatype];
    if (e && Array.isArray(out.shape) && out.shape.reduce((a, b) => a * b, 1) * e !== n) {
      return { kind: 'bad', why: `output '${out.name}': binary_data_size ${n} does not match shape [${out.shape}] ${out.datatype}` };
    }
    sum += n;
  }
  if (L + sum !== body.length) return { kind: 'bad', why: `body has ${body.length - L} binary bytes, outputs say ${sum}` };
  return null;
}

function percentile(sorted, p) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  let base;
  try { base = new URL(o.url); } catch { die(`bad --url ${o.url}`); }
  if (base.protocol !== 'http:') die('--url must be http://');
  const prefix = base.pathname.replace(/\/+$/, '');
  const inferPath = `${prefix}/v2/models/${encodeURIComponent(o.model)}/infer`;

  const inputs = o.inputs.map(parseInput);
  const names = new Set();
  for (const x of inputs) { if (names.has(x.name)) die(`input '${x.name}' given twice`); names.add(x.name); }
  const usesW = inputs.some((x) => x.dims.includes('W'));
  if (usesW && !o.widths) die('an input shape has {W}: give --widths');
  const widths = o.widths ? parseWidths(o.widths) : { min: 0, max: 0, draw: () => 0 };
  let buckets = null;
  if (o.padTo) {
    if (!usesW) die('--pad-to needs an input shape with {W}');
    buckets = o.padTo.split(',').map((s) => {
      const v = Number(s);
      if (!Number.isInteger(v) || v < 1) die(`--pad-to: bad width '${s}'`);
      return v;
    }).sort((a, b) => a - b);
    if (buckets[buckets.length - 1] < widths.max) die(`--pad-to: largest width ${buckets[buckets.length - 1]} < the widths' max ${widths.max}`);
  }
  const sentWidth = (w) => (buckets ? buckets.find((b) => b >= w) : w);
  const maxSent = sentWidth(widths.max);

  const elems = (dims, w) => dims.reduce((a, d) => a * (d === 'W' ? w : d), 1);
  const pools = inputs.map((x) => makePool(x, elems(x.dims, maxSent), o.seed));
  const elemSize = inputs.map((x) => DT[x.datatype].arr.BYTES_PER_ELEMENT);

  const agent = new http.Agent({ keepAlive: true, maxSockets: o.concurrency });
  // The model must exist; its metadata also tells which inputs the spec forgot.
  let meta;
  try {
    meta = await getJson(agent, `${base.origin}${prefix}/v2/models/${encodeURIComponent(o.model)}`);
  } catch (e) {
    die(`cannot reach model '${o.model}': ${e.message}`);
  }
  if (Array.isArray(meta?.inputs)) {
    const missing = meta.inputs.map((x) => x.name).filter((n) => !names.has(n));
    if (missing.length) process.stderr.write(`load: warning: model inputs not given: ${missing.join(', ')}\n`);
  }

  const timeoutMs = o.timeout * 1000;
  function send(w) {
    let bytes = 0;
    const parts = inputs.map((x, i) => {
      const shape = x.dims.map((d) => (d === 'W' ? w : d));
      const n = elems(x.dims, w) * elemSize[i];
      bytes += n;
      return { name: x.name, shape, datatype: x.datatype, parameters: { binary_data_size: n } };
    });
    const header = Buffer.from(JSON.stringify({ inputs: parts, parameters: { binary_data_output: true } }));
    return new Promise((resolve) => {
      const t0 = performance.now();
      let done = false;
      const finish = (err) => {
        if (done) return;
        done = true;
        resolve({ err, ms: performance.now() - t0 });
      };
      const req = http.request({
        agent, host: base.hostname, port: base.port || 80, method: 'POST', path: inferPath,
        headers: {
          'Content-Type': 'application/octet-stream', 'Content-Length': header.length + bytes,
          'Inference-Header-Content-Length': header.length,
        },
      }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => finish(checkResponse(res.statusCode, res.headers, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))));
        res.on('error', (e) => finish({ kind: 'net', why: e.message }));
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`timed out after ${o.timeout} s`)));
      req.on('error', (e) => finish({ kind: 'net', why: e.message || e.code, refused: e.code === 'ECONNREFUSED' }));
      req.write(header);
      inputs.forEach((x, i) => req.write(pools[i].subarray(0, elems(x.dims, w) * elemSize[i])));
      req.end();
    });
  }

  // Runs `count` requests (or until `deadline`) on C workers; widths from `rng` in issue order.
  // A refused connection (the server went away) ends the phase.
  let refused = false;
  async function phase(rng, count, deadline, record) {
    let issued = 0;
    const worker = async () => {
      for (;;) {
        if (refused) return;
        if (count !== null && issued >= count) return;
        if (deadline !== null && performance.now() >= deadline) return;
        issued++;
        const drawn = widths.draw(rng);
        const r = await send(sentWidth(drawn));
        if (r.err?.refused) refused = true;
        record(r, drawn);
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, worker));
  }

  const errors = new Map(); // why -> count
  const noteError = (e) => errors.set(e.why, (errors.get(e.why) ?? 0) + 1);

  if (o.warmup > 0) {
    let ok = 0;
    await phase(mulberry32((o.seed ^ 0x5bd1e995) >>> 0), o.warmup, null, (r) => { if (r.err) noteError(r.err); else ok++; });
    if (ok === 0) die(`all ${o.warmup} warmup requests failed: ${[...errors.keys()][0]}`);
    errors.clear();
  }

  const lat = [];
  let failures = 0, httpFailures = 0, badResponses = 0, netFailures = 0, sumDrawn = 0, sumSent = 0, n = 0;
  const t0 = performance.now();
  await phase(mulberry32(o.seed), o.requests, o.duration !== null ? t0 + o.duration * 1000 : null, (r, drawn) => {
    n++;
    sumDrawn += drawn;
    sumSent += sentWidth(drawn);
    if (r.err) {
      failures++;
      if (r.err.kind === 'http') httpFailures++; else if (r.err.kind === 'bad') badResponses++; else netFailures++;
      noteError(r.err);
    } else {
      lat.push(r.ms);
    }
  });
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();

  lat.sort((a, b) => a - b);
  const r3 = (x) => (x === null || x === undefined ? null : Math.round(x * 1000) / 1000);
  const report = {
    model: o.model, concurrency: o.concurrency, requests: n, failures,
    seconds: r3(seconds), throughput_rps: r3(lat.length / seconds),
    p50_ms: r3(percentile(lat, 0.5)), p90_ms: r3(percentile(lat, 0.9)), p99_ms: r3(percentile(lat, 0.99)),
    mean_ms: r3(lat.length ? lat.reduce((a, b) => a + b, 0) / lat.length : null),
    mean_width: usesW ? r3(sumDrawn / n) : null,
    padding_waste: usesW ? r3(sumSent ? 1 - sumDrawn / sumSent : 0) : null,
  };
  if (failures) Object.assign(report, { http_failures: httpFailures, bad_responses: badResponses, net_failures: netFailures });

  const f = (x) => (x === null ? '-' : x.toFixed(2));
  let line = `load: ${o.model} c=${o.concurrency} ${n} requests (${failures} failed) in ${seconds.toFixed(2)} s: ` +
    `${report.throughput_rps.toFixed(1)} req/s, latency ms p50 ${f(report.p50_ms)} p90 ${f(report.p90_ms)} ` +
    `p99 ${f(report.p99_ms)} mean ${f(report.mean_ms)}`;
  if (usesW) line += `, mean width ${report.mean_width.toFixed(1)}${buckets ? `, padded to ${buckets.join(',')}: waste ${(100 * report.padding_waste).toFixed(1)}%` : ''}`;
  (o.json ? process.stderr : process.stdout).write(line + '\n');
  if (refused) process.stderr.write('load: the server refused a connection: stopped early\n');
  for (const [why, k] of errors) process.stderr.write(`load: ${k} x ${why}\n`);
  if (o.json) process.stdout.write(JSON.stringify(report) + '\n');
  if (failures) process.exitCode = 1;
}

main().catch((e) => die(e?.stack ?? String(e)));
