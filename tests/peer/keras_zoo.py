"""strata's Keras application zoo against keras.applications (Keras 3 on TF 2.21, the peers venv).

For each model: build keras.applications.<Name>(weights=None, ...) with the same arguments, randomise the batch-norm
gamma/beta and set the moving statistics from the images (so epsilons and moving statistics matter, and the outputs
depend on the images: a check that they do is part of the test), compare count_params() with `strata zoo`'s, save the weights
(model.save_weights, Keras 3 .weights.h5), load them into strata through `strata zoo --weights`, run a batch of real
images (Fashion-MNIST test images resized to the input size, tiled to 3 channels, through the model's own
preprocess_input) and require max |strata - keras| <= 1e-4 * max |keras|, where keras is the same Keras model and
weights computed in float64 (Keras's own float32 result is printed alongside; on the deepest models it is itself
~7e-5 of the scale away from float64).
Bad input: weights of another architecture and a truncated file must fail with an error that names the problem.

usage: keras_zoo.py STRATA [MODEL[:SIZE] ...] [--legacy] [--bad-input]"""
import gzip, json, os, subprocess, sys, tempfile

import numpy as np

from peer_util import Tally

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

FASHION = os.environ.get('FASHION_MNIST_DIR', '/usr/share/datasets/fashion-mnist')
PREPROCESS = {  # keras.applications module of each model, for preprocess_input
    'ResNet50V2': keras.applications.resnet_v2, 'ResNet101V2': keras.applications.resnet_v2,
    'ResNet152V2': keras.applications.resnet_v2, 'ResNet50': keras.applications.resnet50,
    'MobileNetV3Large': keras.applications.mobilenet_v3, 'MobileNetV3Small': keras.applications.mobilenet_v3,
    'EfficientNetV2B0': keras.applications.efficientnet_v2, 'EfficientNetV2B1': keras.applications.efficientnet_v2,
    'EfficientNetV2B2': keras.applications.efficientnet_v2, 'EfficientNetV2B3': keras.applications.efficientnet_v2,
}
BATCH = 4


def images(size):
    """BATCH Fashion-MNIST test images, (BATCH, size, size, 3) float32 in 0..255."""
    with gzip.open(os.path.join(FASHION, 't10k-images-idx3-ubyte.gz')) as f:
        raw = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1)[:BATCH].astype(np.float32)
    x = tf.image.resize(raw, (size, size)).numpy()
    return np.repeat(x, 3, axis=3)


def randomise_batch_norm(model, rng, x):
    """Random gamma and beta, then moving statistics set to the batch statistics of `x` (one training-mode pass with
    momentum 0): every batch norm then sees well-scaled inputs, its epsilon matters where variances are small, and
    the outputs depend on the images (Keras's fresh statistics, 0 and 1, let the signal die in MobileNetV3)."""
    bns = [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)]
    for layer in bns:
        c = layer.gamma.shape[0]
        layer.set_weights([rng.uniform(0.5, 1.5, c), rng.normal(0, 0.1, c), np.zeros(c), np.ones(c)])
        layer.momentum, layer.saved_momentum = 0.0, layer.momentum
    drops = [layer for layer in model.layers if isinstance(layer, keras.layers.Dropout)]
    rates = [layer.rate for layer in drops]
    for layer in drops:  # stochastic depth would make the statistics those of another network
        layer.rate = 0.0
    model(x, training=True)
    for layer, rate in zip(drops, rates):
        layer.rate = rate
    for layer in bns:
        layer.momentum = layer.saved_momentum
        # Channels that are nearly constant over 4 images would make 1/sqrt(variance) amplify float32 rounding (the
        # deeper EfficientNets then differ from Keras in float64 by more than 1e-4 in Keras's own float32): floor
        # the variances at a tenth of the layer's median.
        gamma, beta, mean, var = layer.get_weights()
        layer.set_weights([gamma, beta, mean, np.maximum(var, 0.1 * np.median(var))])


def keras_model(name, size, args):
    kw = dict(weights=None, input_shape=(size, size, 3), include_top=args['include_top'],
              classes=args['classes'], classifier_activation=args['classifier_activation'], pooling=args['pooling'])
    if name.startswith(('MobileNetV3', 'EfficientNetV2')):
        kw['include_preprocessing'] = True
    return getattr(keras.applications, name)(**kw)


def strata_zoo(strata, name, size, args, weights=None, x_path=None, out_dir=None, conv='auto'):
    cmd = [strata, 'zoo', name, f'--conv_algorithm={conv}', f'--input_shape={size},{size},3', f'--include_top={str(args["include_top"]).lower()}',
           f'--classes={args["classes"]}', f'--classifier_activation={args["classifier_activation"] or "linear"}',
           f'--pooling={args["pooling"] or ""}', '--threads=2']
    if weights:
        cmd.append(f'--weights={weights}')
    if x_path:
        cmd += [f'--input={x_path}', f'--output_dir={out_dir}']
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


