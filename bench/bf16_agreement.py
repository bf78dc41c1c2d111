#!/usr/bin/python3
"""Top-1 agreement of `strata run --precision bf16` with `--precision fp32` on real images (issue 13).

The images are the first N Fashion-MNIST test images (IDX files, default /usr/share/datasets/fashion-mnist), resized
bilinearly (half-pixel centres) from 28x28 to the model's 224x224 and repeated to 3 channels, in batches written as
.npy files; each batch runs through `strata run` once per precision (the same binary, the same inputs). Two ways to
feed them (--pixels, --layout):
  imagenet / nchw (the default): normalised with the ImageNet mean and standard deviation, NCHW, as torchvision's
      models expect (the random-weight ResNet-50 export of ../shared/peers/torch/export_models.py);
  unit or raw / nhwc: what `strata train --image_dir` feeds a model (bench/bf16_agreement_trained.sh trains one):
      the resized image rounded to uint8, then / 255 (unit) or left 0..255 (raw, for an export whose graph scales
      its input), NHWC.
Prints the agreement, the largest |bf16 - fp32| logit (absolute and relative to the largest |fp32| logit), how
varied the fp32 predictions are (distinct classes) and the fp32 top-1/top-2 logit gaps (a model with random
weights may put most images in few classes with tiny gaps); with 10 outputs (a Fashion-MNIST classifier), also the
top-1 accuracy of both precisions on the images' labels. Exit status 1 when the agreement is below
--min_agreement, the largest difference above --max_rel_diff or the fp32 accuracy below --min_accuracy; 77
(skipped) when the model, the dataset or strata is missing.

    /usr/bin/python3 bench/bf16_agreement.py --strata build/strata --images 1000
    /usr/bin/python3 bench/bf16_agreement.py --strata build/strata --model MODEL.onnx --input_name input_image \
        --pixels unit --layout nhwc
"""
import argparse
import gzip
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np


def read_idx_images(path, count):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 2051:
            sys.exit(f"error: {path}: IDX image magic 2051 expected, found {magic}")
        if count > n:
            sys.exit(f"error: {path} holds {n} images, {count} asked for")
        data = np.frombuffer(f.read(count * rows * cols), dtype=np.uint8)
    return data.reshape(count, rows, cols)


def read_idx_labels(path, count):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        magic, n = struct.unpack(">II", f.read(8))
        if magic != 2049:
            sys.exit(f"error: {path}: IDX label magic 2049 expected, found {magic}")
        if count > n:
            sys.exit(f"error: {path} holds {n} labels, {count} asked for")
        return np.frombuffer(f.read(count), dtype=np.uint8).astype(np.int64)


def linear_resize_matrix(src, dst):
    """(dst, src) weights of bilinear resizing along one axis, half-pixel centres (align_corners=False)."""
    m = np.zeros((dst, src), dtype=np.float64)
    for i in range(dst):
        x = min(max((i + 0.5) * src / dst - 0.5, 0.0), src - 1.0)
        lo = int(np.floor(x))
        hi = min(lo + 1, src - 1)
        m[i, lo] += 1.0 - (x - lo)
        m[i, hi] += x - lo
    return m


