#!/usr/bin/env python3
"""Input pipeline throughput, strata vs tf.data (TensorFlow 2.21, the peers venv), in one run on the same files.

    ~/.cache/strata/peers-venv/bin/python bench/tf/pipeline.py [--build build] [--rounds 3] [--min_time 2]

The files are the TFRecords of tf.train.Example that build/bench/data_bench writes into $STRATA_BENCH_DIR (default
/tmp/strata_bench) from Fashion-MNIST (as `strata data import-idx` writes them) and 256 colour 500x375 JPEGs. Three
pipelines, each with 1 and with 2 map threads on both sides:

  raw_batched   TFRecordDataset -> batch(64) -> map(parse_example {image: bytes, label: int64}, decode_raw uint8,
                reshape [64,28,28,1], float32 / 255)          strata: BM_ReadParseBatched/threads:N
  png           TFRecordDataset -> map(parse_single_example, decode_png, float32 / 255) -> batch(64)
                                                              strata: BM_ReadParse/fmnist_png/threads:N
  jpeg_224      TFRecordDataset -> map(parse_single_example, decode_jpeg, bilinear resize 224x224) -> batch(32)
                                                              strata: BM_JpegDecodeResize224/threads:N

tf.data: map(num_parallel_calls=N) (N = 1: a sequential map), a private thread pool of N threads, intra-op 2 /
inter-op 1, autotune off, no prefetch. strata: Map(num_parallel_calls = N) (N = 1: on the calling thread).
Each round runs strata's benchmark and then tf.data on every pipeline; examples/s is each side's median over the
rounds (the whole file drained each time, warm page cache). The CPU share that other processes used during each
measurement is printed beside it.
"""
import argparse, json, os, statistics, subprocess, sys, time

from cpu_share import busy_share, foreign_pct, own_cpu

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(1)

STRATA_NAMES = {(p, t): n.format(t=t) for t in (1, 2) for p, n in (
    ('raw_batched', 'BM_ReadParseBatched/threads:{t}/real_time'),
    ('png', 'BM_ReadParse/fmnist_png/threads:{t}/real_time'),
    ('jpeg_224', 'BM_JpegDecodeResize224/threads:{t}/real_time'))}


def tf_dataset(name, threads, bench_dir):
    opts = tf.data.Options()
    opts.threading.private_threadpool_size = threads
    calls = None if threads == 1 else threads  # None: the map runs on the iterator's thread
    opts.autotune.enabled = False
    if name == 'raw_batched':
        spec = {'image': tf.io.FixedLenFeature([], tf.string), 'label': tf.io.FixedLenFeature([], tf.int64)}

        def parse(serialized):
            f = tf.io.parse_example(serialized, spec)
            img = tf.reshape(tf.io.decode_raw(f['image'], tf.uint8), [-1, 28, 28, 1])
            return tf.cast(img, tf.float32) / 255.0, f['label']

        ds = tf.data.TFRecordDataset([os.path.join(bench_dir, 'fmnist-train-raw.tfrecord')]).batch(64).map(
            parse, num_parallel_calls=calls)
    elif name == 'png':
        spec = {'image/encoded': tf.io.FixedLenFeature([], tf.string), 'label': tf.io.FixedLenFeature([], tf.int64)}

        def parse(serialized):
            f = tf.io.parse_single_example(serialized, spec)
            img = tf.io.decode_png(f['image/encoded'], channels=1)
            return tf.cast(img, tf.float32) / 255.0, f['label']

        ds = tf.data.TFRecordDataset([os.path.join(bench_dir, 'fmnist-train-png.tfrecord')]).map(
            parse, num_parallel_calls=calls).batch(64)
    else:
        spec = {'image/encoded': tf.io.FixedLenFeature([], tf.string), 'label': tf.io.FixedLenFeature([], tf.int64)}

        def parse(serialized):
            f = tf.io.parse_single_example(serialized, spec)
            img = tf.io.decode_jpeg(f['image/encoded'], channels=3)
            return tf.image.resize(img, [224, 224], method='bilinear'), f['label']

        ds = tf.data.TFRecordDataset([os.path.join(bench_dir, 'jpeg-500x375.tfrecord')]).map(
            parse, num_parallel_calls=calls).batch(32)
    return ds.with_options(opts)


