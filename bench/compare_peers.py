#!/usr/bin/python3
"""Inference latency of strata vs ONNX Runtime vs PyTorch on the same ONNX files and inputs (driven by
bench/compare_peers.sh; see there for the environment).

For each (model, batch) row, ROUNDS times in turn: `strata bench --json --input` on model.onnx, the ORT peer's
run_model.py (onnxruntime from PyPI, in the peers venv) on the same model.onnx, and PyTorch running the same module (rebuilt from the peer's models.py with the
export's seed, so the same weights; checked against the export's output.bin) — all on the same input (the export's
input rows tiled to the batch), 2 threads, the same iteration counts. Each engine's figure is the median of its
per-round medians. Each engine's output at the reference batch is compared with PyTorch's output.bin once.

usage: compare_peers.py --strata BUILD/strata --models DIR --ort-python VENV/bin/python --ort-runner run_model.py
                        --torch-peer DIR
                        [--rounds R] [--budget-s S] [--rows NAME:B,...] [--markdown OUT.md] [--json OUT.jsonl]
"""
import argparse, json, math, os, statistics, subprocess, sys, time

import numpy as np

ROWS = [('resnet18', 1), ('resnet18', 32), ('resnet50', 1), ('resnet50', 8), ('mobilenet_v2', 1),
        ('mobilenet_v2', 32), ('squeezenet1_1', 1), ('squeezenet1_1', 32), ('transformer', 1), ('transformer', 32),
        ('cnn', 1), ('cnn', 32), ('mlp', 1), ('mlp', 32)]
# Rough ms per example at 2 threads on the 2-core development machine: sizes the iteration counts (the same for all
# three engines) so that one engine's timed runs take about --budget-s seconds.
EST_MS_PER_EXAMPLE = {'resnet18': 25, 'resnet50': 110, 'mobilenet_v2': 8, 'squeezenet1_1': 8, 'transformer': 0.3,
                      'cnn': 0.2, 'mlp': 0.02}
LABELS = {'cnn': 'Fashion CNN', 'mlp': 'Fashion MLP', 'transformer': 'transformer encoder'}


def iters_for(name, batch, budget_s):
    est = EST_MS_PER_EXAMPLE[name] * batch + 0.05
    return max(5, min(200, int(budget_s * 1000 / est)))


def busy_jiffies():
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v) - v[3] - v[4], sum(v)


def run_json(cmd, cwd=None, env=None, prefix=None):
    """Runs cmd; returns (its last JSON line, the machine's busy share meanwhile, in % of all cores)."""
    b0, t0 = busy_jiffies()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=900)
    b1, t1 = busy_jiffies()
    if p.returncode != 0:
        raise RuntimeError(f'{cmd[0]} failed (rc {p.returncode}): {p.stderr.strip()[-600:]}')
    lines = [l for l in p.stdout.splitlines() if l.strip().startswith('{' if prefix is None else prefix)]
    if not lines:
        raise RuntimeError(f'{cmd[0]} printed no JSON: {p.stdout[-300:]} {p.stderr[-300:]}')
    line = lines[-1][len(prefix):] if prefix else lines[-1]
    return json.loads(line), 100.0 * (b1 - b0) / max(t1 - t0, 1)


def torch_one(peer, name, batch, in_path, ref_out, iters, warmup, threads):
    """Child process: PyTorch on the export's module and input; prints 'JSON {...}'."""
    sys.path.insert(0, peer)
    import torch
    from models import build
    torch.set_num_threads(threads)
    torch.manual_seed(0)  # export_models.py's seed: the same random weights as model.onnx
    model = build(name).eval()
    x = torch.from_numpy(np.load(in_path))
    out = {}
    with torch.no_grad():
        if ref_out:  # "REF_IN.npy:REF_OUT.npy"
            ref_in, ref_out = ref_out.split(':')
            ref = np.load(ref_out)
            y = model(torch.from_numpy(np.load(ref_in))).numpy()
            out['ref_max_abs_diff'] = float(np.abs(y - ref).max())
        for _ in range(warmup):
            model(x)
        ms = []
        for _ in range(iters):
            t = time.perf_counter()
            model(x)
            ms.append((time.perf_counter() - t) * 1e3)
    out.update(median_ms=statistics.median(ms), min_ms=min(ms), iters=iters, torch=torch.__version__)
    print('JSON ' + json.dumps(out), flush=True)


def max_abs_diff(a, b):
    if a.shape != b.shape:
        return float('inf')
    return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())


