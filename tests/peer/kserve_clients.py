#!/usr/bin/env python3
"""An unchanged Open Inference Protocol (KServe v2) client against a real `strata serve` (peer test; run with the
peers venv's python).

    tests/peer/kserve_clients.py BUILD/strata

tritonclient.http (from PyPI, not modified) against half_plus_two (y = 0.5 x + 2, ONNX) on the REST port of a
server with --enable_batching (so v2 inference goes through the batcher; the C++ e2e tests cover the unbatched path):
is_server_live, is_server_ready, get_server_metadata, is_model_ready (also for a version, and False for an unknown
model), get_model_metadata (name, versions, FP32 input x and output y with shape [-1]), infer with JSON tensors and
with the binary tensor data extension (inputs and outputs binary: the client's default) giving [2.5, 3.0, 4.5], and
an infer with a wrong datatype failing with the server's message while the server stays up.

Then tritonclient.grpc against the gRPC port of a second server (inference.GRPCInferenceService): the same health,
metadata and infer calls (the client sends raw_input_contents, the server answers raw_output_contents), the typed
contents path through the protocol's own stubs, and bad requests (a raw byte count that does not fit the shape, an
unknown datatype) refused with INVALID_ARGUMENT and a message that names the input, the server staying up.

Prints one line per check and "N passed, M failed"; exits 1 when a check failed. Loopback only, bounded in time.
"""
import os, sys, time

try:
    import numpy as np
    from peer_util import HalfPlusTwoServer, Tally
    import grpc
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient
    from tritonclient.grpc import service_pb2, service_pb2_grpc
    from tritonclient.utils import InferenceServerException
except ImportError as e:
    print(f'peers venv missing ({e}): run scripts/install-deps.sh --peers')
    sys.exit(77)

X = np.array([1.0, 2.0, 5.0], dtype=np.float32)
WANT = [2.5, 3.0, 4.5]


def check_health(c):
    problems = []
    if not c.is_server_live():
        problems.append('is_server_live is False')
    if not c.is_server_ready():
        problems.append('is_server_ready is False')
    md = c.get_server_metadata()
    if md.get('name') != 'strata' or 'binary_tensor_data' not in md.get('extensions', []):
        problems.append(f'get_server_metadata: {md}')
    if not c.is_model_ready('half_plus_two'):
        problems.append('is_model_ready(half_plus_two) is False')
    if not c.is_model_ready('half_plus_two', '1'):
        problems.append('is_model_ready(half_plus_two, 1) is False')
    if c.is_model_ready('no_such_model'):
        problems.append('is_model_ready(no_such_model) is True')
    if not problems:
        print(f'    live, ready, server metadata {md}, model ready')
    return problems


def check_metadata(c):
    md = c.get_model_metadata('half_plus_two')
    want = {'name': 'half_plus_two', 'versions': ['1'],
            'platform': 'onnx', 'inputs': [{'name': 'x', 'datatype': 'FP32', 'shape': [-1]}],
            'outputs': [{'name': 'y', 'datatype': 'FP32', 'shape': [-1]}]}
    got = {k: md.get(k) for k in want}
    if got != want:
        return [f'get_model_metadata: {md}, want {want}']
    md1 = c.get_model_metadata('half_plus_two', '1')
    if md1.get('inputs') != want['inputs']:
        return [f'get_model_metadata(version 1): {md1}']
    print(f'    metadata {md}')
    return []


def infer(c, binary, version=''):
    inp = httpclient.InferInput('x', list(X.shape), 'FP32')
    inp.set_data_from_numpy(X, binary_data=binary)
    out = httpclient.InferRequestedOutput('y', binary_data=binary)
    return c.infer('half_plus_two', [inp], model_version=version, outputs=[out], request_id='r1')


def check_infer_json(c):
    r = infer(c, binary=False)
    got = r.as_numpy('y').tolist()
    resp = r.get_response()
    if got != WANT or resp.get('model_name') != 'half_plus_two' or resp.get('id') != 'r1':
        return [f'infer (JSON): {got} {resp}, want {WANT}']
    if 'data' not in resp['outputs'][0]:
        return [f'infer (JSON): the output is not JSON data: {resp}']
    print(f'    JSON infer {got}')
    return []


def check_infer_binary(c):
    problems = []
    r = infer(c, binary=True, version='1')
    got = r.as_numpy('y').tolist()
    out = r.get_output('y')
    if got != WANT or out.get('parameters', {}).get('binary_data_size') != 12:
        problems.append(f'infer (binary, version 1): {got} {out}, want {WANT} in 12 bytes')
    # No outputs named: the client asks for every output in binary (binary_data_output).
    inp = httpclient.InferInput('x', [3], 'FP32')
    inp.set_data_from_numpy(X)
    got = c.infer('half_plus_two', [inp]).as_numpy('y').tolist()
    if got != WANT:
        problems.append(f'infer (binary, every output): {got}, want {WANT}')
    if not problems:
        print(f'    binary infer {got}')
    return problems


