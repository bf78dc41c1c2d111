#!/usr/bin/env python3
"""Fails when a lower layer of strata includes a header of a higher one (issue 16, "layering that holds").

The layers, lowest first, and what each may include (its own headers and those of the layers listed, which mirror
the libraries' link dependencies in src/*/CMakeLists.txt):

  core   src/core, strata/status.h, strata/tensor.h, strata/util.h
  proto  generated protobuf headers (tensorflow/..., tensorflow_serving/..., inference/...)
  io     src/io, strata/example.h, strata/records.h
  ir     src/ir, strata/graph.h, strata/graph_builder.h (the IR data model; library strata_ir)
  ops    src/ops
  graph  src/graph (passes, planner, executor)
  onnx   src/onnx, strata/onnx.h
  tf     src/tf (TensorBundle reader, SavedModel importer)
  data   src/data, strata/data.h
  nn     src/nn, strata/nn.h
  optim  src/optim, strata/optim.h
  serve  src/serve, strata/serve.h
  train  src/train, strata/train.h
  cli    src/cli

Usage: layering_check.py SOURCE_DIR      check the tree
       layering_check.py --selftest      check that the checker catches a violation in a made-up tree
"""
import os
import re
import sys
import tempfile

ALLOWED = {
    'core': set(),
    'proto': set(),
    'io': {'core', 'proto'},
    'ir': {'core'},
    'ops': {'core', 'ir'},
    'graph': {'core', 'ir', 'ops'},
    'onnx': {'core', 'ir', 'ops', 'graph', 'io', 'proto'},
    'tf': {'core', 'proto', 'io', 'ir', 'ops', 'graph', 'onnx'},
    'data': {'core', 'io', 'proto'},
    'nn': {'core', 'ir', 'ops', 'graph', 'io', 'onnx'},  # weight import: safetensors, ONNX initializers
    'optim': {'core', 'ir'},
    'serve': {'core', 'proto', 'io', 'ir', 'ops', 'graph', 'onnx', 'tf'},
    'train': {'core', 'proto', 'io', 'ir', 'ops', 'graph', 'onnx', 'data', 'nn', 'optim'},
}
ALLOWED['cli'] = set(ALLOWED) - {'cli'}
PUBLIC = {
    'status.h': 'core', 'tensor.h': 'core', 'util.h': 'core', 'example.h': 'io', 'records.h': 'io', 'graph.h': 'ir',
    'graph_builder.h': 'ir',
    'onnx.h': 'onnx', 'data.h': 'data', 'nn.h': 'nn', 'optim.h': 'optim', 'serve.h': 'serve', 'train.h': 'train',
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of_include(root, path):
    """The layer a quoted include belongs to, or None for headers outside strata (third-party, same folder)."""
    if path.startswith('strata/'):
        name = path[len('strata/'):]
        if name not in PUBLIC:
            return 'unknown-public'
        return PUBLIC[name]
    if path.startswith(('tensorflow/', 'tensorflow_serving/', 'inference/')):
        return 'proto'
    top = path.split('/')[0]
    if top in ALLOWED and os.path.exists(os.path.join(root, 'src', path)):
        return top
    return None


def check(root):
    """Returns the violations as 'file:line: message' strings."""
    errors = []
    files = []
    for layer in ALLOWED:
        d = os.path.join(root, 'src', layer)
        for dirpath, _, names in os.walk(d):
            files += [(layer, os.path.join(dirpath, n)) for n in names if n.endswith(('.h', '.cc'))]
    inc = os.path.join(root, 'include', 'strata')
    for n in sorted(os.listdir(inc)) if os.path.isdir(inc) else []:
        if n.endswith('.h'):
            if n not in PUBLIC:
                errors.append(f'{os.path.join(inc, n)}:1: public header has no layer in layering_check.py; add it')
                continue
            files.append((PUBLIC[n], os.path.join(inc, n)))
    for layer, f in files:
        text = open(f, encoding='utf-8', errors='replace').read()
        for m in INCLUDE.finditer(text):
            target = layer_of_include(root, m.group(1))
            if target is None or target == layer:
                continue
            line = text.count('\n', 0, m.start()) + 1
            if target == 'unknown-public':
                errors.append(f'{f}:{line}: includes "{m.group(1)}", a public header that has no layer in '
                              'layering_check.py')
            elif target not in ALLOWED[layer]:
                errors.append(f'{f}:{line}: layer "{layer}" includes "{m.group(1)}" of layer "{target}"; '
                              f'"{layer}" may include only {sorted(ALLOWED[layer]) or "its own headers"}')
    return errors, len(files)


def selftest():
    with tempfile.TemporaryDirectory() as root:
        for p in ['src/core/x.h', 'src/ops/k.h', 'src/graph/plan.h', 'include/strata/status.h']:
            os.makedirs(os.path.dirname(os.path.join(root, p)), exist_ok=True)
            open(os.path.join(root, p), 'w').write('')
        open(os.path.join(root, 'src/ops/k.h'), 'w').write('#include "core/x.h"\n#include "graph/plan.h"\n')
        errors, _ = check(root)
        if len(errors) != 1 or 'layer "ops" includes "graph/plan.h" of layer "graph"' not in errors[0]:
            print('selftest FAILED: expected one violation (ops -> graph), got', errors)
            return 1
        open(os.path.join(root, 'src/ops/k.h'), 'w').write('#include "core/x.h"\n')
        errors, _ = check(root)
        if errors:
            print('selftest FAILED: a clean tree gave', errors)
            return 1
    print('selftest: ok (an ops -> graph include is caught, a clean tree passes)')
    return 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == '--selftest':
        return selftest()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    errors, n = check(sys.argv[1])
    for e in errors:
        print(e)
    if errors:
        print(f'{len(errors)} layering violation(s) in {n} files')
        return 1
    print(f'layering: {n} files, no lower layer includes a higher one')
    return 0


if __name__ == '__main__':
    sys.exit(main())
