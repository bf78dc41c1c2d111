#!/usr/bin/env bash
# `strata train --log_dir` writes TensorBoard runs next to training.csv, and a --resume'd run continues the curves in
# new files. The files are read with tests/io/tfevents_read.py (pure-Python CRC32C + protobuf's Python parser); the
# epoch scalars must equal training.csv's values (as float32). usage: cli_tensorboard.sh STRATA SOURCE_DIR
set -euo pipefail
STRATA=$1 SRC=$2
DATA=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() {
  OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} "$STRATA" train --data_dir "$DATA" --model_name mlp --batch_size 32 \
    --steps_per_epoch 10 --seed 0 --verbose 0 --checkpoint_dir "$OUT/ckpt" --log_dir "$OUT/logs" --update_freq 4 \
    --histogram_freq 1 "$@"
}
run --epochs 1
run --epochs 2 --resume
/usr/bin/python3 - "$SRC" "$OUT/logs" <<'PY'
import csv, os, re, struct, sys
src, logs = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, 'tests/io'))
import tfevents_read as tr
ROOT = os.path.join(src, 'proto')
def order(f):
    m = re.search(r'tfevents\.(\d{10})\.[^/]+\.(\d+)\.(\d+)\.v2$', f)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)))
def series(run):
    files = sorted(tr.event_files(os.path.join(logs, run)), key=order)
    assert len(files) == 2, files  # one file per strata train process
    out, graphs, histos = {}, 0, 0
    for f in files:
        ev = tr.read_events(ROOT, f)
        tr.check_first_event(ev[0])
        for tag, pts in tr.scalars(ev).items():
            out.setdefault(tag, []).extend(pts)
        graphs += sum(e.WhichOneof('what') == 'graph_def' for e in ev)
        histos += sum(e.WhichOneof('what') == 'summary' and e.summary.value[0].WhichOneof('value') == 'histo'
                      for e in ev)
    return out, graphs, histos
f32 = lambda x: struct.unpack('<f', struct.pack('<f', float(x)))[0]
rows = list(csv.DictReader(open(os.path.join(logs, 'training.csv'), newline='')))
assert [r['epoch'] for r in rows] == ['0', '1'], rows
train, graphs, histos = series('train')
valid, _, _ = series('validation')
assert graphs == 2 and histos == 2 * 6, (graphs, histos)  # a graph per run; 3 Dense layers x (kernel, bias) per epoch
assert [s for s, _ in train['epoch_loss']] == [0, 1], train['epoch_loss']
for key, tag, ser in [('loss', 'epoch_loss', train), ('accuracy', 'epoch_accuracy', train),
                      ('val_loss', 'epoch_loss', valid), ('val_accuracy', 'epoch_accuracy', valid)]:
    assert [v for _, v in ser[tag]] == [f32(r[key]) for r in rows], (key, ser[tag], [r[key] for r in rows])
# batch steps are the global step: 4, 8 in the first run; the resumed run restarts at iteration 10
assert [s for s, _ in train['batch_loss']] == [4, 8, 12, 16, 20], train['batch_loss']
print('cli_tensorboard: OK')
PY
