// strata inspect MODEL.onnx [--batch N]: signature, op histogram, parameters, planned peak memory.
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "cli/model_util.h"
#include "strata/onnx.h"

namespace strata::cli {
namespace {

struct InspectArgs {
  std::string model;
  int64_t batch = 1;
};

Status Inspect(const InspectArgs& args) {
  STRATA_ASSIGN_OR_RETURN(LoadedModel lm, LoadModelSession(args.model, Globals().threads, 0, Globals().conv_algorithm,
                                                           Globals().precision));
  const graph::Model& m = *lm.model;
  std::printf("model:     %s\n", args.model.c_str());
  std::printf("producer:  %s %s, IR v%lld", m.producer_name.c_str(), m.producer_version.c_str(),
              static_cast<long long>(m.ir_version));
  for (const auto& [domain, v] : m.opset_imports)
    std::printf(", opset %s=%lld", domain.empty() ? "ai.onnx" : domain.c_str(), static_cast<long long>(v));
  std::printf("\n");
  std::printf("inputs:\n");
  for (const auto& in : lm.session->inputs())
    std::printf("  %-24s %s%s\n", in.name.c_str(), std::string(DTypeName(in.dtype)).c_str(), in.shape.ToString().c_str());
  std::printf("outputs:\n");
  for (const auto& out : lm.session->outputs())
    std::printf("  %-24s %s%s\n", out.name.c_str(), std::string(DTypeName(out.dtype)).c_str(), out.shape.ToString().c_str());
  std::map<std::string, int> hist;
  for (const auto& n : m.graph.nodes) hist[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type]++;
  std::printf("nodes:     %zu (%zu after optimisation)\n", m.graph.nodes.size(), lm.session->optimized_graph().nodes.size());
  for (const auto& [op, count] : hist) std::printf("  %-24s %d\n", op.c_str(), count);
  int64_t params = 0, bytes = 0;
  for (const auto& [name, t] : m.graph.initializers) {
    params += t.num_elements();
    bytes += static_cast<int64_t>(t.byte_size());
  }
  std::printf("parameters: %lld in %zu initializers (%.2f MiB)\n", static_cast<long long>(params),
              m.graph.initializers.size(), static_cast<double>(bytes) / (1 << 20));
  auto shapes = ResolveInputShapes(lm.session->inputs(), args.batch, {});
  if (!shapes.ok()) {
    std::printf("planned peak memory: unknown (%s)\n", shapes.status().message().c_str());
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(int64_t peak, lm.session->PlannedPeakBytes(*shapes));
  std::printf("planned peak memory: %.2f MiB of intermediate values at batch %lld\n", static_cast<double>(peak) / (1 << 20),
              static_cast<long long>(args.batch));
  return Status::OK();
}

}  // namespace

void AddInspectCommand(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  auto* cmd = app.add_subcommand("inspect", "Show a model's signature, ops, parameters and planned memory");
  cmd->add_option("model", args->model, "The .onnx file, or a SavedModel directory (its serving_default signature)")
      ->required();
  cmd->add_option("--batch", args->batch, "Batch size used for the memory plan (default 1)");
  AddConvAlgorithmOption(cmd, &Globals().conv_algorithm);
  AddPrecisionOption(cmd, &Globals().precision);
  cmd->callback([args] {
    Status s = Inspect(*args);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
