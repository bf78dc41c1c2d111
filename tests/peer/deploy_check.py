#!/usr/bin/env python3
"""The deployment kit in deploy/ (peer test: kubernetes-validate from the peers venv).

    tests/peer/deploy_check.py BUILD/strata SOURCE_DIR

- Every manifest under deploy/k8s validates against Kubernetes' own schemas (kubernetes-validate, strict: unknown
  fields are errors), and each kustomization lists exactly the manifests beside it.
- The Deployment's probes and ports are the server's: /readyz and /healthz answer on the REST port, the metrics
  path in its scrape annotation is served, and every flag in its args is one `strata serve` accepts.
- Every metric the Grafana dashboard queries is exported by a running server (with batching on, after requests).

Prints one line per check and "N passed, M failed"; exits 1 when a check failed.
"""
import glob, json, os, re, subprocess, sys, time, urllib.request

try:
    import kubernetes_validate
    import yaml
    from peer_util import HalfPlusTwoServer, Tally
except ImportError as e:
    print(f'peers venv missing ({e}): run scripts/install-deps.sh --peers')
    sys.exit(77)

K8S_VERSION = '1.30.0'
PROMQL_WORDS = {'sum', 'by', 'rate', 'max', 'min', 'avg', 'histogram_quantile', 'le', 'without', 'increase',
                'count', 'irate'}


def get(port, path):
    try:
        with urllib.request.urlopen(f'http://127.0.0.1:{port}{path}', timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def manifests(src):
    return sorted(glob.glob(os.path.join(src, 'deploy', 'k8s', '**', '*.yaml'), recursive=True))


def check_schemas(src):
    problems = []
    for path in manifests(src):
        for doc in yaml.safe_load_all(open(path)):
            if doc is None or doc.get('kind') == 'Kustomization':
                continue
            try:
                kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
            except kubernetes_validate.ValidationError as e:
                problems.append(f'{os.path.relpath(path, src)}: {e.message}')
    for kpath in glob.glob(os.path.join(src, 'deploy', 'k8s', '**', 'kustomization.yaml'), recursive=True):
        listed = set(yaml.safe_load(open(kpath)).get('resources', []))
        here = {os.path.basename(p) for p in glob.glob(os.path.join(os.path.dirname(kpath), '*.yaml'))}
        here.discard('kustomization.yaml')
        if listed != here:
            problems.append(f'{os.path.relpath(kpath, src)} lists {sorted(listed)}, the folder has {sorted(here)}')
    if not problems:
        print(f'    {len(manifests(src))} manifests valid for Kubernetes {K8S_VERSION} (strict)')
    return problems


def deployment(src):
    for path in manifests(src):
        for doc in yaml.safe_load_all(open(path)):
            if doc and doc.get('kind') == 'Deployment':
                return doc
    raise RuntimeError('no Deployment under deploy/k8s')


def check_deployment(src, strata, port):
    problems = []
    pod = deployment(src)['spec']['template']
    c = pod['spec']['containers'][0]
    for probe, want in (('readinessProbe', '/readyz'), ('livenessProbe', '/healthz')):
        path = c[probe]['httpGet']['path']
        if path != want or get(port, path)[0] != 200:
            problems.append(f'{probe} {path}: want {want} answering 200')
    metrics_path = pod['metadata']['annotations']['prometheus.io/path']
    if get(port, metrics_path)[0] != 200:
        problems.append(f'the scrape annotation\'s path {metrics_path} is not served')
    known = subprocess.run([strata, 'serve', '--help'], capture_output=True, text=True).stdout
    for arg in c.get('args', []):
        flag = arg.split('=', 1)[0]
        if not re.search(re.escape(flag) + r'\b', known):
            problems.append(f'the Deployment passes {flag}, which strata serve --help does not list')
    if not problems:
        print(f'    probes {c["readinessProbe"]["httpGet"]["path"]} and {c["livenessProbe"]["httpGet"]["path"]}, '
              f'scrape path and {len(c.get("args", []))} flags match the server')
    return problems


def check_dashboard(src, port):
    dash = json.load(open(os.path.join(src, 'deploy', 'grafana', 'strata-dashboard.json')))
    for _ in range(5):  # requests, so that the counters and the batching histograms have series
        get(port, '/v1/models/half_plus_two')
        req = urllib.request.Request(f'http://127.0.0.1:{port}/v1/models/half_plus_two:predict',
                                     data=b'{"instances": [1.0, 2.0]}', method='POST')
        urllib.request.urlopen(req, timeout=30).read()
    code, page = get(port, '/monitoring/prometheus/metrics')
    exported = set(re.findall(r'^# TYPE (\S+)', page, re.M))
    problems, used = [], set()
    for panel in dash['panels']:
        for t in panel['targets']:
            # Label matchers, ranges, strings and grouping labels are not metric names.
            expr = re.sub(r'\{[^}]*\}|\[[^\]]*\]|"[^"]*"|\b(by|without)\s*\([^)]*\)', '', t['expr'])
            for name in re.findall(r'[a-zA-Z_:][a-zA-Z0-9_:]*', expr):
                if name in PROMQL_WORDS:
                    continue
                # A histogram's series: <family>_bucket/_sum/_count (request_count is a family of its own).
                family = name if name in exported else re.sub(r'_(bucket|sum|count)$', '', name)
                used.add(family)
                if family not in exported:
                    problems.append(f'panel "{panel["title"]}" queries {name}, which the server does not export')
    if not problems:
        print(f'    {len(dash["panels"])} panels query {len(used)} metric families, all exported')
    return problems


def main():
    strata, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tally = Tally()
    tally.run('manifests', check_schemas, src)
    with HalfPlusTwoServer(strata, tally, extra=['--enable_batching']) as server:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if get(server.port, '/readyz')[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        tally.run('deployment', check_deployment, src, strata, server.port)
        tally.run('dashboard', check_dashboard, src, server.port)
    return tally.finish()


if __name__ == '__main__':
    sys.exit(main())
