// Checkpoints: the directory format checked by python3 (its own safetensors parsing and CRC-32C), corruption and
// mismatches reported by name, CheckpointManager's keep-last-N / keep-best-K and state file (checked with protoc),
// recovery from a killed writer, and ModelCheckpoint's rules (templates checked against Python's str.format).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "../io/test_util.h"
#include "core/file_util.h"
#include "core/json.h"
#include "core/random.h"
#include "io/safetensors.h"
#include "strata/train.h"
#include "train/callback_util.h"
#include "train_test_util.h"

namespace strata::train {
namespace {

using testutil::SameBits;

using testing_util::kPythonTfRecord;
using testing_util::RunPython;

std::string TempDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/ckpt_" + std::to_string(getpid()) + "_" + name;
  std::system(("rm -rf '" + d + "'").c_str());
  return d;
}

data::Dataset Blobs(int n, int batch) {
  Rng rng(3);
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 8});
  Tensor y = Tensor::Empty(DType::kInt64, Shape{n});
  for (int i = 0; i < n; ++i) {
    const int c = static_cast<int>(rng.Below(3));
    y.data<int64_t>()[i] = c;
    for (int j = 0; j < 8; ++j) x.data<float>()[i * 8 + j] = (j % 3 == c ? 2.0f : 0.0f) + 0.7f * rng.Normal();
  }
  return data::Dataset::FromTensorSlices({{"x", x}, {"label", y}}).Batch(batch);
}

std::unique_ptr<nn::Model> Net(int hidden = 16) {
  auto in = nn::Input({8}, "x");
  auto h = nn::Dense(hidden, {.activation = "relu"})(in);
  auto logits = nn::Dense(3)(h);
  return std::make_unique<nn::Model>(std::vector<nn::KerasTensor>{in}, std::vector<nn::ModelOutput>{{"logits", logits}},
                                     "net");
}

CompileOptions Adam() {
  CompileOptions c;
  c.loss["logits"] = nn::Loss::SparseCategoricalCrossentropy(true);
  c.metrics["logits"] = {"accuracy"};
  c.optimizer_config.learning_rate = optim::ConstantLR(0.01);
  return c;
}

// A trained state with history, an lr override and a seed above 2^63.
TrainingState TrainedState(Trainer* t) {
  EXPECT_TRUE(t->Fit(Blobs(96, 32), {.epochs = 2, .verbose = 0}).ok());
  t->SetLearningRate(0.005);
  TrainingState s = t->GetState();
  s.seed = 18446744073709551557ull;
  s.batch = 1;
  s.dataset_hash = "abc123";
  return s;
}

