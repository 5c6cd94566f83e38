"""vmserve driven by real clients (Python's http.client and curl) on loopback.

Models (compiled by the ctest fixture into $SERVE_WORK):
  silero.vmexe  Silero VAD v5 (a real model), answers checked against ONNX Runtime's
                (tests/e2e/models/silero_vad/cases); input_1 compiled for 32..8192
  text.vmexe    cnn_text_classifier (PyTorch-exported, tokens i64[batch, seq]): the
                mixed-length traffic, checked against vmrun's answers bit for bit

  VMSERVE=... VMRUN=... VMC=... VMTUNE=... SERVE_WORK=... SOURCE_DIR=... \
      /usr/bin/python3 serve_test.py
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kserve_client import Client, Server  # noqa: E402

VMSERVE = os.environ["VMSERVE"]
VMRUN = os.environ["VMRUN"]
VMC = os.environ["VMC"]
VMTUNE = os.environ["VMTUNE"]
WORK = os.environ["SERVE_WORK"]
SOURCE = os.environ["SOURCE_DIR"]
SILERO = os.path.join(WORK, "silero.vmexe")
TEXT = os.path.join(WORK, "text.vmexe")
SILERO_CASES = os.path.join(SOURCE, "tests", "e2e", "models", "silero_vad", "cases")


def silero_case(k):
    d = os.path.join(SILERO_CASES, str(k))
    load = lambda sub, n: np.load(os.path.join(d, sub, n + ".npy"))  # noqa: E731
    feeds = {n: load("inputs", n) for n in ("input", "state", "sr")}
    return feeds, {n: load("outputs", n) for n in ("output", "stateN")}


def tokens(batch, seq, seed):
    return np.random.default_rng(seed).integers(0, 30, size=(batch, seq)).astype(np.int64)


def vmrun_outputs(model, feeds, tmp):
    """What `vmrun` answers for `feeds` (one thread), as arrays."""
    args = [VMRUN, model, "--threads", "1", "-o", os.path.join(tmp, "out")]
    for name, value in feeds.items():
        path = os.path.join(tmp, name + ".npy")
        np.save(path, value)
        args += ["--input", f"{name}={path}"]
    subprocess.run(args, check=True, capture_output=True)
    out = os.path.join(tmp, "out")
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)}


def metric(text, name, **labels):
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(name + "{" + want) or (not labels and line.startswith(name + " ")):
            return float(line.rsplit(" ", 1)[1])
    return None


class Protocol(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vmserve-test-")
        cls.server = Server(VMSERVE, [SILERO, TEXT, "--threads", "2", "--max-body-mb", "1",
                                      "--shapes-out", os.path.join(cls.tmp, "shapes.json"),
                                      "--log-requests"])

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, (code, cls.server.stderr)
        # --log-requests: one access-log line per request, errors included.
        log = cls.server.stdout
        assert re.search(r'"POST /v2/models/silero/infer" 200 \d+ [\d.]+ ms', log), log[-2000:]
        assert re.search(r'"GET /v2/models/nope" 404 \d+ [\d.]+ ms', log), log[-2000:]

    def setUp(self):
        self.c = self.server.client()

    def tearDown(self):
        self.c.close()

    def test_health_and_metadata(self):
        self.assertEqual(self.c.get("/v2/health/live").status, 200)
        self.assertEqual(self.c.get("/v2/health/ready").json(), {"ready": True})
        self.assertEqual(self.c.get("/v2").json()["extensions"], ["binary_tensor_data"])
        meta = self.c.get("/v2/models/silero").json()
        self.assertEqual(meta["name"], "silero")
        self.assertEqual([(t["name"], t["datatype"], t["shape"]) for t in meta["inputs"]],
                         [("input", "FP32", [-1, -1]), ("state", "FP32", [2, -1, 128]),
                          ("sr", "INT64", [])])
        self.assertEqual([t["name"] for t in meta["outputs"]], ["output", "stateN"])
        self.assertEqual(self.c.get("/v2/models/text/versions/1").json()["inputs"][0]["shape"],
                         [-1, -1])
        self.assertEqual(self.c.get("/v2/models/text/ready").json()["ready"], True)

    def check_silero(self, response, expected):
        self.assertEqual(response.status, 200, response.body[:300])
        got = response.outputs()
        for name, want in expected.items():
            self.assertEqual(got[name].shape, want.shape)
            np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5, err_msg=name)

    def test_json_inference_matches_onnxruntime(self):
        for k in (0, 3, 7, 10):
            feeds, expected = silero_case(k)
            r = self.c.infer_json("silero", feeds, id=f"case-{k}")
            self.assertEqual(r.json()["id"], f"case-{k}")
            self.check_silero(r, expected)

    def test_binary_inference_matches_onnxruntime(self):
        for k in range(12):
            feeds, expected = silero_case(k)
            r = self.c.infer_binary("silero", feeds)
            self.assertEqual(r.headers["content-type"], "application/octet-stream")
            self.check_silero(r, expected)

    def test_binary_inputs_with_chosen_outputs(self):
        feeds, expected = silero_case(4)
        r = self.c.infer_binary("silero", feeds, binary_outputs=False,
                                outputs=[{"name": "stateN", "parameters": {"binary_data": True}}])
        header = json.loads(r.body[:int(r.headers["inference-header-content-length"])])
        self.assertEqual([o["name"] for o in header["outputs"]], ["stateN"])
        self.check_silero(r, {"stateN": expected["stateN"]})
        r = self.c.infer_binary("silero", feeds, binary_outputs=False, outputs=[{"name": "output"}])
        self.assertEqual(r.headers["content-type"], "application/json")
        self.check_silero(r, {"output": expected["output"]})

    def test_curl_json_inference(self):
        feeds, expected = silero_case(6)
        doc = {"inputs": [{"name": n, "shape": list(v.shape),
                           "datatype": "INT64" if v.dtype == np.int64 else "FP32",
                           "data": v.reshape(-1).tolist()} for n, v in feeds.items()]}
        path = os.path.join(self.tmp, "curl.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        out = subprocess.run(["curl", "-sS", "-X", "POST", "-H", "Content-Type: application/json",
                              "--data-binary", "@" + path,
                              f"http://127.0.0.1:{self.server.port}/v2/models/silero/infer"],
                             check=True, capture_output=True).stdout
        got = {o["name"]: np.array(o["data"], np.float32).reshape(o["shape"])
               for o in json.loads(out)["outputs"]}
        for name, want in expected.items():
            np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5)

    def expect_error(self, response, status, pattern):
        self.assertEqual(response.status, status, response.body[:300])
        body = response.json()
        self.assertEqual(list(body), ["error"])
        self.assertNotIn("\n", body["error"])
        self.assertRegex(body["error"], pattern)

    def test_bad_requests_get_a_4xx_with_one_line(self):
        feeds, _ = silero_case(6)
        infer = "/v2/models/silero/infer"
        post = lambda body, **h: self.c.request("POST", infer, body, h)  # noqa: E731
        self.expect_error(post("{not json"), 400, "not valid JSON")
        self.expect_error(post("[]"), 400, "JSON object")
        self.expect_error(post('{"inputs": 3}'), 400, '"inputs" array')
        self.expect_error(self.c.infer_json("nope", feeds), 404, "no model named 'nope'")
        self.expect_error(self.c.get("/v2/models/nope"), 404, "nope")
        self.expect_error(self.c.get("/v2/elsewhere"), 404, "no such endpoint")
        self.expect_error(self.c.get(infer), 405, "use POST")
        self.expect_error(self.c.infer_json("silero", {**feeds, "extra": feeds["sr"]}), 400,
                          "no input 'extra'")
        self.expect_error(self.c.infer_json("silero", {"input": feeds["input"]}), 400,
                          "'state' is missing")
        wrong_dtype = {**feeds, "state": feeds["state"].astype(np.float64)}
        self.expect_error(self.c.infer_binary("silero", wrong_dtype), 400, "state")
        wrong_rank = {**feeds, "input": feeds["input"].reshape(-1)}
        self.expect_error(self.c.infer_binary("silero", wrong_rank), 400, "input")
        too_short = {**feeds, "input": np.zeros((1, 16), np.float32)}
        self.expect_error(self.c.infer_binary("silero", too_short), 400, "32")
        bad_data = {"inputs": [{"name": "sr", "shape": [], "datatype": "INT64", "data": [1.5]}]}
        self.expect_error(post(json.dumps(bad_data)), 400, "integer")
        bad_type = {"inputs": [{"name": "sr", "shape": [], "datatype": "BYTES", "data": ["a"]}]}
        self.expect_error(post(json.dumps(bad_type)), 400, "BYTES")
        negative = {"inputs": [{"name": "input", "shape": [1, -5], "datatype": "FP32", "data": []}]}
        self.expect_error(post(json.dumps(negative)), 400, "non-negative")
        huge = {"inputs": [{"name": "input", "shape": [1 << 40, 1 << 40], "datatype": "FP32",
                            "data": [1.0]}]}
        self.expect_error(post(json.dumps(huge)), 400, "too large")
        count = {"inputs": [{"name": "input", "shape": [100000, 100000], "datatype": "FP32",
                             "data": [1.0]}]}
        self.expect_error(post(json.dumps(count)), 400, "elements")
        # The binary extension: a header length past the body, data that ends short, and
        # bytes nobody claims.
        r = self.c.infer_binary("silero", feeds)
        self.assertEqual(r.status, 200)
        header = json.dumps({"inputs": [{"name": "input", "shape": [1, 512], "datatype": "FP32",
                                         "parameters": {"binary_data_size": 2048}}]}).encode()
        truncated = header + b"\0" * 1000
        self.expect_error(post(truncated, **{"Inference-Header-Content-Length": str(len(header))}),
                          400, "short")
        self.expect_error(post(header, **{"Inference-Header-Content-Length": "99999"}), 400,
                          "Inference-Header-Content-Length")
        self.expect_error(post(header, **{"Inference-Header-Content-Length": "12abc"}), 400,
                          "byte count")
        extra = json.dumps({"inputs": []}).encode()
        self.expect_error(post(extra + b"xyz", **{"Inference-Header-Content-Length":
                                                  str(len(extra))}), 400, "no input claims")
        # Out-of-vocabulary tokens: the model's Gather refuses them at run time.
        r = self.c.infer_binary("text", {"tokens": np.full((1, 5), 10**6, np.int64)})
        self.expect_error(r, 400, ".")
        self.expect_error(self.c.infer_json("silero", feeds, outputs=[{"name": "nope"}]), 400,
                          "no output 'nope'")
        # An output asked twice comes twice; a timeout past any clock is only long.
        r = self.c.infer_json("silero", feeds, outputs=[{"name": "output"}, {"name": "output"}],
                              parameters={"timeout": 2 ** 63 - 1})
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual([o["name"] for o in r.json()["outputs"]], ["output", "output"])
        self.assertTrue(self.server.alive())

    def test_body_over_the_limit_is_413(self):
        big = {"tokens": np.zeros((1, 200000), np.int64)}  # 1.6 MB, over --max-body-mb 1
        r = Client(self.server.port).infer_binary("text", big)
        self.expect_error(r, 413, "limit")

    def test_metrics(self):
        feeds, _ = silero_case(6)
        self.assertEqual(self.c.infer_binary("silero", feeds).status, 200)
        text = self.c.get("/metrics").body.decode()
        self.assertGreaterEqual(metric(text, "dynvm_requests_total", model="silero", code="200"), 1)
        self.assertEqual(metric(text, "dynvm_inflight_requests", model="silero"), 0)
        self.assertGreaterEqual(
            metric(text, "dynvm_request_shapes_total", model="silero",
                   shape="input=1x512 state=2x1x128 sr=scalar"), 1)
        for name in ("dynvm_request_duration_seconds_count", "dynvm_queue_duration_seconds_count",
                     "dynvm_batch_size_count"):
            self.assertGreaterEqual(metric(text, name, model="silero"), 1, name)
        self.assertIn('dynvm_request_duration_seconds_bucket{model="silero",le="+Inf"}', text)


class Concurrency(unittest.TestCase):
    def test_64_clients_with_mixed_lengths_get_vmrun_answers(self):
        rng = np.random.default_rng(7)
        shapes = [(int(rng.integers(1, 4)), int(rng.integers(3, 200))) for _ in range(256)]
        feeds = [tokens(b, s, seed) for seed, (b, s) in enumerate(shapes)]
        with tempfile.TemporaryDirectory() as tmp:
            expected = []
            for i in range(0, len(feeds), 32):  # vmrun on every 32nd request, for time
                d = os.path.join(tmp, str(i))
                os.makedirs(d)
                expected.append((i, vmrun_outputs(TEXT, {"tokens": feeds[i]}, d)["logits"]))
        server = Server(VMSERVE, [TEXT, "--threads", "2", "--shapes-out", ""])
        try:
            answers = [None] * len(feeds)

            def client(k):
                c = server.client()
                for i in range(k, len(feeds), 64):
                    r = c.infer_binary("text", {"tokens": feeds[i]})
                    answers[i] = (r.status, r.outputs()["logits"] if r.status == 200 else r.body)
                c.close()

            with concurrent.futures.ThreadPoolExecutor(64) as pool:
                list(pool.map(client, range(64)))
            for i, (status, logits) in enumerate(answers):
                self.assertEqual(status, 200, logits)
                self.assertEqual(logits.shape, (shapes[i][0], 5))
            for i, want in expected:
                np.testing.assert_array_equal(answers[i][1], want, err_msg=f"request {i}")
            # One answer per distinct input, whichever client asked: same input, same bits.
            again = Client(server.port).infer_binary("text", {"tokens": feeds[5]}).outputs()
            np.testing.assert_array_equal(again["logits"], answers[5][1])
        finally:
            self.assertEqual(server.stop(), 0)

    def test_full_queue_is_503_with_retry_after(self):
        server = Server(VMSERVE, [SILERO, "--threads", "1", "--max-queue", "1",
                                  "--shapes-out", ""])
        try:
            feeds, _ = silero_case(9)  # 4 rows; 256 make a run of tens of milliseconds
            feeds = {**feeds, "input": np.tile(feeds["input"], (64, 1)),
                     "state": np.tile(feeds["state"], (1, 64, 1))}

            def one(_):
                c = server.client()
                r = c.infer_binary("silero", feeds)
                c.close()
                return r

            # 24 at once against one worker and a queue of one: some must be refused (a
            # machine slow enough to send them one by one gets more tries).
            for _ in range(5):
                with concurrent.futures.ThreadPoolExecutor(24) as pool:
                    answers = list(pool.map(one, range(24)))
                if any(r.status == 503 for r in answers):
                    break
            self.assertEqual(sorted({r.status for r in answers}), [200, 503])
            busy = next(r for r in answers if r.status == 503)
            self.assertEqual(busy.headers["retry-after"], "1")
            self.assertRegex(busy.json()["error"], "queued")
        finally:
            self.assertEqual(server.stop(), 0)


    def test_deadline_passed_in_the_queue_is_504(self):
        server = Server(VMSERVE, [SILERO, "--threads", "1", "--shapes-out", ""])
        try:
            feeds, _ = silero_case(9)
            long_run = {**feeds, "input": np.tile(feeds["input"], (64, 1)),
                        "state": np.tile(feeds["state"], (1, 64, 1))}
            c = server.client()
            # With the slot free, a request runs at once: its deadline is for waiting.
            self.assertEqual(c.infer_binary("silero", feeds,
                                            parameters={"timeout": 1000}).status, 200)
            # Behind a long run on the only slot, a 1 ms deadline passes in the queue (a
            # machine slow enough to start the long run late gets more tries).
            for _ in range(5):
                with concurrent.futures.ThreadPoolExecutor(1) as pool:
                    first = pool.submit(lambda: Client(server.port).infer_binary("silero",
                                                                                 long_run))
                    time.sleep(0.005)
                    r = c.infer_binary("silero", feeds, parameters={"timeout": 1000})
                    self.assertEqual(first.result().status, 200)
                if r.status == 504:
                    break
            self.assertEqual(r.status, 504, r.body[:300])
            self.assertRegex(r.json()["error"], "deadline exceeded")
            c.close()
        finally:
            self.assertEqual(server.stop(), 0)

class Batching(unittest.TestCase):
    def run_all(self, server, requests):
        def one(feeds):
            c = server.client()
            r = c.infer_binary(*feeds)
            c.close()
            return r

        with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
            return list(pool.map(one, requests))

    def test_batched_answers_equal_unbatched(self):
        rng = np.random.default_rng(3)
        base, _ = silero_case(6)
        silero = [("silero", {"input": rng.uniform(-1, 1, (1, 512)).astype(np.float32),
                              "state": rng.uniform(-1, 1, (2, 1, 128)).astype(np.float32),
                              "sr": base["sr"]}) for _ in range(16)]
        text = [("text", {"tokens": tokens(1, 40, 100 + i)}) for i in range(16)]
        plain = Server(VMSERVE, [SILERO, TEXT, "--threads", "2", "--shapes-out", ""])
        try:
            want = self.run_all(plain, silero + text)
        finally:
            self.assertEqual(plain.stop(), 0)
        batched = Server(VMSERVE, [SILERO, TEXT, "--threads", "2", "--batch", "silero",
                                   "--batch", "text", "--max-batch", "8",
                                   "--max-queue-delay-us", "20000", "--shapes-out", ""])
        try:
            self.assertIn("silero (batched)", batched.first_line)
            for _ in range(3):
                got = self.run_all(batched, silero + text)
                for (model, _), w, g in zip(silero + text, want, got):
                    self.assertEqual(g.status, 200, g.body[:200])
                    for name, value in w.outputs().items():
                        np.testing.assert_allclose(g.outputs()[name], value, rtol=1e-5,
                                                   atol=1e-6, err_msg=f"{model} {name}")
            text_metrics = Client(batched.port).get("/metrics").body.decode()
            for model in ("silero", "text"):
                runs = metric(text_metrics, "dynvm_batch_size_count", model=model)
                requests = metric(text_metrics, "dynvm_batch_size_sum", model=model)
                self.assertEqual(requests, 48)
                self.assertLess(runs, requests, f"{model}: no run held more than one request")
        finally:
            self.assertEqual(batched.stop(), 0)

    def test_batching_a_model_without_a_batch_axis_is_refused(self):
        out = subprocess.run([VMSERVE, SILERO, "--batch", "silero:input=-1,state=-1",
                              "--port", "0"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 1)
        self.assertEqual(len(out.stderr.splitlines()), 1)
        self.assertIn("cannot batch model 'silero'", out.stderr)


class Lifecycle(unittest.TestCase):
    def test_sigterm_finishes_requests_in_flight_and_writes_shapes(self):
        tmp = tempfile.mkdtemp(prefix="vmserve-stop-")
        shapes = os.path.join(tmp, "shapes.json")
        server = Server(VMSERVE, [SILERO, "--threads", "1", "--shapes-out", shapes])
        feeds, expected = silero_case(9)
        big = {**feeds, "input": np.tile(feeds["input"], (16, 1)),
               "state": np.tile(feeds["state"], (1, 16, 1))}
        answers = []
        connected = threading.Barrier(9)

        def one():
            c = server.client()
            c.conn.connect()
            connected.wait()
            answers.append(c.infer_binary("silero", big))

        threads = [threading.Thread(target=one) for _ in range(8)]
        for t in threads:
            t.start()
        connected.wait()
        time.sleep(0.3)  # the requests are sent and queued behind one worker
        self.assertEqual(server.stop(), 0, server.stderr)
        for t in threads:
            t.join()
        self.assertEqual([r.status for r in answers], [200] * 8)
        for r in answers:
            np.testing.assert_allclose(r.outputs()["output"][:4], expected["output"], rtol=1e-4,
                                       atol=1e-5)
        self.assertIn("SIGTERM", server.stdout)
        with open(shapes) as f:
            doc = json.load(f)
        entry = doc["models"]["silero"]
        self.assertEqual(doc["format"], "dynvm-shapes/1")
        self.assertEqual(entry["requests"], 8)
        self.assertEqual(entry["shapes"], [{"inputs": {"input": [64, 512], "state": [2, 64, 128],
                                                       "sr": []}, "count": 8}])

    def test_bad_command_lines_and_models(self):
        for args, code, pattern in (
                ([], 2, "no model given"),
                ([SILERO, "--port", "x"], 2, "--port"),
                ([SILERO, "--batch", "other"], 2, "no served model"),
                (["/nonexistent.vmexe"], 1, "nonexistent"),
                ([os.path.join(SOURCE, "README.md")], 1, "README"),
        ):
            out = subprocess.run([VMSERVE, *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, code, (args, out.stderr))
            self.assertEqual(len(out.stderr.splitlines()), 1, out.stderr)
            self.assertRegex(out.stderr, "^vmserve: .*" + re.escape(pattern))
        help_text = subprocess.run([VMSERVE, "--help"], capture_output=True, text=True).stdout
        self.assertIn("--max-queue-delay-us", help_text)


class TrafficShapes(unittest.TestCase):
    """The shapes a server saw feed vmc --specialize-from and vmtune --sizes-from."""

    def test_served_shapes_specialize_and_tune(self):
        tmp = tempfile.mkdtemp(prefix="vmserve-traffic-")
        shapes = os.path.join(tmp, "traffic.json")
        server = Server(VMSERVE, [TEXT, "--threads", "1", "--shapes-out", shapes])
        c = server.client()
        lengths = [40] * 30 + [12] * 6 + [77] * 5 + [150] * 1  # 150: under 5% of requests
        for i, seq in enumerate(lengths):
            self.assertEqual(c.infer_binary("text", {"tokens": tokens(1, seq, i)}).status, 200)
        c.close()
        self.assertEqual(server.stop(), 0)
        model = os.path.join(SOURCE, "tests", "e2e", "models", "dynamic", "cnn_text_classifier",
                             "model.onnx")
        out = subprocess.run([VMC, model, "--specialize-from", shapes, "-o",
                              os.path.join(tmp, "text.vmexe")], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(re.findall(r"specializing for (.*) \(", out.stderr),
                         ["batch=1 seq=40", "batch=1 seq=12", "batch=1 seq=77"])
        plain = subprocess.run([VMC, model, "-o", os.path.join(tmp, "plain.vmexe")],
                               capture_output=True, text=True)
        variants = lambda text: int(re.search(r"(\d+) variants", text).group(1))  # noqa: E731
        self.assertGreater(variants(out.stderr), variants(plain.stderr))
        # The specialized executable answers like the plain one, at hot and other sizes.
        for seq in (40, 13):
            feeds = {"tokens": tokens(2, seq, seq)}
            d1, d2 = os.path.join(tmp, f"a{seq}"), os.path.join(tmp, f"b{seq}")
            os.makedirs(d1)
            os.makedirs(d2)
            np.testing.assert_allclose(
                vmrun_outputs(os.path.join(tmp, "text.vmexe"), feeds, d1)["logits"],
                vmrun_outputs(os.path.join(tmp, "plain.vmexe"), feeds, d2)["logits"],
                rtol=1e-5, atol=1e-6)

        records = os.path.join(tmp, "text.tune.jsonl")
        out = subprocess.run([VMTUNE, model, "--sizes-from", shapes, "--trials", "2",
                              "--max-kernels", "1", "-o", records], capture_output=True,
                             text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        # The hottest length's row names it among the kernel's dims (which kernel is the
        # hottest is a timing: 1x40x16, or ..x40 at the end of a row's shapes).
        self.assertRegex(out.stdout, r"x40(x|,|\s)")
        with open(records) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        self.assertTrue(rows)
        # Every size the traffic had is a sample of the tuned kernel, weighed (by its share
        # of the kernel's profiled time, traffic-weighted: a timing, so only its form is
        # asserted here; tests never fail because the machine was slow). Which kernel is the
        # hottest is a timing too, so the sizes are read off whichever it is: the first dim
        # that differs between its samples follows the request's length.
        dims = [[d for a in size["args"] for d in a] for size in rows[0]["sizes"]]
        self.assertEqual(len(dims), 4, rows[0]["sizes"])
        varying = next(i for i in range(len(dims[0])) if len({d[i] for d in dims}) > 1)
        self.assertEqual(len({d[varying] for d in dims}), 4, rows[0]["sizes"])
        self.assertAlmostEqual(sum(size["weight"] for size in rows[0]["sizes"]), 1.0, places=6)
        self.assertTrue(all(size["weight"] > 0 for size in rows[0]["sizes"]), rows[0]["sizes"])
        out = subprocess.run([VMC, model, "--specialize-from", shapes + ":nope", "-o",
                              os.path.join(tmp, "x.vmexe")], capture_output=True, text=True)
        self.assertEqual(out.returncode, 1)
        self.assertIn("no model 'nope'", out.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
