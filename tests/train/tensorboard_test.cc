// The TensorBoard callback: a real Fit writes train/ and validation/ runs, read back by tests/io/tfevents_read.py
// (pure-Python masked CRC32C over every record, protobuf's Python parser for Event/Summary/GraphDef). Expected values
// come from Fit's History, the trainer's final weights (as .npy, histogrammed in Python) and its training graph.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "../io/test_util.h"
#include "core/file_util.h"
#include "core/random.h"
#include "io/npy.h"
#include "strata/train.h"
#include "train_test_util.h"

namespace strata::train {
namespace {

using testutil::Mlp;
using testutil::Compile;

using testing_util::RunPython;
using testing_util::TempPath;

// A path in the source tree ($STRATA_SOURCE_DIR, else the tree this test was configured from).
std::string SourcePath(const std::string& relative) {
  const char* root = std::getenv("STRATA_SOURCE_DIR");
  return std::string(root ? root : STRATA_TEST_SOURCE_DIR) + "/" + relative;
}

io::NamedTensors Blobs(int n, uint64_t seed) {
  Rng rng(seed);
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 8});
  Tensor y = Tensor::Empty(DType::kInt64, Shape{n});
  for (int i = 0; i < n; ++i) {
    const int c = static_cast<int>(rng.Below(3));
    y.data<int64_t>()[i] = c;
    for (int j = 0; j < 8; ++j) x.data<float>()[i * 8 + j] = (j % 3 == c ? 2.0f : 0.0f) + 0.7f * rng.Normal();
  }
  return {{"x", x}, {"label", y}};
}

// Python list literal of doubles, exact (17 significant digits).
std::string PyList(const std::vector<double>& v) {
  std::string s = "[";
  for (double x : v) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.17g,", x);
    s += buf;
  }
  return s + "]";
}

std::string Prologue(const std::string& log_dir) {
  return "import sys, re, struct, os\n"
         "sys.path.insert(0, '" +
         SourcePath("tests/io") +
         "')\n"
         "import tfevents_read as tr\n"
         "import numpy as np\n"
         "ROOT = '" +
         SourcePath("proto") +
         "'\n"
         "LOG = '" +
         log_dir +
         "'\n"
         "def order(f):\n"
         "    m = re.search(r'tfevents\\.(\\d{10})\\.[^/]+\\.(\\d+)\\.(\\d+)\\.v2$', f)\n"
         "    assert m, f\n"
         "    return (int(m.group(1)), int(m.group(3)))\n"
         "def run(name):\n"
         "    files = sorted(tr.event_files(os.path.join(LOG, name)), key=order)\n"
         "    evs = []\n"
         "    for f in files:\n"
         "        ev = tr.read_events(ROOT, f)\n"
         "        tr.check_first_event(ev[0])\n"
         "        evs.append(ev)\n"
         "    return evs\n"
         "def f32(x):\n"
         "    return struct.unpack('<f', struct.pack('<f', x))[0]\n"
         "def same(series, steps, values):\n"
         "    assert [s for s, _ in series] == steps, (series, steps)\n"
         "    for (_, a), b in zip(series, values):\n"
         "        assert a == f32(b), (a, b)\n";
}

