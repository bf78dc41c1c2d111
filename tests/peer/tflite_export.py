#!/usr/bin/env python3
"""TensorFlow Lite's interpreter runs what `strata export --format tflite` writes (issue 13; peer test, run with the
peers venv's python).

    tests/peer/tflite_export.py BUILD/strata SOURCE_DIR [--images N]

strata trains the Fashion-MNIST CNN (cnn_small) for 600 steps (--steps) on Debian's dataset-fashion-mnist, exports it as ONNX
and as .tflite (float32, and int8 calibrated on 512 training images), then:
1. strata's schema subset (src/tf/tflite_schema.fbs) uses TFLite's numbers: every BuiltinOperator, TensorType,
   BuiltinOptions, Padding and ActivationFunctionType value it names equals TensorFlow's generated schema's;
2. the float32 .tflite runs in tf.lite.Interpreter through its serving_default signature (input_image ->
   logits, probabilities); on the first N test images (default 2000; 10000 for the issue's full check) its logits are
   within 1e-5 of strata's (`strata run` on the exported model.onnx), relative to the logits' scale;
3. the int8 .tflite follows TFLite's quantization spec (read back through the interpreter's tensor details):
   activations int8 per tensor, CONV_2D filters int8 per output channel (quantized_dimension 0) with zero points 0,
   FULLY_CONNECTED weights int8 symmetric, biases int32 with scale = input scale x weight scale, float32 signature;
   TF's interpreter runs it and its top-1 agrees with the float32 model's on at least 99% of the N images;
4. `strata serve` serves the float32 .tflite (its reader: TFLite -> strata IR): REST predict on 16 test images
   answers TF's interpreter's logits within 1e-5 relative;
5. bad input: --quantize int8 without --calibration, calibration data of the wrong shape and --quantize with
   --format onnx exit 1 with a message naming the problem.

Prints one line per check and "N passed, M failed"; exits 1 when a check failed.
"""
import argparse, gzip, json, os, re, shutil, struct, subprocess, sys, tempfile, time, urllib.error, urllib.request

import numpy as np

try:
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    import warnings
    warnings.filterwarnings('ignore')
    import tensorflow as tf
    from tensorflow.lite.python import schema_py_generated as tfl_schema
except ImportError as e:
    print(f'peers venv missing ({e}): run scripts/install-deps.sh --peers')
    sys.exit(77)

sys.path.insert(0, os.path.dirname(__file__))
from peer_util import Tally, free_port  # noqa: E402

FASHION = os.environ.get('FASHION_MNIST_DIR', '/usr/share/datasets/fashion-mnist')


