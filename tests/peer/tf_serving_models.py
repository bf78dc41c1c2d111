"""strata serving TensorFlow Serving's own test SavedModels (../shared/testdata/tf-serving): the documented REST calls
and answers, TF Serving's Python gRPC client, both versions of the two-version model (answers checked against TF
itself loading the same SavedModels), and damaged versions that fail to load while the good version keeps serving.

Usage: tf_serving_models.py STRATA_BINARY SOURCE_DIR"""
import os, shutil, signal, subprocess, sys, tempfile, time, urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_util import Tally, free_port, http  # noqa: E402

try:
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
    import grpc
    import numpy as np
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc, regression_pb2
    tf.get_logger().setLevel('ERROR')
except ImportError as e:
    print(f'peers venv missing ({e}): run scripts/install-deps.sh --peers')
    sys.exit(77)


def tf_predict(version_dir, xs):
    """TF's own answer: the SavedModel's serving_default signature on x."""
    sig = tf.saved_model.load(version_dir).signatures['serving_default']
    name = list(sig.structured_input_signature[1].keys())[0]
    out = sig(**{name: tf.constant(xs, dtype=tf.float32)})
    return np.asarray(list(out.values())[0]).reshape(-1).tolist()


def damage(dst, kind, src):
    """A copy of the TF1 half_plus_two version `src` at `dst`, damaged in one way."""
    shutil.copytree(src, dst)
    if kind == 'index_crc':
        with open(f'{dst}/variables/variables.index', 'r+b') as f:
            f.seek(3)
            b = f.read(1)
            f.seek(3)
            f.write(bytes([b[0] ^ 0x5a]))
    elif kind == 'missing_shard':
        os.remove(f'{dst}/variables/variables.data-00000-of-00001')
    elif kind in ('unsupported_op', 'missing_tensor'):
        sm = saved_model_pb2.SavedModel()
        sm.ParseFromString(open(f'{dst}/saved_model.pb', 'rb').read())
        mg = sm.meta_graphs[0]
        if kind == 'unsupported_op':
            for n in mg.graph_def.node:
                if n.op in ('Add', 'AddV2'):
                    n.op = 'Atan2'
        else:
            mg.signature_def['serving_default'].outputs['y'].name = 'nope:0'
        open(f'{dst}/saved_model.pb', 'wb').write(sm.SerializeToString())


EXPECTED_ERRORS = {  # version -> (damage, text the load error must contain)
    2: ('index_crc', 'CRC-32C'),
    3: ('missing_shard', 'is missing'),
    4: ('unsupported_op', "op 'Atan2' is not supported"),
    5: ('missing_tensor', "names tensor 'nope:0', which is not in the graph"),
}