TEST(CheckpointTest, RoundTripAndPythonReadsTheFiles) {
  auto model = Net();
  auto t = *Trainer::Create(model.get(), Adam());
  const TrainingState s = TrainedState(t.get());
  ASSERT_EQ(s.history.size(), 2u);
  const std::string dir = TempDir("rt") + "/ckpt-6";
  Logs metrics;
  metrics.Set("loss", 0.25);
  ASSERT_TRUE(WriteCheckpoint(dir, s, {.metrics = metrics, .metadata = {{"model_name", "net"}}}).ok());
  auto c = ReadCheckpoint(dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(SameBits(c->state.weights, s.weights));
  EXPECT_TRUE(SameBits(c->state.slots, s.slots));
  EXPECT_EQ(c->state.slots.size(), 8u);  // Adam m and v of 4 variables
  EXPECT_EQ(c->state.iterations, 6);
  EXPECT_EQ(c->state.epoch, 2);
  EXPECT_EQ(c->state.batch, 1);
  EXPECT_EQ(c->state.seed, 18446744073709551557ull);
  EXPECT_EQ(c->state.learning_rate_override, std::optional<double>(0.005));
  EXPECT_EQ(c->state.dataset_hash, "abc123");
  ASSERT_EQ(c->state.history.size(), 2u);
  EXPECT_EQ(c->state.history[1].first, 1);
  EXPECT_EQ(*c->state.history[1].second.Find("loss"), *s.history[1].second.Find("loss"));
  EXPECT_EQ(c->metadata.at("model_name"), "net");
  EXPECT_EQ(*c->metrics.Find("loss"), 0.25);
  // No temporary directory is left next to it.
  EXPECT_FALSE(FileExists(Dirname(dir) + "/.ckpt-6.tmp." + std::to_string(getpid())));

  // Python parses both safetensors files itself and recomputes every CRC-32C with its own implementation.
  const float k00 = s.weights.at("dense/kernel").data<float>()[0];
  ASSERT_EQ(RunPython(std::string(kPythonTfRecord) +
                      "import json, struct, numpy as np\n"
                      "d = '" +
                      dir +
                      "'\n"
                      "st = json.load(open(d + '/state.json'))\n"
                      "assert st['format'] == 'strata-checkpoint/1' and st['step'] == 6 and st['epoch'] == 2\n"
                      "assert st['rng']['seed'] == '18446744073709551557', st['rng']\n"
                      "assert st['dataset_manifest_hash'] == 'abc123' and st['metadata'] == {'model_name': 'net'}\n"
                      "assert [r['epoch'] for r in st['history']] == [0, 1]\n"
                      "def load(path):\n"
                      "    b = open(path, 'rb').read(); n, = struct.unpack('<Q', b[:8]); h = json.loads(b[8:8 + n])\n"
                      "    h.pop('__metadata__', None); data = b[8 + n:]\n"
                      "    return {k: (v, data[v['data_offsets'][0]:v['data_offsets'][1]]) for k, v in h.items()}\n"
                      "for f in ('model.safetensors', 'optimizer.safetensors'):\n"
                      "    t = load(d + '/' + f)\n"
                      "    assert set(t) == set(st['tensors'][f]), (f, sorted(t))\n"
                      "    for k, (h, raw) in t.items():\n"
                      "        e = st['tensors'][f][k]\n"
                      "        assert e['dtype'] == h['dtype'] and e['shape'] == h['shape'], k\n"
                      "        assert crc32c(raw) == e['crc32c'], (f, k)\n"
                      "m = load(d + '/model.safetensors')\n"
                      "assert m['dense/kernel'][0]['shape'] == [8, 16]\n"
                      "assert np.frombuffer(m['dense/kernel'][1], '<f4')[0] == np.float32(" +
                      StrCat(k00) +
                      ")\n"
                      "o = load(d + '/optimizer.safetensors')\n"
                      "assert np.frombuffer(o['optimizer/iterations'][1], '<i8')[0] == 6\n"
                      "assert o['optimizer/dense/kernel/m'][0]['shape'] == [8, 16], sorted(o)\n"),
            0);

  // Restoring into a fresh trainer (another seed) gives the same state.
  auto other = Net();
  auto t2 = *Trainer::Create(other.get(), Adam(), {.seed = 9});
  ASSERT_TRUE(RestoreCheckpoint(*t2, *c).ok());
  EXPECT_TRUE(SameBits(t2->GetState().weights, s.weights));
  EXPECT_EQ(t2->iterations(), 6);
  EXPECT_DOUBLE_EQ(t2->learning_rate(), 0.005);
}

// Offset of a tensor's data in a safetensors file (from our reader, cross-checked by the python test above).
size_t DataOffset(const std::string& path, const std::string& name) {
  const std::string bytes = *ReadFile(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const std::string header = bytes.substr(8, n);
  const size_t at = header.find("\"" + name + "\"");
  const size_t off = header.find("data_offsets\":[", at) + 15;
  return 8 + n + std::stoull(header.substr(off));
}

TEST(CheckpointTest, CorruptionIsDataLossNamingTheTensor) {
  auto model = Net();
  auto t = *Trainer::Create(model.get(), Adam());
  const std::string dir = TempDir("corrupt") + "/c";
  ASSERT_TRUE(WriteCheckpoint(dir, t->GetState()).ok());
  const std::string file = dir + "/model.safetensors";
  const std::string good = *ReadFile(file);
  std::string bytes = good;
  bytes[DataOffset(file, "dense_1/kernel") + 5] ^= 0x40;
  ASSERT_TRUE(WriteFileAtomic(file, bytes).ok());
  auto bad = ReadCheckpoint(dir);
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  for (const char* want : {"dense_1/kernel", "CRC32C", "model.safetensors"})
    EXPECT_NE(bad.status().message().find(want), std::string::npos) << bad.status().message();
  // Truncated: the strict reader names the file.
  ASSERT_TRUE(WriteFileAtomic(file, good.substr(0, good.size() - 4)).ok());
  bad = ReadCheckpoint(dir);
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("model.safetensors"), std::string::npos) << bad.status().message();
  // A slot CRC.
  ASSERT_TRUE(WriteFileAtomic(file, good).ok());
  const std::string opt = dir + "/optimizer.safetensors";
  bytes = *ReadFile(opt);
  bytes[DataOffset(opt, "optimizer/dense/bias/v")] ^= 1;
  ASSERT_TRUE(WriteFileAtomic(opt, bytes).ok());
  bad = ReadCheckpoint(dir);
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("'optimizer/dense/bias/v' fails its CRC32C"), std::string::npos)
      << bad.status().message();
  EXPECT_EQ(ReadCheckpoint(dir + "/nope").status().code(), StatusCode::kNotFound);
  // A well-formed file whose tensors differ from what state.json lists: every difference named.
  ASSERT_TRUE(io::WriteSafetensors(file, {{"dense/kernel", Tensor::Zeros(DType::kFloat32, Shape{8, 2})},
                                          {"stray", Tensor::Zeros(DType::kInt8, Shape{1})}})
                  .ok());
  bad = ReadCheckpoint(dir);
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  for (const char* want : {"'dense/kernel' is F32 [8,2] in the file, F32 [8,16] in state.json",
                           "'dense/bias' is listed in state.json but missing from the file",
                           "'stray' is in the file but not in state.json"})
    EXPECT_NE(bad.status().message().find(want), std::string::npos) << bad.status().message();
}

