"""The model list of bench/ZOO.md (issue 23): every float model of torchvision
0.14 as data, plus BERT-base, a GPT-2-style decoder and a U-Net, and their
ONNX export (opset 13), one model per call.

Each entry of ZOO is (family, input shape at batch 1 per input, approximate
GFLOPs at batch 1). The GFLOPs only feed bench/zoo.py's time estimate (they
are torchvision's documented figures, scaled to the input sizes below, or
rough counts), nothing is reported from them.

What is exported, and at what size:
- classification: every model of torchvision.models (weights=None) at its
  weights' crop size (224, Inception v3 299, EfficientNet-B1..B7 240..600,
  EfficientNetV2 384/480, Swin V2 256; ViT-H/14 224, its constructor's size).
- segmentation: fcn, deeplabv3 (ResNet-50/101, MobileNetV3) and lraspp at
  320x320 (not the 520 of torchvision's recipe: ~2.6x less work per cell, the
  atrous pyramid still runs rates 12-36 on 40x40 maps); output "out" only.
- detection and keypoint: the backbone of each model (its `.backbone`: the
  ResNet/MobileNet/VGG body with its FPN or SSD extra layers), every feature
  map an output, at 512x512 (SSD300 at 300, the 320 models at 320). The full
  models end in data-dependent post-processing (NMS, RoIAlign, per-image
  box lists), which is not what this benchmark compares.
  maskrcnn_resnet50_fpn and keypointrcnn_resnet50_fpn have the backbone of
  fasterrcnn_resnet50_fpn (same layers), listed for completeness.
- video: r3d_18, mc3_18, r2plus1d_18 on 16x112x112 clips; s3d, mvit_v1_b,
  mvit_v2_s on 16x224x224.
- optical flow: raft_small, raft_large on two 3x256x256 frames (12 flow
  updates, the default).
- bert_base (bench/perf_models.py), gpt2 and unet (bench/fusion_models.py).
Quantized models (torchvision.models.quantization) are integer models and
not in the list. Known not to export at opset 13 with torch 1.13 (the rows
say so): raft_small/raft_large (aten::grid_sampler needs opset 16), the Swin
V2 models (aten::zero), mvit_v2_s (the exporter grew past 23 GiB and was
killed; bench/zoo.py now caps an export's address space).

Weights are random, as in bench/perf_models.py: torchvision's initialisation
under torch.manual_seed(0), then every BatchNorm (1-D, 2-D, 3-D) and LayerNorm
random affine terms and running statistics and every all-zero parameter small
random values (fusion_torch_models.randomize_norms for the 2-D ones).
Inputs: seeded uniform [-1, 1) images (rows of a batch are independent
draws), GPT-2 token ids, BERT standard normal hidden states.

Export folder (export_dir): <out>/<model>_b<B>/ with model.onnx, input_i.npy,
torch_output_i.npy for every output (torch_output.npy is output 0, the file
bench/perf_harness.py reads), meta.json; or export_error.json when the export
failed (the exporter's error, so a rerun does not try again unless forced).

Usage (what bench/zoo.py runs, one model per process):
    /usr/bin/python3 bench/zoo_models.py export NAME --batch B --dir DIR
    /usr/bin/python3 bench/zoo_models.py list [--family F]
Needs Debian's python3-torch, python3-torchvision (not a CI dependency).
"""
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

OPSET = 13


def _img(size):
    return [(3, size, size)]


