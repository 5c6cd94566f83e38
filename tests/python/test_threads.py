"""One executable run from many Python threads at once: the GIL is released while the VM
runs, and every thread gets exactly the answers a lone run gives."""
import threading

import numpy as np

import dynvm
from conftest import CORPUS_DIR, cases


def test_eight_threads_share_one_executable(compiled):
    exe = compiled(CORPUS_DIR / "cnn_text_classifier" / "model.onnx")
    rng = np.random.default_rng(7)
    feeds = [{"tokens": rng.integers(0, 30, size=(1 + i % 3, 5 + 7 * i), dtype=np.int64)}
             for i in range(16)]
    expected = [exe.run(f, threads=1)["logits"] for f in feeds]
    results = [[None] * len(feeds) for _ in range(8)]
    errors = []

    def worker(t):
        try:
            for rep in range(4):
                for i in range(len(feeds)):
                    k = (i + t + rep) % len(feeds)
                    results[t][k] = exe.run(feeds[k], threads=None if t % 2 else 1)["logits"]
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for t in range(8):
        for i, want in enumerate(expected):
            assert np.array_equal(results[t][i], want), (t, i)


def test_the_gil_is_released_while_the_vm_runs(compiled):
    exe = compiled(CORPUS_DIR / "transformer_encoder" / "model.onnx")
    _, x, _ = cases(CORPUS_DIR / "transformer_encoder")[-1]
    once = exe.benchmark(x, repeat=3).median_ms
    repeat = max(3, int(300 / max(once, 0.01)))  # about 0.3 s of runs
    worker = threading.Thread(target=exe.benchmark, args=(x,), kwargs={"repeat": repeat})
    count = 0
    worker.start()
    while worker.is_alive():
        count += 1
    worker.join()
    # Holding the GIL for the whole call would leave this thread a handful of iterations.
    assert count > 10000, count
