// libFuzzer target for tf.train.Example / SequenceExample decoding and the parse specs (FixedLen with defaults,
// VarLen padded and ragged, single and batched). Build: make fuzz; run: build-fuzz/fuzz/example_fuzz
// fuzz/corpus/example.
#include <cstddef>
#include <cstdint>
#include <string>

#include "strata/example.h"

namespace {

using strata::DType;
using strata::Tensor;
using strata::io::FeatureSpec;

const std::vector<FeatureSpec>& Specs() {
  static const std::vector<FeatureSpec> specs = [] {
    std::vector<FeatureSpec> s = {
        FeatureSpec::FixedLen("label", DType::kInt64, {}, Tensor::Scalar<int64_t>(-1)),
        FeatureSpec::FixedLen("x", DType::kFloat32, {2}, Tensor::Scalar<float>(0)),
        FeatureSpec::FixedLen("name", DType::kString, {}, Tensor::Scalar<std::string>("")),
        FeatureSpec::VarLen("tok", DType::kInt64),
        FeatureSpec::VarLen("ids", DType::kInt64, /*ragged=*/true),
        FeatureSpec::VarLen("image/encoded", DType::kString),
    };
    return s;
  }();
  return specs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto ex = strata::io::ParseExample(bytes);
  if (ex.ok()) {
    // Decode -> encode -> decode is stable, and the encoding is canonical.
    // (Compared as bytes: NaN values are not equal to themselves.)
    const std::string once = strata::io::SerializeExample(*ex);
    auto back = strata::io::ParseExample(once);
    if (!back.ok() || strata::io::SerializeExample(*back) != once) __builtin_trap();
  }
  auto seq = strata::io::ParseSequenceExample(bytes);
  if (seq.ok()) {
    const std::string once = strata::io::SerializeSequenceExample(*seq);
    auto back = strata::io::ParseSequenceExample(once);
    if (!back.ok() || strata::io::SerializeSequenceExample(*back) != once) __builtin_trap();
  }
  auto single = strata::io::ParseSingleExample(bytes, Specs(), "fuzz");
  if (single.ok() && !ex.ok()) __builtin_trap();  // the specs cannot accept what the codec rejects
  (void)strata::io::ParseExampleBatch({bytes, bytes, std::string_view()}, Specs());
  (void)strata::io::ParseSingleSequenceExample(bytes, {Specs()[0]},
                                               {FeatureSpec::VarLen("tok", DType::kInt64),
                                                FeatureSpec::FixedLen("x", DType::kFloat32, {2}, Tensor::Scalar<float>(1))});
  return 0;
}
