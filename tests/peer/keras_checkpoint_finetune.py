"""A model trained in Keras continues training in strata (issue 15, "Must show"): for the zoo's mlp and cnn_small,
Keras 3 (TF backend) trains the same architecture for one epoch on Fashion-MNIST and writes
tf.train.Checkpoint(model=model, optimizer=opt); then

- `strata tf_checkpoint import` maps the checkpoint's object graph (the Keras layers by position,
  model/_operations/<i>/_kernel ...) onto the zoo model, `strata export` + `strata run` give Keras's logits for the
  same test images within 1e-5 of the logits' scale;
- `strata train --weights PREFIX` continues for one epoch: its validation loss is below Keras's after Keras's epoch
  and its validation accuracy at least Keras's;
- `strata tf_checkpoint export --like PREFIX` writes strata's trained weights in the Keras checkpoint's layout;
  tf.train.Checkpoint(model=fresh_keras_model, optimizer=...).read restores them (every object matched) and the
  Keras model then gives strata's logits within 1e-5;
- the checkpoint of one architecture given to the other is refused, naming the layers of both;
- BatchNormalization (with its moving statistics) and DepthwiseConv2D map too: Keras's MobileNetV3Small with random
  weights, imported into strata's zoo twin, gives Keras's logits within 1e-4.

Usage: keras_checkpoint_finetune.py STRATA_BINARY [--data FASHION_MNIST_DIR] [--steps N]"""
import argparse, csv, gzip, os, shutil, struct, subprocess, sys, tempfile

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

tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(1)
BATCH = 64


def read_idx(path):
    raw = gzip.decompress(open(path, 'rb').read()) if path.endswith('.gz') else open(path, 'rb').read()
    _, _, ndim = struct.unpack('>HBB', raw[:4])
    dims = struct.unpack('>' + 'I' * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def keras_model(name):
    """The zoo's architectures (src/nn/zoo.cc), Keras's default initialisers and names."""
    L = keras.layers
    if name == 'mlp':
        layers = [L.Input((28, 28, 1)), L.Flatten(), L.Dense(256, activation='relu'), L.Dense(128, activation='relu'),
                  L.Dense(10)]
        return keras.Sequential(layers)
    # cnn_small as a Functional model (the mlp is Sequential): both object-graph layouts are covered.
    inp = L.Input((28, 28, 1))
    x = L.Conv2D(32, 3, activation='relu')(inp)
    x = L.MaxPooling2D()(x)
    x = L.Conv2D(64, 3, activation='relu')(x)
    x = L.MaxPooling2D()(x)
    x = L.Flatten()(x)
    x = L.Dense(128, activation='relu')(x)
    x = L.Dropout(0.25)(x)
    return keras.Model(inp, L.Dense(10)(x))


def run(cmd, timeout=900):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, OMP_WAIT_POLICY='passive'))
    return r.returncode, r.stdout, r.stderr


