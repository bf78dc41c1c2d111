#!/usr/bin/python3
"""Hostile-input suite against a real `strata serve` process (the reliability issue's battery, kept for every change).

    tests/hostile/hostile_serve.py BUILD/strata [--only NAME[,NAME...]] [--keep]

Starts the server under an address-space limit of 4 GiB (prlimit, as the battery did), on 127.0.0.1 only, with a
model config holding a good convolutional model and model directories whose model.onnx is a FIFO, a symlink to
/dev/zero, or a directory. Then, each a case that passes or fails:

  special_files      the FIFO, /dev/zero and directory versions end failed with a clear error (not LOADING), while
                     the good model loads; `strata inspect` on each exits non-zero at once with a clear error
  rest_batch_sizes   300 REST predicts with batch sizes 1..300: every one answers 200, RSS stays under the bound
  grpc_batch_sizes   gRPC predicts of 47-byte requests (dims [b,1,28,28], one float_val) for 1,000 distinct batch
                     sizes (1..900 and 1000..1099): answered, RSS stays under the bound
  declared_bodies    40 connections each declaring a 268 MB body and sending a few bytes: the server stays up,
                     RSS stays under the bound, and a normal predict still answers while they are open
  sigterm            the server exits on SIGTERM within its grace period

Every request loop is bounded in count and time and talks to 127.0.0.1 only. Prints one line per case and a last
line "N passed, M failed"; exits 1 when any case failed.
"""
import argparse, json, os, signal, socket, struct, subprocess, sys, tempfile, time, urllib.request

import numpy as np
import onnx
from onnx import TensorProto, helper

PLAN_CACHE_BYTES = 64 << 20  # --plan_cache_max_bytes below
RSS_BOUND_MB = 400  # the plan cache is given 64 MiB below; the model and runtime need about 150 MB
AS_LIMIT = 4 << 30


def conv_model(path):
    """x [N,1,28,28] -> Conv(8, 3x3) -> Relu -> Flatten -> MatMul(5408 x 10) -> logits [N,10]."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor('w', TensorProto.FLOAT, [8, 1, 3, 3], rng.standard_normal(72).astype(np.float32) * 0.3)
    d = helper.make_tensor('d', TensorProto.FLOAT, [8 * 26 * 26, 10],
                           rng.standard_normal(8 * 26 * 26 * 10).astype(np.float32) * 0.01)
    nodes = [helper.make_node('Conv', ['x', 'w'], ['c']), helper.make_node('Relu', ['c'], ['r']),
             helper.make_node('Flatten', ['r'], ['f']), helper.make_node('MatMul', ['f', 'd'], ['logits'])]
    g = helper.make_graph(nodes, 'conv', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 1, 28, 28])],
                          [helper.make_tensor_value_info('logits', TensorProto.FLOAT, ['N', 10])], [w, d])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)])
    onnx.checker.check_model(m)
    onnx.save(m, path)


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def status_mb(pid, key):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith(key + ':'):
                return int(line.split()[1]) / 1024
    return 0.0


def rss_mb(pid):
    return status_mb(pid, 'VmRSS')


def http(port, method, path, body=None, timeout=60):
    req = urllib.request.Request(f'http://127.0.0.1:{port}{path}', data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def plan_cache_bytes(srv):
    """The good model's :strata:serving:plan_cache_bytes from the metrics page (None when absent)."""
    code, text = http(srv.rest, 'GET', '/monitoring/prometheus/metrics', timeout=10)
    for line in text.splitlines():
        if line.startswith(':strata:serving:plan_cache_bytes{model_name="good"'):
            return float(line.rsplit(' ', 1)[1])
    return None


def predict_body(batch):
    row = '[' + ','.join(['[' + ','.join(['0.5'] * 28) + ']'] * 28) + ']'
    return ('{"instances": [' + ','.join(['[' + row + ']'] * batch) + ']}').encode()


def varint(n):
    out = b''
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wire, payload):
    key = varint((num << 3) | wire)
    return key + (varint(len(payload)) + payload if wire == 2 else payload)


def grpc_predict_request(model, batch):
    """A PredictRequest for input 'x' of dims [batch,1,28,28] with a single float_val (TF broadcasts it)."""
    spec = field(1, 2, model.encode())
    shape = b''.join(field(2, 2, field(1, 0, varint(d))) for d in (batch, 1, 28, 28))
    tensor = field(1, 0, varint(1)) + field(2, 2, shape) + field(5, 2, struct.pack('<f', 0.5))
    entry = field(1, 2, b'x') + field(2, 2, tensor)
    return field(1, 2, spec) + field(2, 2, entry)


