#!/usr/bin/python3
"""Exports a small PyTorch model to ONNX for the serving end-to-end test, with a fixed input and PyTorch's output.

The model uses only MatMul/Add/Relu (torch.matmul on 2-D inputs exports as MatMul), so it runs with the op families
that are on main today. Writes OUT_DIR/1/model.onnx, OUT_DIR/input.json ({"instances": [...]}) and
OUT_DIR/expected.json ([[...], ...], PyTorch's output rows).

usage: tests/serve/export_torch_mlp.py OUT_DIR
"""
import json
import os
import sys

import torch

torch.set_num_threads(1)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.w1 = torch.nn.Parameter(torch.randn(8, 16, generator=g) * 0.5)
        self.b1 = torch.nn.Parameter(torch.randn(16, generator=g) * 0.1)
        self.w2 = torch.nn.Parameter(torch.randn(16, 4, generator=g) * 0.5)
        self.b2 = torch.nn.Parameter(torch.randn(4, generator=g) * 0.1)

    def forward(self, x):
        return torch.matmul(torch.relu(torch.matmul(x, self.w1) + self.b1), self.w2) + self.b2


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, '1'), exist_ok=True)
    model = Mlp().eval()
    x = torch.rand((3, 8), generator=torch.Generator().manual_seed(11))
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, x, os.path.join(out, '1', 'model.onnx'), opset_version=13, input_names=['input'],
                      output_names=['output'], dynamic_axes={'input': {0: 'batch'}, 'output': {0: 'batch'}})
    with open(os.path.join(out, 'input.json'), 'w') as f:
        json.dump({'instances': x.tolist()}, f)
    with open(os.path.join(out, 'expected.json'), 'w') as f:
        json.dump(y.tolist(), f)


if __name__ == '__main__':
    main()
