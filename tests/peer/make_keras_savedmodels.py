"""Keras SavedModels served by strata give TF's outputs: builds small Keras models (an MLP, a CNN, a ResNet-style block
model, a MobileNet-style depthwise model and one that starts with Keras's Resizing layer) with seeded random weights in TF 2.21 / Keras 3, exports each as a
SavedModel (model.export) into a temporary directory, runs TF's own loaded SavedModel and `strata run` on the same
inputs, and requires agreement within 1e-4 relative (plus a small absolute floor for values near zero). Also
converts one with `strata convert` and checks the ONNX file with onnx's checker and ONNX Runtime, and compares TF's
ResizeBilinear and ResizeNearestNeighbor under every align_corners / half_pixel_centers setting (up- and down-sampling)
with strata's import of them. The fixtures are generated here, never committed.

Usage: make_keras_savedmodels.py STRATA_BINARY"""
import os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_util import Tally  # noqa: E402

try:
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
    import numpy as np
    import tensorflow as tf
    import keras
    from keras import layers
    import onnx
    import onnxruntime as ort
except ImportError as e:
    print(f'peers venv missing ({e}): run scripts/install-deps.sh --peers')
    sys.exit(77)

RTOL, ATOL = 1e-4, 1e-6


def mlp():
    return keras.Sequential([keras.Input((20,)), layers.Dense(32, activation='relu'), layers.Dense(16, activation='tanh'),
                             layers.Dense(5, activation='softmax')])


def cnn():
    return keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(8, 3, activation='relu'), layers.MaxPooling2D(),
                             layers.Conv2D(16, 3, padding='same'), layers.BatchNormalization(), layers.ReLU(),
                             layers.AveragePooling2D(2), layers.Flatten(), layers.Dense(10, activation='softmax')])


def resnet_style():
    x = inp = keras.Input((16, 16, 3))
    x = layers.Conv2D(8, 3, padding='same', use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation('relu')(x)
    for _ in range(2):
        y = layers.Conv2D(8, 3, padding='same', use_bias=False)(x)
        y = layers.BatchNormalization()(y)
        y = layers.Activation('relu')(y)
        y = layers.Conv2D(8, 3, padding='same', use_bias=False)(y)
        y = layers.BatchNormalization()(y)
        x = layers.Activation('relu')(layers.Add()([x, y]))
    x = layers.Conv2D(16, 1, strides=2)(x)
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, layers.Dense(4)(x))