def check_outputs(a, name, work, meta, x_ref, ref):
    """Each engine's output at the reference batch vs PyTorch's output.bin: max |diff|."""
    d = {}
    ref_npy = os.path.join(work, 'ref_in.npy')
    np.save(ref_npy, x_ref)
    outdir = os.path.join(work, 'strata_out')
    subprocess.run([a.strata, 'run', os.path.join(a.models, name, 'model.onnx'), '--input',
                    f'{meta["input_name"]}={ref_npy}', '--output-dir', outdir, '--threads', str(a.threads)],
                   check=True, capture_output=True, text=True)
    d['strata'] = max_abs_diff(np.load(os.path.join(outdir, meta['output_name'] + '.npy')), ref)
    ref_bin, out_bin = os.path.join(work, 'ref_in.bin'), os.path.join(work, 'ort_out.bin')
    x_ref.astype('<f4').tofile(ref_bin)
    subprocess.run([a.ort_python, a.ort_runner, os.path.join(a.models, name, 'model.onnx'),
                    ref_bin, ','.join(map(str, x_ref.shape)), out_bin, '--threads', str(a.threads), '--iters', '1',
                    '--warmup', '0'], check=True, capture_output=True, text=True)
    d['ort'] = max_abs_diff(np.fromfile(out_bin, dtype='<f4').reshape(ref.shape), ref)
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--strata', required=True)
    ap.add_argument('--models', required=True)
    ap.add_argument('--ort-python', required=True, help="the peers venv's python (with onnxruntime)")
    ap.add_argument('--ort-runner', required=True, help='../shared/peers/ort/run_model.py')
    ap.add_argument('--torch-peer', required=True)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--rounds', type=int, default=1)
    ap.add_argument('--budget-s', type=float, default=2.0)
    ap.add_argument('--warmup', type=int, default=3)
    ap.add_argument('--rows', default='')
    ap.add_argument('--markdown', default='')
    ap.add_argument('--json', default='')
    ap.add_argument('--torch-one', nargs=7, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_one:
        name, batch, in_path, ref_out, iters, warmup, peer = a.torch_one
        torch_one(peer, name, int(batch), in_path, ref_out if ref_out != '-' else '', int(iters), int(warmup),
                  a.threads)
        return
    rows = ROWS
    if a.rows:
        rows = [(r.split(':')[0], int(r.split(':')[1])) for r in a.rows.split(',')]
    work = os.path.join(os.environ.get('TMPDIR', '/tmp'), f'strata-compare-{os.getpid()}')
    os.makedirs(work, exist_ok=True)
    results, checks = [], {}
    jl = open(a.json, 'a') if a.json else None
    t_start = time.time()
    # An older strata without `bench --input` gets its own random inputs of the same shape (timing only).
    help_text = subprocess.run([a.strata, 'bench', '--help'], capture_output=True, text=True).stdout
    a.strata_input = '--input' in help_text
    for name, batch in rows:
        meta = json.load(open(os.path.join(a.models, name, 'io.json')))
        x_ref = np.fromfile(os.path.join(a.models, name, 'input.bin'), dtype='<f4').reshape(meta['input_shape'])
        ref = np.fromfile(os.path.join(a.models, name, 'output.bin'), dtype='<f4').reshape(meta['output_shape'])
        x = np.ascontiguousarray(x_ref[np.arange(batch) % x_ref.shape[0]])
        in_npy, in_bin = os.path.join(work, f'{name}_b{batch}.npy'), os.path.join(work, f'{name}_b{batch}.bin')
        np.save(in_npy, x)
        x.astype('<f4').tofile(in_bin)
        ref_npy = os.path.join(work, f'{name}_ref_in.npy') + ':' + os.path.join(work, f'{name}_ref_out.npy')
        np.save(ref_npy.split(':')[0], x_ref)
        np.save(ref_npy.split(':')[1], ref)
        if name not in checks:
            checks[name] = check_outputs(a, name, work, meta, x_ref, ref)
        model = os.path.join(a.models, name, 'model.onnx')
        iters = iters_for(name, batch, a.budget_s)
        per = {'strata': [], 'ort': [], 'torch': []}
        busy = {'strata': [], 'ort': [], 'torch': []}
        extra = {}
        for r in range(a.rounds):
            feed = ['--input', f'{meta["input_name"]}={in_npy}'] if a.strata_input else ['--batch', str(batch)]
            j, b = run_json([a.strata, 'bench', model, *feed, '--threads', str(a.threads), '--warmup', str(a.warmup),
                             '--iters', str(iters), '--json'])
            per['strata'].append(j['median_ms'])
            busy['strata'].append(b)
            extra['strata_allocs_per_run'] = j['heap_allocations_per_run']
            j, b = run_json([a.ort_python, a.ort_runner, model, in_bin,
                             ','.join(map(str, x.shape)), os.path.join(work, 'ort_out.bin'), '--threads',
                             str(a.threads), '--iters', str(iters), '--warmup', str(a.warmup)])
            per['ort'].append(j['median_ms'])
            busy['ort'].append(b)
            extra['ort_version'] = j.get('ort_version')
            j, b = run_json([sys.executable, os.path.abspath(__file__), '--strata', '-', '--models', '-',
                             '--ort-python', '-', '--ort-runner', '-', '--torch-peer', '-', '--threads',
                             str(a.threads), '--torch-one',
                             name, str(batch), in_npy, ref_npy if 'torch_ref_diff' not in checks[name] else '-',
                             str(iters), str(a.warmup), a.torch_peer], prefix='JSON ')
            if 'ref_max_abs_diff' in j:
                checks[name]['torch_ref_diff'] = j['ref_max_abs_diff']
            per['torch'].append(j['median_ms'])
            busy['torch'].append(b)
            extra['torch_version'] = j.get('torch')
        rec = {'model': name, 'batch': batch, 'iters': iters, 'rounds': a.rounds,
               **{f'{k}_ms': statistics.median(v) for k, v in per.items()},
               **{f'{k}_rounds_ms': v for k, v in per.items()},
               **{f'{k}_machine_busy_pct': round(statistics.median(v), 1) for k, v in busy.items()}, **extra}
        rec['strata_over_ort'] = rec['strata_ms'] / rec['ort_ms']
        rec['strata_over_torch'] = rec['strata_ms'] / rec['torch_ms']
        results.append(rec)
        if jl:
            print(json.dumps(rec), file=jl, flush=True)
        print(f'{name:<14} b{batch:<3} strata {rec["strata_ms"]:9.3f}  ort {rec["ort_ms"]:9.3f}  torch '
              f'{rec["torch_ms"]:9.3f}  s/ort {rec["strata_over_ort"]:.2f}  s/torch {rec["strata_over_torch"]:.2f}  '
              f'(iters {iters}, busy {rec["strata_machine_busy_pct"]:.0f}/{rec["ort_machine_busy_pct"]:.0f}/'
              f'{rec["torch_machine_busy_pct"]:.0f}%, strata allocs/run {rec["strata_allocs_per_run"]})',
              file=sys.stderr, flush=True)
    elapsed = time.time() - t_start
    md = table(a, results, checks, elapsed)
    print(md)
    if a.markdown:
        with open(a.markdown, 'w') as f:
            f.write(md)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def table(a, results, checks, elapsed):
    L = []
    L.append('| model | batch | strata ms | ONNX Runtime ms | PyTorch ms | strata / ORT | strata / PyTorch | '
             'strata heap allocs/run |')
    L.append('|---|---|---|---|---|---|---|---|')
    for r in results:
        so, st = r['strata_over_ort'], r['strata_over_torch']
        L.append(f'| {LABELS.get(r["model"], r["model"])} | {r["batch"]} | {r["strata_ms"]:.3f} | {r["ort_ms"]:.3f} | '
                 f'{r["torch_ms"]:.3f} | {so:.2f}{"" if so <= 1.2 else " ✗"} | {st:.2f}{"" if st <= 0.8 else " ✗"} | '
                 f'{r["strata_allocs_per_run"]:g} |')
    if results:
        g_o = geomean([r['strata_over_ort'] for r in results])
        g_t = geomean([r['strata_over_torch'] for r in results])
        L.append(f'| **geometric mean** | | | | | **{g_o:.2f}** | **{g_t:.2f}** | |')
    L.append('')
    L.append('✗ = over the target (strata / ORT ≤ 1.2 per row, ≤ 1.0 geometric mean; strata / PyTorch ≤ 0.8 per row).')
    L.append('')
    v = results[0] if results else {}
    busy = [r[f'{k}_machine_busy_pct'] for r in results for k in ('strata', 'ort', 'torch')]
    L.append(f'Medians of {a.rounds} alternating round(s), {a.threads} threads each, {a.warmup} warm-up runs and the '
             f'same iteration count for the three engines per row; ONNX Runtime {v.get("ort_version")} '
             f'(Python package from PyPI, CPU EP, graph optimisation level all), PyTorch {v.get("torch_version")} (eval, '
             f'no_grad). Machine busy share during the measurements (all processes, ours included; 100% = both cores): '
             f'median {statistics.median(busy) if busy else 0:.0f}%, max {max(busy) if busy else 0:.0f}%. '
             f'Table took {elapsed / 60:.1f} min.')
    if not a.strata_input:
        L.append('')
        L.append('(This strata binary has no `bench --input`: it timed random inputs of the same shape.)')
    L.append('')
    L.append('Output check at the export batch, max |diff| vs PyTorch\'s output.bin: ' + '; '.join(
        f'{n}: strata {c["strata"]:.1e}, ORT {c["ort"]:.1e}, PyTorch rebuilt {c.get("torch_ref_diff", float("nan")):.1e}'
        for n, c in checks.items()) + '.')
    return '\n'.join(L) + '\n'


if __name__ == '__main__':
    main()