TEST(CheckpointTest, WeightsOfAnotherModelListEveryDifference) {
  auto small = Net(15);
  auto t = *Trainer::Create(small.get(), Adam());
  const std::string dir = TempDir("mismatch") + "/c";
  TrainingState s = t->GetState();
  s.weights["extra/w"] = Tensor::Zeros(DType::kFloat32, Shape{2});
  s.weights.erase("dense_1/bias");
  ASSERT_TRUE(WriteCheckpoint(dir, s).ok());
  auto c = ReadCheckpoint(dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto model = Net(16);
  ASSERT_TRUE(model->Build(0).ok());
  Status st = CheckWeightsMatch(*model, c->state.weights, dir);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  for (const char* want : {"'dense/kernel' is float32[8,16] in the model, float32[8,15]", "'dense/bias' is",
                           "missing weight 'dense_1/bias'", "unexpected weight 'extra/w'", "'dense_1/kernel' is"})
    EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
  // And through a trainer: SetState lists slots too.
  auto t16 = *Trainer::Create(model.get(), Adam());
  st = RestoreCheckpoint(*t16, *c);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("optimizer slot 'optimizer/dense/kernel/m'"), std::string::npos) << st.message();
}

TEST(CheckpointTest, DatasetVersionMismatchRefusesToResume) {
  auto model = Net();
  auto t = *Trainer::Create(model.get(), Adam(), {.dataset_hash = "v2"});
  TrainingState s = t->GetState();
  s.dataset_hash = "v1";
  Status st = t->SetState(s);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("v1"), std::string::npos) << st.message();
  s.dataset_hash = "";  // not recorded: accepted
  EXPECT_TRUE(t->SetState(s).ok());
}

