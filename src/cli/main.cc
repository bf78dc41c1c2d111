#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "core/logging.h"
#include "core/parallel.h"

namespace strata::cli {

int& ExitCode() {
  static int code = 0;
  return code;
}

int ReportError(const Status& status) {
  std::fprintf(stderr, "strata: error: %s\n", status.message().c_str());
  ExitCode() = 1;
  return 1;
}

GlobalOptions& Globals() {
  static GlobalOptions g;
  return g;
}

void AddConvAlgorithmOption(CLI::App* cmd, graph::ConvAlgorithm* out) {
  cmd->add_option_function<std::string>(
         "--conv_algorithm", [out](const std::string& v) { *out = graph::ParseConvAlgorithm(v).value(); },
         "auto (default): Winograd for the 3x3 convolutions where it measured faster; direct: direct convolution "
         "kernels only (their rounding)")
      ->check(CLI::IsMember({"auto", "direct"}));
}

void AddPrecisionOption(CLI::App* cmd, graph::Precision* out) {
  cmd->add_option_function<std::string>(
         "--precision", [out](const std::string& v) { *out = graph::ParsePrecision(v).value(); },
         "fp32 (default); bf16: convolutions and matmuls compute in bfloat16 with float32 accumulation (weights "
         "converted once at load; activations between convolutions and max pools stored in bfloat16; inputs, "
         "outputs and other ops stay float32; float32 with a warning on a CPU without avx512_bf16)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
}

void AddVersionCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Print the strata version");
  cmd->callback([] { std::printf("strata 0.1.0\n"); });
}

}  // namespace strata::cli

int main(int argc, char** argv) {
  using namespace strata::cli;
  CLI::App app{"strata: data pipeline, ONNX executor, trainer and TF-Serving-compatible model server"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  // The explicit list of subcommands.
  AddVersionCommand(app);
  AddRunCommand(app);
  AddBenchCommand(app);
  AddInspectCommand(app);
  AddServeCommand(app);
  AddConformanceCommand(app);
  AddDataCommand(app);
  AddTrainCommand(app);
  AddEvalCommand(app);
  AddExportCommand(app);
  AddConvertCommand(app);
  AddTfCheckpointCommand(app);
  AddTrainBenchCommand(app);
  AddQuantizeCommand(app);
  AddZooCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return ExitCode();
}
