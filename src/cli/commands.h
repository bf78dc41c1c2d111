// The `strata` binary: one file per subcommand, each adding itself to the CLI11 app through one function listed
// in main.cc.
#pragma once

#include <CLI/CLI.hpp>

#include "strata/status.h"

namespace strata::cli {

// The process exit code chosen by the subcommand that ran (0 unless it reported an error).
int& ExitCode();
// Prints "strata: error: <message>" to stderr and sets the exit code to 1. Returns 1.
int ReportError(const Status& status);

// Global flags shared by every subcommand.
struct GlobalOptions {
  int threads = 0;  // --threads / --intra_op_threads; 0 = one per core
  bool verbose = false;
};
GlobalOptions& Globals();

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
void AddTrainBenchCommand(CLI::App& app);

}  // namespace strata::cli
