"""Tessera: a deep-learning inference compiler (ONNX in, native x86 code out).

    import numpy as np
    import tessera

    sess = tessera.InferenceSession("model.onnx")            # or ONNX bytes, "zoo:NAME", a .tsr
    x = sess.get_inputs()[0]
    (y,) = sess.run(None, {x.name: np.zeros((1, 16), np.float32)})

InferenceSession has ONNX Runtime's calls (run, get_inputs, get_outputs), so
swapping one for the other is a one-line change. tessera.compile writes a
.tsr artifact that loads without compiling again. Failures raise
tessera.Error (a RuntimeError) with a one-line message naming the input, or
the node and op, that failed.
"""

from ._tessera import Error, InferenceSession, NodeArg, __version__, compile

__all__ = ["Error", "InferenceSession", "NodeArg", "compile", "__version__"]
