#!/usr/bin/python3
"""Classify an image with an ImageNet classifier exported to ONNX (a torchvision
ResNet, say), compiled and run by Tessera; prints the top-5 classes.

A model to try it with, either exported from torchvision (trained weights):

    import torch, torchvision
    model = torchvision.models.resnet18(weights="IMAGENET1K_V1").eval()
    torch.onnx.export(model, torch.zeros(1, 3, 224, 224), "resnet18.onnx",
                      input_names=["input"], output_names=["logits"])

or Tessera's embedded ResNet-18 written out as ONNX (seeded random weights, so
its classes mean nothing, but every step is the same):

    build/tessera export-zoo resnet18 -o resnet18.onnx

Run (from the repository root, after the build):

    PYTHONPATH=build/python /usr/bin/python3 examples/classify_image.py resnet18.onnx cat.jpg
    ... --labels imagenet_classes.txt    # one class name per line, in class order

The image goes through torchvision's ImageNet evaluation transform: the
shorter side resized to 256 (bilinear), the centre 224 x 224 cropped, scaled
to [0, 1] and normalized with ImageNet's per-channel mean and deviation.
Needs numpy and Pillow (Debian's python3-numpy, python3-pil).
"""
import argparse
import sys
import time

import numpy as np
from PIL import Image

import tessera

MEAN = np.array([0.485, 0.456, 0.406], np.float32)  # ImageNet's per-channel statistics (RGB)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def preprocess(path, size=224):
    """The image as a float32 [1, 3, size, size] batch, as torchvision's
    Resize(256) + CenterCrop(224) + ToTensor + Normalize make it."""
    image = Image.open(path).convert("RGB")
    short = round(size * 256 / 224)  # 256 for 224
    w, h = image.size
    scale = short / min(w, h)
    image = image.resize((max(short, round(w * scale)), max(short, round(h * scale))), Image.BILINEAR)
    w, h = image.size
    left, top = (w - size) // 2, (h - size) // 2
    image = image.crop((left, top, left + size, top + size))
    x = np.asarray(image, np.float32) / 255.0  # [H, W, 3]
    x = (x - MEAN) / STD
    return np.ascontiguousarray(x.transpose(2, 0, 1)[np.newaxis])  # [1, 3, H, W]


def softmax(logits):
    e = np.exp(logits - logits.max())
    return e / e.sum()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="an ONNX classifier taking [1, 3, H, W] (or a .tsr, or zoo:resnet18)")
    ap.add_argument("image", help="any image Pillow reads (JPEG, PNG, PPM ...)")
    ap.add_argument("--labels", help="a text file with one class name per line")
    ap.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    ap.add_argument("--top", type=int, default=5, help="how many classes to print")
    args = ap.parse_args()

    t0 = time.perf_counter()
    try:
        session = tessera.InferenceSession(args.model, threads=args.threads)
    except tessera.Error as e:  # not found, not a model, an op Tessera cannot run ...
        sys.exit(f"cannot load {args.model}: {e}")
    load_s = time.perf_counter() - t0
    inp = session.get_inputs()[0]
    size = inp.shape[-1] if inp.shape and isinstance(inp.shape[-1], int) else 224
    try:
        x = preprocess(args.image, size)
    except OSError as e:  # missing, unreadable or not an image
        sys.exit(f"cannot read the image {args.image}: {e}")

    t0 = time.perf_counter()
    (logits,) = session.run(None, {inp.name: x})  # the first run of a shape compiles its kernels
    first_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    session.run(None, {inp.name: x})  # as every later run takes
    run_ms = (time.perf_counter() - t0) * 1e3

    probs = softmax(logits.reshape(-1).astype(np.float64))
    labels = open(args.labels).read().splitlines() if args.labels else None
    print(f"{args.model}: loaded in {load_s:.1f} s, first run (compiling) {first_ms:.0f} ms, then {run_ms:.1f} ms; "
          f"top {args.top} of {probs.size} classes:")
    for rank, c in enumerate(np.argsort(-probs, kind="stable")[:args.top], 1):
        name = labels[c] if labels and c < len(labels) else ""
        print(f"{rank:3d}  class {c:4d}  p={probs[c]:.4f}  {name}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
