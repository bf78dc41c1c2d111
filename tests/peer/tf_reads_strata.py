#!/usr/bin/env python3
"""TensorFlow reads what strata writes (peer test; run with the peers venv's python).

    tests/peer/tf_reads_strata.py BUILD/strata [--data DIR]

1. TFRecords of tf.train.Example written by `strata data import-idx` (PNG and raw encodings; no compression, GZIP
   and ZLIB) read by tf.data.TFRecordDataset + tf.io.parse_example: every image and label equal to the IDX source
   (read here with numpy alone).
2. TensorBoard event files written by `strata train --log_dir` read by TensorFlow's own event reader
   (tf.compat.v1.train.summary_iterator): the epoch scalars equal training.csv's values.
3. The ONNX file of `strata export` passes onnx's checker and gives strata's outputs in ONNX Runtime.

Prints one line per check and "N passed, M failed"; exits 1 when a check failed.
"""
import argparse, csv, gzip, os, struct, subprocess, sys, tempfile

import numpy as np

try:
    import tensorflow as tf
    import onnx
    import onnxruntime as ort
except ImportError as e:  # the ctest wrapper only runs this with the peers venv; say so plainly otherwise
    print(f'peers venv missing ({e}): run scripts/install-deps.sh --peers')
    sys.exit(77)

tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(1)