def preprocess(images, size, pixels="imagenet", layout="nchw"):
    """uint8 [N, 28, 28] -> float32 [N, 3, size, size] (nchw) or [N, size, size, 3] (nhwc): bilinear resize,
    3 channels, then ImageNet normalisation (imagenet), or rounded to uint8 and / 255 (unit) or not (raw), as
    `strata train --image_dir` resizes (bilinear, half-pixel centres, rounded back to uint8) and scales (/ 255)."""
    r = linear_resize_matrix(images.shape[1], size)
    c = linear_resize_matrix(images.shape[2], size)
    x = np.einsum("ij,njk,lk->nil", r, images.astype(np.float64), c)
    if pixels == "imagenet":
        mean = np.array([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1)
        std = np.array([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1)
        x = (x[:, None, :, :] / 255.0 - mean) / std
    else:
        x = np.clip(np.floor(x + 0.5), 0, 255)  # std::lround of a non-negative value: halves round up
        if pixels == "unit":
            x = x / 255.0
        x = np.repeat(x[:, None, :, :], 3, axis=1)
    if layout == "nhwc":
        x = x.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(x, dtype=np.float32)


def run_strata(strata, model, input_name, batch_path, out_dir, precision, threads, output_name=""):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [strata, "run", model, "--input", f"{input_name}={batch_path}", "--output-dir", out_dir,
           "--precision", precision, "--threads", str(threads)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    outs = sorted(f for f in os.listdir(out_dir) if f.endswith(".npy"))
    if output_name:
        if output_name + ".npy" not in outs:
            sys.exit(f"error: {' '.join(cmd)}: no output '{output_name}' (--output_name) in {out_dir}, found {outs}")
        return np.load(os.path.join(out_dir, output_name + ".npy"))
    if len(outs) != 1:
        sys.exit(f"error: {' '.join(cmd)}: one output .npy expected in {out_dir}, found {outs} (pick one with "
                 "--output_name)")
    return np.load(os.path.join(out_dir, outs[0]))


def gap_line(name, gaps):
    q = np.percentile(gaps, [1, 5, 50])
    return (f"{name}: median {q[2]:.3g}, 5th percentile {q[1]:.3g}, 1st percentile {q[0]:.3g}, "
            f"smallest {gaps.min():.3g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strata", default="build/strata")
    ap.add_argument("--model", default="/tmp/strata-peer-models/resnet50/model.onnx")
    ap.add_argument("--input_name", default="input")
    ap.add_argument("--output_name", default="", help="the output to compare (default: the model's only one)")
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")
    ap.add_argument("--labels", default="",
                    help="IDX labels of --data (default: t10k-labels-idx1-ubyte[.gz] beside it), for the accuracy of "
                         "a 10-class model")
    ap.add_argument("--pixels", choices=("imagenet", "unit", "raw"), default="imagenet",
                    help="imagenet: ImageNet mean/std (torchvision); unit: uint8 / 255 as `strata train` feeds; "
                         "raw: uint8 values 0..255")
    ap.add_argument("--layout", choices=("nchw", "nhwc"), default="nchw")
    ap.add_argument("--min_agreement", type=float, default=0.0, help="exit 1 below this fraction")
    ap.add_argument("--max_rel_diff", type=float, default=float("inf"),
                    help="exit 1 when the largest |bf16 - fp32| logit exceeds this fraction of the largest |fp32| one")
    ap.add_argument("--save_logits", default="",
                    help="write the logits to this .npz file (arrays fp32, bf16: [images, classes])")
    ap.add_argument("--min_accuracy", type=float, default=0.0,
                    help="exit 1 when the fp32 top-1 accuracy on the labels is below this fraction")
    a = ap.parse_args()
    if a.images < 1 or a.batch < 1 or a.size < 1:
        sys.exit(f"error: --images, --batch and --size must be positive, got {a.images}, {a.batch}, {a.size}")
    for path, what in ((a.strata, "--strata"), (a.model, "--model"), (a.data, "--data")):
        if not os.path.exists(path):
            print(f"{what} {path} not found", file=sys.stderr)
            sys.exit(77)  # a missing model or dataset: skipped, not failed
    if not a.labels:
        base = os.path.join(os.path.dirname(a.data), "t10k-labels-idx1-ubyte")
        a.labels = next((p for p in (base + ".gz", base) if os.path.exists(p)), "")
    elif not os.path.exists(a.labels):
        sys.exit(f"error: --labels {a.labels} not found")
    images = read_idx_images(a.data, a.images)
    logits = {"fp32": [], "bf16": []}
    with tempfile.TemporaryDirectory(prefix="strata-bf16-agree-") as work:
        for start in range(0, a.images, a.batch):
            batch_path = os.path.join(work, "batch.npy")
            np.save(batch_path, preprocess(images[start:start + a.batch], a.size, a.pixels, a.layout))
            for precision in ("fp32", "bf16"):
                out = run_strata(a.strata, a.model, a.input_name, batch_path,
                                 os.path.join(work, f"{precision}-{start}"), precision, a.threads, a.output_name)
                logits[precision].append(out.reshape(out.shape[0], -1))
    f32 = np.concatenate(logits["fp32"]).astype(np.float64)
    b16 = np.concatenate(logits["bf16"]).astype(np.float64)
    if f32.shape != (a.images, f32.shape[1]) or f32.shape[1] < 2:
        sys.exit(f"error: {a.model}: [{a.images}, classes >= 2] logits expected, found {list(f32.shape)}")
    if a.save_logits:
        np.savez(a.save_logits, fp32=f32, bf16=b16)
    top32, top16 = f32.argmax(1), b16.argmax(1)
    agree = int((top32 == top16).sum())
    diff = np.abs(b16 - f32).max()
    scale = np.abs(f32).max()
    srt = np.sort(f32, axis=1)
    gap = srt[:, -1] - srt[:, -2]
    margin = gap / scale
    classes, counts = np.unique(top32, return_counts=True)
    print(f"images: {a.images} (Fashion-MNIST test images 0..{a.images - 1}, {a.size}x{a.size}, 3 channels, "
          f"pixels {a.pixels}, {a.layout.upper()})")
    print(f"model: {a.model}")
    accuracy = None
    if f32.shape[1] == 10 and a.labels:
        labels = read_idx_labels(a.labels, a.images)
        accuracy = float((top32 == labels).mean())
        print(f"top-1 accuracy on the labels: fp32 {100.0 * accuracy:.1f}%, "
              f"bf16 {100.0 * (top16 == labels).mean():.1f}% ({a.labels})")
    print(f"top-1 agreement bf16 vs fp32: {agree} of {a.images} ({100.0 * agree / a.images:.1f}%)")
    print(f"largest |bf16 - fp32| logit: {diff:.4g} ({diff / scale:.2e} of the largest |fp32| logit, {scale:.4g})")
    print(f"fp32 top-1: {len(classes)} distinct classes; the most frequent takes {counts.max()} images")
    print(gap_line("fp32 top-1 - top-2 logit gap", gap))
    print(gap_line("the same gap / the largest |fp32| logit", margin))
    print(f"images whose gap is below the largest |bf16 - fp32| difference: {(gap < diff).sum()}")
    flipped = np.nonzero(top32 != top16)[0]
    if len(flipped):
        print(f"gaps of the {len(flipped)} images that disagree: " + ", ".join(f"{g:.3g}" for g in gap[flipped][:20]) +
              (" ..." if len(flipped) > 20 else ""))
    failed = False
    if agree < a.min_agreement * a.images:
        print(f"FAIL: agreement {agree / a.images:.4f} below {a.min_agreement}", file=sys.stderr)
        failed = True
    if diff > a.max_rel_diff * scale:
        print(f"FAIL: largest difference {diff / scale:.3e} of the largest logit, above {a.max_rel_diff}",
              file=sys.stderr)
        failed = True
    if a.min_accuracy > 0 and (accuracy is None or accuracy < a.min_accuracy):
        print(f"FAIL: fp32 accuracy {accuracy} below {a.min_accuracy} (10 outputs and --labels needed)",
              file=sys.stderr)
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