def check_concurrent(c, port):
    """Eight clients at once, each with its own values: the batcher must hand every one its own rows back."""
    from concurrent.futures import ThreadPoolExecutor

    def one(k):
        client = httpclient.InferenceServerClient(f'127.0.0.1:{port}', connection_timeout=30, network_timeout=30)
        x = np.arange(k + 1, dtype=np.float32) * (k + 1)
        inp = httpclient.InferInput('x', list(x.shape), 'FP32')
        inp.set_data_from_numpy(x)
        for _ in range(10):
            got = client.infer('half_plus_two', [inp]).as_numpy('y').tolist()
            if got != (0.5 * x + 2).tolist():
                return f'client {k}: {got}, want {(0.5 * x + 2).tolist()}'
        return None

    with ThreadPoolExecutor(8) as pool:
        problems = [p for p in pool.map(one, range(8)) if p]
    if not problems:
        print('    8 concurrent clients x 10 binary infers: every answer right')
    return problems


def check_bad_input(c):
    inp = httpclient.InferInput('x', [3], 'INT32')
    inp.set_data_from_numpy(np.array([1, 2, 5], dtype=np.int32), binary_data=False)
    try:
        c.infer('half_plus_two', [inp])
        return ['an INT32 input to an FP32 model was accepted']
    except InferenceServerException as e:
        msg = e.message()
        if "input 'x'" not in msg or 'float32' not in msg:
            return [f'wrong datatype: the message {msg!r} does not name the input and the expected type']
    if not c.is_server_live() or infer(c, binary=True).as_numpy('y').tolist() != WANT:
        return ['the server did not stay up after a bad request']
    print(f'    bad datatype refused: {msg}')
    return []


def check_grpc_health(c):
    problems = []
    if not c.is_server_live() or not c.is_server_ready():
        problems.append('is_server_live / is_server_ready is False')
    md = c.get_server_metadata()
    if md.name != 'strata' or 'binary_tensor_data' not in md.extensions:
        problems.append(f'get_server_metadata: {md}')
    if not c.is_model_ready('half_plus_two') or not c.is_model_ready('half_plus_two', '1'):
        problems.append('is_model_ready(half_plus_two[, 1]) is False')
    if c.is_model_ready('no_such_model'):
        problems.append('is_model_ready(no_such_model) is True')
    if not problems:
        print(f'    gRPC: live, ready, server metadata {md.name} {list(md.extensions)}, model ready')
    return problems


def check_grpc_metadata(c):
    md = c.get_model_metadata('half_plus_two', as_json=True)
    want = {'name': 'half_plus_two', 'versions': ['1'], 'platform': 'onnx',
            'inputs': [{'name': 'x', 'datatype': 'FP32', 'shape': ['-1']}],
            'outputs': [{'name': 'y', 'datatype': 'FP32', 'shape': ['-1']}]}
    got = {k: md.get(k) for k in want}
    if got != want:
        return [f'gRPC get_model_metadata: {md}, want {want}']
    print(f'    gRPC metadata: {got}')
    return []


def check_grpc_infer(c):
    problems = []
    for version in ('', '1'):
        inp = grpcclient.InferInput('x', [3], 'FP32')
        inp.set_data_from_numpy(X)
        r = c.infer('half_plus_two', [inp], model_version=version, request_id='req-7',
                    outputs=[grpcclient.InferRequestedOutput('y')])
        got = r.as_numpy('y')
        if got is None or got.tolist() != WANT:
            problems.append(f'gRPC infer (version {version!r}): y = {got}, want {WANT}')
        resp = r.get_response()
        if resp.id != 'req-7' or resp.model_version != '1':
            problems.append(f'gRPC infer: id {resp.id!r}, model_version {resp.model_version!r}; want req-7 and 1')
    if not problems:
        print(f'    gRPC infer (raw tensors): y = {WANT}, id and version echoed')
    return problems


