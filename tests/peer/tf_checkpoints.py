"""TF2 object-based checkpoints between TensorFlow and strata (issue 15, Build 3, format part):
- a checkpoint TF writes (tf.train.Checkpoint of a Keras model, trained one step so the optimizer's slots exist) is
  read by `strata tf_checkpoint dump`: the same variables (object paths) with bit-identical values, as TF's own
  checkpoint reader reports them;
- a checkpoint strata writes (`strata tf_checkpoint write`) is read by tf.train.load_checkpoint and restored by
  tf.train.Checkpoint.read into tf.Variables with equal values (assert_existing_objects_matched);
- a damaged checkpoint is refused with the CRC error.

Usage: tf_checkpoints.py STRATA_BINARY"""
import os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_util import Tally  # noqa: E402

try:
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
    import numpy as np
    import tensorflow as tf
    import keras
    tf.get_logger().setLevel('ERROR')
except ImportError as e:
    print(f'peers venv missing ({e}): run scripts/install-deps.sh --peers')
    sys.exit(77)

SUFFIX = '/.ATTRIBUTES/VARIABLE_VALUE'


def safe(name):
    return ''.join(c if c.isalnum() or c in '._-' else '_' for c in name)


def tf_to_strata(strata, work):
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, activation='relu'), keras.layers.Dense(2)])
    opt = keras.optimizers.Adam(1e-3)
    model.compile(optimizer=opt, loss='mse')
    model.fit(np.random.rand(8, 6).astype('float32'), np.random.rand(8, 2).astype('float32'), epochs=1, verbose=0)
    prefix = tf.train.Checkpoint(model=model, optimizer=opt).write(os.path.join(work, 'tf', 'ckpt'))
    reader = tf.train.load_checkpoint(prefix)
    want = {k[:-len(SUFFIX)]: reader.get_tensor(k) for k, _ in tf.train.list_variables(prefix) if k.endswith(SUFFIX)}
    out = os.path.join(work, 'dump')
    r = subprocess.run([strata, 'tf_checkpoint', 'dump', prefix, '--out', out], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        return [f'strata tf_checkpoint dump failed: {r.stderr.strip()}']
    got_paths = {line.split('\t')[0] for line in r.stdout.splitlines() if line}
    problems = []
    if got_paths != set(want):
        problems.append(f'paths differ: strata only {sorted(got_paths - set(want))}, TF only {sorted(set(want) - got_paths)}')
    for path, v in want.items():
        f = os.path.join(out, safe(path) + '.npy')
        if os.path.exists(f):
            g = np.load(f)
            if g.shape != np.shape(v) or not np.array_equal(g, v):
                problems.append(f'{path}: strata {g.shape} differs from TF {np.shape(v)}')
    if not problems:
        print(f'    strata reads TF\'s checkpoint: {len(want)} variables (e.g. {sorted(want)[:3]}), bit-identical')
    return problems


def strata_to_tf(strata, work):
    rng = np.random.default_rng(7)
    values = {'model/dense/kernel': rng.normal(size=(6, 4)).astype('float32'),
              'model/dense/bias': rng.normal(size=(4,)).astype('float32'),
              'model/step': np.array(42, dtype='int64')}
    args = []
    for path, v in values.items():
        f = os.path.join(work, safe(path) + '.npy')
        np.save(f, v)
        args.append(f'{path}={f}')
    prefix = os.path.join(work, 'strata', 'ckpt')
    r = subprocess.run([strata, 'tf_checkpoint', 'write', prefix, *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return [f'strata tf_checkpoint write failed: {r.stderr.strip()}']
    problems = []
    reader = tf.train.load_checkpoint(prefix)
    for path, v in values.items():
        got = reader.get_tensor(path + SUFFIX)
        if not np.array_equal(got, v):
            problems.append(f'load_checkpoint {path}: {got} != {v}')

    class Dense(tf.Module):
        def __init__(self):
            super().__init__()
            self.kernel = tf.Variable(tf.zeros((6, 4)))
            self.bias = tf.Variable(tf.zeros((4,)))

    class Model(tf.Module):
        def __init__(self):
            super().__init__()
            self.dense = Dense()
            self.step = tf.Variable(tf.constant(0, tf.int64))

    m = Model()
    tf.train.Checkpoint(model=m).read(prefix).assert_existing_objects_matched()
    for path, var in [('model/dense/kernel', m.dense.kernel), ('model/dense/bias', m.dense.bias),
                      ('model/step', m.step)]:
        if not np.array_equal(var.numpy(), values[path]):
            problems.append(f'restored {path}: {var.numpy()} != {values[path]}')
    if not problems:
        print('    tf.train.Checkpoint.read restores strata\'s checkpoint: kernel, bias, step equal')
    return problems


def damaged(strata, work):
    src = os.path.join(work, 'strata')
    dst = os.path.join(work, 'damaged')
    shutil.copytree(src, dst)
    data = os.path.join(dst, 'ckpt.data-00000-of-00001')
    b = bytearray(open(data, 'rb').read())
    b[-1] ^= 0x5a  # the last tensor (model/step)
    open(data, 'wb').write(bytes(b))
    r = subprocess.run([strata, 'tf_checkpoint', 'dump', os.path.join(dst, 'ckpt')], capture_output=True, text=True,
                       timeout=120)
    if r.returncode == 0 or 'CRC-32C' not in r.stderr:
        return [f'expected a CRC error, got rc {r.returncode}: {r.stderr.strip()}']
    print(f'    damaged shard: {r.stderr.strip()[:150]}')
    return []


def main():
    strata = os.path.abspath(sys.argv[1])
    tally = Tally()
    work = tempfile.mkdtemp(prefix='strata_tfckpt_')
    try:
        tally.run('tf_to_strata', tf_to_strata, strata, work)
        tally.run('strata_to_tf', strata_to_tf, strata, work)
        tally.run('damaged', damaged, strata, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tally.finish()


if __name__ == '__main__':
    sys.exit(main())