def main():
    strata, src = os.path.abspath(sys.argv[1]), sys.argv[2]
    data = os.path.join(src, '..', 'shared', 'testdata', 'tf-serving')
    if not os.path.isdir(data):
        print(f'{data} is not present')
        return 77
    tally = Tally()
    work = tempfile.mkdtemp(prefix='strata_tfsm_')
    tf1 = f'{data}/saved_model_half_plus_two_cpu/00000123'
    os.makedirs(f'{work}/recover')
    shutil.copytree(tf1, f'{work}/recover/1')
    models = {'half_plus_two': f'{data}/saved_model_half_plus_two_cpu',
              'half_plus_two_tf2': f'{data}/saved_model_half_plus_two_tf2_cpu',
              'saved_model_half_plus_three': f'{data}/saved_model_half_plus_three',
              'two_versions': f'{data}/saved_model_half_plus_two_2_versions',
              'recover': f'{work}/recover'}
    cfg = 'model_config_list {\n' + ''.join(
        f'  config {{ name: "{n}" base_path: "{p}" model_platform: "tensorflow" '
        f'model_version_policy {{ all {{}} }} }}\n' for n, p in models.items()) + '}\n'
    open(f'{work}/models.config', 'w').write(cfg)
    rest, grpc_port = free_port(), free_port()
    log = open(f'{work}/server.log', 'w')
    proc = subprocess.Popen([strata, 'serve', '--host', '127.0.0.1', f'--port={grpc_port}',
                             f'--rest_api_port={rest}', f'--model_config_file={work}/models.config',
                             '--file_system_poll_wait_seconds=1'], stdout=log, stderr=subprocess.STDOUT)
    base = f'http://127.0.0.1:{rest}/v1/models'
    try:
        deadline = time.time() + 120
        pending = set(models)
        while pending and time.time() < deadline:
            for n in list(pending):
                try:
                    code, st = http('GET', f'{base}/{n}', timeout=5)
                    if code == 200 and any(v['state'] == 'AVAILABLE' for v in st['model_version_status']):
                        pending.discard(n)
                except (urllib.error.URLError, ConnectionError, OSError):
                    pass
            time.sleep(0.3)
        if pending:
            tally.report('load', [f'not AVAILABLE within 120 s: {sorted(pending)}'])

        def documented_predict():
            problems = []
            for n in ('half_plus_two', 'half_plus_two_tf2'):
                code, body = http('POST', f'{base}/{n}:predict', {'instances': [1.0, 2.0, 5.0]})
                if code != 200 or body != {'predictions': [2.5, 3.0, 4.5]}:
                    problems.append(f'{n}: HTTP {code} {body}, TF Serving documents {{"predictions": [2.5, 3.0, 4.5]}}')
            print('    {"instances": [1.0, 2.0, 5.0]} -> {"predictions": [2.5, 3.0, 4.5]} (TF1 and TF2 half_plus_two)')
            return problems
        tally.run('documented_predict', documented_predict)

        def documented_regress():
            code, body = http('POST', f'{base}/saved_model_half_plus_three:regress',
                              {'signature_name': 'tensorflow/serving/regress', 'examples': [{'x': 1.0}, {'x': 2.0}]})
            if code != 200 or body != {'results': [3.5, 4.0]}:
                return [f'HTTP {code} {body}, TF Serving documents {{"results": [3.5, 4.0]}}']
            print('    regress [{"x": 1.0}, {"x": 2.0}] -> {"results": [3.5, 4.0]}')
            return []
        tally.run('documented_regress', documented_regress)

        def classify_signature():
            # half_plus_two's classify_x_to_y parses tf.Examples (ParseExample) and scores y = 0.5 x + 2.
            code, body = http('POST', f'{base}/half_plus_two:classify',
                              {'signature_name': 'classify_x_to_y', 'examples': [{'x': 1.0}, {'x': 6.0}]})
            scores = [[c[1] for c in r] for r in body.get('results', [])] if code == 200 else None
            if scores != [[2.5], [5.0]]:
                return [f'HTTP {code} {body}; expected scores [[2.5], [5.0]]']
            print(f'    classify_x_to_y [{{"x": 1.0}}, {{"x": 6.0}}] -> {body}')
            return []
        tally.run('classify_signature', classify_signature)

        def two_versions():
            problems = []
            code, st = http('GET', f'{base}/two_versions')
            states = sorted((v['version'], v['state']) for v in st.get('model_version_status', []))
            if states != [('123', 'AVAILABLE'), ('124', 'AVAILABLE')]:
                problems.append(f'status {states}')
            for v in (123, 124):
                want = tf_predict(f'{data}/saved_model_half_plus_two_2_versions/{v:08d}', [1.0, 2.0, 5.0])
                code, body = http('POST', f'{base}/two_versions/versions/{v}:predict', {'instances': [1.0, 2.0, 5.0]})
                got = body.get('predictions')
                if code != 200 or not np.allclose(got, want, rtol=1e-6):
                    problems.append(f'version {v}: HTTP {code} {body}; TF gives {want}')
                else:
                    print(f'    two_versions/versions/{v}: {got} (TF: {want})')
            return problems
        tally.run('two_versions', two_versions)

        def grpc_client():
            problems = []
            ch = grpc.insecure_channel(f'127.0.0.1:{grpc_port}')
            stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
            for n in ('half_plus_two', 'half_plus_two_tf2'):
                req = predict_pb2.PredictRequest()
                req.model_spec.name = n
                req.inputs['x'].CopyFrom(tf.make_tensor_proto([1.0, 2.0, 5.0], dtype=tf.float32))
                resp = stub.Predict(req, timeout=30)
                got = tf.make_ndarray(resp.outputs['y']).reshape(-1).tolist()
                if got != [2.5, 3.0, 4.5]:
                    problems.append(f'{n} Predict: {got}')
            req = regression_pb2.RegressionRequest()
            req.model_spec.name = 'saved_model_half_plus_three'
            req.model_spec.signature_name = 'tensorflow/serving/regress'
            for x in (1.0, 2.0):
                ex = req.input.example_list.examples.add()
                ex.features.feature['x'].float_list.value.append(x)
            resp = stub.Regress(req, timeout=30)
            got = [r.value for r in resp.result.regressions]
            if got != [3.5, 4.0]:
                problems.append(f'Regress: {got}')
            ch.close()
            if not problems:
                print('    tensorflow-serving-api PredictionServiceStub: Predict [2.5, 3.0, 4.5] (TF1, TF2), '
                      'Regress [3.5, 4.0]')
            return problems
        tally.run('grpc_client', grpc_client)

        def damaged_versions_keep_serving():
            for v, (kind, _) in EXPECTED_ERRORS.items():
                damage(f'{work}/recover/{v}', kind, tf1)
            problems, deadline = [], time.time() + 90
            while time.time() < deadline:
                code, st = http('GET', f'{base}/recover')
                by_version = {int(s['version']): s for s in st.get('model_version_status', [])}
                if all(v in by_version and by_version[v]['status'].get('error_message') for v in EXPECTED_ERRORS):
                    break
                time.sleep(0.5)
            for v, (kind, text) in EXPECTED_ERRORS.items():
                msg = by_version.get(v, {}).get('status', {}).get('error_message', '')
                if text not in msg:
                    problems.append(f'version {v} ({kind}): status {by_version.get(v)}; expected an error with "{text}"')
                else:
                    print(f'    version {v} ({kind}): {msg[:160]}')
            if by_version.get(1, {}).get('state') != 'AVAILABLE':
                problems.append(f'version 1 is {by_version.get(1)}')
            code, body = http('POST', f'{base}/recover:predict', {'instances': [1.0, 2.0, 5.0]})
            if code != 200 or body != {'predictions': [2.5, 3.0, 4.5]}:
                problems.append(f'version 1 after the damaged loads: HTTP {code} {body}')
            return problems
        tally.run('damaged_versions_keep_serving', damaged_versions_keep_serving)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        if tally.failed:
            sys.stdout.write(open(f'{work}/server.log').read()[-4000:])
        shutil.rmtree(work, ignore_errors=True)
    return tally.finish()


if __name__ == '__main__':
    sys.exit(main())