def read_idx(path):
    raw = open(path, 'rb').read()
    if raw[:2] == b'\x1f\x8b':
        raw = gzip.decompress(raw)
    zero, dtype, ndim = struct.unpack('>HBB', raw[:4])
    assert zero == 0 and dtype == 0x08, (path, zero, dtype)
    dims = struct.unpack('>' + 'I' * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def write_idx(path, arr):
    with open(path, 'wb') as f:
        f.write(struct.pack('>HBB', 0, 0x08, arr.ndim) + struct.pack('>' + 'I' * arr.ndim, *arr.shape))
        f.write(arr.astype(np.uint8).tobytes())


def check_tfrecords(strata, work, images, labels):
    problems = []
    img_path, lab_path = os.path.join(work, 'images.idx'), os.path.join(work, 'labels.idx')
    write_idx(img_path, images)
    write_idx(lab_path, labels)
    for encoding in ('png', 'raw'):
        for compression, tf_name in (('', ''), ('GZIP', 'GZIP'), ('ZLIB', 'ZLIB')):
            prefix = os.path.join(work, f'rec_{encoding}_{compression or "none"}')
            cmd = [strata, 'data', 'import-idx', '--images', img_path, '--labels', lab_path, '--out', prefix,
                   '--shards', '2', '--encoding', encoding]
            if compression:
                cmd += ['--compression', compression]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                problems.append(f'import-idx {encoding}/{compression}: {r.stderr[-300:]}')
                continue
            files = sorted(f for f in (os.path.join(work, n) for n in os.listdir(work))
                           if f.startswith(prefix + '-') and f.endswith('.tfrecord'))
            key = 'image/encoded' if encoding == 'png' else 'image'
            spec = {key: tf.io.FixedLenFeature([], tf.string), 'label': tf.io.FixedLenFeature([], tf.int64)}
            ds = tf.data.TFRecordDataset(files, compression_type=tf_name).batch(64).map(
                lambda b: tf.io.parse_example(b, spec))
            got_images, got_labels = [], []
            for batch in ds:
                for blob in batch[key].numpy():
                    if encoding == 'png':
                        got_images.append(tf.io.decode_png(blob, channels=1).numpy()[:, :, 0])
                    else:
                        got_images.append(np.frombuffer(blob, dtype=np.uint8).reshape(images.shape[1:]))
                got_labels.extend(batch['label'].numpy().tolist())
            if len(got_labels) != len(labels):
                problems.append(f'{encoding}/{compression}: TF read {len(got_labels)} records, want {len(labels)}')
                continue
            # Compared as multisets of (label, pixels): how examples are spread over the shards is strata's choice.
            got = sorted((int(l), im.tobytes()) for l, im in zip(got_labels, got_images))
            want = sorted((int(l), im.tobytes()) for l, im in zip(labels, images))
            if got != want:
                bad = sum(g != w for g, w in zip(got, want))
                problems.append(f'{encoding}/{compression}: {bad} of {len(want)} examples differ from the IDX source')
            else:
                print(f'    tfrecords {encoding}/{compression or "none"}: {len(files)} files, {len(got)} examples equal')
    return problems


def check_events(strata, work, data_dir):
    logs, ckpt = os.path.join(work, 'logs'), os.path.join(work, 'ckpt')
    r = subprocess.run([strata, 'train', '--data_dir', data_dir, '--model_name', 'mlp', '--batch_size', '32',
                        '--steps_per_epoch', '10', '--epochs', '2', '--seed', '0', '--verbose', '0',
                        '--checkpoint_dir', ckpt, '--log_dir', logs], capture_output=True, text=True,
                       env=dict(os.environ, OMP_WAIT_POLICY='passive'))
    if r.returncode != 0:
        return [f'strata train: {r.stderr[-400:]}']
    rows = list(csv.DictReader(open(os.path.join(logs, 'training.csv'), newline='')))
    problems, seen = [], 0
    for run in ('train', 'validation'):
        run_dir = os.path.join(logs, run)
        if not os.path.isdir(run_dir):
            problems.append(f'no {run} run in {logs}')
            continue
        scalars = {}
        for name in sorted(os.listdir(run_dir)):
            if 'tfevents' not in name:
                continue
            for event in tf.compat.v1.train.summary_iterator(os.path.join(run_dir, name)):
                for v in event.summary.value:
                    if v.HasField('tensor') and v.metadata.plugin_data.plugin_name == 'scalars':
                        value = float(tf.make_ndarray(v.tensor))
                    elif v.HasField('simple_value'):
                        value = v.simple_value
                    else:
                        continue
                    scalars.setdefault(v.tag, {})[event.step] = value
        for tag in ('epoch_loss', 'epoch_accuracy'):
            col = tag[len('epoch_'):] if run == 'train' else 'val_' + tag[len('epoch_'):]
            if tag not in scalars:
                problems.append(f'{run}: TF found no {tag} (tags: {sorted(scalars)})')
                continue
            for row in rows:
                step = int(row['epoch'])
                want = np.float32(float(row[col]))
                got = scalars[tag].get(step)
                if got is None or np.float32(got) != want:
                    problems.append(f'{run} {tag} epoch {step}: TF read {got}, training.csv has {want}')
                seen += 1
    if not problems:
        print(f'    events: {seen} epoch scalars read by TF equal training.csv')
    return problems, ckpt


def check_onnx(strata, work, ckpt, images):
    out_dir = os.path.join(work, 'export')
    r = subprocess.run([strata, 'export', '--checkpoint_dir', ckpt, '--model_name', 'mlp', '--export_base_dir',
                        out_dir,
                        '--name', 'fashion'], capture_output=True, text=True)
    if r.returncode != 0:
        return [f'strata export: {r.stderr[-400:]}']
    paths = [os.path.join(d, f) for d, _, fs in os.walk(out_dir) for f in fs if f == 'model.onnx']
    if len(paths) != 1:
        return [f'want one model.onnx under {out_dir}, found {paths}']
    model = onnx.load(paths[0])
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(paths[0], providers=['CPUExecutionProvider'])
    inp = sess.get_inputs()[0]
    x = images[:8].reshape(8, 28, 28, 1).astype(np.float32)
    ort_out = sess.run(None, {inp.name: x})
    npy = os.path.join(work, 'x.npy')
    np.save(npy, x)
    run_dir = os.path.join(work, 'run')
    r = subprocess.run([strata, 'run', paths[0], '--input', f'{inp.name}={npy}', '--output-dir', run_dir],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return [f'strata run: {r.stderr[-400:]}']
    problems = []
    for meta, want in zip(sess.get_outputs(), ort_out):
        got = np.load(os.path.join(run_dir, meta.name + '.npy'))
        scale = max(1.0, float(np.abs(want).max()))
        err = float(np.abs(got - want).max()) / scale
        if got.shape != want.shape or err > 1e-4:
            problems.append(f'output {meta.name}: strata {got.shape} vs ORT {want.shape}, max rel error {err:.2e}')
    if not problems:
        print(f'    onnx: checker passed; {len(ort_out)} outputs equal in ORT {ort.__version__} and strata')
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('strata')
    ap.add_argument('--data', default=os.environ.get('FASHION_MNIST_DIR', '/usr/share/datasets/fashion-mnist'))
    a = ap.parse_args()
    strata = os.path.abspath(a.strata)
    images = read_idx(os.path.join(a.data, 't10k-images-idx3-ubyte.gz'))[:300]
    labels = read_idx(os.path.join(a.data, 't10k-labels-idx1-ubyte.gz'))[:300]
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix='strata_tf_peer_') as work:
        results = [('tfrecords_read_by_tf_data', check_tfrecords(strata, work, images, labels))]
        ev_problems, ckpt = check_events(strata, work, a.data)
        results.append(('events_read_by_tf', ev_problems))
        results.append(('onnx_in_checker_and_ort', check_onnx(strata, work, ckpt, images)))
    for name, problems in results:
        print(f'{name}: {"ok" if not problems else "FAILED"}')
        for p in problems:
            print(f'    {p}')
        passed, failed = passed + (not problems), failed + bool(problems)
    print(f'tf {tf.__version__}: {passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
