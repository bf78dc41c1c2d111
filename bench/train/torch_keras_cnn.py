#!/usr/bin/env python3
# Independent check: the small CNN with Keras defaults (glorot_uniform kernels, zero biases, Adam eps 1e-7 added to
# sqrt(v) un-corrected as Keras does, /255, reshuffle every epoch, dropout 0.25 after dense128, 'valid' 3x3),
# trained in PyTorch; prints test accuracy per epoch.  usage: torch_keras_cnn.py SEED [same|valid] [EPOCHS]
import gzip, struct, sys, numpy as np, torch, torch.nn as nn, torch.nn.functional as F
torch.set_num_threads(2)
seed = int(sys.argv[1]); pad = sys.argv[2] if len(sys.argv) > 2 else 'valid'; epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
D = '/usr/share/datasets/fashion-mnist'
def idx(p):
    d = gzip.open(p).read(); nd = struct.unpack('>I', d[:4])[0] & 0xff
    dims = struct.unpack('>' + 'I' * nd, d[4:4 + 4 * nd]); return np.frombuffer(d, np.uint8, offset=4 + 4 * nd).reshape(dims)
f = lambda x: torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)
xtr, ytr = f(idx(f'{D}/train-images-idx3-ubyte.gz')), torch.from_numpy(idx(f'{D}/train-labels-idx1-ubyte.gz').astype(np.int64))
xte, yte = f(idx(f'{D}/t10k-images-idx3-ubyte.gz')), torch.from_numpy(idx(f'{D}/t10k-labels-idx1-ubyte.gz').astype(np.int64))
torch.manual_seed(seed)
p = 1 if pad == 'same' else 0
flat = 64 * 7 * 7 if pad == 'same' else 64 * 5 * 5
m = nn.Sequential(nn.Conv2d(1, 32, 3, padding=p), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=p), nn.ReLU(),
                  nn.MaxPool2d(2), nn.Flatten(), nn.Linear(flat, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10))
for mod in m:
    if isinstance(mod, (nn.Conv2d, nn.Linear)):
        nn.init.xavier_uniform_(mod.weight); nn.init.zeros_(mod.bias)
params = list(m.parameters())
ms = [torch.zeros_like(q) for q in params]; vs = [torch.zeros_like(q) for q in params]
lr, b1, b2, eps, t = 1e-3, 0.9, 0.999, 1e-7, 0
g = torch.Generator().manual_seed(seed)
for ep in range(epochs):
    m.train(); perm = torch.randperm(60000, generator=g)
    for i in range(0, 60000, 64):
        ix = perm[i:i + 64]
        loss = F.cross_entropy(m(xtr[ix]), ytr[ix])
        for q in params: q.grad = None
        loss.backward(); t += 1
        with torch.no_grad():
            a = lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t)
            for q, mm, vv in zip(params, ms, vs):
                mm.add_((q.grad - mm) * (1 - b1)); vv.add_((q.grad * q.grad - vv) * (1 - b2))
                q.sub_(a * mm / (vv.sqrt() + eps))
    m.eval()
    with torch.no_grad():
        acc = sum((m(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item() for i in range(0, 10000, 1000)) / 10000
    print(f'seed {seed} pad {pad} epoch {ep + 1} test_acc {acc:.4f}', flush=True)
