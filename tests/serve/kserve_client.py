"""A small KServe v2 client on Python's standard library and NumPy, for vmserve's tests:
JSON and binary-extension requests, and starting / stopping the server binary."""
import http.client
import json
import os
import re
import signal
import subprocess
import time

import numpy as np

DATATYPES = {
    "float32": "FP32", "float64": "FP64", "float16": "FP16", "int64": "INT64",
    "int32": "INT32", "int16": "INT16", "int8": "INT8", "uint8": "UINT8", "bool": "BOOL",
}
NUMPY_TYPES = {v: np.dtype(k) for k, v in DATATYPES.items()}


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def outputs(self):
        """The outputs as NumPy arrays, whether sent as JSON or as binary data."""
        length = self.headers.get("inference-header-content-length")
        header = json.loads(self.body[:int(length)] if length else self.body)
        data = self.body[int(length):] if length else b""
        out = {}
        offset = 0
        for o in header["outputs"]:
            dtype = NUMPY_TYPES[o["datatype"]]
            size = o.get("parameters", {}).get("binary_data_size")
            if size is not None:
                arr = np.frombuffer(data[offset:offset + size], dtype=dtype)
                offset += size
            else:
                arr = np.array(o["data"], dtype=dtype)
            out[o["name"]] = arr.reshape(o["shape"])
        return out


class Client:
    def __init__(self, port, timeout=120):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def request(self, method, path, body=None, headers=None):
        self.conn.request(method, path, body=body, headers=headers or {})
        r = self.conn.getresponse()
        body = r.read()
        return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, body)

    def get(self, path):
        return self.request("GET", path)

    def infer_json(self, model, feeds, **extra):
        doc = {"inputs": [{"name": k, "shape": list(v.shape), "datatype": DATATYPES[str(v.dtype)],
                           "data": v.reshape(-1).tolist()} for k, v in feeds.items()]}
        doc.update(extra)
        return self.request("POST", f"/v2/models/{model}/infer", json.dumps(doc),
                            {"Content-Type": "application/json"})

    def infer_binary(self, model, feeds, binary_outputs=True, **extra):
        doc = {"inputs": []}
        blobs = []
        for k, v in feeds.items():
            v = np.asarray(v, order="C")  # (ascontiguousarray makes a scalar 1-d)
            doc["inputs"].append({"name": k, "shape": list(v.shape),
                                  "datatype": DATATYPES[str(v.dtype)],
                                  "parameters": {"binary_data_size": v.nbytes}})
            blobs.append(v.tobytes())
        if binary_outputs:
            doc["parameters"] = {"binary_data_output": True}
        doc.update(extra)
        header = json.dumps(doc).encode()
        return self.request("POST", f"/v2/models/{model}/infer", header + b"".join(blobs),
                            {"Inference-Header-Content-Length": str(len(header)),
                             "Content-Type": "application/octet-stream"})

    def close(self):
        self.conn.close()


class Server:
    """vmserve on a free loopback port; stop() sends SIGTERM and returns the exit code."""

    def __init__(self, binary, args, cwd=None):
        self.proc = subprocess.Popen([binary, "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=cwd)
        line = self.proc.stdout.readline()
        m = re.search(r"on http://[^:]+:(\d+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"vmserve did not start: {line!r} {self.proc.stderr.read()!r}")
        self.port = int(m.group(1))
        self.first_line = line

    def client(self):
        return Client(self.port)

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        self.stdout, self.stderr = out, err
        return self.proc.returncode
