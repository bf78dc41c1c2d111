#!/usr/bin/python3
"""Exports the Fashion-MNIST CNN of tools/torch_models.py (conv32-pool-conv64-pool-dense128-dense10 on 1x28x28,
random weights, eval mode) for the serving benchmark, as OUT_DIR/cnn/1/model.onnx and OUT_DIR/cnn.onnx.

Same layers and weights as `tools/torch_models.py OUT cnn`; the only difference is that the flatten step is written
as view(-1, 1600), which exports as a Reshape instead of a Flatten node (same arithmetic).

usage: bench/serve/export_fashion_cnn.py OUT_DIR
"""
import os
import shutil
import sys

import torch
import torch.nn as nn

torch.set_num_threads(2)


class FashionCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                                      nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Linear(1600, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10))

    def forward(self, x):
        return self.classifier(self.features(x).view(-1, 1600))


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, 'cnn', '1'), exist_ok=True)
    torch.manual_seed(0)
    model = FashionCnn().eval()
    x = torch.rand((2, 1, 28, 28), generator=torch.Generator().manual_seed(7))
    path = os.path.join(out, 'cnn.onnx')
    torch.onnx.export(model, x, path, opset_version=13, input_names=['input'], output_names=['output'],
                      dynamic_axes={'input': {0: 'batch'}, 'output': {0: 'batch'}})
    shutil.copy(path, os.path.join(out, 'cnn', '1', 'model.onnx'))


if __name__ == '__main__':
    main()
