"""8 Python threads running one session at once (the GIL released during run)
give exactly the outputs of single-threaded runs."""

import threading

import numpy as np

import tessera


def test_eight_threads_one_session_match_serial_runs():
    s = tessera.InferenceSession("zoo:squeezenet1_1", threads=2)
    name = s.get_inputs()[0].name
    rng = np.random.default_rng(3)
    xs = [rng.uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32) for _ in range(8)]
    serial = [s.run(None, {name: x})[0] for x in xs]
    assert not np.array_equal(serial[0], serial[1])  # different inputs, different outputs

    results = [[] for _ in xs]
    errors = []
    start = threading.Barrier(len(xs))

    def worker(i):
        try:
            start.wait()
            for _ in range(3):
                results[i].append(s.run(None, {name: xs[i]})[0])
        except Exception as e:  # reported below; a thread's exception would otherwise vanish
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, runs in enumerate(results):
        assert len(runs) == 3
        for y in runs:
            np.testing.assert_array_equal(y, serial[i])


def test_gil_is_released_during_run():
    # While one thread is inside run, the main thread keeps executing Python:
    # most of its loop iterations happen while a run is in progress (with the
    # GIL held through run, nearly none would).
    s = tessera.InferenceSession("zoo:squeezenet1_1", threads=1)
    name = s.get_inputs()[0].name
    x = np.zeros((1, 3, 224, 224), np.float32)
    s.run(None, {name: x})  # compiled before timing
    state = {"in_run": False, "done": False}

    def runner():
        for _ in range(5):
            state["in_run"] = True
            s.run(None, {name: x})
            state["in_run"] = False
        state["done"] = True

    t = threading.Thread(target=runner)
    total = during = 0
    t.start()
    while not state["done"]:
        total += 1
        during += state["in_run"]
    t.join()
    assert total > 1000 and during > 0.5 * total, (during, total)
