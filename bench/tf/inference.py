#!/usr/bin/env python3
"""SavedModel inference latency, strata vs TensorFlow 2.21 (the peers venv), on the same SavedModel directory, in
one run.

    ~/.cache/strata/peers-venv/bin/python bench/tf/inference.py [--build build] [--rounds 3] [--iters 50]

Models (Keras 3, seeded random weights, exported with model.export into a temporary directory):
  cnn        the Fashion-MNIST CNN (Conv32-MaxPool-Conv64-MaxPool-Flatten-Dense128-Dense10 softmax, 28x28x1)
  resnet     a ResNet-style CIFAR network (32x32x3: Conv16-BN-ReLU, three stages of two residual blocks with
             16/32/64 filters, BN, strided 1x1 projections, GlobalAveragePooling, Dense10)
Batch 1 and 32. TF: tf.saved_model.load, then (a) the serving signature, signatures['serving_default'](x), and
(b) the restored tf.function, loaded.serve(x); intra-op 2, inter-op 1. strata: `strata bench DIR --threads 2
--batch B --json` (the SavedModel imported, serving_default). Latency = median of --iters timed calls after 5
warm-up calls; each side's median over the rounds (strata and TF alternate). The CPU share that other processes used
during each measurement is printed beside it.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

from cpu_share import busy_share, foreign_pct, own_cpu

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
import numpy as np
import tensorflow as tf
import keras
from keras import layers

tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(1)


def cnn():
    return keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(32, 3, activation='relu'), layers.MaxPooling2D(),
                             layers.Conv2D(64, 3, activation='relu'), layers.MaxPooling2D(), layers.Flatten(),
                             layers.Dense(128, activation='relu'), layers.Dense(10, activation='softmax')])


def resnet():
    x = inp = keras.Input((32, 32, 3))
    x = layers.Activation('relu')(layers.BatchNormalization()(layers.Conv2D(16, 3, padding='same', use_bias=False)(x)))
    for filters, stride in ((16, 1), (32, 2), (64, 2)):
        for b in range(2):
            s = stride if b == 0 else 1
            y = layers.Conv2D(filters, 3, strides=s, padding='same', use_bias=False)(x)
            y = layers.Activation('relu')(layers.BatchNormalization()(y))
            y = layers.BatchNormalization()(layers.Conv2D(filters, 3, padding='same', use_bias=False)(y))
            if s != 1 or x.shape[-1] != filters:
                x = layers.BatchNormalization()(layers.Conv2D(filters, 1, strides=s, use_bias=False)(x))
            x = layers.Activation('relu')(layers.Add()([x, y]))
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, layers.Dense(10)(x))


def tf_latency(fn, x, iters):
    for _ in range(5):
        fn(x)
    times = []
    b0, c0 = busy_share(), own_cpu()
    for _ in range(iters):
        t0 = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, foreign_pct(b0, busy_share(), c0, own_cpu())


def strata_latency(strata, d, batch, iters):
    b0, c0 = busy_share(), own_cpu()
    out = subprocess.run([strata, 'bench', d, '--threads', '2', '--batch', str(batch), '--warmup', '5', '--iters',
                          str(iters), '--json'], check=True, capture_output=True, text=True,
                         env=dict(os.environ, OMP_WAIT_POLICY='passive')).stdout
    return json.loads(out.strip().splitlines()[-1])['median_ms'], foreign_pct(b0, busy_share(), c0, own_cpu())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--iters', type=int, default=50)
    a = ap.parse_args()
    strata = os.path.abspath(os.path.join(a.build, 'strata'))
    work = tempfile.mkdtemp(prefix='strata_tf_infer_')
    rows = {}
    try:
        keras.utils.set_random_seed(0)
        models = {}
        for name, build in (('cnn', cnn), ('resnet', resnet)):
            m = build()
            d = os.path.join(work, name, '1')
            m.export(d, verbose=False)
            loaded = tf.saved_model.load(d)
            sig = loaded.signatures['serving_default']
            alias = list(sig.structured_input_signature[1].keys())[0]
            models[name] = (d, loaded, sig, alias, m.input_shape[1:])
        for r in range(a.rounds):
            for name, (d, loaded, sig, alias, shape) in models.items():
                for batch in (1, 32):
                    x = tf.constant(np.random.default_rng(1).uniform(0, 1, (batch, *shape)).astype('float32'))
                    s, sf = strata_latency(strata, d, batch, a.iters)
                    ks, kf = tf_latency(lambda v: sig(**{alias: v}), x, a.iters)
                    kt, ktf = tf_latency(loaded.serve, x, a.iters)
                    rows.setdefault((name, batch), []).append((s, ks, kt, sf, kf, ktf))
                    print(f'round {r + 1} {name} batch {batch}: strata {s:.3f} ms (foreign {sf}%), TF signature '
                          f'{ks:.3f} ms ({kf}%), TF tf.function {kt:.3f} ms ({ktf}%)', flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print('| model | batch | strata ms | TF signature ms | TF tf.function ms | TF signature / strata | '
          'TF tf.function / strata | foreign CPU % (strata, sig, fn) |')
    print('|---|---|---|---|---|---|---|---|')
    for (name, batch), v in rows.items():
        med = [statistics.median(x[i] for x in v) for i in range(6)]
        print(f'| {name} | {batch} | {med[0]:.3f} | {med[1]:.3f} | {med[2]:.3f} | **{med[1] / med[0]:.2f}** | '
              f'**{med[2] / med[0]:.2f}** | {med[3]:.0f}, {med[4]:.0f}, {med[5]:.0f} |')
    print(f'\nTensorFlow {tf.__version__}, Keras {keras.__version__}, intra-op 2, inter-op 1, '
          f'TF_ENABLE_ONEDNN_OPTS={os.environ.get("TF_ENABLE_ONEDNN_OPTS", "(unset: on by default on x86)")}; '
          f'strata --threads 2; median latency of {a.iters} calls, medians of {a.rounds} alternating rounds.')


if __name__ == '__main__':
    sys.exit(main())
