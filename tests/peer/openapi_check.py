#!/usr/bin/env python3
"""The OpenAPI description at /v1/openapi.json against the live server's answers (peer test: jsonschema from the
peers venv).

    tests/peer/openapi_check.py BUILD/strata

Starts `strata serve` on loopback with half_plus_two (y = 0.5 x + 2, ONNX), fetches /v1/openapi.json, checks that it
is an OpenAPI 3.0 document whose $refs all resolve, then makes a set of calls covering every documented path — good
requests and bad ones — and checks for each that (1) the answer's status is one the document lists for that
operation and (2) the body validates against the schema the document gives for that status. It also checks that
every path of the document was exercised, so a route added to the document without a call here fails.
Prints one line per call and "N passed, M failed"; exits 1 when a check failed.
"""
import copy, json, os, sys, time, urllib.request

try:
    import jsonschema
    from peer_util import HalfPlusTwoServer, Tally
except ImportError as e:
    print(f'peers venv missing ({e}): run scripts/install-deps.sh --peers')
    sys.exit(77)


def call(port, method, path, body=None):
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    req = urllib.request.Request(f'http://127.0.0.1:{port}{path}', data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers.get('Content-Type', ''), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get('Content-Type', ''), e.read().decode()


def resolve(doc, node):
    """Inlines every {"$ref": "#/..."} (the document has no recursive schemas)."""
    if isinstance(node, dict):
        if '$ref' in node:
            target = doc
            for part in node['$ref'].lstrip('#/').split('/'):
                target = target[part]
            return resolve(doc, target)
        return {k: resolve(doc, v) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve(doc, v) for v in node]
    return node


# (method, concrete path, documented path template, body, expected status)
CALLS = [
    ('GET', '/v1/models', '/v1/models', None, 200),
    ('GET', '/v1/models/half_plus_two', '/v1/models/{model_name}', None, 200),
    ('GET', '/v1/models/nope', '/v1/models/{model_name}', None, 404),
    ('GET', '/v1/models/half_plus_two/versions/1', '/v1/models/{model_name}/versions/{version}', None, 200),
    ('GET', '/v1/models/half_plus_two/versions/7', '/v1/models/{model_name}/versions/{version}', None, 404),
    ('GET', '/v1/models/half_plus_two/labels/stable', '/v1/models/{model_name}/labels/{label}', None, 200),
    ('GET', '/v1/models/half_plus_two/metadata', '/v1/models/{model_name}/metadata', None, 200),
    ('GET', '/v1/models/half_plus_two/versions/1/metadata', '/v1/models/{model_name}/versions/{version}/metadata',
     None, 200),
    ('POST', '/v1/models/half_plus_two:predict', '/v1/models/{model_name}:predict', {'instances': [1.0, 2.0, 5.0]},
     200),
    ('POST', '/v1/models/half_plus_two:predict', '/v1/models/{model_name}:predict', {'inputs': {'x': [1.0, 2.0]}},
     200),
    ('POST', '/v1/models/half_plus_two:predict', '/v1/models/{model_name}:predict', {'instances': 'oops'}, 400),
    ('POST', '/v1/models/half_plus_two:predict', '/v1/models/{model_name}:predict', b'{not json', 400),
    ('POST', '/v1/models/nope:predict', '/v1/models/{model_name}:predict', {'instances': [1.0]}, 404),
    ('POST', '/v1/models/half_plus_two/versions/1:predict', '/v1/models/{model_name}/versions/{version}:predict',
     {'instances': [1.0]}, 200),
    ('POST', '/v1/models/half_plus_two/labels/nolabel:predict', '/v1/models/{model_name}/labels/{label}:predict',
     {'instances': [1.0]}, 400),
    ('POST', '/v1/models/half_plus_two:classify', '/v1/models/{model_name}:classify',
     {'examples': [{'x': 1.0}, {'x': 3.0}]}, 200),
    ('POST', '/v1/models/half_plus_two:regress', '/v1/models/{model_name}:regress',
     {'examples': [{'x': 1.0}, {'x': 3.0}]}, 200),
    ('POST', '/v1/models/half_plus_two:regress', '/v1/models/{model_name}:regress', {'examples': 5}, 400),
    ('GET', '/healthz', '/healthz', None, 200),
    ('GET', '/readyz', '/readyz', None, 200),
    ('GET', '/monitoring/prometheus/metrics', '/monitoring/prometheus/metrics', None, 200),
    ('GET', '/v1/openapi.json', '/v1/openapi.json', None, 200),
    # This server runs without --profile_dir: the profiling endpoint answers 404 with the documented error shape.
    ('POST', '/monitoring/profile?requests=1', '/monitoring/profile', None, 404),
    # The Open Inference Protocol (KServe v2).
    ('GET', '/v2', '/v2', None, 200),
    ('GET', '/v2/health/live', '/v2/health/live', None, 200),
    ('GET', '/v2/health/ready', '/v2/health/ready', None, 200),
    ('GET', '/v2/models/half_plus_two', '/v2/models/{model_name}', None, 200),
    ('GET', '/v2/models/nosuch', '/v2/models/{model_name}', None, 404),
    ('GET', '/v2/models/half_plus_two/versions/1', '/v2/models/{model_name}/versions/{version}', None, 200),
    ('GET', '/v2/models/half_plus_two/versions/x', '/v2/models/{model_name}/versions/{version}', None, 400),
    ('GET', '/v2/models/half_plus_two/ready', '/v2/models/{model_name}/ready', None, 200),
    ('GET', '/v2/models/half_plus_two/versions/1/ready', '/v2/models/{model_name}/versions/{version}/ready', None, 200),
    ('GET', '/v2/models/half_plus_two/versions/5/ready', '/v2/models/{model_name}/versions/{version}/ready', None,
     404),
    ('POST', '/v2/models/half_plus_two/infer', '/v2/models/{model_name}/infer',
     {'id': 'a', 'inputs': [{'name': 'x', 'shape': [2], 'datatype': 'FP32', 'data': [1.0, 2.0]}]}, 200),
    ('POST', '/v2/models/half_plus_two/infer', '/v2/models/{model_name}/infer',
     {'inputs': [{'name': 'x', 'shape': [3], 'datatype': 'FP32', 'data': [1.0, 2.0]}]}, 400),
    ('POST', '/v2/models/half_plus_two/infer', '/v2/models/{model_name}/infer',
     {'inputs': [{'name': 'x', 'shape': [1], 'datatype': 'FP99', 'data': [1.0]}]}, 400),
    ('POST', '/v2/models/half_plus_two/versions/1/infer', '/v2/models/{model_name}/versions/{version}/infer',
     {'inputs': [{'name': 'x', 'shape': [1, 1], 'datatype': 'FP32', 'data': [[4.0]]}], 'outputs': [{'name': 'y'}]},
     400),
    ('POST', '/v2/models/half_plus_two/versions/1/infer', '/v2/models/{model_name}/versions/{version}/infer',
     {'inputs': [{'name': 'x', 'shape': [1], 'datatype': 'FP32', 'data': [4.0]}], 'outputs': [{'name': 'y'}]}, 200),
    ('POST', '/v2/models/half_plus_two/versions/2/infer', '/v2/models/{model_name}/versions/{version}/infer',
     {'inputs': [{'name': 'x', 'shape': [1], 'datatype': 'FP32', 'data': [4.0]}]}, 404),
]


def main():
    tally = Tally()
    report = tally.report
    with HalfPlusTwoServer(os.path.abspath(sys.argv[1]), tally) as server:
        port = server.port
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if call(port, 'GET', '/readyz')[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        status, ctype, text = call(port, 'GET', '/v1/openapi.json')
        doc = json.loads(text)
        problems = []
        if status != 200 or not str(doc.get('openapi', '')).startswith('3.0'):
            problems.append(f'GET /v1/openapi.json: {status}, openapi {doc.get("openapi")!r}')
        try:
            resolved = resolve(doc, copy.deepcopy(doc['paths']))
        except (KeyError, TypeError) as e:
            problems.append(f'a $ref does not resolve: {e}')
            resolved = {}
        for path, item in resolved.items():
            for method, op in item.items():
                if method == 'parameters':
                    continue
                for code, r in op.get('responses', {}).items():
                    for media in r.get('content', {}).values():
                        jsonschema.Draft4Validator.check_schema(media['schema'])
        report('document', problems)
        used = set()
        for method, path, template, body, want in CALLS:
            used.add(template)
            name = f'{method} {path} -> {want}'
            problems = []
            op = resolved.get(template, {}).get(method.lower())
            if op is None:
                report(name, [f'the document has no {method} {template}'])
                continue
            code, ctype, text = call(port, method, path, body)
            if code != want:
                problems.append(f'status {code}, this call should give {want}: {text[:200]}')
            documented = op['responses'].get(str(code))
            if documented is None:
                problems.append(f'status {code} is not among the documented {sorted(op["responses"])}')
            else:
                content = documented.get('content', {})
                media = content.get('application/json') or content.get('text/plain')
                if media is None:
                    problems.append(f'no schema documented for {code}')
                elif 'application/json' in content:
                    try:
                        jsonschema.validate(json.loads(text), media['schema'], cls=jsonschema.Draft4Validator)
                    except (ValueError, jsonschema.ValidationError) as e:
                        problems.append(f'body does not match the documented schema: {str(e).splitlines()[0]}; '
                                        f'body {text[:200]}')
            report(name, problems)
        unused = sorted(set(resolved) - used)
        report('every documented path exercised', [f'no call for {unused}'] if unused else [])
    return tally.finish()


if __name__ == '__main__':
    sys.exit(main())