def check_grpc_contents_and_bad_input(port):
    problems = []
    with grpc.insecure_channel(f'127.0.0.1:{port}') as ch:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(ch)
        req = service_pb2.ModelInferRequest(model_name='half_plus_two')
        t = req.inputs.add(name='x', datatype='FP32', shape=[3])
        t.contents.fp32_contents.extend(X.tolist())
        r = stub.ModelInfer(req, timeout=30)
        got = np.frombuffer(r.raw_output_contents[0], dtype=np.float32).tolist()
        if got != WANT:
            problems.append(f'typed contents infer: y = {got}, want {WANT}')
        bad = [('shape [4] with 12 raw bytes', 'FP32', [4], X.tobytes(), ['16', '12']),
               ('unknown datatype', 'FP33', [3], X.tobytes(), ['FP33', 'FP32']),
               ('3 elements in contents for shape [2]', 'FP32', [2], None, ['2', '3'])]
        for what, dtype, shape, raw, words in bad:
            req = service_pb2.ModelInferRequest(model_name='half_plus_two')
            t = req.inputs.add(name='x', datatype=dtype, shape=shape)
            if raw is None:
                t.contents.fp32_contents.extend(X.tolist())
            else:
                req.raw_input_contents.append(raw)
            try:
                stub.ModelInfer(req, timeout=30)
                problems.append(f'{what}: accepted')
            except grpc.RpcError as e:
                msg = e.details() or ''
                if e.code() != grpc.StatusCode.INVALID_ARGUMENT or not all(w in msg for w in words):
                    problems.append(f'{what}: {e.code()} {msg!r}; want INVALID_ARGUMENT naming {words}')
                else:
                    print(f'    {what}: INVALID_ARGUMENT {msg}')
        if stub.ServerLive(service_pb2.ServerLiveRequest(), timeout=30).live is not True:
            problems.append('the server is not live after the bad requests')
    return problems


def check_grpc_request_id(port, server):
    """x-request-id comes back in the initial metadata and is on the JSON access log line of the call."""
    import json
    with grpc.insecure_channel(f'127.0.0.1:{port}') as ch:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(ch)
        _, call = stub.ServerLive.with_call(service_pb2.ServerLiveRequest(), metadata=(('x-request-id', 'trace-9'),),
                                            timeout=30)
        echoed = dict(call.initial_metadata()).get('x-request-id')
    if echoed != 'trace-9':
        return [f'x-request-id echoed as {echoed!r}, want trace-9']
    server.log.flush()
    deadline = time.time() + 10
    while time.time() < deadline:
        lines = [json.loads(l) for l in open(server.log.name) if l.strip()]  # every line must be JSON
        hits = [l for l in lines if l.get('request_id') == 'trace-9']
        if hits:
            h = hits[0]
            if h.get('protocol') != 'GRPC' or not h.get('method', '').endswith('/ServerLive') or h.get('status') != 0:
                return [f'access log line {h}']
            print(f'    x-request-id echoed; access log: {h}')
            return []
        time.sleep(0.1)
    return ['no access log line with request_id trace-9']


def main():
    tally = Tally()
    with HalfPlusTwoServer(os.path.abspath(sys.argv[1]), tally, extra=['--enable_batching']) as server:
        port = server.port
        c = httpclient.InferenceServerClient(f'127.0.0.1:{port}', connection_timeout=30, network_timeout=30)
        deadline = time.time() + 30
        while time.time() < deadline:  # until the server answers and the version is AVAILABLE
            try:
                if c.is_model_ready('half_plus_two'):
                    break
            except Exception:
                pass
            if server.proc.poll() is not None:
                raise RuntimeError(f'strata serve exited with {server.proc.returncode}')
            time.sleep(0.2)
        for name, fn in (('health', check_health), ('metadata', check_metadata), ('infer_json', check_infer_json),
                         ('infer_binary', check_infer_binary),
                         ('concurrent', lambda c: check_concurrent(c, port)), ('bad_input', check_bad_input)):
            tally.run(name, fn, c)
    with HalfPlusTwoServer(os.path.abspath(sys.argv[1]), tally, grpc=True,
                           extra=['--log_format=json', '--log_requests']) as server:
        port = server.port
        c = grpcclient.InferenceServerClient(f'127.0.0.1:{port}')
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if c.is_model_ready('half_plus_two'):
                    break
            except Exception:
                pass
            if server.proc.poll() is not None:
                raise RuntimeError(f'strata serve exited with {server.proc.returncode}')
            time.sleep(0.2)
        for name, fn in (('grpc_health', check_grpc_health), ('grpc_metadata', check_grpc_metadata),
                         ('grpc_infer', check_grpc_infer),
                         ('grpc_contents_and_bad_input', lambda c: check_grpc_contents_and_bad_input(port)),
                         ('grpc_request_id', lambda c: check_grpc_request_id(port, server))):
            tally.run(name, fn, c)
    return tally.finish()


if __name__ == '__main__':
    sys.exit(main())
