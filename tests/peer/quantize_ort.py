#!/usr/bin/env python3
"""ONNX Runtime runs what `strata quantize` writes (peer test; run with the peers venv's python).

    tests/peer/quantize_ort.py BUILD/strata

A small residual CNN (Conv/Relu/Add/MaxPool/GlobalAveragePool/Gemm, opset 13, fixed random weights) is quantized by
`strata quantize` on 64 calibration images, then:
1. the QDQ file passes onnx.checker; weights are int8 per output channel (axis 0 for Conv), activations uint8 per
   tensor, Conv biases int32 with scale = x_scale * w_scale (checked against the initializers themselves);
2. ONNX Runtime 1.30 runs it; strata's output on the same file and inputs agrees with ORT's: same top-1 on at least
   98% of 256 held-out images, and logits within 2% of the fp32 logits' range (ORT runs QLinearConv with its own
   requantization, strata the QDQ ops; both round each quantized tensor, so they may differ by one step there);
3. top-1 agreement of the int8 model (ORT) with the float32 model (ORT) is at least 95%;
4. --method percentile writes a valid model too;
5. bad input: calibration data of the wrong shape, a model with no quantizable op and a model below opset 13 exit 1
   with a clear message.

Prints one line per check and "N passed, M failed"; exits 1 when a check failed.
"""
import os, subprocess, sys, tempfile

import numpy as np

try:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f'peers venv missing ({e}): run scripts/install-deps.sh --peers')
    sys.exit(77)

sys.path.insert(0, os.path.dirname(__file__))
from peer_util import Tally, half_plus_two  # noqa: E402


def conv(rng, name, x, cin, cout, k, stride=1):
    w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
    b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(w, name + '_W'), numpy_helper.from_array(b, name + '_B')]
    node = helper.make_node('Conv', [x, name + '_W', name + '_B'], [name], pads=[k // 2] * 4, strides=[stride] * 2,
                            kernel_shape=[k, k])
    return node, inits


def make_cnn(path, opset=13):
    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def add(node_inits):
        nodes.append(node_inits[0])
        inits.extend(node_inits[1])

    add(conv(rng, 'c1', 'x', 3, 16, 3))
    nodes.append(helper.make_node('Relu', ['c1'], ['r1']))
    nodes.append(helper.make_node('MaxPool', ['r1'], ['p1'], kernel_shape=[2, 2], strides=[2, 2]))
    add(conv(rng, 'c2', 'p1', 16, 16, 3))
    nodes.append(helper.make_node('Relu', ['c2'], ['r2']))
    add(conv(rng, 'c3', 'r2', 16, 16, 3))
    nodes.append(helper.make_node('Add', ['c3', 'p1'], ['s3']))
    nodes.append(helper.make_node('Relu', ['s3'], ['r3']))
    add(conv(rng, 'c4', 'r3', 16, 32, 3, stride=2))
    nodes.append(helper.make_node('Relu', ['c4'], ['r4']))
    nodes.append(helper.make_node('GlobalAveragePool', ['r4'], ['g']))
    nodes.append(helper.make_node('Flatten', ['g'], ['f']))
    fc_w = (rng.standard_normal((10, 32)) * 0.5).astype(np.float32)
    inits += [numpy_helper.from_array(fc_w, 'fc_W'), numpy_helper.from_array(np.zeros(10, np.float32), 'fc_B')]
    nodes.append(helper.make_node('Gemm', ['f', 'fc_W', 'fc_B'], ['y'], transB=1))
    g = helper.make_graph(nodes, 'cnn', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 3, 16, 16])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)], ir_version=8), path)


def images(rng, n):
    """Smooth images (a few low-frequency waves plus noise), so that channels carry structure."""
    yy, xx = np.meshgrid(np.linspace(0, 1, 16), np.linspace(0, 1, 16), indexing='ij')
    out = np.empty((n, 3, 16, 16), np.float32)
    for i in range(n):
        f = rng.uniform(0.5, 4, size=(3, 2))
        ph = rng.uniform(0, 6.3, size=3)
        for c in range(3):
            out[i, c] = np.sin(2 * np.pi * (f[c, 0] * xx + f[c, 1] * yy) + ph[c])
    return out + rng.normal(0, 0.1, out.shape).astype(np.float32)


