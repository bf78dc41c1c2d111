"""Shared by the peer tests (and tests/serve/tflite_serve.py): a half_plus_two ONNX model (TF Serving's test model,
y = 0.5 x + 2), a free port, a JSON call over HTTP, a server of it on loopback, and the tally of checks."""
import json, os, shutil, signal, socket, subprocess, sys, tempfile, urllib.error, urllib.request

from onnx import TensorProto, helper
import onnx


def half_plus_two(path):
    """Writes y = 0.5 * x + 2 (x, y float [N]) as an ONNX model to `path`."""
    a = helper.make_tensor('a', TensorProto.FLOAT, [], [0.5])
    b = helper.make_tensor('b', TensorProto.FLOAT, [], [2.0])
    nodes = [helper.make_node('Mul', ['x', 'a'], ['ax']), helper.make_node('Add', ['ax', 'b'], ['y'])]
    g = helper.make_graph(nodes, 'half_plus_two', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N'])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N'])], [a, b])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), path)


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def http(method, url, body=None, timeout=30):
    """(status, JSON answer) of `method` on `url` with `body` as JSON; an HTTP error's status and JSON body too."""
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b'{}')


class Tally:
    """Counts checks: each prints "name: ok" or "name: FAILED" with its problems; finish() prints the closing
    "N passed, M failed" line and returns the exit status."""

    def __init__(self):
        self.passed = self.failed = 0

    def report(self, name, problems):
        print(f'{name}: {"ok" if not problems else "FAILED"}')
        for p in problems:
            print(f'    {p}')
        self.passed += not problems
        self.failed += bool(problems)

    def run(self, name, fn, *args):
        """Runs a check that returns a list of problems; an exception is a failed check, and the others still run."""
        try:
            problems = fn(*args)
        except Exception as e:  # noqa: BLE001
            problems = [f'{type(e).__name__}: {e}']
        self.report(name, problems)

    def finish(self):
        print(f'{self.passed} passed, {self.failed} failed')
        return 1 if self.failed else 0


class HalfPlusTwoServer:
    """`strata serve` of half_plus_two on 127.0.0.1, as a context manager. `port` is its REST port, or its gRPC port
    with grpc=True (the other protocol is off). On exit the server gets SIGTERM (then SIGKILL after 30 s), its log's
    tail is printed when `tally` has failures, and its directory is removed."""

    def __init__(self, strata, tally, grpc=False, extra=()):
        self.strata, self.tally, self.grpc, self.extra = strata, tally, grpc, list(extra)

    def __enter__(self):
        self.work = tempfile.mkdtemp(prefix='strata_peer_')
        os.makedirs(os.path.join(self.work, 'half_plus_two', '1'))
        half_plus_two(os.path.join(self.work, 'half_plus_two', '1', 'model.onnx'))
        self.port = free_port()
        ports = [f'--port={self.port}', '--rest_api_port=0'] if self.grpc else \
            ['--port=0', f'--rest_api_port={self.port}']
        self.log = open(os.path.join(self.work, 'server.log'), 'w')
        self.proc = subprocess.Popen([self.strata, 'serve', '--host', '127.0.0.1', *ports, '--model_name=half_plus_two',
                                      f'--model_base_path={self.work}/half_plus_two', *self.extra],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        return self

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        if self.tally.failed or exc[0] is not None:
            sys.stdout.write(open(os.path.join(self.work, 'server.log')).read()[-3000:])
        shutil.rmtree(self.work, ignore_errors=True)
        return False
