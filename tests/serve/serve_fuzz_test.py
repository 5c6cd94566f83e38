"""Thousands of malformed and hostile requests against one vmserve: each is answered (an
HTTP status, 4xx for the malformed ones; a request cut off before it ends may only be
closed), the server stays up, and afterwards still answers correctly.

  VMSERVE=... SERVE_WORK=... SOURCE_DIR=... /usr/bin/python3 serve_fuzz_test.py
"""
import concurrent.futures
import json
import os
import random
import socket
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kserve_client import Server  # noqa: E402

VMSERVE = os.environ["VMSERVE"]
WORK = os.environ["SERVE_WORK"]
SOURCE = os.environ["SOURCE_DIR"]
CASE = os.path.join(SOURCE, "tests", "e2e", "models", "silero_vad", "cases", "6")
REQUESTS = int(os.environ.get("FUZZ_REQUESTS", 2400))


def http_request(path, body, headers=(), content_length=None):
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    head.append(f"Content-Length: {len(body) if content_length is None else content_length}")
    head += list(headers)
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def send(port, raw, complete):
    """Sends `raw` and returns the answer's status (None: closed unanswered). A request
    that is not `complete` is followed by closing the writing side, so that the server
    sees it end instead of waiting for the rest."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        try:
            s.sendall(raw)
            if not complete:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered (413) and closed before reading everything
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
    if not data:
        return None, b""
    # The first response (a request line the server cut into pieces may get more).
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status_line = lines[0].split()
    assert status_line[0].startswith(b"HTTP/1."), data[:100]
    length = next((int(h.split(b":", 1)[1]) for h in lines[1:]
                   if h.lower().startswith(b"content-length:")), len(rest))
    return int(status_line[1]), rest[:length]


class Fuzz(unittest.TestCase):
    def test_hostile_requests_are_answered_and_the_server_stays_up(self):
        server = Server(VMSERVE, [os.path.join(WORK, "silero.vmexe"),
                                  os.path.join(WORK, "text.vmexe"), "--threads", "2",
                                  "--max-body-mb", "1", "--read-timeout-ms", "300",
                                  "--shapes-out", ""])
        rng = random.Random(11)
        feeds = {n: np.load(os.path.join(CASE, "inputs", n + ".npy"))
                 for n in ("input", "state", "sr")}
        types = {"input": "FP32", "state": "FP32", "sr": "INT64"}
        json_doc = {"inputs": [{"name": n, "shape": list(v.shape), "datatype": types[n],
                                "data": v.reshape(-1).tolist()} for n, v in feeds.items()]}
        json_body = json.dumps(json_doc).encode()
        bin_doc = {"inputs": [{"name": n, "shape": list(v.shape), "datatype": types[n],
                               "parameters": {"binary_data_size": v.nbytes}}
                              for n, v in feeds.items()],
                   "parameters": {"binary_data_output": True}}
        bin_header = json.dumps(bin_doc).encode()
        bin_body = bin_header + b"".join(v.tobytes() for v in feeds.values())
        infer = "/v2/models/silero/infer"
        ihcl = "Inference-Header-Content-Length"

        def mutate(body):
            b = bytearray(body)
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(b))
                b[i] = rng.randrange(256)
            return bytes(b)

        def hostile_doc():
            doc = json.loads(json.dumps(json_doc))
            t = rng.choice(doc["inputs"])
            choice = rng.randrange(9)
            if choice == 0:
                t["shape"] = [rng.choice([-1, -(1 << 62), 0, 1 << 62, 1 << 31]) for _ in t["shape"]]
            elif choice == 1:
                t["datatype"] = rng.choice(["FP64", "INT8", "BOOL", "BYTES", "fp32", "", 7, None])
            elif choice == 2:
                t["data"] = t["data"][: rng.randrange(len(t["data"]) + 1)]
            elif choice == 3:
                t["data"] = [[[x]] for x in t["data"]]  # nested deeper than the shape
            elif choice == 4:
                t["data"] = ["a"] * len(t["data"]) if t["data"] else [None]
            elif choice == 5:
                t["shape"] = t["shape"] + [1] * rng.randrange(1, 4)
            elif choice == 6:
                del t[rng.choice(["name", "shape", "datatype", "data"])]
            elif choice == 7:
                t["name"] = rng.choice(["", "x" * 1000, "input\n", None, 3])
            else:
                doc["inputs"].append(dict(t))  # the same input twice
            return json.dumps(doc).encode()

        def hostile_binary():
            doc = json.loads(bin_header)
            t = rng.choice(doc["inputs"])
            choice = rng.randrange(5)
            data = b"".join(v.tobytes() for v in feeds.values())
            if choice == 0:
                t["parameters"]["binary_data_size"] = rng.choice([0, 1, -4, 1 << 60, 10 ** 30])
            elif choice == 1:
                t["shape"] = [1 << 40, 1 << 40][: len(t["shape"])] or [1 << 40]
            elif choice == 2:
                data = data[: rng.randrange(len(data))]
            elif choice == 3:  # NaN-filled floats: a valid request, answered 200
                data = np.full(len(data) // 4, np.nan, np.float32).tobytes()
                sr = feeds["sr"].tobytes()
                data = data[: len(data) - len(sr)] + sr
            else:
                t["parameters"] = {"binary_data_size": "big"}
            header = json.dumps(doc).encode()
            return header + data, [f"{ihcl}: {len(header)}"]

        def deep_nesting():
            n = rng.choice([100, 10000, 100000])
            return ('{"inputs":[{"name":"sr","shape":[],"datatype":"INT64","data":' + "[" * n +
                    "1" + "]" * n + "}]}").encode()

        requests = []
        for k in range(REQUESTS):
            kind = k % 12
            expect_4xx = True
            if kind == 0:  # a valid request cut anywhere, headers included
                raw = http_request(infer, bin_body, [f"{ihcl}: {len(bin_header)}"])
                raw = raw[: rng.randrange(len(raw))]
                expect_4xx = None  # cut inside the headers: closing is an answer too
            elif kind == 1:
                raw = http_request(infer, mutate(json_body))
                expect_4xx = False
            elif kind == 2:
                raw = http_request(infer, mutate(bin_body), [f"{ihcl}: {len(bin_header)}"])
                expect_4xx = False
            elif kind == 3:
                raw = http_request(infer, hostile_doc())
                expect_4xx = False  # some mutations leave a valid request
            elif kind == 4:
                body, headers = hostile_binary()
                raw = http_request(infer, body, headers)
                expect_4xx = False
            elif kind == 5:
                raw = http_request(infer, bin_body,
                                   [f"{ihcl}: " + rng.choice(["-1", "abc", "99999999999999999999",
                                                             str(len(bin_body) + 1), "", "1e3"])])
            elif kind == 6:  # Content-Length huge (413 before reading) or beyond the body
                declared = rng.choice([len(json_body) + 100, 1 << 40, 10 ** 12])
                raw = http_request(infer, json_body, content_length=declared)
                expect_4xx = True if declared > 1 << 20 else None
            elif kind == 7:
                raw = http_request(infer, deep_nesting())
            elif kind == 8:
                raw = (rng.choice(["GET", "PUT", "BREW", "POST"]) + " " +
                       rng.choice(["/v2/models/" + "x" * rng.randrange(1, 5000), "/%00",
                                   "/v2/models/silero/infer?x=1", "*", "/v2/../etc/passwd"]) +
                       " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").encode()
                expect_4xx = False
            elif kind == 9:  # garbage headers
                raw = (b"POST " + infer.encode() + b" HTTP/1.1\r\n" +
                       bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 300))) +
                       b"\r\n\r\n")
                expect_4xx = None
            elif kind == 10:  # a valid request to an unknown model or with wrong types
                raw = http_request("/v2/models/" + rng.choice(["nope", "silero%20", "text"]) +
                                   "/infer", json_body)
            else:
                raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
                expect_4xx = None
            requests.append((k, kind, raw, expect_4xx))

        # Sent 16 at a time: a request without a body length waits out the read timeout.
        def one(request):
            k, kind, raw, expect_4xx = request
            return send(server.port, raw, complete=expect_4xx is not None)

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(one, requests))
        statuses = {}
        unanswered = 0
        for (k, kind, raw, expect_4xx), (status, body) in zip(requests, answers):
            if status is None:
                unanswered += 1
                self.assertIsNone(expect_4xx, f"request {k} (kind {kind}) got no answer")
            else:
                statuses[status] = statuses.get(status, 0) + 1
                self.assertLess(status, 500, f"request {k} (kind {kind}): {status} {body[:200]}")
                if expect_4xx:
                    self.assertGreaterEqual(status, 400, f"request {k} (kind {kind})")
                if status >= 400 and body:
                    try:
                        error = json.loads(body)
                    except ValueError:
                        self.fail((k, kind, raw[:300], body[:300]))
                    self.assertEqual(list(error), ["error"], body[:300])
        self.assertTrue(server.alive())
        print(f"{REQUESTS} requests: statuses {dict(sorted(statuses.items()))}, "
              f"{unanswered} closed without an answer")
        # Still serving, and still right.
        c = server.client()
        self.assertEqual(c.get("/v2/health/ready").status, 200)
        r = c.infer_binary("silero", feeds)
        want = np.load(os.path.join(CASE, "outputs", "output.npy"))
        np.testing.assert_allclose(r.outputs()["output"], want, rtol=1e-4, atol=1e-5)
        c.close()
        self.assertEqual(server.stop(), 0, server.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
