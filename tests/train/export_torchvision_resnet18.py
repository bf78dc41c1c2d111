"""Exports torchvision's ResNet-18 (random weights, seed 0) to ONNX at a small input size, and writes a tiny 3-channel
IDX dataset (a class-dependent colour blob) for tests/train/cli_onnx_finetune.sh. Prints the tensor the new head
should read: the input of the final Gemm (the pooled, flattened 512 features).
Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision, python3-onnx, python3-numpy).
usage: export_torchvision_resnet18.py OUT_DIR SIZE"""
import os
import struct
import sys

import numpy as np
import onnx
import torch
import torchvision

out, size = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
model = torchvision.models.resnet18()
model.eval()
x = torch.zeros(1, 3, size, size)
path = os.path.join(out, 'resnet18.onnx')
torch.onnx.export(model, x, path, opset_version=13, input_names=['input'], output_names=['output'],
                  dynamic_axes={'input': {0: 'batch'}, 'output': {0: 'batch'}}, do_constant_folding=True)
m = onnx.load(path)
onnx.checker.check_model(m)
gemm = [n for n in m.graph.node if n.op_type == 'Gemm'][-1]

rng = np.random.default_rng(1)
def write(prefix, n):
    y = rng.integers(0, 3, n).astype(np.uint8)
    img = (rng.random((n, size, size, 3)) * 80).astype(np.uint8)
    for i, c in enumerate(y):
        img[i, size // 4:3 * size // 4, size // 4:3 * size // 4, c] += 170  # a centred square in channel c
    d = os.path.join(out, 'data')
    os.makedirs(d, exist_ok=True)
    open(f'{d}/{prefix}-images-idx3-ubyte', 'wb').write(b'\0\0\x08\x04' + struct.pack('>4I', n, size, size, 3) +
                                                        img.tobytes())
    open(f'{d}/{prefix}-labels-idx1-ubyte', 'wb').write(b'\0\0\x08\x01' + struct.pack('>I', n) + y.tobytes())
write('train', 128)
write('t10k', 64)
print(gemm.input[0])