class Server:
    def __init__(self, strata, work):
        self.rest, self.grpc = free_port(), free_port()
        self.log = open(os.path.join(work, 'server.log'), 'w')
        cmd = ['prlimit', f'--as={AS_LIMIT}', strata, 'serve', '--host', '127.0.0.1', f'--port={self.grpc}',
               f'--rest_api_port={self.rest}', f'--model_config_file={os.path.join(work, "models.config")}',
               '--file_system_poll_wait_seconds=1', f'--plan_cache_max_bytes={PLAN_CACHE_BYTES}',
               '--shutdown_grace_ms=3000',
               '--tensorflow_intra_op_parallelism=2', '--max_num_load_retries=0']
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)

    def alive(self):
        return self.proc.poll() is None

    def status(self, model):
        code, body = http(self.rest, 'GET', f'/v1/models/{model}', timeout=10)
        return json.loads(body) if code == 200 else {'error': body, 'code': code}

    def wait_state(self, model, want, timeout):
        end = time.time() + timeout
        st = {}
        while time.time() < end and self.alive():
            try:
                st = self.status(model)
                states = [v['state'] for v in st.get('model_version_status', [])]
                if states and all(s in want for s in states):
                    return st
            except OSError:
                pass
            time.sleep(0.2)
        return st


def case_special_files(srv, strata, work):
    problems = []
    ok = srv.wait_state('good', {'AVAILABLE'}, 60)
    if [v['state'] for v in ok.get('model_version_status', [])] != ['AVAILABLE']:
        problems.append(f'good model not AVAILABLE: {ok}')
    for name, want in (('fifo1', 'FIFO'), ('fifo2', 'FIFO'), ('zero', 'regular file'), ('dirm', 'director')):
        st = srv.wait_state(name, {'END'}, 30)
        vs = st.get('model_version_status', [])
        msg = json.dumps(vs)
        if not vs or any(v['state'] != 'END' for v in vs) or want.lower() not in msg.lower():
            problems.append(f'{name}: want a failed version naming "{want}", got {msg or st}')
    for name in ('fifo1', 'zero', 'dirm'):
        path = os.path.join(work, name, '1', 'model.onnx')
        t0 = time.time()
        try:
            r = subprocess.run([strata, 'inspect', path], capture_output=True, text=True, timeout=20)
            if r.returncode == 0 or 'model.onnx' not in (r.stderr + r.stdout):
                problems.append(f'inspect {name}: exit {r.returncode}, output {(r.stderr + r.stdout)[-300:]!r}')
        except subprocess.TimeoutExpired:
            problems.append(f'inspect {name}: still running after 20 s')
        if time.time() - t0 > 20:
            problems.append(f'inspect {name} took {time.time() - t0:.1f} s')
    return problems


def case_rest_batch_sizes(srv, strata, work):
    problems, peak = [], 0.0
    t_end = time.time() + 600
    for b in range(1, 301):
        if time.time() > t_end:
            problems.append(f'stopped at batch {b}: over 600 s')
            break
        code, body = http(srv.rest, 'POST', '/v1/models/good:predict', predict_body(b))
        if code != 200 or len(json.loads(body)['predictions']) != b:
            problems.append(f'batch {b}: {code} {body[:200]}')
            break
        peak = max(peak, rss_mb(srv.proc.pid))
    if peak > RSS_BOUND_MB:
        problems.append(f'RSS reached {peak:.0f} MB (bound {RSS_BOUND_MB} MB)')
    cached = plan_cache_bytes(srv)
    if cached is None or cached > PLAN_CACHE_BYTES:
        problems.append(f'plan_cache_bytes {cached} (bound {PLAN_CACHE_BYTES})')
    print(f'    rest: peak RSS {peak:.0f} MB over 300 batch sizes; plans hold {cached} bytes')
    return problems


def case_grpc_batch_sizes(srv, strata, work):
    import grpc
    problems, peak = [], 0.0
    with grpc.insecure_channel(f'127.0.0.1:{srv.grpc}') as ch:
        call = ch.unary_unary('/tensorflow.serving.PredictionService/Predict')
        t_end = time.time() + 600
        for b in list(range(1, 901)) + list(range(1000, 1100)):  # 1,000 distinct sizes, the last 100 large
            if time.time() > t_end:
                problems.append(f'stopped at batch {b}: over 600 s')
                break
            req = grpc_predict_request('good', b)
            try:
                call(req, timeout=60)
            except grpc.RpcError as e:
                problems.append(f'batch {b}: {e.code()} {e.details()}')
                break
            peak = max(peak, rss_mb(srv.proc.pid))
    if peak > RSS_BOUND_MB:
        problems.append(f'RSS reached {peak:.0f} MB (bound {RSS_BOUND_MB} MB)')
    print(f'    grpc: request of {len(grpc_predict_request("good", 1000))} bytes, peak RSS {peak:.0f} MB')
    return problems


