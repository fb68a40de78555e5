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
states), batch 1 unless exported with a batch (export(..., batch=8); the
rows of a batch are independent draws, so a kernel mixing batch rows shows).

PET_MODELS are the models of bench/PET.md (issue 19) not in RESULTS.md:
  csrnet   CSRNet (Li et al., CVPR 2018) as published: VGG-16's first 10
           convs with 3 max-pools (output stride 8), a back end of six 3x3
           convs with dilation 2 (512, 512, 512, 256, 128, 64 channels), ReLU
           after each, and a 1x1 conv to one density channel (no ReLU, as in
           the published output layer). Input 1x3x512x512: PET's artifact
           (thu-pacman/PET models-ae/dilated_onnx.py) times only the dilated
           back end, without bias, on a [bs, 512, 14, 14] feature map, not a
           whole CSRNet; 512x512 is a crowd image size of the published model
           (64x64 back-end maps, even, so D2H splits them exactly).
           He-normal conv weights (a chain of 17 convs under torch's default
           init shrinks the output by ~1e-12), small random biases.
  csrnet_backend  that PET artifact's graph: the six dilated convs + ReLU, no
           bias, input 1x512x14x14 (7x7 maps after D2H).
  r3d_18   torchvision.models.video.r3d_18, input 1x3x16x112x112.
  fcn_resnet50, deeplabv3_resnet50  torchvision's segmentation models, built
           and exported exactly as bench/zoo_models.py does (320x320 input,
           output "out"): ResNet-50 backbones with dilated layer3 and layer4
           (dilation 2 and 4, output stride 8: the class of model PET's D2H
           family targets besides CSRNet), DeepLabV3 with its atrous pyramid.

Export: bench/out/perf/<model>/{model.onnx (opset 13, constant folding),
input_0.npy, torch_output.npy, meta.json}; at batch B > 1 the folder is
<model>_b<B> (export_dir()).
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


# name -> (title, input shape at batch 1)
PET_MODELS = {
    "csrnet": ("CSRNet (VGG-16 front end, dilated back end, 512x512)", (1, 3, 512, 512)),
    "csrnet_backend": ("CSRNet back end as PET times it (6 dilated convs, 512x14x14)", (1, 512, 14, 14)),
    "r3d_18": ("ResNet3D-18 (16x112x112 clip)", (1, 3, 16, 112, 112)),
    "fcn_resnet50": ("FCN-ResNet50 (dilated backbone, 320x320)", (1, 3, 320, 320)),
    "deeplabv3_resnet50": ("DeepLabV3-ResNet50 (dilated backbone, atrous pyramid, 320x320)", (1, 3, 320, 320)),
}
SEGMENTATION = ("fcn_resnet50", "deeplabv3_resnet50")  # built by bench/zoo_models.py


def check_name(name):
    if name not in MODELS and name not in PET_MODELS:
        raise SystemExit(f"unknown model {name!r}; known: {', '.join(list(MODELS) + list(PET_MODELS))}")


def title(name):
    check_name(name)
    return (MODELS.get(name) or PET_MODELS[name])[0]


def export_dir(root, name, batch=1):
    """Where the export of `name` at `batch` lives under `root`: <name> at batch 1, <name>_b<batch> else."""
    return os.path.join(root, name if batch == 1 else f"{name}_b{batch}")


def csrnet(back_end_only=False):
    """CSRNet's layers (see the module docstring); back_end_only: PET's artifact graph (no bias, no output conv)."""
    import torch
    from torch import nn

    def convs(cin, widths, dilation, bias=True):
        layers = []
        for w in widths:
            if w == "M":
                layers.append(nn.MaxPool2d(2, 2))
                continue
            layers += [nn.Conv2d(cin, w, 3, padding=dilation, dilation=dilation, bias=bias), nn.ReLU()]
            cin = w
        return layers

    back = [512, 512, 512, 256, 128, 64]
    if back_end_only:
        layers = convs(512, back, 2, bias=False)
    else:
        front = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512]
        layers = convs(3, front, 1) + convs(512, back, 2) + [nn.Conv2d(64, 1, 1)]
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                if m.bias is not None:
                    m.bias.uniform_(-0.05, 0.05)
    return model


