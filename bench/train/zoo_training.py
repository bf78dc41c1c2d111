#!/usr/bin/env python3
"""Training images/s and peak RSS of the zoo's ImageNet models: strata vs Keras 3 on TF 2.21 (the peers venv) vs
PyTorch 1.13 (Debian's /usr/bin/python3), in one run (issue 12's BENCHMARKS.md Must-show). Run through
bench/train/zoo_training.sh; any python3 runs this driver (standard library only).

For each model, three processes one after the other, each measured alone: `strata train-bench --model_name M
--input_shape S S 3 --batch_size B --intra_op_threads T --steps N --warmup_steps W`, then bench/train/zoo_peer.py
keras M and torch TORCH_M (same batch, threads, steps and protocol: SGD 0.01 momentum 0.9, sparse cross-entropy on
logits, one fixed random batch, W untimed steps then N timed ones, images/s = batch / median step). Peak RSS is the
child's ru_maxrss (os.wait4): the whole process, the Python interpreter and its libraries for the peers.
"""
import argparse, json, os, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
# strata / Keras name, torchvision name (the issue's pairing: torchvision has no EfficientNetV2-B0, its smallest V2
# is efficientnet_v2_s, about 3x B0's FLOPs)
PAIRS = {'ResNet50V2': 'resnet50', 'MobileNetV3Large': 'mobilenet_v3_large', 'EfficientNetV2B0': 'efficientnet_v2_s'}