def case_declared_bodies(srv, strata, work):
    problems, socks = [], []
    vm_before = status_mb(srv.proc.pid, 'VmSize')
    try:
        for _ in range(40):
            s = socket.create_connection(('127.0.0.1', srv.rest), timeout=10)
            s.sendall(b'POST /v1/models/good:predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
                      b'Content-Length: 268435456\r\n\r\n{"instances": [')
            socks.append(s)
        time.sleep(1.0)
        peak = rss_mb(srv.proc.pid)
        vm_growth = status_mb(srv.proc.pid, 'VmSize') - vm_before
        if vm_growth > 1024:  # declared: 40 x 256 MiB; reserving it is what the battery found
            problems.append(f'address space grew by {vm_growth:.0f} MB with 40 declared bodies open')
        code, body = http(srv.rest, 'POST', '/v1/models/good:predict', predict_body(2), timeout=30)
        if code != 200:
            problems.append(f'normal predict while 40 bodies are open: {code} {body[:200]}')
        if peak > RSS_BOUND_MB:
            problems.append(f'RSS {peak:.0f} MB with 40 declared bodies open (bound {RSS_BOUND_MB} MB)')
        print(f'    declared bodies: RSS {peak:.0f} MB, address space +{vm_growth:.0f} MB with 40 x 268 MB declared')
    finally:
        for s in socks:
            s.close()
    if not srv.alive():
        problems.append(f'server exited with {srv.proc.returncode}')
    return problems


def case_sigterm(srv, strata, work):
    if not srv.alive():
        return [f'server had already exited with {srv.proc.returncode}']
    t0 = time.time()
    srv.proc.send_signal(signal.SIGTERM)
    try:
        rc = srv.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        return ['still running 15 s after SIGTERM (grace period 3 s)']
    print(f'    sigterm: exit {rc} after {time.time() - t0:.1f} s')
    return [] if rc == 0 else [f'exit status {rc} after SIGTERM']


CASES = [('special_files', case_special_files), ('rest_batch_sizes', case_rest_batch_sizes),
         ('grpc_batch_sizes', case_grpc_batch_sizes), ('declared_bodies', case_declared_bodies),
         ('sigterm', case_sigterm)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('strata')
    ap.add_argument('--only', default='')
    ap.add_argument('--keep', action='store_true', help='keep the work directory (server.log)')
    a = ap.parse_args()
    strata = os.path.abspath(a.strata)
    work = tempfile.mkdtemp(prefix='strata_hostile_')
    only = set(filter(None, a.only.split(',')))
    special = ('fifo1', 'fifo2', 'zero', 'dirm') if not only or 'special_files' in only else ()
    os.makedirs(os.path.join(work, 'good', '1'))
    conv_model(os.path.join(work, 'good', '1', 'model.onnx'))
    for name in special:
        os.makedirs(os.path.join(work, name, '1'))
    if special:
        os.mkfifo(os.path.join(work, 'fifo1', '1', 'model.onnx'))
        os.mkfifo(os.path.join(work, 'fifo2', '1', 'model.onnx'))
        os.symlink('/dev/zero', os.path.join(work, 'zero', '1', 'model.onnx'))
        os.makedirs(os.path.join(work, 'dirm', '1', 'model.onnx'))
    # The FIFOs first: before the fix they took both load threads for ever and the good model never loaded.
    with open(os.path.join(work, 'models.config'), 'w') as f:
        f.write('model_config_list {\n')
        for name in special + ('good',):
            f.write(f'  config {{ name: "{name}" base_path: "{os.path.join(work, name)}" model_platform: "tensorflow" }}\n')
        f.write('}\n')
    srv = Server(strata, work)
    passed = failed = 0
    try:
        srv.wait_state('good', {'AVAILABLE'}, 60)
        for name, fn in CASES:
            if only and name not in only and name != 'sigterm':
                continue
            t0 = time.time()
            try:
                problems = fn(srv, strata, work)
            except Exception as e:  # a case that crashes is a failed case, and the others still run
                problems = [f'{type(e).__name__}: {e}']
            if srv.alive() is False and name != 'sigterm':
                problems.append(f'server died (exit {srv.proc.returncode}); see {work}/server.log')
            status = 'ok' if not problems else 'FAILED'
            print(f'{name}: {status} ({time.time() - t0:.1f} s)')
            for p in problems:
                print(f'    {p}')
            passed, failed = passed + (not problems), failed + bool(problems)
            sys.stdout.flush()
    finally:
        if srv.alive():
            srv.proc.kill()
        srv.log.close()
        if failed:
            print(f'server log: {work}/server.log')
            sys.stdout.write(open(os.path.join(work, 'server.log')).read()[-3000:])
        elif not a.keep:
            subprocess.run(['rm', '-rf', work])
    print(f'{passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