def tf_rate(name, threads, bench_dir, min_time):
    ds = tf_dataset(name, threads, bench_dir)
    for _ in ds:  # warm-up: traces the map function, fills the page cache
        pass
    n, t0, b0, c0 = 0, time.perf_counter(), busy_share(), own_cpu()
    while True:
        for x, _ in ds:
            n += int(x.shape[0])
        if time.perf_counter() - t0 >= min_time:
            break
    dt, cpu = time.perf_counter() - t0, own_cpu() - c0
    return n / dt, foreign_pct(b0, busy_share(), c0, own_cpu()), n / max(1e-9, cpu)


def strata_rates(build, min_time):
    b0, c0 = busy_share(), own_cpu()
    filt = '^(' + '|'.join(v.replace('/real_time', '') for v in STRATA_NAMES.values()) + ')/real_time$'
    out = subprocess.run([os.path.join(build, 'bench', 'data_bench'), f'--benchmark_filter={filt}',
                          f'--benchmark_min_time={min_time}', '--benchmark_format=json'], check=True,
                         capture_output=True, text=True).stdout
    foreign = foreign_pct(b0, busy_share(), c0, own_cpu())
    by_name = {b['name']: b for b in json.loads(out)['benchmarks']}
    return ({k: by_name[v]['examples/s'] for k, v in STRATA_NAMES.items()}, foreign,
            {k: by_name[v]['examples/cpu_s'] for k, v in STRATA_NAMES.items()})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--min_time', type=float, default=2.0)
    ap.add_argument('--only', default='', help='comma-separated pipelines to run (raw_batched, png, jpeg_224); '
                    'default: all')
    a = ap.parse_args()
    if a.only:
        wanted = a.only.split(',')
        unknown = [w for w in wanted if w not in {p for p, _ in STRATA_NAMES}]
        if unknown:
            sys.exit(f'--only: unknown pipeline(s) {unknown}; expected some of raw_batched, png, jpeg_224')
        for key in [k for k in STRATA_NAMES if k[0] not in wanted]:
            del STRATA_NAMES[key]
    bench_dir = os.environ.get('STRATA_BENCH_DIR', '/tmp/strata_bench')
    rows = {k: [] for k in STRATA_NAMES}
    for r in range(a.rounds):
        s, sf, sc = strata_rates(a.build, a.min_time)  # the first round also writes the files
        for key in STRATA_NAMES:
            k, kf, kc = tf_rate(*key, bench_dir, a.min_time)
            rows[key].append((s[key], k, sf, kf, sc[key], kc))
            print(f'round {r + 1} {key[0]} threads {key[1]}: strata {s[key]:.0f}/s (foreign {sf}% over all), '
                  f'tf.data {k:.0f}/s (foreign {kf}%), ratio {s[key] / k:.2f}; per CPU-second: strata '
                  f'{sc[key]:.0f}, tf.data {kc:.0f}', flush=True)
    print('| pipeline | threads | strata examples/s | tf.data examples/s | strata / tf.data | foreign CPU % (strata, TF) '
          '| examples per CPU-s (strata, TF) | strata / TF per CPU-s |')
    print('|---|---|---|---|---|---|---|---|')
    for (name, threads), v in rows.items():
        si, ki = statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
        sc, kc = statistics.median(x[4] for x in v), statistics.median(x[5] for x in v)
        print(f'| {name} | {threads} | {si:.0f} | {ki:.0f} | **{si / ki:.2f}** | '
              f'{statistics.median(x[2] for x in v):.0f}, {statistics.median(x[3] for x in v):.0f} | '
              f'{sc:.0f}, {kc:.0f} | {sc / kc:.2f} |')
    print(f'\nTensorFlow {tf.__version__}; tf.data: map num_parallel_calls = threads (1: sequential map), '
          f'private_threadpool_size = threads, autotune off, intra-op 2, inter-op 1; strata: '
          f'Map(num_parallel_calls = threads, 1: on the calling thread); medians of {a.rounds} rounds, >= {a.min_time} '
          f's each.')


if __name__ == '__main__':
    sys.exit(main())