// Run ids: random per fresh trainer, written to state.json and the manager's entries, adopted by a resumed trainer;
// a checkpoint without one (written before run ids) still loads and leaves the trainer's own id in place.
TEST(CheckpointTest, RunIdIsRecordedAdoptedOnResumeAndOptional) {
  auto model = Net();
  auto a = *Trainer::Create(model.get(), Adam());
  auto other_model = Net();
  auto b = *Trainer::Create(other_model.get(), Adam());
  const std::string run_a = a->run_id();
  ASSERT_EQ(run_a.size(), 16u);
  EXPECT_EQ(run_a.find_first_not_of("0123456789abcdef"), std::string::npos) << run_a;
  EXPECT_NE(b->run_id(), run_a);  // two fresh runs, even with the same seed
  EXPECT_EQ(a->GetState().run_id, run_a);

  const std::string dir = TempDir("runid");
  auto m = *CheckpointManager::Open(dir);
  ASSERT_TRUE(m->Save(a->GetState()).ok());
  ASSERT_EQ(m->checkpoints().size(), 1u);
  EXPECT_EQ(m->checkpoints()[0].run_id, run_a);
  const std::string path = dir + "/ckpt-0";
  auto st = Json::Parse(*ReadFile(path + "/state.json"), "state.json");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(*st->GetString("run_id"), run_a);
  // Reopened, the entry knows its run; restoring it makes trainer b continue run a.
  EXPECT_EQ((*CheckpointManager::Open(dir))->checkpoints()[0].run_id, run_a);
  auto c = ReadCheckpoint(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->state.run_id, run_a);
  ASSERT_TRUE(RestoreCheckpoint(*b, *c).ok());
  EXPECT_EQ(b->run_id(), run_a);

  // state.json as written before run ids: no run_id key. It loads and restores; the trainer keeps its own id.
  Json old = *st;
  Json stripped = Json::MakeObject();
  for (const auto& [k, v] : old.as_object())
    if (k != "run_id") stripped.Set(k, v);
  ASSERT_TRUE(WriteFileAtomic(path + "/state.json", stripped.Dump(1) + "\n").ok());
  auto legacy = ReadCheckpoint(path);
  ASSERT_TRUE(legacy.ok()) << legacy.status().ToString();
  EXPECT_EQ(legacy->state.run_id, "");
  EXPECT_EQ((*CheckpointManager::Open(dir))->checkpoints()[0].run_id, "");
  auto fresh_model = Net();
  auto fresh = *Trainer::Create(fresh_model.get(), Adam(), {.run_id = "0123456789abcdef"});
  EXPECT_EQ(fresh->run_id(), "0123456789abcdef");
  ASSERT_TRUE(RestoreCheckpoint(*fresh, *legacy).ok());
  EXPECT_EQ(fresh->run_id(), "0123456789abcdef");
  EXPECT_EQ(fresh->iterations(), legacy->state.iterations);
}

// The model config: written to model_config.json (named with its CRC32C by state.json), read back as written and
// rebuilding the model; checkpoints without one read with an empty config; a damaged one is DATA_LOSS.
TEST(CheckpointTest, CarriesTheModelConfig) {
  auto model = Net(5);
  auto t = *Trainer::Create(model.get(), Adam());
  const std::string config = *model->GetConfig();
  const std::string dir = TempDir("config");
  ASSERT_TRUE(WriteCheckpoint(dir, t->GetState(), {.model_config = config}).ok());
  auto c = ReadCheckpoint(dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->model_config, config + "\n");
  auto rebuilt = nn::ModelFromConfig(c->model_config);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_TRUE(CheckWeightsMatch(**rebuilt, c->state.weights, "checkpoint").ok());
  EXPECT_EQ((*rebuilt)->CountParams(), model->CountParams());
  // Without one (as before model configs): no file, no state.json key, an empty config.
  const std::string plain = TempDir("noconfig");
  ASSERT_TRUE(WriteCheckpoint(plain, t->GetState()).ok());
  EXPECT_FALSE(FileExists(plain + "/model_config.json"));
  auto p = ReadCheckpoint(plain);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->model_config, "");
  // Damaged or missing: DATA_LOSS naming the file.
  std::string text = *ReadFile(dir + "/model_config.json");
  text[text.find("\"units\":5")] = ' ';
  ASSERT_TRUE(WriteFileAtomic(dir + "/model_config.json", text).ok());
  auto bad = ReadCheckpoint(dir);
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("model_config.json: fails its CRC32C check"), std::string::npos)
      << bad.status().ToString();
  ASSERT_EQ(std::remove((dir + "/model_config.json").c_str()), 0);
  bad = ReadCheckpoint(dir);
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("model_config.json (named by state.json)"), std::string::npos)
      << bad.status().ToString();
}

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> out;
  auto files = Glob(dir + "/*");
  EXPECT_TRUE(files.ok());
  if (files.ok())
    for (const std::string& p : *files) out.push_back(Basename(p));
  return out;
}