def run_child(cmd, env):
    """(last stdout line as JSON, peak RSS MiB, wall s) of one child process."""
    with tempfile.TemporaryFile('w+') as out, tempfile.TemporaryFile('w+') as err:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t
        out.seek(0), err.seek(0)
        text = out.read()
        if p.returncode != 0:
            sys.exit(f'{" ".join(cmd)} failed (exit {p.returncode}):\n{text}\n{err.read()[-4000:]}')
        lines = [l for l in text.splitlines() if l.startswith('{')]
        if not lines:
            sys.exit(f'{" ".join(cmd)} printed no JSON line:\n{text}\n{err.read()[-4000:]}')
        return json.loads(lines[-1]), ru.ru_maxrss / 1024.0, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', default='build', help='strata build folder (holds the strata binary)')
    ap.add_argument('--models', default=','.join(PAIRS), help=f'comma-separated, of {", ".join(PAIRS)}')
    ap.add_argument('--steps', type=int, default=3, help='timed steps per measurement (default 3)')
    ap.add_argument('--warmup_steps', type=int, default=2, help='untimed steps first, the compiling one included')
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--size', type=int, default=224, help='input height and width (3 channels)')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--frameworks', default='strata,keras,torch', help='which of strata,keras,torch to run')
    ap.add_argument('--peers_python', default=os.path.expanduser('~/.cache/strata/peers-venv/bin/python'))
    ap.add_argument('--torch_python', default='/usr/bin/python3')
    ap.add_argument('--omp_wait_policy', default='',
                    help='OMP_WAIT_POLICY for strata and torch, the two OpenMP users (default: inherited); passive on '
                         'a loaded machine, where spinning workers that lose their core stall every op')
    ap.add_argument('--markdown', default='', help='also write the table to this file')
    a = ap.parse_args()
    if a.steps < 1 or a.warmup_steps < 1:
        ap.error(f'--steps and --warmup_steps must be at least 1, got {a.steps} and {a.warmup_steps}')
    models = a.models.split(',')
    for m in models:
        if m not in PAIRS:
            ap.error(f'unknown model {m!r}; expected some of {", ".join(PAIRS)}')
    fws = a.frameworks.split(',')
    strata = os.path.join(a.build, 'strata')
    if 'strata' in fws and not os.access(strata, os.X_OK):
        ap.error(f'no strata binary at {strata} (build it: cmake --build {a.build} --target strata)')
    if 'keras' in fws and not os.access(a.peers_python, os.X_OK):
        ap.error(f'no peers venv python at {a.peers_python} (scripts/install-deps.sh --peers)')
    env = dict(os.environ)
    senv = dict(env, **({'OMP_WAIT_POLICY': a.omp_wait_policy} if a.omp_wait_policy else {}))
    common = ['--steps', str(a.steps), '--warmup_steps', str(a.warmup_steps)]
    peer = ['--batch', str(a.batch), '--size', str(a.size), '--threads', str(a.threads)] + common
    res, versions, t0 = {}, {}, time.perf_counter()
    print(f'# zoo training, {time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, {os.cpu_count()} cores, '
          f'load average {os.getloadavg()[0]:.2f} at start; batch {a.batch}, {a.size}x{a.size}x3, {a.threads} threads, '
          f'{a.warmup_steps} warm-up + {a.steps} timed steps', flush=True)
    for m in models:
        cmds = {'strata': ([strata, 'train-bench', '--model_name', m, '--input_shape', str(a.size), str(a.size), '3',
                            '--batch_size', str(a.batch), '--intra_op_threads', str(a.threads)] + common, senv),
                'keras': ([a.peers_python, os.path.join(HERE, 'zoo_peer.py'), 'keras', m] + peer, env),
                'torch': ([a.torch_python, os.path.join(HERE, 'zoo_peer.py'), 'torch', PAIRS[m]] + peer, senv)}
        for fw in fws:
            r, rss, wall = run_child(*cmds[fw])
            r['peak_rss_mib'], r['wall_s'] = rss, wall
            versions.setdefault(fw, r.get('version'))
            res[(m, fw)] = r
            print(f'{fw:<7}{m:<18}{r["images_per_s"]:8.2f} img/s  median step {r["median_step_ms"]:9.1f} ms  first '
                  f'{r["first_step_s"]:6.1f} s  peak RSS {rss:7.0f} MiB  foreign {r["foreign_pct"]}%  params '
                  f'{r["params"]}  ({wall:.0f} s)', flush=True)
    def cell(m, fw, key, fmt):
        return format(res[(m, fw)][key], fmt) if (m, fw) in res else '-'
    lines = ['| model (strata, Keras / torchvision) | strata img/s | Keras img/s | torch img/s | strata / faster peer | '
             'peak RSS MiB strata / Keras / torch | first step s strata / Keras / torch | foreign CPU % (s, K, t) |',
             '|---|---|---|---|---|---|---|---|']
    for m in models:
        peers = [res[(m, fw)]['images_per_s'] for fw in ('keras', 'torch') if (m, fw) in res]
        ratio = f'**{res[(m, "strata")]["images_per_s"] / max(peers):.2f}**' if peers and (m, 'strata') in res else '-'
        lines.append(f'| {m} / {PAIRS[m]} | {cell(m, "strata", "images_per_s", ".2f")} | '
                     f'{cell(m, "keras", "images_per_s", ".2f")} | {cell(m, "torch", "images_per_s", ".2f")} | {ratio} | '
                     + ' / '.join(cell(m, fw, 'peak_rss_mib', '.0f') for fw in ('strata', 'keras', 'torch')) + ' | '
                     + ' / '.join(cell(m, fw, 'first_step_s', '.1f') for fw in ('strata', 'keras', 'torch')) + ' | '
                     + ', '.join(cell(m, fw, 'foreign_pct', '') for fw in ('strata', 'keras', 'torch')) + ' |')
    lines.append('')
    lines.append(f'{"; ".join(v for v in versions.values() if v)}; strata --intra_op_threads {a.threads}; '
                 f'strata and torch OMP_WAIT_POLICY={senv.get("OMP_WAIT_POLICY", "(unset)")}; batch {a.batch}, {a.size}x{a.size}x3, '
                 f'{a.warmup_steps} warm-up + {a.steps} timed steps (median), each in its own process; '
                 f'whole run {time.perf_counter() - t0:.0f} s.')
    text = '\n'.join(lines)
    print(text)
    if a.markdown:
        with open(a.markdown, 'w') as f:
            f.write(text + '\n')


if __name__ == '__main__':
    sys.exit(main())
