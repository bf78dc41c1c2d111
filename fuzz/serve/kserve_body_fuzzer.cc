// libFuzzer target: Open Inference Protocol (KServe v2) inference bodies without a socket. The input is a decimal
// Inference-Header-Content-Length, a newline, then the body: the JSON part and the binary tensor data after it (no
// newline and no number: the whole input is JSON). Parsed inputs are written back as a response, every other output
// in binary. Any input must give a Status, never a crash, a hang or a leak.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api/kserve_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::serve;  // NOLINT
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view json = input, binary;
  const size_t nl = input.find('\n');
  size_t header = 0;
  if (nl != std::string_view::npos) {
    auto r = std::from_chars(input.data(), input.data() + nl, header);
    if (r.ec == std::errc() && r.ptr == input.data() + nl) {
      const std::string_view body = input.substr(nl + 1);
      if (header > body.size()) return 0;  // the server answers 400 before parsing
      json = body.substr(0, header);
      binary = body.substr(header);
    }
  }
  auto req = ParseV2InferRequest(json, binary);
  if (!req.ok()) return 0;
  std::vector<bool> binary_outputs;
  for (size_t i = 0; i < req->inputs.size(); ++i) binary_outputs.push_back(i % 2 == 1);
  size_t json_size = 0;
  const std::string out = V2InferResponse("m", 1, req->id, req->inputs, binary_outputs, &json_size);
  if (json_size > out.size()) __builtin_trap();
  return 0;
}