# name -> (family, input shapes without the batch dimension, approximate GFLOPs at batch 1)
_CLASSIFICATION = {
    "alexnet": (224, 0.71), "convnext_tiny": (224, 4.46), "convnext_small": (224, 8.68),
    "convnext_base": (224, 15.36), "convnext_large": (224, 34.36),
    "densenet121": (224, 2.83), "densenet161": (224, 7.73), "densenet169": (224, 3.36), "densenet201": (224, 4.29),
    "efficientnet_b0": (224, 0.39), "efficientnet_b1": (240, 0.69), "efficientnet_b2": (288, 1.09),
    "efficientnet_b3": (300, 1.83), "efficientnet_b4": (380, 4.39), "efficientnet_b5": (456, 10.27),
    "efficientnet_b6": (528, 19.07), "efficientnet_b7": (600, 37.75),
    "efficientnet_v2_s": (384, 8.37), "efficientnet_v2_m": (480, 24.58), "efficientnet_v2_l": (480, 56.08),
    "googlenet": (224, 1.5), "inception_v3": (299, 5.71), "maxvit_t": (224, 5.56),
    "mnasnet0_5": (224, 0.1), "mnasnet0_75": (224, 0.21), "mnasnet1_0": (224, 0.31), "mnasnet1_3": (224, 0.53),
    "mobilenet_v2": (224, 0.3), "mobilenet_v3_small": (224, 0.06), "mobilenet_v3_large": (224, 0.22),
    "regnet_x_400mf": (224, 0.41), "regnet_x_800mf": (224, 0.8), "regnet_x_1_6gf": (224, 1.6),
    "regnet_x_3_2gf": (224, 3.18), "regnet_x_8gf": (224, 8.0), "regnet_x_16gf": (224, 15.94),
    "regnet_x_32gf": (224, 31.74),
    "regnet_y_400mf": (224, 0.4), "regnet_y_800mf": (224, 0.83), "regnet_y_1_6gf": (224, 1.61),
    "regnet_y_3_2gf": (224, 3.18), "regnet_y_8gf": (224, 8.47), "regnet_y_16gf": (224, 15.91),
    "regnet_y_32gf": (224, 32.28), "regnet_y_128gf": (224, 127.52),
    "resnet18": (224, 1.81), "resnet34": (224, 3.66), "resnet50": (224, 4.09), "resnet101": (224, 7.8),
    "resnet152": (224, 11.51), "resnext50_32x4d": (224, 4.23), "resnext101_32x8d": (224, 16.41),
    "resnext101_64x4d": (224, 15.46), "wide_resnet50_2": (224, 11.4), "wide_resnet101_2": (224, 22.75),
    "shufflenet_v2_x0_5": (224, 0.04), "shufflenet_v2_x1_0": (224, 0.14), "shufflenet_v2_x1_5": (224, 0.3),
    "shufflenet_v2_x2_0": (224, 0.58), "squeezenet1_0": (224, 0.82), "squeezenet1_1": (224, 0.35),
    "swin_t": (224, 4.49), "swin_s": (224, 8.74), "swin_b": (224, 15.43),
    "swin_v2_t": (256, 5.94), "swin_v2_s": (256, 11.55), "swin_v2_b": (256, 20.32),
    "vgg11": (224, 7.61), "vgg11_bn": (224, 7.61), "vgg13": (224, 11.31), "vgg13_bn": (224, 11.31),
    "vgg16": (224, 15.47), "vgg16_bn": (224, 15.47), "vgg19": (224, 19.63), "vgg19_bn": (224, 19.63),
    "vit_b_16": (224, 17.56), "vit_b_32": (224, 4.41), "vit_l_16": (224, 61.55), "vit_l_32": (224, 15.38),
    "vit_h_14": (224, 167.29),
}
SEG_SIZE, DET_SIZE = 320, 512
_SEGMENTATION = {"fcn_resnet50": 58, "fcn_resnet101": 88, "deeplabv3_resnet50": 68, "deeplabv3_resnet101": 98,
                 "deeplabv3_mobilenet_v3_large": 4.0, "lraspp_mobilenet_v3_large": 0.8}
_DETECTION = {  # backbone input size, approximate GFLOPs of the backbone
    "fasterrcnn_resnet50_fpn": (DET_SIZE, 30), "fasterrcnn_resnet50_fpn_v2": (DET_SIZE, 32),
    "fasterrcnn_mobilenet_v3_large_fpn": (DET_SIZE, 1.5), "fasterrcnn_mobilenet_v3_large_320_fpn": (320, 0.6),
    "retinanet_resnet50_fpn": (DET_SIZE, 30), "retinanet_resnet50_fpn_v2": (DET_SIZE, 32),
    "fcos_resnet50_fpn": (DET_SIZE, 30), "maskrcnn_resnet50_fpn": (DET_SIZE, 30),
    "maskrcnn_resnet50_fpn_v2": (DET_SIZE, 32), "keypointrcnn_resnet50_fpn": (DET_SIZE, 30),
    "ssd300_vgg16": (300, 31), "ssdlite320_mobilenet_v3_large": (320, 0.6),
}
_VIDEO = {"r3d_18": ((3, 16, 112, 112), 40.7), "mc3_18": ((3, 16, 112, 112), 43.3),
          "r2plus1d_18": ((3, 16, 112, 112), 40.5), "s3d": ((3, 16, 224, 224), 18.0),
          "mvit_v1_b": ((3, 16, 224, 224), 70.6), "mvit_v2_s": ((3, 16, 224, 224), 64.2)}