Status SaveWith(CheckpointManager& m, Trainer& t, int64_t step, const char* key, double value) {
  TrainingState s = t.GetState();
  s.iterations = step;
  Logs logs;
  logs.Set(key, value);
  return m.Save(s, {.metrics = logs}).status();
}

// CheckpointState written from specs/tf-formats.md §5.4, for protoc to parse the state file's text format.
constexpr char kCheckpointStateProto[] = R"(syntax = "proto3";
message CheckpointState {
  string model_checkpoint_path = 1;
  repeated string all_model_checkpoint_paths = 2;
  repeated double all_model_checkpoint_timestamps = 3;
  double last_preserved_timestamp = 4;
}
)";

TEST(CheckpointManagerTest, KeepsLastNAndBestKAndWritesTheStateFile) {
  auto model = Net();
  auto t = *Trainer::Create(model.get(), Adam());
  const std::string dir = TempDir("mgr");
  auto m = CheckpointManager::Open(dir, {.max_to_keep = 2, .keep_best = 2});  // val_loss, auto -> min
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const double val_loss[] = {0.5, 0.2, 0.9, 0.3, 0.8, 0.7};
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(SaveWith(**m, *t, (i + 1) * 10, "val_loss", val_loss[i]).ok());
  EXPECT_EQ(Listing(dir), (std::vector<std::string>{"checkpoint", "ckpt-20", "ckpt-40", "ckpt-50", "ckpt-60"}));
  EXPECT_EQ(*(*m)->latest(), dir + "/ckpt-60");
  const std::string text = *ReadFile(dir + "/checkpoint");
  EXPECT_EQ(text.substr(0, text.find("all_model_checkpoint_timestamps")),
            "model_checkpoint_path: \"ckpt-60\"\n"
            "all_model_checkpoint_paths: \"ckpt-20\"\nall_model_checkpoint_paths: \"ckpt-40\"\n"
            "all_model_checkpoint_paths: \"ckpt-50\"\nall_model_checkpoint_paths: \"ckpt-60\"\n");
  // protoc parses it as CheckpointState text format (and would reject unknown fields or bad syntax).
  const std::string proto_dir = TempDir("proto");
  ASSERT_TRUE(MakeDirs(proto_dir).ok());
  std::ofstream(proto_dir + "/cs.proto") << kCheckpointStateProto;
  const std::string cmd = "protoc -I" + proto_dir + " --encode=CheckpointState " + proto_dir + "/cs.proto < " + dir +
                          "/checkpoint | protoc -I" + proto_dir + " --decode=CheckpointState " + proto_dir +
                          "/cs.proto > " + proto_dir + "/decoded.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string decoded = *ReadFile(proto_dir + "/decoded.txt");
  EXPECT_NE(decoded.find("model_checkpoint_path: \"ckpt-60\""), std::string::npos) << decoded;
  EXPECT_EQ(std::count(decoded.begin(), decoded.end(), '\n'), 10) << decoded;  // 1 + 4 + 4 + 1 fields

  // Reopened: the same list, and the best two are still known as such (0.1 at step 70 pushes 0.3 out).
  auto again = CheckpointManager::Open(dir, {.max_to_keep = 2, .keep_best = 2});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ((*again)->checkpoints().size(), 4u);
  EXPECT_EQ(*(*again)->checkpoints()[1].metric, 0.3);
  ASSERT_TRUE(SaveWith(**again, *t, 70, "val_loss", 0.1).ok());
  EXPECT_EQ(Listing(dir), (std::vector<std::string>{"checkpoint", "ckpt-20", "ckpt-60", "ckpt-70"}));
  auto latest = (*again)->ReadLatest();
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->state.iterations, 70);
  // A corrupted latest checkpoint is not skipped: reading it is DATA_LOSS naming the tensor.
  std::string bytes = *ReadFile(dir + "/ckpt-70/model.safetensors");
  bytes.back() ^= 0x01;
  ASSERT_TRUE(WriteFileAtomic(dir + "/ckpt-70/model.safetensors", bytes).ok());
  auto reopened = CheckpointManager::Open(dir, {.max_to_keep = 2, .keep_best = 2});
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  auto corrupt = (*reopened)->ReadLatest();
  EXPECT_EQ(corrupt.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(corrupt.status().message().find("tensor 'dense_1/kernel' fails its CRC32C"), std::string::npos)
      << corrupt.status().message();

  // max mode by name (auto: "acc" in the name), max_to_keep 1.
  const std::string dir2 = TempDir("mgr_acc");
  auto acc = *CheckpointManager::Open(dir2, {.max_to_keep = 1, .keep_best = 1, .monitor = "val_accuracy"});
  const double accuracy[] = {0.5, 0.9, 0.7};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(SaveWith(*acc, *t, i + 1, "val_accuracy", accuracy[i]).ok());
  EXPECT_EQ(Listing(dir2), (std::vector<std::string>{"checkpoint", "ckpt-2", "ckpt-3"}));
  EXPECT_FALSE(CheckpointManager::Open(dir2, {.max_to_keep = -1}).ok());
  EXPECT_FALSE(CheckpointManager::Open(dir2, {.mode = "sideways"}).ok());
}