TEST(TensorBoardTest, FitWritesScalarsHistogramsGraphAndResumes) {
  const std::string log_dir = TempPath("tb_logs");
  auto model = Mlp();
  auto t = Trainer::Create(model.get(), Compile());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto tb = TensorBoard({.log_dir = log_dir, .histogram_freq = 2, .update_freq = "5"});
  ASSERT_TRUE(tb.ok()) << tb.status().ToString();
  const auto train = data::Dataset::FromTensorSlices(Blobs(600, 1)).Shuffle(600, {.seed = 5}).Batch(32);  // 19
  const auto val = data::Dataset::FromTensorSlices(Blobs(150, 2)).Batch(64);
  auto h1 = (*t)->Fit(train, {.epochs = 3, .validation_data = val, .verbose = 0, .callbacks = {*tb}});
  ASSERT_TRUE(h1.ok()) << h1.status().ToString();
  ASSERT_EQ((*t)->iterations(), 57);
  // The weights after epoch 2 (the last histogram of the first Fit), for Python to histogram.
  const std::string npy_dir = TempPath("tb_weights");
  ASSERT_TRUE(MakeDirs(npy_dir).ok());
  std::string weight_files = "{";
  for (const auto& [name, w] : (*t)->model().weights()) {
    std::string file = name;
    for (char& c : file)
      if (c == '/' || c == ':') c = '_';
    file = npy_dir + "/" + file + ".npy";
    ASSERT_TRUE(io::WriteNpy(file, w).ok());
    std::string tag = name;
    for (char& c : tag)
      if (c == ':') c = '_';
    weight_files += "'" + tag + "/histogram': '" + file + "',";
  }
  weight_files += "}";
  const graph::Model* g = (*t)->training_graph();
  ASSERT_NE(g, nullptr);
  const size_t graph_nodes = g->graph.nodes.size() + g->graph.inputs.size() + g->graph.initializers.size();

  // A second Fit continues (as a restarted run would): new files, steps continue from epoch 3 / iteration 57.
  auto h2 =
      (*t)->Fit(train, {.epochs = 5, .initial_epoch = 3, .validation_data = val, .verbose = 0, .callbacks = {*tb}});
  ASSERT_TRUE(h2.ok()) << h2.status().ToString();

  auto hist = [&](const std::string& key) {
    std::vector<double> v = h1->history.at(key);
    for (double x : h2->history.at(key)) v.push_back(x);
    return PyList(v);
  };
  ASSERT_EQ(RunPython(Prologue(log_dir) + "LOSS = " + hist("loss") + "\nACC = " + hist("accuracy") +
                      "\nVAL_LOSS = " + hist("val_loss") + "\nVAL_ACC = " + hist("val_accuracy") +
                      "\nWEIGHTS = " + weight_files + "\nGRAPH_NODES = " + std::to_string(graph_nodes) + "\n" + R"PY(
assert sorted(os.listdir(LOG)) == ['train', 'validation'], os.listdir(LOG)
train, valid = run('train'), run('validation')
assert len(train) == 2 and len(valid) == 2, (len(train), len(valid))  # one file per Fit in each run
ts = {}
for ev in train:
    for tag, pts in tr.scalars(ev).items():
        ts.setdefault(tag, []).extend(pts)
vs = {}
for ev in valid:
    for tag, pts in tr.scalars(ev).items():
        vs.setdefault(tag, []).extend(pts)
assert set(ts) == {'epoch_loss', 'epoch_accuracy', 'epoch_learning_rate', 'batch_loss', 'batch_accuracy'}, set(ts)
assert set(vs) == {'epoch_loss', 'epoch_accuracy'}, set(vs)
same(ts['epoch_loss'], [0, 1, 2, 3, 4], LOSS)
same(ts['epoch_accuracy'], [0, 1, 2, 3, 4], ACC)
same(ts['epoch_learning_rate'], [0, 1, 2, 3, 4], [0.01] * 5)
same(vs['epoch_loss'], [0, 1, 2, 3, 4], VAL_LOSS)
same(vs['epoch_accuracy'], [0, 1, 2, 3, 4], VAL_ACC)
# update_freq=5 over 19 batches per epoch: steps are the global batch count, continued by the second Fit
assert [s for s, _ in ts['batch_loss']] == list(range(5, 96, 5)), ts['batch_loss']
assert all(0 < v < 5 for _, v in ts['batch_loss'])
# the epoch-end value is the running mean at the epoch's last batch; batch 55 is the 17th batch of epoch 2
assert all(0 <= v <= 1 for _, v in ts['batch_accuracy'])

histos = {}
for ev in train:
    for e in ev:
        if e.WhichOneof('what') == 'summary' and e.summary.value[0].WhichOneof('value') == 'histo':
            histos.setdefault(e.summary.value[0].tag, []).append((e.step, e.summary.value[0].histo))
assert set(histos) == set(WEIGHTS), (set(histos), set(WEIGHTS))
for tag, hs in histos.items():
    assert [s for s, _ in hs] == [0, 2, 4], (tag, [s for s, _ in hs])  # histogram_freq=2
    w = np.load(WEIGHTS[tag]).astype(np.float64).ravel()
    h = hs[1][1]
    assert h.num == w.size and h.min == w.min() and h.max == w.max(), (tag, h.num, h.min, h.max)
    assert abs(h.sum - w.sum()) <= 1e-9 * max(1.0, np.abs(w).sum()), (tag, h.sum, w.sum())
    assert (list(h.bucket_limit), list(h.bucket)) == tr.expected_histogram(list(w)), tag

graphs = [e for ev in train for e in ev if e.WhichOneof('what') == 'graph_def']
assert len(graphs) == 2 and graphs[0].step == 0
g = tr.protos(ROOT)[1].GraphDef()
g.ParseFromString(graphs[0].graph_def)
assert len(g.node) == GRAPH_NODES, (len(g.node), GRAPH_NODES)
names = [n.name for n in g.node]
assert len(set(names)) == len(names)
for n in g.node:
    assert n.op, n
    for i in n.input:
        assert i.lstrip('^').split(':')[0] in set(names), (n.name, i)
ops = {n.op for n in g.node}
assert {'Placeholder', 'Gemm'} <= ops or {'Placeholder', 'MatMul'} <= ops, ops
assert any(n.op.startswith('strata.') for n in g.node), ops  # the optimizer update ops
# shapes from graph-level inference: every node has _output_shapes; the first Dense's product is [batch, 16]
missing = [n.name for n in g.node if '_output_shapes' not in n.attr]
assert not missing, missing
mm = [n for n in g.node if n.op in ('MatMul', 'Gemm') and 'dense/kernel' in n.input]
assert len(mm) == 1, [(n.name, list(n.input)) for n in g.node if n.op in ('MatMul', 'Gemm')]
dims = [d.size for d in mm[0].attr['_output_shapes'].list.shape[0].dim]
assert len(dims) == 2 and dims[1] == 16 and dims[0] in (-1, 32), dims
assert mm[0].attr['T'].type == 1  # DT_FLOAT
texts = [e for e in train[0] if e.WhichOneof('what') == 'summary' and e.summary.value[0].tag == 'model_summary']
assert len(texts) == 1 and texts[0].summary.value[0].metadata.plugin_data.plugin_name == 'text'
assert b'dense' in texts[0].summary.value[0].tensor.string_val[0]
)PY"),
            0);
}