def check_model(strata, work, name, size, args, legacy):
    problems = []
    keras.utils.set_random_seed(0)
    model = keras_model(name, size, args)
    x = PREPROCESS[name].preprocess_input(images(size))
    randomise_batch_norm(model, np.random.default_rng(1), x)
    weights = os.path.join(work, f'{name}.weights.h5')
    model.save_weights(weights)
    x_path = os.path.join(work, 'x.npy')
    np.save(x_path, x.astype(np.float32))
    want32 = np.asarray(model(x, training=False))
    # The oracle: the same Keras model and weights computed in float64. Keras's own float32 result differs from it
    # by up to ~7e-5 of the output scale on the deepest models (ResNet152V2), so float32 against float32 would
    # measure two roundings; both distances are printed.
    keras.config.set_dtype_policy('float64')
    try:
        model64 = keras_model(name, size, args)
        model64.load_weights(weights)
        want = np.asarray(model64(x.astype(np.float64), training=False))
    finally:
        keras.config.set_dtype_policy('float32')
    if want.dtype != np.float64:
        return [f'the float64 Keras model computed in {want.dtype}']
    # The comparison is only worth something when the output depends on the image.
    spread = float(np.max(np.abs(want32 - want32.mean(axis=0))))
    if not spread >= 1e-2 * float(np.max(np.abs(want32))):
        problems.append(f'keras outputs hardly depend on the input (spread {spread:.3g}): the check would be vacuous')
    files = [weights]
    if legacy:
        files.append(os.path.join(work, f'{name}.h5'))
        model.save(files[-1])  # legacy HDF5: model_weights/<layer>/<weight>
    # direct: the direct convolution kernels, held to 1e-4 of the scale; auto (the default, Winograd where it pays)
    # adds Winograd's rounding and is held to 3e-4.
    runs = [(f, 'direct', 1e-4) for f in files] + [(files[0], 'auto', 3e-4)]
    for f, conv, tol in runs:
        out_dir = os.path.join(work, 'out')
        r = strata_zoo(strata, name, size, args, f, x_path, out_dir, conv)
        if r.returncode != 0:
            return problems + [f'strata zoo failed on {os.path.basename(f)}: {r.stderr.strip()[-2000:]}']
        info = json.loads(r.stdout.splitlines()[0])
        if info['params'] != model.count_params():
            problems.append(f'count_params: strata {info["params"]}, keras {model.count_params()}')
        got = np.load(os.path.join(out_dir, info['output'] + '.npy'))
        if got.shape != want.shape:
            problems.append(f'{os.path.basename(f)}: output shape {got.shape}, keras {want.shape}')
            continue
        scale = float(np.max(np.abs(want)))
        err = float(np.max(np.abs(got - want)))
        err32 = float(np.max(np.abs(got - want32)))
        keras_err = float(np.max(np.abs(want32 - want)))
        print(f'  {name} {size}x{size} {args} {os.path.basename(f)} conv={conv}: params {info["params"]}, output '
              f'scale {scale:.3g}, spread over images {spread:.3g}; max |strata - keras64| / scale {err / scale:.3g}, '
              f'|keras32 - keras64| {keras_err / scale:.3g}, |strata - keras32| {err32 / scale:.3g}')
        if not (scale > 0 and err <= tol * scale):
            problems.append(f'{os.path.basename(f)} conv={conv}: max |strata - keras64| = {err:.3g} > {tol:g} * '
                            f'{scale:.3g}')
    return problems


def check_bad_input(strata, work):
    problems = []
    args = dict(include_top=True, classes=10, classifier_activation=None, pooling=None)
    keras.utils.set_random_seed(0)
    other = os.path.join(work, 'resnet50.weights.h5')
    keras_model('ResNet50', 64, args).save_weights(other)
    r = strata_zoo(strata, 'ResNet50V2', 64, args, other)
    if r.returncode == 0 or 'does not match model' not in r.stderr or "missing 'post_bn/gamma'" not in r.stderr:
        problems.append(f'ResNet50 weights into ResNet50V2: rc {r.returncode}, stderr {r.stderr[:400]!r}')
    good = os.path.join(work, 'resnet50v2.weights.h5')
    keras_model('ResNet50V2', 64, args).save_weights(good)
    truncated = os.path.join(work, 'truncated.weights.h5')
    with open(good, 'rb') as f, open(truncated, 'wb') as g:
        g.write(f.read()[:os.path.getsize(good) // 2])
    r = strata_zoo(strata, 'ResNet50V2', 64, args, truncated)
    if r.returncode == 0 or 'truncated.weights.h5' not in r.stderr or 'truncated' not in r.stderr.replace(
            'truncated.weights.h5', ''):
        problems.append(f'truncated file: rc {r.returncode}, stderr {r.stderr[:400]!r}')
    if 'HDF5-DIAG' in r.stderr:
        problems.append('HDF5 printed its own error stack')
    not_h5 = os.path.join(work, 'x.npy')
    np.save(not_h5, np.zeros(3, np.float32))
    r = strata_zoo(strata, 'ResNet50V2', 64, args, not_h5)
    if r.returncode == 0 or 'not an HDF5 file' not in r.stderr:
        problems.append(f'non-HDF5 file: rc {r.returncode}, stderr {r.stderr[:400]!r}')
    print('  bad-input messages:', r.stderr.strip()[:300])
    return problems


def main():
    strata, rest = sys.argv[1], sys.argv[2:]
    legacy = '--legacy' in rest
    bad = '--bad-input' in rest
    specs = [a for a in rest if not a.startswith('--')]
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix='strata_keras_zoo_') as work:
        for spec in specs:
            name, _, size = spec.partition(':')
            size = int(size or 96)
            logits = dict(include_top=True, classes=10, classifier_activation=None, pooling=None)
            tally.run(f'{name} top logits', check_model, strata, work, name, size, logits, legacy)
            if name in ('ResNet50V2', 'MobileNetV3Small', 'EfficientNetV2B0'):
                for pooling in ('avg', 'max'):
                    no_top = dict(include_top=False, classes=1000, classifier_activation='softmax', pooling=pooling)
                    tally.run(f'{name} no top pooling={pooling}', check_model, strata, work, name, size, no_top, False)
        if bad:
            tally.run('bad input', check_bad_input, strata, work)
    return tally.finish()


if __name__ == '__main__':
    sys.exit(main())