TEST(CheckpointManagerTest, RecoversWhatAKilledWriterLeft) {
  auto model = Net();
  auto t = *Trainer::Create(model.get(), Adam());
  const std::string dir = TempDir("killed");
  {
    auto m = *CheckpointManager::Open(dir, {.max_to_keep = 3});
    ASSERT_TRUE(SaveWith(*m, *t, 5, "loss", 1).ok());
    ASSERT_TRUE(SaveWith(*m, *t, 5, "loss", 0.5).ok());  // the same name again: replaced in place
    EXPECT_EQ(m->checkpoints().size(), 1u);
  }
  auto c5 = ReadCheckpoint(dir + "/ckpt-5");
  ASSERT_TRUE(c5.ok());
  EXPECT_EQ(*c5->metrics.Find("loss"), 0.5);
  // A writer killed before its rename (a half-written temporary directory), and one killed after the rename but
  // before the state file named its checkpoint.
  ASSERT_TRUE(MakeDirs(dir + "/.ckpt-9.tmp.12345").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/.ckpt-9.tmp.12345/model.safetensors", "junk").ok());
  TrainingState s = t->GetState();
  s.iterations = 7;
  ASSERT_TRUE(WriteCheckpoint(dir + "/ckpt-7", s).ok());
  auto m = CheckpointManager::Open(dir, {.max_to_keep = 3});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(Listing(dir), (std::vector<std::string>{"checkpoint", "ckpt-5", "ckpt-7"}));
  EXPECT_EQ(*(*m)->latest(), dir + "/ckpt-7");
  EXPECT_FALSE(FileExists(dir + "/.ckpt-9.tmp.12345"));
  // A state file naming a checkpoint that is gone: dropped, the rest kept.
  ASSERT_TRUE(WriteFileAtomic(dir + "/checkpoint",
                              "model_checkpoint_path: \"ckpt-8\"\n"
                              "all_model_checkpoint_paths: \"ckpt-5\"\n"
                              "all_model_checkpoint_paths: \"ckpt-8\"\n")
                  .ok());
  m = CheckpointManager::Open(dir, {.max_to_keep = 3});
  ASSERT_TRUE(m.ok());
  ASSERT_EQ((*m)->checkpoints().size(), 2u);  // ckpt-5 from the file, ckpt-7 adopted as newer
  EXPECT_EQ((*m)->checkpoints()[0].name, "ckpt-5");
  // A malformed state file is an error naming the line.
  ASSERT_TRUE(WriteFileAtomic(dir + "/checkpoint", "model_checkpoint_path: \"ckpt-5\"\nbogus_field: 1\n").ok());
  auto bad = CheckpointManager::Open(dir);
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("checkpoint:2: unknown CheckpointState field 'bogus_field'"), std::string::npos)
      << bad.status().message();
  ASSERT_TRUE(WriteFileAtomic(dir + "/checkpoint", "").ok());
  ASSERT_TRUE((*CheckpointManager::Open(dir))->DeleteAll().ok());
}

// ---- ModelCheckpoint ----

