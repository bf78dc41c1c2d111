#!/usr/bin/python3
"""Exports reference models with PyTorch (Debian's python3-torch) for strata's model tests and benchmarks.

For each model NAME writes OUT/NAME/model.onnx (opset 13, dynamic batch, random weights from a fixed seed),
OUT/NAME/input.npy (batch 2) and OUT/NAME/output.npy (PyTorch's output for that input, eval mode).

usage: tools/torch_models.py OUT_DIR [NAME ...]
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision

torch.set_num_threads(2)


class FashionMlp(nn.Module):
    """784-256-128-10 with ReLU."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                    nn.Linear(128, 10))

    def forward(self, x):
        return self.layers(x)


class FashionCnn(nn.Module):
    """conv32-pool-conv64-pool-dense128-dropout0.25-dense10 on 28x28x1."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                                  nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Dropout(0.25),
                                  nn.Linear(128, 10))

    def forward(self, x):
        return self.body(x)


class Encoder(nn.Module):
    """Two post-norm Transformer encoder layers: d_model 128, 4 heads, feed-forward 256, batch first."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)

    def forward(self, x):
        return self.encoder(x)


SHAPES = {
    'mlp': (1, 28, 28),
    'cnn': (1, 28, 28),
    'transformer': (32, 128),
    'squeezenet1_1': (3, 224, 224),
    'mobilenet_v2': (3, 224, 224),
    'resnet18': (3, 224, 224),
    'resnet50': (3, 224, 224),
}


def make(name):
    if name == 'mlp':
        return FashionMlp()
    if name == 'cnn':
        return FashionCnn()
    if name == 'transformer':
        return Encoder()
    return getattr(torchvision.models, name)(weights=None)


def export(name, out_dir):
    path = os.path.join(out_dir, name)
    os.makedirs(path, exist_ok=True)
    torch.manual_seed(0)
    model = make(name).eval()
    gen = torch.Generator().manual_seed(7)
    x = torch.randn((2,) + SHAPES[name], generator=gen) if name == 'transformer' else \
        torch.rand((2,) + SHAPES[name], generator=gen)
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, x, os.path.join(path, 'model.onnx'), opset_version=13, input_names=['input'],
                      output_names=['output'], dynamic_axes={'input': {0: 'batch'}, 'output': {0: 'batch'}})
    np.save(os.path.join(path, 'input.npy'), x.numpy().astype(np.float32))
    np.save(os.path.join(path, 'output.npy'), y.numpy().astype(np.float32))
    print(f'{name}: input {tuple(x.shape)} output {tuple(y.shape)}', flush=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    for name in sys.argv[2:] or list(SHAPES):
        if name not in SHAPES:
            sys.exit(f'unknown model {name!r}; known: {", ".join(SHAPES)}')
        export(name, out_dir)


if __name__ == '__main__':
    main()