def continue_in_strata(strata, work, data, name, steps, x_train, y_train, x_test, y_test):
    keras.utils.set_random_seed(11)
    model = keras_model(name)
    opt = keras.optimizers.Adam(1e-3)
    model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=['accuracy'])
    n = steps * BATCH
    hist = model.fit(x_train[:n] / np.float32(255), y_train[:n], batch_size=BATCH, epochs=1, verbose=0)
    k_val_loss, k_val_acc = model.evaluate(x_test / np.float32(255), y_test, batch_size=256, verbose=0)
    prefix = tf.train.Checkpoint(model=model, optimizer=opt).write(os.path.join(work, name, 'keras', 'ckpt'))
    print(f'    {name}: Keras epoch 1 ({n} images): loss {hist.history["loss"][0]:.4f}, '
          f'val_loss {k_val_loss:.4f}, val_accuracy {k_val_acc:.4f}')
    problems = []

    # 1. Keras's outputs from strata's copy of the weights.
    imported = os.path.join(work, name, 'imported')
    rc, out, err = run([strata, 'tf_checkpoint', 'import', prefix, '--model_name', name, '--out', imported])
    if rc != 0:
        return [f'strata tf_checkpoint import: {err.strip()[-600:]}']
    # The mlp is this process's first Keras model, so its variables keep the zoo's names (matched by name); the
    # cnn_small's Dense layers are dense_3 and dense_4 here, the zoo's dense and dense_1 (matched by position).
    mode = 'by their Keras names' if name == 'mlp' else 'by layer position'
    if mode not in err:
        problems.append(f'want the variables matched {mode}; strata said: {err.strip()[-300:]}')
    export = os.path.join(work, name, 'export')
    rc, out, err = run([strata, 'export', '--checkpoint_dir', imported, '--model_name', name, '--export_base_dir',
                        export, '--raw_pixels', 'false'])
    if rc != 0:
        return [f'strata export: {err.strip()[-600:]}']
    onnx_path = os.path.join(export, name, '1', 'model.onnx')
    x = x_test[:32].astype(np.float32) / np.float32(255)
    np.save(os.path.join(work, name, 'x.npy'), x)
    run_dir = os.path.join(work, name, 'run')
    rc, out, err = run([strata, 'run', onnx_path, '--input', f'input_image={os.path.join(work, name, "x.npy")}',
                        '--output-dir', run_dir])
    if rc != 0:
        return [f'strata run: {err.strip()[-600:]}']
    want = model(x, training=False).numpy()
    got = np.load(os.path.join(run_dir, 'logits.npy'))
    err = float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))
    if got.shape != want.shape or err > 1e-5:
        problems.append(f'logits: strata {got.shape} vs Keras {want.shape}, max error / scale {err:.2e} > 1e-5')
    else:
        print(f'    {name}: strata\'s logits of 32 test images equal Keras\'s (max error / scale {err:.1e})')

    # 2. One more epoch in strata from the checkpoint.
    logs = os.path.join(work, name, 'logs')
    rc, out, err = run([strata, 'train', '--data_dir', data, '--model_name', name, '--weights', prefix,
                        '--optimizer', 'adam', '--learning_rate', '0.001', '--batch_size', str(BATCH), '--epochs', '1',
                        '--steps_per_epoch', str(steps), '--seed', '5', '--verbose', '0', '--intra_op_threads', '2',
                        '--checkpoint_dir', os.path.join(work, name, 'ckpt'), '--log_dir', logs])
    if rc != 0:
        return problems + [f'strata train --weights: {err.strip()[-600:]}']
    if 'loaded the weights' not in err:
        problems.append(f'strata train did not say it loaded the weights: {err.strip()[-300:]}')
    row = list(csv.DictReader(open(os.path.join(logs, 'training.csv'), newline='')))[-1]
    s_loss, s_val_loss, s_val_acc = float(row['loss']), float(row['val_loss']), float(row['val_accuracy'])
    print(f'    {name}: strata epoch 2: loss {s_loss:.4f}, val_loss {s_val_loss:.4f}, val_accuracy {s_val_acc:.4f}')
    if not s_loss < hist.history['loss'][0]:
        problems.append(f'strata\'s epoch-2 training loss {s_loss:.4f} is not below Keras\'s epoch 1 '
                        f'{hist.history["loss"][0]:.4f}')
    if not s_val_loss < k_val_loss:
        problems.append(f'strata\'s val_loss {s_val_loss:.4f} after epoch 2 is not below Keras\'s {k_val_loss:.4f}')
    if not s_val_acc >= k_val_acc:
        problems.append(f'strata\'s val_accuracy {s_val_acc:.4f} after epoch 2 is below Keras\'s {k_val_acc:.4f}')

    # 3. And back: strata's trained weights in the Keras checkpoint's layout, restored into a fresh Keras model, give
    # strata's logits.
    back = os.path.join(work, name, 'back', 'ckpt')
    rc, out, err = run([strata, 'tf_checkpoint', 'export', os.path.join(work, name, 'ckpt'), '--like', prefix,
                        '--model_name', name, '--out', back])
    if rc != 0:
        return problems + [f'strata tf_checkpoint export: {err.strip()[-600:]}']
    export2 = os.path.join(work, name, 'export2')
    rc, out, err = run([strata, 'export', '--checkpoint_dir', os.path.join(work, name, 'ckpt'), '--model_name', name,
                        '--export_base_dir', export2, '--raw_pixels', 'false'])
    if rc != 0:
        return problems + [f'strata export (trained): {err.strip()[-600:]}']
    run_dir2 = os.path.join(work, name, 'run2')
    rc, out, err = run([strata, 'run', os.path.join(export2, name, '1', 'model.onnx'), '--input',
                        f'input_image={os.path.join(work, name, "x.npy")}', '--output-dir', run_dir2])
    if rc != 0:
        return problems + [f'strata run (trained): {err.strip()[-600:]}']
    fresh = keras_model(name)
    fresh_opt = keras.optimizers.Adam(1e-3)
    fresh.compile(optimizer=fresh_opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    fresh_opt.build(fresh.trainable_variables)
    tf.train.Checkpoint(model=fresh, optimizer=fresh_opt).read(back).assert_existing_objects_matched()
    want2 = np.load(os.path.join(run_dir2, 'logits.npy'))
    got2 = fresh(x, training=False).numpy()
    err2 = float(np.abs(got2 - want2).max()) / max(1.0, float(np.abs(want2).max()))
    moved = float(np.abs(got2 - want).max())
    if err2 > 1e-5 or moved < 1e-3:
        problems.append(f'Keras restored from strata\'s export: max error / scale {err2:.2e} against strata\'s logits '
                        f'(want <= 1e-5), {moved:.2e} away from the pre-training logits (want > 1e-3)')
    else:
        print(f'    {name}: Keras restored strata\'s trained weights (tf_checkpoint export --like): its logits equal '
              f'strata\'s (max error / scale {err2:.1e})')
    return problems


def zoo_batchnorm(strata, work):
    """BatchNormalization (moving statistics too) and DepthwiseConv2D through the same mapping: Keras's
    MobileNetV3Small (32x32x3, 10 classes, logits) with seeded random weights in a tf.train.Checkpoint, imported
    into strata's zoo twin; logits within 1e-4 of their scale (a 60-layer float32 network), both on raw 0..255
    pixels (the export's default --raw_pixels bakes in the / 255 that every CLI model, this one too, expects)."""
    keras.utils.set_random_seed(5)
    model = keras.applications.MobileNetV3Small(weights=None, input_shape=(32, 32, 3), classes=10,
                                                classifier_activation=None, include_preprocessing=True)
    rng = np.random.default_rng(5)
    for w in model.weights:
        fan_in = int(np.prod(w.shape[:-1])) if len(w.shape) >= 2 else 4
        v = rng.normal(0, 1.0 / np.sqrt(fan_in), w.shape).astype('float32')
        if 'moving_variance' in w.path:
            v = np.abs(v) + 0.5
        elif 'gamma' in w.path:
            v = 1.0 + 0.1 * v
        w.assign(v)
    prefix = tf.train.Checkpoint(model=model).write(os.path.join(work, 'mnv3', 'keras', 'ckpt'))
    n_bn = sum(isinstance(l, keras.layers.BatchNormalization) for l in model.layers)
    imported = os.path.join(work, 'mnv3', 'imported')
    rc, out, err = run([strata, 'tf_checkpoint', 'import', prefix, '--model_name', 'MobileNetV3Small',
                        '--input_shape', '32', '32', '3', '--out', imported])
    if rc != 0:
        return [f'strata tf_checkpoint import: {err.strip()[-600:]}']
    export = os.path.join(work, 'mnv3', 'export')
    rc, out, err = run([strata, 'export', '--checkpoint_dir', imported, '--model_name', 'MobileNetV3Small',
                        '--input_shape', '32', '32', '3', '--export_base_dir', export])
    if rc != 0:
        return [f'strata export: {err.strip()[-600:]}']
    x = rng.uniform(0, 255, (4, 32, 32, 3)).astype(np.float32)
    np.save(os.path.join(work, 'mnv3', 'x.npy'), x)
    rc, out, err = run([strata, 'run', os.path.join(export, 'MobileNetV3Small', '1', 'model.onnx'), '--input',
                        f'input_image={os.path.join(work, "mnv3", "x.npy")}', '--output-dir',
                        os.path.join(work, 'mnv3', 'run')])
    if rc != 0:
        return [f'strata run: {err.strip()[-600:]}']
    want = model(x, training=False).numpy()
    got = np.load(os.path.join(work, 'mnv3', 'run', 'logits.npy'))
    e = float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))
    if got.shape != want.shape or e > 1e-4:
        return [f'logits: strata {got.shape} vs Keras {want.shape}, max error / scale {e:.2e} > 1e-4']
    print(f'    MobileNetV3Small ({n_bn} BatchNormalization layers, depthwise convolutions): strata\'s logits equal '
          f'Keras\'s (max error / scale {e:.1e})')
    return []


