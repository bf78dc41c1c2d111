// Runs ONNX backend test folders (model.onnx + test_data_set_*/{input,output}_*.pb), as shipped by Debian's
// libonnx-testdata, and compares strata's outputs with the expected ones.
#pragma once

#include <string>
#include <vector>

#include "strata/status.h"

namespace strata::onnx {

enum class BackendOutcome { kPass, kFail, kUnsupported };
std::string_view BackendOutcomeName(BackendOutcome o);

struct BackendTestResult {
  std::string name;  // folder name, e.g. "test_abs"
  std::string suite; // parent folder name, e.g. "node"
  BackendOutcome outcome = BackendOutcome::kFail;
  std::string reason;  // why it failed or is unsupported
  double seconds = 0;
};

struct BackendTestOptions {
  double rtol = 1e-3;  // numpy.testing.assert_allclose tolerances, as ONNX's backend runner uses
  double atol = 1e-5;
  bool reference = false;  // run with the reference interpreter instead of a Session
};

// Runs one test folder.
BackendTestResult RunBackendTest(const std::string& dir, const BackendTestOptions& options);
// Lists the test folders (those with a model.onnx) under a suite directory, sorted.
std::vector<std::string> ListBackendTests(const std::string& suite_dir);

}  // namespace strata::onnx