TEST(ModelCheckpointTest, TemplatesFormatLikePython) {
  Logs logs;
  logs.Set("val_loss", 0.123456);
  logs.Set("loss", -2.5);
  logs.Set("val_accuracy", 0.91234);
  logs.Set("tiny", 1.5e-7);
  logs.Set("whole", 3.0);
  logs.Set("big", 123.456);
  const std::vector<std::string> patterns = {"ckpt-{epoch:02d}-{val_loss:.2f}",
                                             "{epoch}",
                                             "{val_loss}",
                                             "{val_loss:.3e}",
                                             "{val_accuracy:.1%}",
                                             "{epoch:>4}|{epoch:<4}|{epoch:^5}|",
                                             "{loss:+.2f}|{val_loss: .1f}",
                                             "{{literal}}-{epoch:03}",
                                             "{loss:g}",
                                             "{val_loss:.3}",
                                             "{whole:.1}|{whole:.3}|{big:.3}|{big:.4}|{tiny:.2}",
                                             "{tiny}",
                                             "{whole}",
                                             "{big}",
                                             "{loss:*^10.1f}",
                                             "{epoch:08.3f}",
                                             "{loss:09.2f}",
                                             "{batch:d}",
                                             "w/{epoch:03d}/e{val_loss:.4f}"};
  std::string py =
      "vals = dict(epoch=7, batch=12, val_loss=0.123456, loss=-2.5, val_accuracy=0.91234, tiny=1.5e-7,"
      " whole=3.0, big=123.456)\nout = open('" +
      TempDir("fmt.txt") + "', 'w')\n";
  std::string expected_path = TempDir("fmt.txt");
  for (const std::string& p : patterns) py += "out.write(" + Json(p).Dump() + ".format(**vals) + '\\n')\n";
  ASSERT_EQ(RunPython(py), 0);
  std::string ours;
  for (const std::string& p : patterns) {
    auto s = FormatCheckpointPath(p, {{"epoch", 7}, {"batch", 12}}, logs);
    ASSERT_TRUE(s.ok()) << p << ": " << s.status().ToString();
    ours += *s + "\n";
  }
  EXPECT_EQ(ours, *ReadFile(expected_path));
  // Errors: a missing key names the available ones; 'd' on a float; an unclosed brace.
  auto missing = FormatCheckpointPath("{val_acc}", {{"epoch", 1}}, logs);
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("'{val_acc}', which is not available; keys are epoch, val_loss"),
            std::string::npos)
      << missing.status().message();
  EXPECT_FALSE(FormatCheckpointPath("{val_loss:d}", {}, logs).ok());
  EXPECT_FALSE(FormatCheckpointPath("ckpt-{epoch", {{"epoch", 1}}, logs).ok());
  EXPECT_FALSE(FormatCheckpointPath("ckpt-}", {}, logs).ok());
}

class ModelCheckpointRules : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = Net();
    trainer_ = *Trainer::Create(model_.get(), Adam());
    dir_ = TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void Epochs(Callback& cb, const char* key, std::vector<double> values) {
    for (size_t e = 0; e < values.size(); ++e) {
      Logs logs;
      logs.Set("loss", 1.0);
      if (key) logs.Set(key, values[e]);
      ASSERT_TRUE(cb.OnEpochBegin(*trainer_, static_cast<int>(e)).ok());
      ASSERT_TRUE(cb.OnEpochEnd(*trainer_, static_cast<int>(e), logs).ok());
    }
  }
  std::unique_ptr<nn::Model> model_;
  std::unique_ptr<Trainer> trainer_;
  std::string dir_;
};

TEST_F(ModelCheckpointRules, SaveBestOnlyMinModeNoMinDelta) {
  auto cb = *ModelCheckpoint({.filepath = dir_ + "/e{epoch:02d}", .save_best_only = true});
  Epochs(*cb, "val_loss", {1.0, 0.8, 0.9, 0.8, 0.5});  // an equal value is no improvement
  EXPECT_EQ(Listing(dir_), (std::vector<std::string>{"checkpoint", "e01", "e02", "e05"}));
  auto c = ReadCheckpoint(dir_ + "/e05");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->weights_only);
  EXPECT_EQ(c->model_config, *model_->GetConfig() + "\n");  // ModelCheckpoint records the trainer's model
  EXPECT_EQ(c->state.slots.size(), 8u);
  EXPECT_EQ(*c->metrics.Find("val_loss"), 0.5);
  auto m = *CheckpointManager::Open(dir_, {.max_to_keep = 0});
  EXPECT_EQ(*m->latest(), dir_ + "/e05");
  EXPECT_EQ(m->checkpoints().size(), 3u);  // recorded, never deleted
}

