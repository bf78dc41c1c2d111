#!/usr/bin/env python3
"""Training images/s of strata vs Keras 3 on TensorFlow 2.21 (the peers venv), measured in one run.

    ~/.cache/strata/peers-venv/bin/python bench/train/compare_tf.py [--build build] [--rounds 3] [--markdown OUT]
        [--models mlp,cnn_small,MobileNetV3Small]

The protocol of the PyTorch peer's bench_train.py, which `strata train-bench` follows: SGD lr 0.01 momentum 0.9,
sparse categorical cross-entropy, one fixed random batch of 64 (uint8-range pixels / 255), warm-up steps, then steps
for at least --seconds; images/s = batch / median step time. Keras runs the same architectures as strata's zoo (mlp:
Flatten-Dense256-Dense128-Dense10; cnn_small: Conv32-MaxPool-Conv64-MaxPool-Flatten-Dense128-Dropout0.25-Dense10,
'valid' 3x3; MobileNetV3Small: keras.applications.MobileNetV3Small(weights=None, 32x32x3, 10 classes, logits) and
strata's zoo twin, batch 32) with `model.fit` on that batch repeated (its compiled train function, as users run it), step times from
a callback. Both on 2 intra-op threads (TF: inter-op 1). strata and Keras alternate per round; each keeps its median
over rounds. The CPU share that other processes used during each measurement is printed beside it.
"""
import argparse, json, os, resource, statistics, subprocess, sys, time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
import numpy as np
import tensorflow as tf
import keras

tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(1)

# busy_share / own_cpu / foreign_pct: bench/tf/cpu_share.py. own_cpu also counts reaped children, none of which is
# reaped while Keras's fit runs, so the differences taken around it are this process's own CPU time.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tf'))
from cpu_share import busy_share, own_cpu, foreign_pct  # noqa: E402


# name -> (input shape, batch)
MODELS = {'mlp': ((28, 28, 1), 64), 'cnn_small': ((28, 28, 1), 64), 'MobileNetV3Small': ((32, 32, 3), 32)}


def keras_model(name):
    L = keras.layers
    if name == 'MobileNetV3Small':
        m = keras.applications.MobileNetV3Small(weights=None, input_shape=MODELS[name][0], classes=10,
                                                classifier_activation=None, include_preprocessing=True)
        m.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m
    if name == 'mlp':
        layers = [L.Input((28, 28, 1)), L.Flatten(), L.Dense(256, activation='relu'), L.Dense(128, activation='relu'),
                  L.Dense(10)]
    else:
        layers = [L.Input((28, 28, 1)), L.Conv2D(32, 3, activation='relu'), L.MaxPooling2D(), L.Conv2D(64, 3,
                  activation='relu'), L.MaxPooling2D(), L.Flatten(), L.Dense(128, activation='relu'), L.Dropout(0.25),
                  L.Dense(10)]
    m = keras.Sequential(layers)
    m.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


class StepTimes(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.times, self.t0 = [], None

    def on_train_batch_begin(self, batch, logs=None):
        self.t0 = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter() - self.t0)