ZOO = {}
ZOO.update({n: ("classification", _img(s), g) for n, (s, g) in _CLASSIFICATION.items()})
ZOO.update({n: ("segmentation", _img(SEG_SIZE), g) for n, g in _SEGMENTATION.items()})
ZOO.update({n: ("detection backbone", _img(s), g) for n, (s, g) in _DETECTION.items()})
ZOO.update({n: ("video", [shape], g) for n, (shape, g) in _VIDEO.items()})
ZOO.update({n: ("optical flow", [(3, 256, 256), (3, 256, 256)], g) for n, g in (("raft_small", 15), ("raft_large", 75))})
ZOO["bert_base"] = ("transformer", [(128, 768)], 22.0)
ZOO["gpt2"] = ("transformer", [(64,)], 1.5)  # fusion_torch_models.GPT2Config: 6 layers, hidden 512, sequence 64
ZOO["unet"] = ("segmentation", _img(256), 10.0)  # fusion_torch_models.UNet, base width 32

FAMILIES = sorted({f for f, _, _ in ZOO.values()})


def check_name(name):
    if name not in ZOO:
        raise SystemExit(f"unknown zoo model {name!r}; bench/zoo_models.py list shows the {len(ZOO)} models")


def family(name):
    return ZOO[name][0]


def gflops(name, batch=1):
    return ZOO[name][2] * batch


def export_dir(root, name, batch):
    return os.path.join(root, f"{name}_b{batch}")


def is_exported(d):
    return all(os.path.exists(os.path.join(d, f)) for f in ("model.onnx", "input_0.npy", "torch_output.npy",
                                                             "meta.json"))


def export_error(d):
    """The recorded export failure of d ({"error": ..., "stage": ...}) or None."""
    p = os.path.join(d, "export_error.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def _randomize(model, gen):
    """fusion_torch_models.randomize_norms, and the same recipe for the 1-D and 3-D BatchNorms it skips."""
    import torch
    import fusion_torch_models as ftm
    ftm.randomize_norms(model, gen)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm3d)) and m.affine:
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) * 0.5 + 0.75)
                m.bias.copy_(torch.rand(m.bias.shape, generator=gen) * 0.2 - 0.1)
                m.running_mean.copy_(torch.rand(m.num_features, generator=gen) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)


def _tuple_outputs(model, key=None):
    """Wraps a model whose output is a dict (segmentation: {"out"}; backbones: feature maps by level)
    or a list (RAFT: one flow per update) into one returning a tuple of tensors (key: that entry only)."""
    import torch

    class Outputs(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *xs):
            y = self.inner(*xs)
            if isinstance(y, dict):
                return y[key] if key else tuple(y.values())
            if isinstance(y, list):
                return y[-1]  # RAFT: the final flow estimate
            return y
    return Outputs(model)


