// libFuzzer target: REST request handling without a socket. The first byte picks what the rest is:
//   0-5: a :predict/:classify/:regress body, parsed against one of several signatures, and the parsed tensors
//        written back as a predict response (row and columnar); for a :predict body, the one-pass reader
//        (NumericPredictBody) must agree with JsonRequest wherever it accepts the body (else: abort, a finding);
//   6-7: a URL path for the REST router.
// Any input must give a Status, never a crash, a hang or a leak.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "serve/api/json_codec.h"
#include "serve/http/rest_url.h"

namespace {

using namespace strata;         // NOLINT
using namespace strata::serve;  // NOLINT

SignatureDef Sig(std::vector<std::pair<std::string, DType>> inputs) {
  SignatureDef s;
  for (auto& [n, d] : inputs) s.inputs.push_back({n, n, d, PartialShape::Unknown()});
  return s;
}

const std::vector<SignatureDef>& Signatures() {
  static const auto* sigs = new std::vector<SignatureDef>{
      Sig({{"x", DType::kFloat32}}),
      Sig({{"a", DType::kFloat32}, {"b", DType::kInt64}}),
      Sig({{"text", DType::kString}, {"flag", DType::kBool}}),
      Sig({{"h", DType::kFloat16}, {"u", DType::kUInt8}, {"d", DType::kFloat64}}),
      Sig({{"i", DType::kInt32}, {"bf", DType::kBFloat16}, {"u64", DType::kUInt64}}),
  };
  return *sigs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 8;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode >= 6) {
    auto route = ParseRestRoute(mode == 6 ? "GET" : "POST", body);
    if (route.ok()) (void)UrlUnescape(route->model_name);
    return 0;
  }
  // Differential check of the one-pass reader: what it accepts, JsonRequest reads to the same tensor.
  NumericPredictBody fast;
  if (mode < 5 && fast.Parse(body)) {
    const SignatureDef& sig = Signatures()[mode];
    NamedTensors fast_inputs;
    if (fast.Inputs(sig, &fast_inputs)) {
      JsonRequest dom;
      NamedTensors dom_inputs;
      bool row = false;
      const bool same = dom.Parse(body).ok() && dom.SignatureName().ok() &&
                        *dom.SignatureName() == fast.signature_name() &&
                        dom.PredictInputs(sig, &dom_inputs, &row).ok() && row == fast.row_format() &&
                        dom_inputs.size() == 1 && dom_inputs[0].first == fast_inputs[0].first &&
                        dom_inputs[0].second.dtype() == fast_inputs[0].second.dtype() &&
                        dom_inputs[0].second.shape() == fast_inputs[0].second.shape() &&
                        std::memcmp(dom_inputs[0].second.raw_data(), fast_inputs[0].second.raw_data(),
                                    fast_inputs[0].second.byte_size()) == 0;
      if (!same) std::abort();
    }
  }
  JsonRequest req;
  if (!req.Parse(body).ok()) return 0;
  (void)req.SignatureName();
  if (mode == 5) {
    ExampleInput in;
    (void)req.Examples("classify", &in);
    return 0;
  }
  const SignatureDef& sig = Signatures()[mode];
  NamedTensors inputs;
  bool row = false;
  if (!req.PredictInputs(sig, &inputs, &row).ok()) return 0;
  // Echo the tensors as outputs: exercises the writer on whatever shapes and values the parser accepted.
  (void)JsonPredictResponse(inputs, row);
  (void)JsonPredictResponse(inputs, !row);
  return 0;
}
