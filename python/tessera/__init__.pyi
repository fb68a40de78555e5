# Type stubs for the tessera module (its extension part, tessera._tessera).
from os import PathLike
from typing import Mapping, Optional, Sequence, Union

import numpy as np

__version__: str

_Model = Union[str, "PathLike[str]", bytes, bytearray, memoryview]
_Shapes = Optional[Mapping[str, Sequence[int]]]

class Error(RuntimeError):
    """A Tessera failure: the message names the file, the input, or the node and op."""

class NodeArg:
    """A model input or output, as ONNX Runtime's NodeArg."""
    @property
    def name(self) -> str: ...
    @property
    def shape(self) -> Optional[list[Union[int, str, None]]]:
        """ints for static dims, the model's names (str) for dynamic ones (None if unnamed);
        None when the rank is unknown."""
    @property
    def type(self) -> str:
        """ONNX Runtime's type string, e.g. 'tensor(float)'."""

class InferenceSession:
    """A model compiled to native code, run like onnxruntime.InferenceSession."""
    def __init__(
        self,
        path_or_bytes: _Model,
        threads: Optional[int] = None,
        isa: Optional[str] = None,
        fusion: bool = True,
        pet: bool = False,
        records: Optional[str] = None,
        shapes: _Shapes = None,
    ) -> None: ...
    def get_inputs(self) -> list[NodeArg]: ...
    def get_outputs(self) -> list[NodeArg]: ...
    def run(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Mapping[str, np.ndarray],
        run_options: None = None,
    ) -> list[np.ndarray]: ...
    def profile(self, runs: int = 10, input_feed: Optional[Mapping[str, np.ndarray]] = None) -> list[dict]:
        """Each plan step's median time: dicts {node, op, compiled, seconds, flops}."""
    def report(self) -> str: ...
    def save(self, path: str) -> None: ...

def compile(
    model: _Model,
    out_path: Union[str, "PathLike[str]"],
    shapes: _Shapes = None,
    threads: Optional[int] = None,
    isa: Optional[str] = None,
    fusion: bool = True,
    pet: bool = False,
    records: Optional[str] = None,
) -> None:
    """Compiles a model and writes a .tsr artifact that InferenceSession loads."""
