// strata conformance: runs ONNX backend test folders and reports pass/fail/unsupported per test.
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>

#include "cli/commands.h"
#include "core/file_util.h"
#include "onnx/backend_test.h"

namespace strata::cli {
namespace {

constexpr const char* kDefaultRoot = "/usr/share/libonnx-testdata/data";
const char* const kDefaultSuites[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

// Reads "test_name  reason" lines ('#' comments) of an exclusion list.
StatusOr<std::map<std::string, std::string>> ReadExclusions(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::map<std::string, std::string> out;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.find_first_of(" \t");
    std::string name = line.substr(0, sp);
    std::string reason = sp == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", sp));
    if (reason.empty())
      return InvalidArgumentError(path, ":", line_no, ": exclusion of '", name, "' has no reason");
    out[name] = reason;
  }
  return out;
}

struct ConformanceArgs {
  std::vector<std::string> data;
  std::string filter;
  std::string json;
  std::string expect;
  bool reference = false;
  bool quiet = false;
};

int RunConformance(const ConformanceArgs& args) {
  std::vector<std::string> suites = args.data;
  if (suites.empty())
    for (const char* s : kDefaultSuites) suites.push_back(JoinPath(kDefaultRoot, s));
  std::map<std::string, std::string> exclusions;
  if (!args.expect.empty()) {
    auto ex = ReadExclusions(args.expect);
    if (!ex.ok()) return ReportError(ex.status());
    exclusions = std::move(ex).value();
  }
  std::regex filter;
  try {
    filter = std::regex(args.filter.empty() ? ".*" : args.filter);
  } catch (const std::regex_error& e) {
    return ReportError(InvalidArgumentError("--filter '", args.filter, "' is not a valid regular expression: ", e.what()));
  }
  onnx::BackendTestOptions options;
  options.reference = args.reference;
  std::vector<onnx::BackendTestResult> results;
  int passed = 0, failed = 0, unsupported = 0, unexpected = 0;
  for (const std::string& suite : suites) {
    if (!IsDirectory(suite)) return ReportError(NotFoundError("test folder '", suite, "' does not exist"));
    for (const std::string& dir : onnx::ListBackendTests(suite)) {
      const std::string name = Basename(dir);
      if (!std::regex_search(name, filter)) continue;
      onnx::BackendTestResult r = onnx::RunBackendTest(dir, options);
      const bool excluded = exclusions.count(name) > 0;
      std::string note;
      if (r.outcome == onnx::BackendOutcome::kPass) {
        ++passed;
        if (excluded) note = " (listed as an expected failure: remove it from the list)";
      } else {
        r.outcome == onnx::BackendOutcome::kFail ? ++failed : ++unsupported;
        if (!args.expect.empty() && !excluded) {
          note = " (UNEXPECTED: not on the exclusion list)";
          ++unexpected;
        }
      }
      if (!excluded && r.outcome == onnx::BackendOutcome::kPass) note.clear();
      if (excluded && r.outcome == onnx::BackendOutcome::kPass) ++unexpected;
      if (!args.quiet || r.outcome != onnx::BackendOutcome::kPass || !note.empty())
        std::printf("%-11s %s/%s%s%s%s\n", std::string(onnx::BackendOutcomeName(r.outcome)).c_str(), r.suite.c_str(),
                    name.c_str(), r.reason.empty() ? "" : ": ", r.reason.c_str(), note.c_str());
      results.push_back(std::move(r));
    }
  }
  std::printf("conformance: %d passed, %d failed, %d unsupported\n", passed, failed, unsupported);
  if (!args.json.empty()) {
    std::string js = StrCat("{\"passed\": ", passed, ", \"failed\": ", failed, ", \"unsupported\": ", unsupported,
                            ", \"tests\": [\n");
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      js += StrCat("  {\"suite\": \"", JsonEscape(r.suite), "\", \"name\": \"", JsonEscape(r.name), "\", \"outcome\": \"",
                   onnx::BackendOutcomeName(r.outcome), "\", \"seconds\": ", r.seconds, ", \"reason\": \"",
                   JsonEscape(r.reason), "\"}", i + 1 < results.size() ? ",\n" : "\n");
    }
    js += "]}\n";
    Status s = WriteFileAtomic(args.json, js);
    if (!s.ok()) return ReportError(s);
  }
  if (unexpected > 0) {
    std::fprintf(stderr, "strata: error: %d test(s) differ from the exclusion list %s\n", unexpected, args.expect.c_str());
    ExitCode() = 1;
  }
  return ExitCode();
}

}  // namespace

void AddConformanceCommand(CLI::App& app) {
  auto args = std::make_shared<ConformanceArgs>();
  auto* cmd = app.add_subcommand("conformance", "Run ONNX backend test folders (default: Debian's libonnx-testdata)");
  cmd->add_option("--data", args->data, "A suite folder of test_* folders (repeatable; default: node, "
                                        "pytorch-converted, pytorch-operator, simple)");
  cmd->add_option("--filter", args->filter, "Only tests whose name matches this regular expression");
  cmd->add_option("--json", args->json, "Write every result to this JSON file");
  cmd->add_option("--expect", args->expect,
                  "Exclusion list ('test_name reason' per line): exit non-zero when a test off the list does not "
                  "pass, or a listed test passes");
  cmd->add_flag("--reference", args->reference, "Use the reference interpreter instead of the optimised executor");
  cmd->add_flag("--quiet", args->quiet, "Print only tests that do not pass");
  cmd->callback([args] { RunConformance(*args); });
}

}  // namespace strata::cli
