#!/usr/bin/python3
"""Top-1 agreement of `strata run --precision bf16` with `--precision fp32` on real images (issue 13).

The images are the first N Fashion-MNIST test images (IDX files, default /usr/share/datasets/fashion-mnist), resized
bilinearly from 28x28 to the model's 224x224, repeated to 3 channels and normalised with the ImageNet mean and
standard deviation, in batches written as .npy files; each batch runs through `strata run` once per precision (the
same binary, the same inputs). Prints the agreement, the largest |bf16 - fp32| logit (absolute and relative to the
largest |fp32| logit), and how varied the fp32 predictions are (distinct classes, top-1/top-2 margins), since a
model with random weights may put most images in few classes. Exit status 1 when the agreement is below
--min_agreement or the largest difference above --max_rel_diff; 77 (skipped) when the model, the dataset or strata
is missing.

    /usr/bin/python3 bench/bf16_agreement.py --strata build/strata --images 1000
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


def preprocess(images, size):
    """uint8 [N, 28, 28] -> float32 [N, 3, size, size]: bilinear resize, 3 channels, ImageNet normalisation."""
    r = linear_resize_matrix(images.shape[1], size)
    c = linear_resize_matrix(images.shape[2], size)
    x = np.einsum("ij,njk,lk->nil", r, images.astype(np.float64) / 255.0, c)
    mean = np.array([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1)
    return ((x[:, None, :, :] - mean) / std).astype(np.float32)


def run_strata(strata, model, input_name, batch_path, out_dir, precision, threads):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [strata, "run", model, "--input", f"{input_name}={batch_path}", "--output-dir", out_dir,
           "--precision", precision, "--threads", str(threads)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    outs = [f for f in os.listdir(out_dir) if f.endswith(".npy")]
    if len(outs) != 1:
        sys.exit(f"error: {' '.join(cmd)}: one output .npy expected in {out_dir}, found {outs}")
    return np.load(os.path.join(out_dir, outs[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strata", default="build/strata")
    ap.add_argument("--model", default="/tmp/strata-peer-models/resnet50/model.onnx")
    ap.add_argument("--input_name", default="input")
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")
    ap.add_argument("--min_agreement", type=float, default=0.0, help="exit 1 below this fraction")
    ap.add_argument("--max_rel_diff", type=float, default=float("inf"),
                    help="exit 1 when the largest |bf16 - fp32| logit exceeds this fraction of the largest |fp32| one")
    a = ap.parse_args()
    for path, what in ((a.strata, "--strata"), (a.model, "--model"), (a.data, "--data")):
        if not os.path.exists(path):
            print(f"{what} {path} not found", file=sys.stderr)
            sys.exit(77)  # a missing model or dataset: skipped, not failed
    images = read_idx_images(a.data, a.images)
    logits = {"fp32": [], "bf16": []}
    with tempfile.TemporaryDirectory(prefix="strata-bf16-agree-") as work:
        for start in range(0, a.images, a.batch):
            batch_path = os.path.join(work, "batch.npy")
            np.save(batch_path, preprocess(images[start:start + a.batch], a.size))
            for precision in ("fp32", "bf16"):
                out = run_strata(a.strata, a.model, a.input_name, batch_path,
                                 os.path.join(work, f"{precision}-{start}"), precision, a.threads)
                logits[precision].append(out.reshape(out.shape[0], -1))
    f32 = np.concatenate(logits["fp32"]).astype(np.float64)
    b16 = np.concatenate(logits["bf16"]).astype(np.float64)
    top32, top16 = f32.argmax(1), b16.argmax(1)
    agree = int((top32 == top16).sum())
    diff = np.abs(b16 - f32).max()
    scale = np.abs(f32).max()
    srt = np.sort(f32, axis=1)
    margin = (srt[:, -1] - srt[:, -2]) / scale
    classes, counts = np.unique(top32, return_counts=True)
    print(f"images: {a.images} (Fashion-MNIST test images 0..{a.images - 1}, {a.size}x{a.size}, 3 channels)")
    print(f"model: {a.model}")
    print(f"top-1 agreement bf16 vs fp32: {agree} of {a.images} ({100.0 * agree / a.images:.1f}%)")
    print(f"largest |bf16 - fp32| logit: {diff:.4g} ({diff / scale:.2e} of the largest |fp32| logit, {scale:.4g})")
    print(f"fp32 top-1: {len(classes)} distinct classes; the most frequent takes {counts.max()} images")
    print(f"fp32 top-1/top-2 margin (of the largest |logit|): median {np.median(margin):.2e}, "
          f"min {margin.min():.2e}; images with a margin below the largest difference: {(margin < diff / scale).sum()}")
    failed = False
    if agree < a.min_agreement * a.images:
        print(f"FAIL: agreement {agree / a.images:.4f} below {a.min_agreement}", file=sys.stderr)
        failed = True
    if diff > a.max_rel_diff * scale:
        print(f"FAIL: largest difference {diff / scale:.3e} of the largest logit, above {a.max_rel_diff}",
              file=sys.stderr)
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
