"""Shared fixtures of the Python module's tests. ctest runs them with
PYTHONPATH=build/python and TESSERA_CLI / TESSERA_ONNX_TESTS set
(tests/CMakeLists.txt); run by hand:

    PYTHONPATH=build/python TESSERA_CLI=build/tessera \
    TESSERA_ONNX_TESTS=../shared/onnx-backend-tests /usr/bin/python3 -m pytest tests/python
"""

import os
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import onnx_proto  # noqa: E402


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("TESSERA_CLI", "build/tessera")
    assert os.access(path, os.X_OK), f"the tessera CLI is not at {path} (set TESSERA_CLI)"
    return path


@pytest.fixture(scope="session")
def onnx_tests():
    path = pathlib.Path(os.environ.get("TESSERA_ONNX_TESTS", "../shared/onnx-backend-tests"))
    assert path.is_dir(), f"the ONNX backend test data is not at {path} (set TESSERA_ONNX_TESTS)"
    return path


@pytest.fixture(scope="session")
def add_model():
    """y = a + b over f32[batch x 16], 'batch' a named dynamic dimension."""
    return onnx_proto.model(
        [onnx_proto.node("Add", ["a", "b"], ["y"])],
        [onnx_proto.value_info("a", np.float32, ["batch", 16]), onnx_proto.value_info("b", np.float32, ["batch", 16])],
        [onnx_proto.value_info("y", np.float32, ["batch", 16])])


@pytest.fixture(scope="session")
def add_model_path(add_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "add.onnx"
    path.write_bytes(add_model)
    return path