def build(name, batch=1):
    """Returns (model in eval mode, list of example inputs, input names), inputs at batch `batch`."""
    import numpy as np
    import torch
    import torchvision

    check_name(name)
    fam, shapes, _ = ZOO[name]
    if name == "bert_base":
        import perf_models
        return perf_models.build("bert_base", batch)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    gen = torch.Generator().manual_seed(1)
    if name in ("gpt2", "unet"):
        import fusion_models
        import fusion_torch_models as ftm
        model, _, names = fusion_models.build(name)
        if name == "gpt2":
            x = torch.from_numpy(rng.integers(0, ftm.GPT2Config.vocab, (batch,) + shapes[0], dtype=np.int64))
        else:
            x = torch.from_numpy(rng.uniform(-1, 1, (batch,) + shapes[0]).astype(np.float32))
        return model, [x], names
    if fam == "classification":
        kwargs = {"weights": None}
        if name == "inception_v3":
            kwargs.update(aux_logits=False, init_weights=True)
        if name == "googlenet":
            kwargs.update(aux_logits=False, init_weights=True)
        model = getattr(torchvision.models, name)(**kwargs)
    elif fam == "segmentation":
        model = _tuple_outputs(getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None),
                               key="out")
    elif fam == "detection backbone":
        full = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None)
        model = _tuple_outputs(full.backbone)
    elif fam == "video":
        model = getattr(torchvision.models.video, name)(weights=None)
    elif fam == "optical flow":
        model = _tuple_outputs(getattr(torchvision.models.optical_flow, name)(weights=None))
    else:
        raise AssertionError(name)
    _randomize(model, gen)
    inputs = [torch.from_numpy(rng.uniform(-1, 1, (batch,) + tuple(s)).astype(np.float32)) for s in shapes]
    names = ["input"] if len(inputs) == 1 else [f"input_{i}" for i in range(len(inputs))]
    return model.eval(), inputs, names


def export(name, d, batch):
    """Writes the export folder (see the module docstring); returns the meta dict. Raises on failure,
    after writing export_error.json with the stage (build, torch run, onnx export) and the error."""
    import numpy as np
    import torch

    os.makedirs(d, exist_ok=True)
    for f in ("export_error.json", "meta.json"):
        if os.path.exists(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    t0 = time.time()
    stage = "build"
    try:
        model, inputs, input_names = build(name, batch)
        stage = "torch run"
        # grad enabled, as fusion_models.save_export (keeps torch 1.13 off its non-exportable fused paths)
        with torch.enable_grad():
            ys = model(*inputs)
            ys = [ys] if isinstance(ys, torch.Tensor) else list(ys)
            ys = [y.detach().numpy() for y in ys]
            stage = "onnx export"
            path = os.path.join(d, "model.onnx")
            torch.onnx.export(model, tuple(inputs), path, opset_version=OPSET, do_constant_folding=True,
                              input_names=input_names, output_names=[f"output_{i}" for i in range(len(ys))])
    except Exception as e:
        text = " ".join(str(e).strip().split()) or type(e).__name__
        err = {"stage": stage, "error": f"{type(e).__name__}: {text}"[:1500], "seconds": round(time.time() - t0, 1)}
        with open(os.path.join(d, "export_error.json"), "w") as f:
            json.dump(err, f, indent=1)
        raise
    for i, x in enumerate(inputs):
        np.save(os.path.join(d, f"input_{i}.npy"), x.numpy())
    for i, y in enumerate(ys):
        np.save(os.path.join(d, f"torch_output_{i}.npy"), y)
    np.save(os.path.join(d, "torch_output.npy"), ys[0])
    meta = {"name": name, "builder": "zoo_models", "family": ZOO[name][0], "batch": batch,
            "input_names": input_names, "input_shapes": [list(x.shape) for x in inputs],
            "output_shapes": [list(y.shape) for y in ys], "max_abs_output": [float(np.abs(y).max()) for y in ys],
            "opset": OPSET, "torch": torch.__version__, "onnx_bytes": os.path.getsize(path),
            "export_seconds": round(time.time() - t0, 1)}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("name")
    e.add_argument("--batch", type=int, default=1)
    e.add_argument("--dir", required=True)
    e.add_argument("--torch-threads", type=int, default=os.cpu_count() or 1)
    ls = sub.add_parser("list")
    ls.add_argument("--family", default=None, choices=FAMILIES)
    args = ap.parse_args()
    if args.cmd == "list":
        for n, (fam, shapes, g) in ZOO.items():
            if args.family in (None, fam):
                print(f"{n:40s} {fam:20s} {' + '.join('x'.join(map(str, s)) for s in shapes):24s} ~{g:g} GFLOPs")
        return 0
    check_name(args.name)
    import torch
    torch.set_num_threads(args.torch_threads)
    try:
        meta = export(args.name, args.dir, args.batch)
    except Exception:
        traceback.print_exc()
        return 1
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
