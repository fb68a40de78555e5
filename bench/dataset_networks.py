"""The networks of a TenSet-style dataset (`tessera dataset collect`, issue 21):
torchvision models exported to ONNX at the batch and image sizes TenSet varies,
and a list file for `--networks`.

TenSet (research/costmodel.md section 1.1) measured ResNet-18/50, MobileNet-V2/V3,
Wide-ResNet-50 and ResNeXt-50 at batch {1,4,8} x image {224,240,256};
Inception-V3 at batch {1,2,4}, 299; DenseNet-121 at {1,2,4} x {224,240,256};
ResNet3D-18 at {1,2,4} x {112,128,144} (16 frames); BERT at {1,2,4} x sequence
{64,128,256}. This script exports that grid for the torchvision models (BERT-base
only at sequence 128, bench/perf_models.py's; DCGAN and the other BERT sizes are
not exported), plus SqueezeNet 1.1 at ResNet's grid (Tessera's first collections
measured it). Weights are random (nothing can be downloaded here), built as
bench/perf_models.py builds its models: the schedules' costs do not depend on them.

Writes OUT/<model>_b<batch>_<size>/model.onnx (the collection names each network
by its folder) and OUT/networks.txt listing them (paths relative to it).
An export already there is reused.

  bench/dataset_networks.py --out bench/out/dataset            # the whole grid
  bench/dataset_networks.py --out D --models resnet18,mobilenet_v2 --batches 1 --sizes 224

Needs Debian's python3-torch, python3-torchvision and python3-onnx
(scripts/install-bench-deps.sh).
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fusion_models  # noqa: E402
import perf_models  # noqa: E402

IMAGE = (224, 240, 256)
# model -> (batches, sizes): TenSet's grid
GRID = {
    "squeezenet1_1": ((1, 4, 8), IMAGE),
    "resnet18": ((1, 4, 8), IMAGE),
    "resnet50": ((1, 4, 8), IMAGE),
    "mobilenet_v2": ((1, 4, 8), IMAGE),
    "mobilenet_v3_large": ((1, 4, 8), IMAGE),
    "wide_resnet50_2": ((1, 4, 8), IMAGE),
    "resnext50_32x4d": ((1, 4, 8), IMAGE),
    "inception_v3": ((1, 2, 4), (299,)),
    "densenet121": ((1, 2, 4), IMAGE),
    "r3d_18": ((1, 2, 4), (112, 128, 144)),
    "bert_base": ((1, 2, 4), (128,)),
}


def build(name, batch, size):
    """(model, inputs, input names) of `name` at `batch` and image size (r3d_18: frame size; BERT: sequence)."""
    if name in ("r3d_18", "bert_base"):
        return perf_models.build(name, batch, size)
    return perf_models.torchvision_model(name, batch, size)


def ints(text):
    return tuple(int(x) for x in text.split(",") if x.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "out", "dataset"), help="folder of the exports and networks.txt")
    ap.add_argument("--models", default=",".join(GRID), help="comma-separated (default: all of " + ", ".join(GRID) + ")")
    ap.add_argument("--batches", type=ints, help="only these batch sizes (default: each model's grid)")
    ap.add_argument("--sizes", type=ints, help="only these image sizes (default: each model's grid)")
    args = ap.parse_args()
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in GRID]
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(GRID)}")
    os.makedirs(args.out, exist_ok=True)
    listed = []
    for name in names:
        batches, sizes = GRID[name]
        for b in batches:
            if args.batches and b not in args.batches:
                continue
            for s in sizes:
                if args.sizes and s not in args.sizes:
                    continue
                folder = f"{name}_b{b}_{s}"
                d = os.path.join(args.out, folder)
                path = os.path.join(d, "model.onnx")
                if not os.path.exists(path):
                    t0 = time.time()
                    model, inputs, input_names = build(name, b, s)
                    fusion_models.save_export(model, inputs, input_names, d)
                    print(f"{folder}: {os.path.getsize(path) / 2**20:.1f} MiB ({time.time() - t0:.1f} s)")
                else:
                    print(f"{folder}: reusing {path}")
                listed.append(os.path.join(folder, "model.onnx"))
    if not listed:
        raise SystemExit("no (model, batch, size) of the grid matches --batches and --sizes")
    with open(os.path.join(args.out, "networks.txt"), "w") as f:
        f.write("# bench/dataset_networks.py: " + " ".join(sys.argv[1:]) + "\n")
        f.writelines(p + "\n" for p in listed)
    print(f"{len(listed)} networks: {os.path.join(args.out, 'networks.txt')}")


if __name__ == "__main__":
    main()