def ort_run(path, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    return ort.InferenceSession(path, so, providers=['CPUExecutionProvider']).run(None, {'x': x})[0]


def strata_run(strata, model, x, tmp):
    np.save(os.path.join(tmp, 'in.npy'), x)
    out_dir = os.path.join(tmp, 'out')
    subprocess.run([strata, 'run', model, '--input', 'x=' + os.path.join(tmp, 'in.npy'), '--output-dir', out_dir],
                   check=True, capture_output=True, timeout=300)
    return np.load(os.path.join(out_dir, 'y.npy'))


def check_format(qpath):
    problems = []
    m = onnx.load(qpath)
    onnx.checker.check_model(m, full_check=True)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    producers = {o: n for n in m.graph.node for o in n.output}
    ops = [n.op_type for n in m.graph.node]
    if ops.count('QuantizeLinear') < 4:
        problems.append(f'expected a QuantizeLinear per quantized activation, got ops {ops}')
    for n in m.graph.node:
        if n.op_type not in ('Conv', 'Gemm'):
            continue
        x_dq, w_dq = producers.get(n.input[0]), producers.get(n.input[1])
        if x_dq is None or x_dq.op_type != 'DequantizeLinear' or w_dq is None or w_dq.op_type != 'DequantizeLinear':
            problems.append(f'{n.name or n.output[0]}: X and W must come from DequantizeLinear')
            continue
        wq, ws, wz = (inits[i] for i in w_dq.input)
        xs, xz = inits[x_dq.input[1]], inits[x_dq.input[2]]
        axis = next((a.i for a in w_dq.attribute if a.name == 'axis'), 1)
        want_axis = 0 if n.op_type == 'Conv' else 0  # Gemm with transB=1: B is [N, K]
        if wq.dtype != np.int8 or ws.shape != (wq.shape[want_axis],) or axis != want_axis or np.any(wz != 0):
            problems.append(f'{n.output[0]}: weight {wq.dtype} scales {ws.shape} axis {axis}: want int8 per channel')
        if np.abs(wq).max() != 127:
            problems.append(f'{n.output[0]}: symmetric weights should reach +-127, max |q| {np.abs(wq).max()}')
        if xz.dtype != np.uint8 or xs.shape != ():
            problems.append(f'{n.output[0]}: activation must be uint8 per tensor, got {xz.dtype} {xs.shape}')
        if len(n.input) > 2:
            b_dq = producers[n.input[2]]
            bq, bs = inits[b_dq.input[0]], inits[b_dq.input[1]]
            if bq.dtype != np.int32 or not np.allclose(bs, xs * ws, rtol=1e-6):
                problems.append(f'{n.output[0]}: bias must be int32 with scale x_scale * w_scale')
    return problems


def main():
    strata = sys.argv[1]
    tally = Tally()
    with tempfile.TemporaryDirectory() as tmp:
        fp32, qpath, ppath = (os.path.join(tmp, f) for f in ('cnn.onnx', 'cnn.int8.onnx', 'cnn.pct.onnx'))
        make_cnn(fp32)
        rng = np.random.default_rng(7)
        calib, test = images(rng, 64), images(rng, 256)
        calib_path = os.path.join(tmp, 'calib.npy')
        np.save(calib_path, calib)
        r = subprocess.run([strata, 'quantize', fp32, '--calibration', calib_path, '--out', qpath],
                           capture_output=True, text=True, timeout=300)
        tally.report('strata quantize (minmax) exits 0', [] if r.returncode == 0 else [r.stderr.strip()])
        if r.returncode != 0:
            return tally.finish()
        tally.run('QDQ format: checker, int8 per-channel weights, uint8 activations, int32 bias', check_format, qpath)

        y32, yq_ort = ort_run(fp32, test), ort_run(qpath, test)
        yq_strata = strata_run(strata, qpath, test, tmp)
        spread = float(y32.max() - y32.min())
        agree = float(np.mean(yq_strata.argmax(1) == yq_ort.argmax(1)))
        err = float(np.abs(yq_strata - yq_ort).max()) / spread
        tally.report(f'strata vs ORT on the QDQ file: top-1 agreement {agree:.3f} (>= 0.98), max diff {err:.2e} of '
                     f'the logit range (<= 0.02)', [] if agree >= 0.98 and err <= 0.02 else ['too far apart'])
        agree32 = float(np.mean(yq_ort.argmax(1) == y32.argmax(1)))
        tally.report(f'int8 (ORT) vs fp32 top-1 agreement {agree32:.3f} (>= 0.95)',
                     [] if agree32 >= 0.95 else ['int8 model disagrees with fp32'])

        r = subprocess.run([strata, 'quantize', fp32, '--calibration', calib_path, '--out', ppath, '--method',
                            'percentile', '--percentile', '99.99'], capture_output=True, text=True, timeout=300)
        problems = [r.stderr.strip()] if r.returncode != 0 else []
        if not problems:
            onnx.checker.check_model(onnx.load(ppath))
            agree_p = float(np.mean(ort_run(ppath, test).argmax(1) == y32.argmax(1)))
            if agree_p < 0.95:
                problems.append(f'percentile model top-1 agreement {agree_p:.3f} < 0.95')
        tally.report('--method percentile: valid QDQ model, top-1 agreement >= 0.95', problems)

        bad = os.path.join(tmp, 'bad.npy')
        np.save(bad, calib[:, :, :8, :])
        r = subprocess.run([strata, 'quantize', fp32, '--calibration', bad, '--out', os.path.join(tmp, 'b.onnx')],
                           capture_output=True, text=True, timeout=300)
        ok = r.returncode == 1 and 'has shape [64,3,8,16]' in r.stderr and 'expects' in r.stderr
        tally.report('wrong calibration shape: clear error', [] if ok else [f'rc {r.returncode}: {r.stderr.strip()}'])
        hp2 = os.path.join(tmp, 'hp2.onnx')
        half_plus_two(hp2)
        np.save(bad, np.zeros(4, np.float32))
        r = subprocess.run([strata, 'quantize', hp2, '--calibration', bad, '--out', os.path.join(tmp, 'b.onnx')],
                           capture_output=True, text=True, timeout=300)
        ok = r.returncode == 1 and 'no quantizable op' in r.stderr
        tally.report('model without Conv/Gemm/MatMul: clear error', [] if ok else [f'rc {r.returncode}: {r.stderr}'])
        old = os.path.join(tmp, 'cnn12.onnx')
        make_cnn(old, opset=12)
        r = subprocess.run([strata, 'quantize', old, '--calibration', calib_path, '--out', os.path.join(tmp, 'b.onnx')],
                           capture_output=True, text=True, timeout=300)
        ok = r.returncode == 1 and 'opset 12' in r.stderr and 'opset 13' in r.stderr
        tally.report('opset 12 model: refused, naming the opset needed', [] if ok else [f'rc {r.returncode}: {r.stderr}'])
    return tally.finish()


if __name__ == '__main__':
    sys.exit(main())
