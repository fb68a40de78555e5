"""The installed Python package alone (tests/install): run with PYTHONPATH set
to the installed site directory only. Checks that `import tessera` finds the
installed copy, and runs the ONNX cases node/test_add (Z = X + Y) and
node/test_matmul_2d against numpy's sum and product.
Usage: check_python.py SITE_DIR ADD_MODEL.onnx MATMUL_2D_MODEL.onnx VERSION"""
import os
import sys

import numpy as np


def main():
    site, add_model, matmul_model, version = sys.argv[1:]
    import tessera

    where = os.path.realpath(tessera.__file__)
    assert where.startswith(os.path.realpath(site) + os.sep), f"imported {where}, not from {site}"
    assert os.path.realpath(tessera._tessera.__file__).startswith(os.path.realpath(site) + os.sep)
    assert tessera.__version__ == version, (tessera.__version__, version)

    rng = np.random.default_rng(3)
    sess = tessera.InferenceSession(add_model)
    x = rng.standard_normal((3, 4, 5), dtype=np.float32)
    y = rng.standard_normal((3, 4, 5), dtype=np.float32)
    names = [i.name for i in sess.get_inputs()]
    (z,) = sess.run(None, dict(zip(names, (x, y))))
    assert np.array_equal(z, x + y), "Add differs from numpy's sum"

    sess = tessera.InferenceSession(matmul_model)
    a = rng.integers(-3, 4, (3, 4)).astype(np.float32)  # small integers: the product is exact
    b = rng.integers(-3, 4, (4, 3)).astype(np.float32)
    names = [i.name for i in sess.get_inputs()]
    (c,) = sess.run(None, dict(zip(names, (a, b))))
    assert np.array_equal(c, a @ b), "MatMul differs from numpy's product"
    print(f"python: tessera {tessera.__version__} from {os.path.dirname(where)}: ok")


if __name__ == "__main__":
    main()
