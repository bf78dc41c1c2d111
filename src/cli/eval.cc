// `strata eval`: test loss and accuracy of a trained model (--checkpoint_dir: rebuilt from its model config, or the
// zoo model of --model_name for checkpoints without one) or of an exported
// model (--model PATH.onnx, fed raw pixels when its signature scales them), with --show N sample predictions.
#include <cstdio>

#include "cli/train_common.h"
#include "core/json.h"
#include "strata/onnx.h"
#include "strata/train.h"

namespace strata::cli {
namespace {

struct EvalArgs {
  TrainFlags flags;
  std::string model_path;
  int show = 0;
};

// Accuracy of an exported ONNX model with an input_image -> logits signature.
Status EvalExported(const EvalArgs& a) {
  STRATA_ASSIGN_OR_RETURN(graph::Model m, onnx::LoadModel(a.model_path));
  bool raw = false;
  for (const auto& [k, v] : m.metadata)
    if (k == "strata.signature") {
      STRATA_ASSIGN_OR_RETURN(Json sig, Json::Parse(v, "strata.signature"));
      STRATA_ASSIGN_OR_RETURN(double scale, sig.GetDouble("input_scale"));
      raw = scale != 1.0;
    }
  std::vector<std::string> labels;
  for (const auto& [k, v] : m.metadata)
    if (k == "labels") {
      STRATA_ASSIGN_OR_RETURN(Json l, Json::Parse(v, "labels"));
      for (const Json& s : l.as_array()) labels.push_back(s.as_string());
    }
  auto shared = std::make_shared<graph::Model>(std::move(m));
  graph::SessionOptions so;
  so.intra_op_threads = a.flags.intra_op_threads;
  so.conv_algorithm = a.flags.conv_algorithm;
  STRATA_ASSIGN_OR_RETURN(auto session, graph::Session::Create(shared, so));
  STRATA_ASSIGN_OR_RETURN(data::Dataset ds, TestDataset(a.flags, raw));
  STRATA_ASSIGN_OR_RETURN(auto it, ds.MakeIterator({}));
  int64_t correct = 0, total = 0, shown = 0;
  data::Element e;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(bool more, it->GetNext(&e));
    if (!more) break;
    STRATA_ASSIGN_OR_RETURN(Tensor x, e.Get("input_image"));
    STRATA_ASSIGN_OR_RETURN(Tensor y, e.Get("label"));
    std::vector<Tensor> out;
    STRATA_RETURN_IF_ERROR(session->Run({{session->inputs()[0].name, x}}, {"probabilities"}, &out));
    const int64_t c = out[0].dim(1);
    for (int64_t r = 0; r < out[0].dim(0); ++r) {
      const float* p = out[0].data<float>() + r * c;
      int64_t best = 0;
      for (int64_t j = 1; j < c; ++j)
        if (p[j] > p[best]) best = j;
      const int64_t label = y.data<int64_t>()[r];
      correct += best == label;
      ++total;
      if (shown < a.show) {
        ++shown;
        auto name = [&](int64_t k) { return k < (int64_t)labels.size() ? labels[k] : std::to_string(k); };
        std::printf("example %lld: predicted %s (p=%.3f), label %s%s\n", (long long)total - 1, name(best).c_str(),
                    p[best], name(label).c_str(), best == label ? "" : "  <- wrong");
      }
    }
  }
  std::printf("test accuracy (exported model %s): %.4f on %lld examples\n", a.model_path.c_str(),
              double(correct) / double(std::max<int64_t>(total, 1)), (long long)total);
  return Status::OK();
}

Status RunEval(CLI::App* cmd, EvalArgs a) {
  STRATA_RETURN_IF_ERROR(ApplyConfig(cmd, &a.flags));
  if (!a.model_path.empty()) return EvalExported(a);
  if (a.flags.checkpoint_dir.empty()) return InvalidArgumentError("give --checkpoint_dir or --model");
  STRATA_ASSIGN_OR_RETURN(auto model, CheckpointModel(cmd, &a.flags));
  train::CompileOptions c;
  c.loss["logits"] = nn::Loss::SparseCategoricalCrossentropy(true);
  c.metrics["logits"] = {"accuracy"};
  train::TrainerOptions to;
  to.intra_op_threads = a.flags.intra_op_threads;
  to.conv_algorithm = a.flags.conv_algorithm;
  STRATA_ASSIGN_OR_RETURN(auto trainer, train::Trainer::Create(model.get(), c, to));
  STRATA_ASSIGN_OR_RETURN(data::Dataset ds, TestDataset(a.flags));
  STRATA_ASSIGN_OR_RETURN(train::Logs logs, trainer->Evaluate(ds));
  std::printf("%s\n", logs.Format().c_str());
  return Status::OK();
}

}  // namespace

void AddEvalCommand(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval", "Evaluate a trained model (checkpoint or exported ONNX) on test data");
  AddTrainFlags(cmd, &args->flags, false);
  cmd->add_option("--model", args->model_path, "An exported model.onnx (input_image -> logits, probabilities)");
  cmd->add_option("--show", args->show, "Print this many sample predictions");
  cmd->callback([cmd, args] {
    Status s = RunEval(cmd, *args);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
