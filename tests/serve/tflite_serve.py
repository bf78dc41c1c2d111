#!/usr/bin/env python3
"""strata serve on .tflite version directories (issue 13): TF Serving's own saved_model_half_plus_two_tflite and
..._tflite_with_sigdef (../shared/testdata/tf-serving) answer TF Serving's documented REST call as its SavedModel
(saved_model_half_plus_two_cpu, served beside them) does: {"instances": [1.0, 2.0, 5.0]} -> {"predictions": [2.5,
3.0, 4.5]}, also through the row ("instances") and column ("inputs": {"x": ...}; the with_sigdef file's input tensor
is "tflite_input", aliased "x" by the SignatureDef in its signature_defs_metadata) formats; damaged .tflite
versions (truncated, wrong file identifier) fail to load with the reason in the model's status.

Usage: tflite_serve.py STRATA_BINARY SOURCE_DIR (exits 77 when ../shared/testdata/tf-serving is absent)."""
import json, os, shutil, subprocess, sys, tempfile, time, urllib.error

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'peer'))
from peer_util import free_port, http  # noqa: E402


def main():
    strata, source = sys.argv[1], sys.argv[2]
    data = os.path.abspath(os.path.join(source, '..', 'shared', 'testdata', 'tf-serving'))
    if not os.path.isdir(os.path.join(data, 'saved_model_half_plus_two_tflite')):
        print(f'{data} is not present: skipped')
        return 77
    work = tempfile.mkdtemp(prefix='strata_tflite_serve_')
    failures = []
    try:
        good = os.path.join(data, 'saved_model_half_plus_two_tflite', '00000123', 'model.tflite')
        raw = open(good, 'rb').read()
        damaged = {'truncated': raw[:len(raw) // 2], 'wrong_identifier': raw[:4] + b'TFL2' + raw[8:]}
        for name, content in damaged.items():
            os.makedirs(os.path.join(work, name, '1'))
            open(os.path.join(work, name, '1', 'model.tflite'), 'wb').write(content)
        models = {'tflite': os.path.join(data, 'saved_model_half_plus_two_tflite'),
                  'tflite_sigdef': os.path.join(data, 'saved_model_half_plus_two_tflite_with_sigdef'),
                  'savedmodel': os.path.join(data, 'saved_model_half_plus_two_cpu'),
                  **{n: os.path.join(work, n) for n in damaged}}
        cfg = 'model_config_list {\n' + ''.join(
            f'  config {{ name: "{n}" base_path: "{p}" model_platform: "tensorflow" }}\n'
            for n, p in models.items()) + '}\n'
        open(os.path.join(work, 'models.config'), 'w').write(cfg)
        rest = free_port()
        log = open(os.path.join(work, 'server.log'), 'w')
        proc = subprocess.Popen([strata, 'serve', '--host', '127.0.0.1', '--port=0', f'--rest_api_port={rest}',
                                 f'--model_config_file={work}/models.config'], stdout=log, stderr=subprocess.STDOUT)
        base = f'http://127.0.0.1:{rest}/v1/models'
        try:
            statuses = {}
            deadline = time.time() + 60
            while time.time() < deadline and len(statuses) < len(models):
                for n in models:
                    try:
                        code, st = http('GET', f'{base}/{n}', timeout=5)
                    except (urllib.error.URLError, ConnectionError, OSError):
                        continue
                    states = [v['state'] for v in st.get('model_version_status', [])]
                    if 'AVAILABLE' in states or 'END' in states:
                        statuses[n] = st
                time.sleep(0.2)
            for n in ('tflite', 'tflite_sigdef', 'savedmodel'):
                states = [v['state'] for v in statuses.get(n, {}).get('model_version_status', [])]
                if 'AVAILABLE' not in states:
                    failures.append(f'{n}: not AVAILABLE: {statuses.get(n)}')
            # The documented call, and more values in both request formats: every answer equals the SavedModel's.
            requests = [{'instances': [1.0, 2.0, 5.0]}, {'instances': [[-3.0], [0.25], [1e6]]},
                        {'inputs': {'x': [[7.0], [8.0]]}}]
            for req in requests:
                answers = {}
                for n in ('savedmodel', 'tflite', 'tflite_sigdef'):
                    answers[n] = http('POST', f'{base}/{n}:predict', req)
                if req == requests[0] and answers['tflite'] != (200, {'predictions': [2.5, 3.0, 4.5]}):
                    failures.append(f'tflite: {answers["tflite"]}, TF Serving documents {{"predictions": [2.5, 3.0, '
                                    '4.5]}')
                for n in ('tflite', 'tflite_sigdef'):
                    if answers[n] != answers['savedmodel']:
                        failures.append(f'{req}: {n} answered {answers[n]}, the SavedModel {answers["savedmodel"]}')
                print(f'    {json.dumps(req)} -> {json.dumps(answers["tflite"][1])}')
            for n in ('tflite', 'tflite_sigdef'):  # the latter's input tensor is tflite_input, its signature alias x
                code, meta = http('GET', f'{base}/{n}/metadata')
                sig = meta.get('metadata', {}).get('signature_def', {}).get('signature_def', {}).get('serving_default',
                                                                                                     {})
                if code != 200 or list(sig.get('inputs', {})) != ['x'] or list(sig.get('outputs', {})) != ['y']:
                    failures.append(f'{n} metadata: HTTP {code} {meta}')
            for n, want in (('truncated', 'corrupt or truncated'), ('wrong_identifier', 'found "TFL2"')):
                st = statuses.get(n, {}).get('model_version_status', [{}])[0]
                msg = st.get('status', {}).get('error_message', '')
                if st.get('state') != 'END' or want not in msg or 'model.tflite' not in msg:
                    failures.append(f'{n}: status {st}; want END with {want!r} naming model.tflite')
                else:
                    print(f'    {n}: {msg}')
        except Exception as e:  # noqa: BLE001
            failures.append(f'{type(e).__name__}: {e}')
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()
        if failures:
            sys.stdout.write(open(os.path.join(work, 'server.log')).read()[-3000:])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print(f'FAILED: {f}')
    print('ok' if not failures else f'{len(failures)} failed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