def read_idx(path):
    raw = open(path, 'rb').read()
    if path.endswith('.gz'):
        raw = gzip.decompress(raw)
    ndim = raw[3]
    dims = struct.unpack('>' + 'I' * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion(split):
    name = 'train' if split == 'train' else 't10k'
    x = read_idx(os.path.join(FASHION, f'{name}-images-idx3-ubyte.gz'))
    return x.astype(np.float32)[..., None]  # raw 0..255 pixels, NHWC


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    return r.returncode, r.stdout, r.stderr


def check_schema_numbers(source_dir):
    """Every enum value and union tag in strata's .fbs equals TensorFlow's."""
    problems = []
    text = open(os.path.join(source_dir, 'src', 'tf', 'tflite_schema.fbs')).read()
    text = re.sub(r'//[^\n]*', '', text)
    checked = 0
    for kind, name, body in re.findall(r'\b(enum|union)\s+(\w+)\s*(?::\s*\w+\s*)?\{([^}]*)\}', text):
        tf_class = getattr(tfl_schema, name, None)
        if tf_class is None:
            problems.append(f'{kind} {name}: no such {kind} in TensorFlow\'s schema')
            continue
        for member, value in re.findall(r'(\w+)\s*=\s*(-?\d+)', body):
            want = getattr(tf_class, member, None)
            checked += 1
            if want != int(value):
                problems.append(f'{name}.{member} = {value} in strata\'s schema, {want} in TensorFlow\'s')
    if checked < 40:
        problems.append(f'only {checked} enum values found in the .fbs (parse problem?)')
    if not problems:
        print(f'    {checked} enum values and union tags equal TensorFlow\'s')
    return problems


def interpreter_run(path, x, batch=500):
    """Runs the serving_default signature over x in batches; returns {output name: array}."""
    interp = tf.lite.Interpreter(model_path=path, num_threads=2)
    runner = interp.get_signature_runner('serving_default')
    outs = {}
    for i in range(0, len(x), batch):
        got = runner(input_image=x[i:i + batch])
        for k, v in got.items():
            outs.setdefault(k, []).append(v)
    return {k: np.concatenate(v) for k, v in outs.items()}


def check_fp32(strata, work, x, state):
    problems = []
    np.save(os.path.join(work, 'test.npy'), x)
    rc, out, err = run([strata, 'run', os.path.join(work, 'models', 'cnn', '1', 'model.onnx'),
                        '--input', f'input_image={os.path.join(work, "test.npy")}', '--output-dir',
                        os.path.join(work, 'onnx_out'), '--threads', '2'])
    if rc != 0:
        return [f'strata run: {err.strip()[-600:]}']
    want = np.load(os.path.join(work, 'onnx_out', 'logits.npy'))
    path = os.path.join(work, 'models', 'cnn', '2', 'model.tflite')
    interp = tf.lite.Interpreter(model_path=path)
    sigs = interp.get_signature_list()
    if sigs != {'serving_default': {'inputs': ['input_image'], 'outputs': ['logits', 'probabilities']}}:
        problems.append(f'signatures: {sigs}')
    got = interpreter_run(path, x)
    state['fp32'] = got
    err = float(np.abs(got['logits'] - want).max()) / max(1.0, float(np.abs(want).max()))
    if got['logits'].shape != want.shape or err > 1e-5:
        problems.append(f'logits: TFLite {got["logits"].shape} vs strata {want.shape}, max error / scale {err:.2e} '
                        '> 1e-5')
    p = got['probabilities']
    if np.abs(p.sum(axis=1) - 1).max() > 1e-5:
        problems.append('probabilities do not sum to 1')
    if not problems:
        print(f'    {len(x)} test images: TFLite logits within {err:.1e} of strata\'s (relative to scale)')
    return problems


def check_int8(work, x, state):
    problems = []
    path = os.path.join(work, 'models', 'cnn', '3', 'model.tflite')
    # Without the default XNNPACK delegate, so that the op list is the file's own.
    interp = tf.lite.Interpreter(model_path=path, experimental_op_resolver_type=tf.lite.experimental.OpResolverType
                                 .BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interp.allocate_tensors()
    det = {d['index']: d for d in interp.get_tensor_details()}
    ops = interp._get_ops_details()  # noqa: SLF001 (the only way to see each op's tensors)
    for io in interp.get_input_details() + interp.get_output_details():
        if io['dtype'] != np.float32:
            problems.append(f'signature tensor {io["name"]} is {io["dtype"]}, want float32')
    kinds = {}
    for op in ops:
        kinds[op['op_name']] = kinds.get(op['op_name'], 0) + 1
        if op['op_name'] in ('QUANTIZE', 'DEQUANTIZE'):
            continue
        ins = [det[i] for i in op['inputs'] if i >= 0]
        outs = [det[i] for i in op['outputs']]
        for t in [ins[0]] + outs:
            q = t['quantization_parameters']
            if t['dtype'] != np.int8 or len(q['scales']) != 1:
                problems.append(f'{op["op_name"]} activation {t["name"]}: {t["dtype"]} with {len(q["scales"])} '
                                'scales, want int8 per tensor')
        if op['op_name'] in ('CONV_2D', 'FULLY_CONNECTED', 'DEPTHWISE_CONV_2D'):
            w, b = ins[1], ins[2]
            wq, bq = w['quantization_parameters'], b['quantization_parameters']
            per_axis = op['op_name'] != 'FULLY_CONNECTED'
            n_out = w['shape'][3 if op['op_name'] == 'DEPTHWISE_CONV_2D' else 0]
            if w['dtype'] != np.int8 or np.any(wq['zero_points'] != 0) or \
                    len(wq['scales']) != (n_out if per_axis else 1):
                problems.append(f'{op["op_name"]} weight {w["name"]}: {w["dtype"]}, {len(wq["scales"])} scales, '
                                f'zero points {set(wq["zero_points"].tolist())}')
            if per_axis and wq['quantized_dimension'] != (3 if op['op_name'] == 'DEPTHWISE_CONV_2D' else 0):
                problems.append(f'{w["name"]}: quantized_dimension {wq["quantized_dimension"]}')
            wv = interp.get_tensor(w['index'])
            if np.abs(wv.astype(np.int32)).max() > 127:
                problems.append(f'{w["name"]}: -128 used (symmetric weights stay in [-127, 127])')
            want_bias = ins[0]['quantization_parameters']['scales'][0] * wq['scales']
            if b['dtype'] != np.int32 or np.any(bq['zero_points'] != 0) or \
                    not np.allclose(bq['scales'], want_bias, rtol=1e-6):
                problems.append(f'{op["op_name"]} bias {b["name"]}: {b["dtype"]}, scales {bq["scales"][:3]}..., want '
                                f'input scale x weight scale {want_bias[:3]}...')
    if kinds.get('CONV_2D', 0) != 2 or kinds.get('FULLY_CONNECTED', 0) != 2 or 'QUANTIZE' not in kinds \
            or kinds.get('DEQUANTIZE', 0) != 2:
        problems.append(f'op histogram {kinds}')
    got = interpreter_run(path, x)
    agree = float((got['logits'].argmax(1) == state['fp32']['logits'].argmax(1)).mean())
    if agree < 0.99:
        problems.append(f'int8 top-1 agreement with float32 {agree:.4f} < 0.99 on {len(x)} test images')
    if not problems:
        print(f'    ops {kinds}; int8 top-1 agrees with float32 on {agree:.2%} of {len(x)} test images')
    return problems


def check_served(strata, work, x, state):
    """strata serve reads the float32 .tflite back; its answers equal TF's interpreter's."""
    base = os.path.join(work, 'served')
    os.makedirs(os.path.join(base, '7'))
    shutil.copy(os.path.join(work, 'models', 'cnn', '2', 'model.tflite'), os.path.join(base, '7', 'model.tflite'))
    port = free_port()
    log = open(os.path.join(work, 'serve.log'), 'w')
    proc = subprocess.Popen([strata, 'serve', '--host', '127.0.0.1', '--port=0', f'--rest_api_port={port}',
                             '--model_name=cnn', f'--model_base_path={base}'], stdout=log, stderr=subprocess.STDOUT)
    try:
        body = json.dumps({'instances': x[:16].tolist()}).encode()
        deadline, answer = time.time() + 60, None
        while time.time() < deadline and answer is None:
            try:
                req = urllib.request.Request(f'http://127.0.0.1:{port}/v1/models/cnn:predict', data=body,
                                             method='POST')
                with urllib.request.urlopen(req, timeout=30) as r:
                    answer = json.loads(r.read())
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.3)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    if answer is None:
        return ['no answer from strata serve: ' + open(os.path.join(work, 'serve.log')).read()[-1500:]]
    got = np.array([p['logits'] for p in answer['predictions']], np.float32)
    want = state['fp32']['logits'][:16]
    err = float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))
    if got.shape != want.shape or err > 1e-5:
        return [f'served logits {got.shape} vs TF\'s {want.shape}: max error / scale {err:.2e} > 1e-5']
    print(f'    served .tflite: logits of 16 test images within {err:.1e} of TF\'s interpreter')
    return []


