// The `strata` binary: one file per subcommand, each adding itself to the CLI11 app through one function listed
// in main.cc.
#pragma once

#include <CLI/CLI.hpp>

#include "strata/graph.h"
#include "strata/status.h"

namespace strata::cli {

// The process exit code chosen by the subcommand that ran (0 unless it reported an error).
int& ExitCode();
// Prints "strata: error: <message>" to stderr and sets the exit code to 1. Returns 1.
int ReportError(const Status& status);

// Global flags shared by every subcommand.
struct GlobalOptions {
  int threads = 0;  // --threads / --intra_op_threads; 0 = one per core
  graph::ConvAlgorithm conv_algorithm = graph::ConvAlgorithm::kAuto;  // --conv_algorithm
  graph::Precision precision = graph::Precision::kFp32;               // --precision
  bool verbose = false;
};
GlobalOptions& Globals();
// Adds --conv_algorithm auto|direct (SessionOptions::conv_algorithm) to a subcommand.
void AddConvAlgorithmOption(CLI::App* cmd, graph::ConvAlgorithm* out);
// Adds --precision fp32|bf16 (SessionOptions::precision) to a subcommand.
void AddPrecisionOption(CLI::App* cmd, graph::Precision* out);

void AddVersionCommand(CLI::App& app);
void AddConformanceCommand(CLI::App& app);
void AddRunCommand(CLI::App& app);
void AddBenchCommand(CLI::App& app);
void AddInspectCommand(CLI::App& app);
void AddServeCommand(CLI::App& app);
void AddDataCommand(CLI::App& app);
void AddTrainCommand(CLI::App& app);
void AddEvalCommand(CLI::App& app);
void AddExportCommand(CLI::App& app);
void AddConvertCommand(CLI::App& app);
void AddTfCheckpointCommand(CLI::App& app);
void AddTrainBenchCommand(CLI::App& app);
void AddQuantizeCommand(CLI::App& app);
void AddZooCommand(CLI::App& app);

}  // namespace strata::cli