def wrong_architecture(strata, work):
    prefix = os.path.join(work, 'cnn_small', 'keras', 'ckpt')
    if not os.path.exists(prefix + '.index'):
        return ['no cnn_small checkpoint (its check failed before writing it)']
    rc, out, err = run([strata, 'tf_checkpoint', 'import', prefix, '--model_name', 'mlp', '--out',
                        os.path.join(work, 'wrong')])
    problems = []
    if rc == 0 or 'layers with variables' not in err or 'conv2d' not in err or 'dense_2' not in err:
        problems.append(f'want an error naming both models\' layers, got rc {rc}: {err.strip()[-400:]}')
    rc2, _, err2 = run([strata, 'tf_checkpoint', 'import', os.path.join(work, 'nothing'), '--model_name', 'mlp',
                        '--out', os.path.join(work, 'wrong2')])
    if rc2 == 0 or 'nothing.index' not in err2:
        problems.append(f'a missing prefix: want an error naming nothing.index, got rc {rc2}: {err2.strip()[-300:]}')
    if not problems:
        print(f'    refused: {err.strip()[:200]}...')
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('strata')
    ap.add_argument('--data', default=os.environ.get('FASHION_MNIST_DIR', '/usr/share/datasets/fashion-mnist'))
    ap.add_argument('--steps', type=int, default=300, help='steps of batch 64 in each epoch (Keras and strata)')
    a = ap.parse_args()
    strata = os.path.abspath(a.strata)
    if not os.path.exists(os.path.join(a.data, 'train-images-idx3-ubyte.gz')):
        print(f'SKIPPED: Fashion-MNIST is not in {a.data} (set FASHION_MNIST_DIR)')
        return 77
    x_train = read_idx(os.path.join(a.data, 'train-images-idx3-ubyte.gz'))[..., None]
    y_train = read_idx(os.path.join(a.data, 'train-labels-idx1-ubyte.gz')).astype(np.int64)
    x_test = read_idx(os.path.join(a.data, 't10k-images-idx3-ubyte.gz'))[..., None]
    y_test = read_idx(os.path.join(a.data, 't10k-labels-idx1-ubyte.gz')).astype(np.int64)
    tally = Tally()
    work = tempfile.mkdtemp(prefix='strata_keras_ckpt_')
    try:
        for name in ('mlp', 'cnn_small'):
            tally.run(f'{name}_keras_to_strata', continue_in_strata, strata, work, a.data, name, a.steps, x_train,
                      y_train, x_test, y_test)
        tally.run('wrong_architecture', wrong_architecture, strata, work)
        tally.run('zoo_batchnorm', zoo_batchnorm, strata, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f'TensorFlow {tf.__version__}, Keras {keras.__version__}')
    return tally.finish()


if __name__ == '__main__':
    sys.exit(main())