def mobilenet_style():
    x = inp = keras.Input((16, 16, 3))
    x = layers.Conv2D(8, 3, strides=2, padding='same')(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU(6.0)(x)
    x = layers.DepthwiseConv2D(3, padding='same')(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU(6.0)(x)
    x = layers.Conv2D(16, 1)(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.2)(x)
    return keras.Model(inp, layers.Dense(3, activation='softmax')(x))


def resizing():
    """Keras's Resizing layer (bilinear: TF's ResizeBilinear with half_pixel_centers) in front of a small CNN."""
    x = inp = keras.Input((12, 10, 3))
    x = layers.Resizing(20, 16, interpolation='bilinear')(x)
    x = layers.Conv2D(4, 3, activation='relu')(x)
    x = layers.Resizing(7, 9, interpolation='nearest')(x)
    return keras.Model(inp, layers.Flatten()(x))


def check_resize_ops(strata, work, rng):
    """TF's raw resize ops with each attribute setting as the outputs of one SavedModel; strata's values equal TF's."""
    settings = [(False, True), (True, False), (False, False)]  # (align_corners, half_pixel_centers)

    class Resizes(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 18, 14, 3], tf.float32)])
        def serve(self, x):
            out = {}
            for hw in ((25, 30), (7, 9)):  # 18 -> 7: (3 + 0.5) * 18 / 7 = 9, but 8.999... in float32
                for a, h in settings:
                    out[f'bilinear_{hw[0]}x{hw[1]}_a{int(a)}h{int(h)}'] = tf.raw_ops.ResizeBilinear(
                        images=x, size=hw, align_corners=a, half_pixel_centers=h)
                    out[f'nearest_{hw[0]}x{hw[1]}_a{int(a)}h{int(h)}'] = tf.raw_ops.ResizeNearestNeighbor(
                        images=x, size=hw, align_corners=a, half_pixel_centers=h)
            return out

    m = Resizes()
    export_dir = os.path.join(work, 'resize_ops', '1')
    tf.saved_model.save(m, export_dir, signatures=m.serve)
    x = rng.uniform(-1, 1, (2, 18, 14, 3)).astype('float32')
    want = {k: v.numpy() for k, v in tf.saved_model.load(export_dir).signatures['serving_default'](
        x=tf.constant(x)).items()}
    np.save(os.path.join(work, 'resize_x.npy'), x)
    out_dir = os.path.join(work, 'resize_out')
    r = subprocess.run([strata, 'run', export_dir, '--input', f'x={work}/resize_x.npy', '--output-dir', out_dir],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return [f'strata run failed ({r.returncode}): {r.stderr.strip()[-1500:]}']
    # strata run names the files by the signature's output tensors; the SignatureDef maps the aliases onto them.
    from tensorflow.core.protobuf import saved_model_pb2
    sm = saved_model_pb2.SavedModel()
    sm.ParseFromString(open(os.path.join(export_dir, 'saved_model.pb'), 'rb').read())
    outputs = sm.meta_graphs[0].signature_def['serving_default'].outputs
    problems, worst = [], 0.0
    for alias, w in sorted(want.items()):
        f = os.path.join(out_dir, outputs[alias].name.replace(':', '_') + '.npy')
        if not os.path.exists(f):
            problems.append(f'{alias}: no output file {os.path.basename(f)} in {sorted(os.listdir(out_dir))}')
            continue
        g = np.load(f)
        err = np.abs(g - w)
        if g.shape != w.shape or (err > RTOL * np.abs(w) + ATOL).any():
            problems.append(f'{alias}: strata {g.shape} vs TF {w.shape}, max abs {err.max() if g.shape == w.shape else "-"}')
        elif err.size:
            worst = max(worst, float(err.max()))
    if not problems:
        print(f'    resize ops: {len(want)} outputs (bilinear and nearest; align_corners, half_pixel_centers, neither; '
              f'up and down) equal TF\'s, max |strata-TF| {worst:.3g}')
    return problems


def randomize(model, rng):
    """Seeded random weights (BatchNorm statistics too, so the folded normalisation is exercised)."""
    for w in model.weights:
        # Fan-in scaling keeps activations O(1), so the softmax outputs are not saturated at 0 and 1.
        fan_in = int(np.prod(w.shape[:-1])) if len(w.shape) >= 2 else 4
        v = rng.normal(0, 1.5 / np.sqrt(fan_in), w.shape).astype('float32')
        if 'variance' in w.path:
            v = np.abs(v) + 0.5
        w.assign(v)


def check(strata, work, name, build, shape, rng):
    model = build()
    randomize(model, rng)
    export_dir = os.path.join(work, name, '1')
    model.export(export_dir, verbose=False)
    x = rng.uniform(-1, 1, (3, *shape)).astype('float32')
    sig = tf.saved_model.load(export_dir).signatures['serving_default']
    alias = list(sig.structured_input_signature[1].keys())[0]
    want = list(sig(**{alias: tf.constant(x)}).values())[0].numpy()
    np.save(os.path.join(work, f'{name}_x.npy'), x)
    out_dir = os.path.join(work, f'{name}_out')
    r = subprocess.run([strata, 'run', export_dir, '--input', f'{alias}={work}/{name}_x.npy', '--output-dir', out_dir],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return [f'strata run failed ({r.returncode}): {r.stderr.strip()[-1500:]}']
    outs = [f for f in os.listdir(out_dir) if f.endswith('.npy')]
    if len(outs) != 1:
        return [f'expected one output, got {outs}']
    got = np.load(os.path.join(out_dir, outs[0]))
    if got.shape != want.shape:
        return [f'shape {got.shape}, TF {want.shape}']
    err = np.abs(got - want)
    bad = err > RTOL * np.abs(want) + ATOL
    print(f'    {name}: {len(model.layers)} layers, output {want.shape} in [{want.min():.3g}, {want.max():.3g}], '
          f'max |strata-TF| {err.max():.3g}, '
          f'max rel {float((err / np.maximum(np.abs(want), 1e-12)).max()):.3g}')
    if bad.any():
        return [f'{int(bad.sum())} of {bad.size} values differ by more than {RTOL} relative; max abs {err.max()}']
    return []


def check_convert(strata, work, rng):
    export_dir = os.path.join(work, 'mlp', '1')
    out = os.path.join(work, 'mlp.onnx')
    r = subprocess.run([strata, 'convert', export_dir, '--out', out], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return [f'strata convert failed: {r.stderr.strip()[-1500:]}']
    onnx.checker.check_model(onnx.load(out), full_check=True)
    x = rng.uniform(-1, 1, (4, 20)).astype('float32')
    sess = ort.InferenceSession(out, providers=['CPUExecutionProvider'])
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    sig = tf.saved_model.load(export_dir).signatures['serving_default']
    alias = list(sig.structured_input_signature[1].keys())[0]
    want = list(sig(**{alias: tf.constant(x)}).values())[0].numpy()
    if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
        return [f'ONNX Runtime on the converted model differs from TF: max {np.abs(got - want).max()}']
    print(f'    strata convert mlp -> {os.path.basename(out)}: onnx.checker ok, ONNX Runtime matches TF '
          f'(max {np.abs(got - want).max():.3g})')
    return []


def main():
    strata = os.path.abspath(sys.argv[1])
    print(f'TensorFlow {tf.__version__}, Keras {keras.__version__}')
    tally = Tally()
    rng = np.random.default_rng(15)
    keras.utils.set_random_seed(15)
    work = tempfile.mkdtemp(prefix='strata_keras_sm_')
    try:
        for name, build, shape in [('mlp', mlp, (20,)), ('cnn', cnn, (28, 28, 1)),
                                   ('resnet_style', resnet_style, (16, 16, 3)),
                                   ('mobilenet_style', mobilenet_style, (16, 16, 3)),
                                   ('resizing', resizing, (12, 10, 3))]:
            tally.run(name, check, strata, work, name, build, shape, rng)
        tally.run('resize_ops', check_resize_ops, strata, work, rng)
        tally.run('convert', check_convert, strata, work, rng)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tally.finish()


if __name__ == '__main__':
    sys.exit(main())