TEST_F(ModelCheckpointRules, AutoModeAccIsMaxAndThresholdAndWeightsOnly) {
  auto cb = *ModelCheckpoint({.filepath = dir_ + "/a{epoch}-{val_acc_top:.2f}",
                              .monitor = "val_acc_top",
                              .save_best_only = true,
                              .save_weights_only = true,
                              .initial_value_threshold = 0.6});
  Epochs(*cb, "val_acc_top", {0.5, 0.7, 0.65, 0.9});
  EXPECT_EQ(Listing(dir_), (std::vector<std::string>{"a2-0.70", "a4-0.90", "checkpoint"}));
  auto c = ReadCheckpoint(dir_ + "/a4-0.90");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->weights_only);
  EXPECT_TRUE(c->state.slots.empty());
  EXPECT_FALSE(FileExists(dir_ + "/a4-0.90/optimizer.safetensors"));
  EXPECT_TRUE(SameBits(c->state.weights, trainer_->GetState().weights));
  // fmeasure* is max too; explicit min overrides.
  EXPECT_TRUE(MakeMonitor("fmeasure_1", "auto", 0, "model_checkpoint")->higher_is_better);
  EXPECT_FALSE(MakeMonitor("fmeasure_1", "auto", 0, "contains_acc")->higher_is_better);
  auto min = *ModelCheckpoint(
      {.filepath = dir_ + "/m{epoch}", .monitor = "val_acc_top", .save_best_only = true, .mode = "min"});
  Epochs(*min, "val_acc_top", {0.5, 0.7, 0.4});
  EXPECT_TRUE(FileExists(dir_ + "/m3") && FileExists(dir_ + "/m1") && !FileExists(dir_ + "/m2"));
}

TEST_F(ModelCheckpointRules, MissingMonitorSavesAnywayAndBadOptionsFail) {
  auto cb = *ModelCheckpoint({.filepath = dir_ + "/x{epoch}", .save_best_only = true});
  Epochs(*cb, nullptr, {0, 0});
  EXPECT_EQ(Listing(dir_), (std::vector<std::string>{"checkpoint", "x1", "x2"}));
  EXPECT_FALSE(ModelCheckpoint({.filepath = ""}).ok());
  EXPECT_FALSE(ModelCheckpoint({.filepath = "a", .mode = "up"}).ok());
  EXPECT_FALSE(ModelCheckpoint({.filepath = "a", .save_freq = -3}).ok());
  // A template naming a key the logs lack fails the save, naming it.
  auto bad = *ModelCheckpoint({.filepath = dir_ + "/{val_f1}"});
  Logs logs;
  logs.Set("loss", 1.0);
  Status st = bad->OnEpochEnd(*trainer_, 0, logs);
  EXPECT_NE(st.message().find("val_f1"), std::string::npos) << st.message();
}

TEST_F(ModelCheckpointRules, IntegerSaveFreqCountsBatchesAcrossEpochs) {
  auto cb = *ModelCheckpoint({.filepath = dir_ + "/b{epoch}-{batch}", .save_freq = 10});
  // 96 examples in batches of 8: 12 batches per epoch; every 10th batch overall.
  ASSERT_TRUE(trainer_->Fit(Blobs(96, 8), {.epochs = 2, .verbose = 0, .callbacks = {cb}}).ok());
  EXPECT_EQ(Listing(dir_), (std::vector<std::string>{"b1-10", "b2-8", "checkpoint"}));
  auto c = ReadCheckpoint(dir_ + "/b2-8");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->state.iterations, 20);
  EXPECT_EQ(c->state.epoch, 1);
  EXPECT_EQ(c->state.batch, 8);
}

}  // namespace
}  // namespace strata::train