def check_bad_input(strata, work):
    problems = []
    base = [strata, 'export', '--model_name', 'cnn_small', '--checkpoint_dir', os.path.join(work, 'ckpt'),
            '--export_base_dir', os.path.join(work, 'bad'), '--version', '1']
    bad = os.path.join(work, 'bad.npy')
    np.save(bad, np.zeros((4, 28, 28, 3), np.float32))
    cases = [
        (['--format', 'tflite', '--quantize', 'int8'], 'needs --calibration'),
        (['--format', 'tflite', '--quantize', 'int8', '--calibration', bad], 'expects [batch,28,28,1]'),
        (['--quantize', 'int8', '--calibration', bad], 'needs --format tflite'),
    ]
    for extra, want in cases:
        rc, out, err = run(base + extra)
        if rc != 1 or want not in err:
            problems.append(f'{" ".join(extra)}: exit {rc}, stderr {err.strip()[-300:]!r}; want exit 1 and {want!r}')
    if os.path.exists(os.path.join(work, 'bad', 'cnn_small', '1', 'model.tflite')):
        problems.append('a failed export left a model.tflite behind')
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('strata')
    ap.add_argument('source_dir')
    ap.add_argument('--images', type=int, default=2000, help='test images compared (10000: the issue\'s full check)')
    ap.add_argument('--steps', type=int, default=600, help='training steps of 64 images (938: one epoch)')
    args = ap.parse_args()
    if not os.path.exists(os.path.join(FASHION, 't10k-images-idx3-ubyte.gz')):
        print(f'Fashion-MNIST not found in {FASHION} (apt-get install dataset-fashion-mnist)')
        return 77
    tally = Tally()
    work = tempfile.mkdtemp(prefix='strata_tflite_')
    try:
        strata = args.strata
        tally.run('schema numbers', check_schema_numbers, args.source_dir)
        # Train cnn_small briefly (by default 600 steps of 64 images: about 85% test accuracy).
        for split, name in (('train', 'train'), ('t10k', 'test')):
            rc, out, err = run([strata, 'data', 'import-idx', '--images',
                                os.path.join(FASHION, f'{split}-images-idx3-ubyte.gz'), '--labels',
                                os.path.join(FASHION, f'{split}-labels-idx1-ubyte.gz'), '--out',
                                os.path.join(work, 'data', name), '--encoding', 'raw'])
            if rc != 0:
                print(f'import-idx failed: {err}')
                return 1
        rc, out, err = run([strata, 'train', '--tfrecord_pattern', os.path.join(work, 'data', 'train-*'),
                            '--model_name', 'cnn_small', '--epochs', '1', '--steps_per_epoch', str(args.steps), '--batch_size',
                            '64', '--optimizer', 'adam', '--learning_rate', '1e-3', '--seed', '0', '--verbose', '0',
                            '--intra_op_threads', '2', '--checkpoint_dir', os.path.join(work, 'ckpt')])
        if rc != 0:
            print(f'strata train failed: {err[-1000:]}')
            return 1
        calib = os.path.join(work, 'calib.npy')
        np.save(calib, fashion('train')[:512])
        exports = [('1', []), ('2', ['--format', 'tflite']),
                   ('3', ['--format', 'tflite', '--quantize', 'int8', '--calibration', calib])]
        for version, extra in exports:
            rc, out, err = run([strata, 'export', '--model_name', 'cnn_small', '--checkpoint_dir',
                                os.path.join(work, 'ckpt'), '--export_base_dir', os.path.join(work, 'models'),
                                '--name', 'cnn', '--version', version, *extra])
            if rc != 0:
                print(f'strata export {" ".join(extra)} failed: {err[-1000:]}')
                return 1
        x = fashion('test')[:args.images]
        state = {}
        tally.run('float32 .tflite in TF\'s interpreter', check_fp32, strata, work, x, state)
        if 'fp32' in state:
            tally.run('int8 .tflite: quantization spec and agreement', check_int8, work, x, state)
            tally.run('strata serve reads the float32 .tflite', check_served, strata, work, x, state)
        tally.run('bad input', check_bad_input, strata, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tally.finish()


if __name__ == '__main__':
    sys.exit(main())