TEST(TensorBoardTest, EpochOnlyWritesNoBatchScalarsOrHistograms) {
  const std::string log_dir = TempPath("tb_epoch_only");
  auto model = Mlp();
  auto t = Trainer::Create(model.get(), Compile());
  ASSERT_TRUE(t.ok());
  auto tb = TensorBoard({.log_dir = log_dir, .write_graph = false});
  ASSERT_TRUE(tb.ok());
  const auto train = data::Dataset::FromTensorSlices(Blobs(100, 3)).Batch(32);
  auto h = (*t)->Fit(train, {.epochs = 2, .verbose = 0, .callbacks = {*tb}});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_EQ(RunPython(Prologue(log_dir) + "LOSS = " + PyList(h->history.at("loss")) + R"PY(
assert os.listdir(LOG) == ['train'], os.listdir(LOG)  # no validation data: no validation run
(ev,) = run('train')
s = tr.scalars(ev)
assert set(s) == {'epoch_loss', 'epoch_accuracy', 'epoch_learning_rate'}, set(s)
same(s['epoch_loss'], [0, 1], LOSS)
assert not any(e.WhichOneof('what') == 'graph_def' for e in ev)
assert all(e.WhichOneof('what') != 'summary' or e.summary.value[0].WhichOneof('value') == 'simple_value' for e in ev)
)PY"),
            0);
}

TEST(TensorBoardTest, BadOptionsAreClearErrors) {
  auto bad = TensorBoard({.update_freq = "often"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'often'"), std::string::npos) << bad.status().ToString();
  EXPECT_FALSE(TensorBoard({.update_freq = "0"}).ok());
  EXPECT_FALSE(TensorBoard({.histogram_freq = -1}).ok());
  EXPECT_FALSE(TensorBoard({.log_dir = ""}).ok());
  EXPECT_TRUE(TensorBoard({.update_freq = "batch"}).ok());
  // Hooks called out of order are an error, not a crash.
  auto model = Mlp();
  auto t = Trainer::Create(model.get(), Compile());
  ASSERT_TRUE(t.ok());
  auto cb = TensorBoard({.log_dir = TempPath("tb_unused")});
  ASSERT_TRUE(cb.ok());
  Logs logs;
  logs.Set("loss", 1.0);
  EXPECT_EQ((*cb)->OnEpochEnd(**t, 0, logs).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*cb)->OnTrainBatchEnd(**t, 0, logs).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(TensorBoard({.update_freq = "100"}).ok());
}

}  // namespace
}  // namespace strata::train
