"""The model set of bench/RESULTS.md: definitions and ONNX export.

Shared by bench/perf_harness.py (which exports each model once) and
bench/perf_worker.py (whose torch runtimes rebuild the same model in their
own process: construction is deterministic, so the rebuilt weights are the
exported ones; the torch columns' max diff against torch_output.npy shows it).

Weights are random, nothing can be downloaded here: torchvision's
initialisation with weights=None under torch.manual_seed(0), then the same
recipe as bench/fusion_models.py — every BatchNorm/LayerNorm gets random
affine terms (and BatchNorm random running statistics) and every all-zero
parameter small random values (torchvision's ViT zero-initialises its head,
which would make its output all zeros and the accuracy column meaningless).
BERT-base is bench/fusion_models.py's bert_base, built by that very code.
Inputs are seeded random images in [-1, 1] (BERT: standard normal hidden
states), batch 1.

Export: bench/out/perf/<model>/{model.onnx (opset 13, constant folding),
input_0.npy, torch_output.npy, meta.json}.
Needs Debian's python3-torch and python3-torchvision (/usr/bin/python3).
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fusion_models  # noqa: E402  (stdlib imports only at load; torch is imported where used)

# name -> (title, image size; None for BERT)
MODELS = {
    "resnet18": ("ResNet-18", 224),
    "resnet50": ("ResNet-50", 224),
    "mobilenet_v2": ("MobileNetV2", 224),
    "resnext50_32x4d": ("ResNeXt-50 32x4d", 224),
    "inception_v3": ("Inception v3 (299x299)", 299),
    "efficientnet_b0": ("EfficientNet-B0", 224),
    "vgg16": ("VGG-16", 224),
    "vit_b_16": ("ViT-B/16", 224),
    "bert_base": ("BERT-base encoder (12 layers, seq 128)", None),
}


def check_name(name):
    if name not in MODELS:
        raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODELS)}")


def build(name):
    """Returns (model in eval mode, list of example inputs, input names)."""
    import numpy as np
    import torch
    import torchvision
    import fusion_torch_models as ftm

    check_name(name)
    if name == "bert_base":
        # exactly bench/fusion_models.py's BERT-base (batch_first, [1, 128, 768], GELU, eps 1e-12)
        return fusion_models.build("bert_base")
    # the seeding of fusion_models.build: models in both sets get the same weights and inputs
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    gen = torch.Generator().manual_seed(1)
    kwargs = {"weights": None}
    if name == "inception_v3":
        kwargs.update(aux_logits=False, init_weights=True)
    model = getattr(torchvision.models, name)(**kwargs)
    ftm.randomize_norms(model, gen)
    size = MODELS[name][1]
    x = torch.from_numpy(rng.uniform(-1, 1, (1, 3, size, size)).astype(np.float32))
    return model.eval(), [x], ["input"]


def is_exported(d):
    return all(os.path.exists(os.path.join(d, f)) for f in ("model.onnx", "input_0.npy", "torch_output.npy",
                                                             "meta.json"))


def export(name, d):
    """Writes d/{model.onnx, input_*.npy, torch_output.npy, meta.json}; returns the meta dict."""
    import numpy as np
    import torch

    t0 = time.time()
    model, inputs, input_names = build(name)
    path, y = fusion_models.save_export(model, inputs, input_names, d)
    meta = {"name": name, "title": MODELS[name][0], "input_names": input_names,
            "input_shapes": [list(x.shape) for x in inputs], "output_shape": list(y.shape),
            "max_abs_output": float(np.abs(y).max()), "opset": fusion_models.OPSET, "torch": torch.__version__,
            "onnx_bytes": os.path.getsize(path), "export_seconds": round(time.time() - t0, 1)}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


input_files = fusion_models.inputs_of  # d/input_0.npy, input_1.npy ... in order