def keras_one(name, batch, seconds):
    rng = np.random.default_rng(0)
    x = (rng.integers(0, 256, (batch, *MODELS[name][0])).astype(np.float32) / 255.0)
    y = rng.integers(0, 10, (batch,)).astype(np.int64)
    m = keras_model(name)
    warm = StepTimes()
    m.fit(x, y, batch_size=batch, epochs=5, verbose=0, callbacks=[warm])  # compiles, then 4 warm steps
    steps = max(10, int(seconds / max(1e-4, statistics.median(warm.times[1:]))))
    xs, ys = np.concatenate([x] * steps), np.concatenate([y] * steps)
    cb = StepTimes()
    b0, c0 = busy_share(), own_cpu()
    m.fit(xs, ys, batch_size=batch, epochs=1, verbose=0, shuffle=False, callbacks=[cb])
    b1, c1 = busy_share(), own_cpu()
    med = statistics.median(cb.times)
    return {'model': name, 'batch': batch, 'steps': len(cb.times), 'median_step_ms': med * 1e3,
            'images_per_s': batch / med, 'foreign_pct': foreign_pct(b0, b1, c0, c1),
            'images_per_cpu_s': batch * len(cb.times) / max(1e-9, c1 - c0)}


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--seconds', type=float, default=5.0)
    ap.add_argument('--markdown', default='')
    ap.add_argument('--models', default='mlp,cnn_small', help=f'comma-separated, of {", ".join(MODELS)}')
    ap.add_argument('--omp_wait_policy', default='',
                    help='OMP_WAIT_POLICY for strata (e.g. passive on a loaded machine, where spinning OpenMP workers '
                         'lose their cores; default: inherited)')
    a = ap.parse_args()
    env = dict(os.environ, **({'OMP_WAIT_POLICY': a.omp_wait_policy} if a.omp_wait_policy else {}))
    strata = os.path.join(a.build, 'strata')
    rows = {}
    for r in range(a.rounds):
        for name in a.models.split(','):
            shape, batch = MODELS[name]
            cc0 = children_cpu()
            out = subprocess.run([strata, 'train-bench', '--model_name', name, '--batch_size', str(batch),
                                  '--input_shape', *map(str, shape), '--intra_op_threads', '2', '--min_seconds',
                                  str(a.seconds)], check=True, capture_output=True, text=True, env=env).stdout
            s = json.loads(out.strip().splitlines()[-1])
            # The whole process (plan compilation and warm-up steps included, which counts against strata).
            s['images_per_cpu_s'] = batch * s['steps'] / max(1e-9, children_cpu() - cc0)
            k = keras_one(name, batch, a.seconds)
            print(f'round {r + 1} {name}: strata {s["images_per_s"]:.0f} img/s (foreign {s["foreign_pct"]}%), '
                  f'keras {k["images_per_s"]:.0f} img/s (foreign {k["foreign_pct"]}%); per CPU-second: strata '
                  f'{s["images_per_cpu_s"]:.0f}, keras {k["images_per_cpu_s"]:.0f}', flush=True)
            rows.setdefault(name, []).append((s, k))
    lines = ['| model | batch | strata img/s | Keras/TF img/s | strata / Keras | foreign CPU % (strata, Keras) | '
             'img per CPU-s (strata, Keras) | strata / Keras per CPU-s |',
             '|---|---|---|---|---|---|---|---|']
    for name, pairs in rows.items():
        si = statistics.median(p[0]['images_per_s'] for p in pairs)
        ki = statistics.median(p[1]['images_per_s'] for p in pairs)
        sf = statistics.median(p[0]['foreign_pct'] for p in pairs)
        kf = statistics.median(p[1]['foreign_pct'] for p in pairs)
        sc = statistics.median(p[0]['images_per_cpu_s'] for p in pairs)
        kc = statistics.median(p[1]['images_per_cpu_s'] for p in pairs)
        lines.append(f'| {name} | {MODELS[name][1]} | {si:.0f} | {ki:.0f} | **{si / ki:.2f}** | {sf:.0f}, {kf:.0f} | '
                     f'{sc:.0f}, {kc:.0f} | {sc / kc:.2f} |')
    lines.append('')
    lines.append(f'TensorFlow {tf.__version__}, Keras {keras.__version__}, TF_ENABLE_ONEDNN_OPTS='
                 f'{os.environ.get("TF_ENABLE_ONEDNN_OPTS", "(unset: on by default on x86)")}, intra-op 2, inter-op 1; '
                 f'strata --intra_op_threads 2, OMP_WAIT_POLICY={env.get("OMP_WAIT_POLICY", "(unset)")}; '
                 f'medians of {a.rounds} alternating rounds, at least {a.seconds} s of steps each.')
    text = '\n'.join(lines)
    print(text)
    if a.markdown:
        open(a.markdown, 'w').write(text + '\n')


if __name__ == '__main__':
    sys.exit(main())
