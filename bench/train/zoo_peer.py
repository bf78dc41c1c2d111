#!/usr/bin/env python3
"""One peer measurement for bench/train/zoo_training.py, in its own process (so that its peak RSS is its own):

    PYTHON zoo_peer.py keras|torch MODEL --steps N --warmup_steps W [--batch 32] [--size 224] [--threads 2]

keras (the peers venv's python): keras.applications.MODEL(weights=None, input_shape=(S, S, 3), classes=10,
classifier_activation=None), TF intra-op THREADS, inter-op 1. torch (Debian's /usr/bin/python3, PyTorch 1.13):
torchvision.models.MODEL(num_classes=10), torch.set_num_threads(THREADS), inter-op 1, NCHW. Both: SGD(lr 0.01,
momentum 0.9) + sparse cross-entropy on logits, one fixed random batch (uniform [0, 1) pixels, random labels, as
`strata train-bench`), W untimed warm-up steps (the first compiles or allocates), then N timed steps, each timed to
its end (Keras's train_on_batch returns the loss as a number; torch runs synchronously on CPU). Prints one JSON line:
images/s = batch / median step time, and the CPU share other processes used during the timed steps.
"""
import argparse, json, os, statistics, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tf'))
from cpu_share import busy_share, own_cpu, foreign_pct  # noqa: E402


def keras_stepper(model, batch, size, threads):
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    import numpy as np
    import tensorflow as tf
    import keras
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    m = getattr(keras.applications, model)(weights=None, input_shape=(size, size, 3), classes=10,
                                           classifier_activation=None)
    m.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(1234)
    x = tf.constant(rng.random((batch, size, size, 3), dtype=np.float32))
    y = tf.constant(rng.integers(0, 10, (batch,)).astype(np.int64))
    return lambda: float(m.train_on_batch(x, y)), m.count_params(), f'TensorFlow {tf.__version__}, Keras {keras.__version__}'


def torch_stepper(model, batch, size, threads):
    import torch
    import torchvision
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(1234)
    m = getattr(torchvision.models, model)(num_classes=10)
    m.train()
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.rand(batch, 3, size, size)
    y = torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(m(x), y)
        loss.backward()
        opt.step()
        return float(loss)
    return step, sum(p.numel() for p in m.parameters()), f'PyTorch {torch.__version__}, torchvision {torchvision.__version__}'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('framework', choices=('keras', 'torch'))
    ap.add_argument('model')
    ap.add_argument('--steps', type=int, default=3)
    ap.add_argument('--warmup_steps', type=int, default=2)
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--size', type=int, default=224)
    ap.add_argument('--threads', type=int, default=2)
    a = ap.parse_args()
    if a.steps < 1 or a.warmup_steps < 1:
        ap.error(f'--steps and --warmup_steps must be at least 1, got {a.steps} and {a.warmup_steps}')
    make = keras_stepper if a.framework == 'keras' else torch_stepper
    step, params, version = make(a.model, a.batch, a.size, a.threads)
    t = time.perf_counter()
    step()
    first = time.perf_counter() - t
    for _ in range(a.warmup_steps - 1):
        step()
    times = []
    b0, c0 = busy_share(), own_cpu()
    for _ in range(a.steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    b1, c1 = busy_share(), own_cpu()
    med = statistics.median(times)
    print(json.dumps({'framework': a.framework, 'model': a.model, 'batch': a.batch, 'threads': a.threads,
                      'warmup_steps': a.warmup_steps, 'steps': a.steps, 'first_step_s': round(first, 3),
                      'median_step_ms': round(med * 1e3, 1), 'images_per_s': round(a.batch / med, 2),
                      'foreign_pct': foreign_pct(b0, b1, c0, c1), 'params': params, 'version': version}), flush=True)


if __name__ == '__main__':
    sys.exit(main())