def torchvision_model(name, batch=1, size=224):
    """A torchvision image classifier by its torchvision name (any, not only MODELS'), built as build() builds
    MODELS' (weights=None under torch.manual_seed(0), random norms), with a seeded batch x 3 x size x size input.
    Returns (model in eval mode, [input], ["input"])."""
    import numpy as np
    import torch
    import torchvision
    import fusion_torch_models as ftm

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    gen = torch.Generator().manual_seed(1)
    kwargs = {"weights": None}
    if name == "inception_v3":
        kwargs.update(aux_logits=False, init_weights=True)
    model = getattr(torchvision.models, name)(**kwargs)
    ftm.randomize_norms(model, gen)
    x = torch.from_numpy(rng.uniform(-1, 1, (batch, 3, size, size)).astype(np.float32))
    return model.eval(), [x], ["input"]


def build(name, batch=1, size=None):
    """Returns (model in eval mode, list of example inputs, input names); inputs of batch `batch`.
    `size` changes the image size (r3d_18: the frames' height and width) from the model's own; BERT ignores it."""
    import numpy as np
    import torch
    import torchvision
    import fusion_torch_models as ftm

    check_name(name)
    if batch < 1:
        raise SystemExit(f"batch must be >= 1, got {batch}")
    if name == "bert_base":
        # exactly bench/fusion_models.py's BERT-base (batch_first, [1, 128, 768], GELU, eps 1e-12)
        model, inputs, names = fusion_models.build("bert_base")
        if batch > 1:
            rng = np.random.default_rng(0)
            inputs = [torch.from_numpy(rng.standard_normal((batch, 128, 768)).astype(np.float32))]
        return model, inputs, names
    if name in SEGMENTATION:
        import zoo_models
        return zoo_models.build(name, batch)
    if name in PET_MODELS:
        torch.manual_seed(0)
        rng = np.random.default_rng(0)
        if name == "r3d_18":
            model = torchvision.models.video.r3d_18(weights=None)
            gen = torch.Generator().manual_seed(1)
            ftm.randomize_norms(model, gen)
            with torch.no_grad():  # randomize_norms knows 2-D norms only: the same recipe for the 3-D ones
                for m in model.modules():
                    if isinstance(m, torch.nn.BatchNorm3d):
                        m.weight.copy_(torch.rand(m.weight.shape, generator=gen) * 0.5 + 0.75)
                        m.bias.copy_(torch.rand(m.bias.shape, generator=gen) * 0.2 - 0.1)
                        m.running_mean.copy_(torch.rand(m.num_features, generator=gen) * 0.2 - 0.1)
                        m.running_var.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)
        else:
            model = csrnet(back_end_only=name == "csrnet_backend")
        shape = (batch,) + tuple(PET_MODELS[name][1][1:])
        if size and name == "r3d_18":
            shape = shape[:3] + (size, size)
        x = torch.from_numpy(rng.uniform(-1, 1, shape).astype(np.float32))
        return model.eval(), [x], ["input"]
    # the seeding of fusion_models.build: models in both sets get the same weights and inputs
    return torchvision_model(name, batch, size or MODELS[name][1])


def is_exported(d):
    return all(os.path.exists(os.path.join(d, f)) for f in ("model.onnx", "input_0.npy", "torch_output.npy",
                                                             "meta.json"))


def export(name, d, batch=1):
    """Writes d/{model.onnx, input_*.npy, torch_output.npy, meta.json}; returns the meta dict."""
    import numpy as np
    import torch

    t0 = time.time()
    model, inputs, input_names = build(name, batch)
    path, y = fusion_models.save_export(model, inputs, input_names, d)
    meta = {"name": name, "title": title(name), "batch": batch, "input_names": input_names,
            "input_shapes": [list(x.shape) for x in inputs], "output_shape": list(y.shape),
            "max_abs_output": float(np.abs(y).max()), "opset": fusion_models.OPSET, "torch": torch.__version__,
            "onnx_bytes": os.path.getsize(path), "export_seconds": round(time.time() - t0, 1)}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


input_files = fusion_models.inputs_of  # d/input_0.npy, input_1.npy ... in order


def main():
    """Exports models: perf_models.py NAME... [--batch B] [--out DIR] (default bench/out/perf)."""
    import argparse
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("names", nargs="+", help=", ".join(list(MODELS) + list(PET_MODELS)))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(HERE, "out", "perf"))
    ap.add_argument("--reexport", action="store_true", help="export again even where an export exists")
    args = ap.parse_args()
    for name in args.names:
        check_name(name)
        d = export_dir(args.out, name, args.batch)
        if is_exported(d) and not args.reexport:
            print(f"{name}: reusing {d}")
            continue
        meta = export(name, d, args.batch)
        print(f"{name}: {d} ({meta['onnx_bytes'] / 2**20:.1f} MiB, output {meta['output_shape']}, "
              f"max |y| {meta['max_abs_output']:.3g}, {meta['export_seconds']} s)")


if __name__ == "__main__":
    main()
