// Ready-made map functions: Example parsing (single and batched), decode_raw and per-tensor functions.
#include <cstring>

#include "data/dataset_impl.h"

namespace strata::data {
namespace {

StatusOr<Tensor> StringInput(const Element& e, const std::string& input, bool scalar) {
  STRATA_ASSIGN_OR_RETURN(Tensor t, e.Get(input));
  if (t.dtype() != DType::kString || (scalar && t.num_elements() != 1) || (!scalar && t.rank() != 1))
    return InvalidArgumentError("tensor '", input, "' must be a string ", scalar ? "scalar" : "vector",
                                " of serialized Examples, got ", t.TypeString());
  return t;
}

void Replace(Element& e, const std::string& input, io::NamedTensors parsed) {
  e.Erase(input);
  for (auto& [name, t] : parsed) e.Set(name, std::move(t));
}

}  // namespace

MapFn ParseExampleFn(std::vector<io::FeatureSpec> specs, std::string input) {
  return [specs = std::move(specs), input = std::move(input)](Element& e) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor t, StringInput(e, input, /*scalar=*/true));
    // The map adds which record this is; the parser only needs to name the feature.
    STRATA_ASSIGN_OR_RETURN(auto parsed, io::ParseSingleExample(t.data<std::string>()[0], specs, "this record"));
    Replace(e, input, std::move(parsed));
    return Status::OK();
  };
}

MapFn ParseExampleBatchFn(std::vector<io::FeatureSpec> specs, std::string input) {
  return [specs = std::move(specs), input = std::move(input)](Element& e) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor t, StringInput(e, input, /*scalar=*/false));
    std::vector<std::string_view> views(t.values<std::string>().begin(), t.values<std::string>().end());
    std::vector<std::string> where;
    for (const Metadata& m : e.metadata) {
      Element row;
      row.metadata.push_back(m);
      where.push_back(row.Describe());
    }
    STRATA_ASSIGN_OR_RETURN(auto parsed, io::ParseExampleBatch(views, specs, where));
    Replace(e, input, std::move(parsed));
    return Status::OK();
  };
}

MapFn MapTensorFn(std::string name, std::function<StatusOr<Tensor>(const Tensor&)> fn, std::string output) {
  return [name = std::move(name), fn = std::move(fn), output = std::move(output)](Element& e) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor t, e.Get(name));
    STRATA_ASSIGN_OR_RETURN(Tensor r, fn(t));
    e.Set(output.empty() ? name : output, std::move(r));
    return Status::OK();
  };
}

StatusOr<Tensor> DecodeRaw(const Tensor& bytes, DType dtype, const std::vector<int64_t>& shape) {
  if (bytes.dtype() != DType::kString || bytes.num_elements() == 0)
    return InvalidArgumentError("decode_raw expects a non-empty string tensor, got ", bytes.TypeString());
  if (dtype == DType::kString || DTypeSize(dtype) == 0)
    return InvalidArgumentError("decode_raw cannot produce ", DTypeName(dtype));
  const auto strings = bytes.values<std::string>();
  const size_t size = strings[0].size(), width = DTypeSize(dtype);
  for (size_t i = 1; i < strings.size(); ++i)
    if (strings[i].size() != size)
      return InvalidArgumentError("decode_raw: string ", i, " has ", strings[i].size(), " bytes, string 0 has ", size,
                                  " (all must have the same length)");
  if (size % width != 0)
    return InvalidArgumentError("decode_raw: ", size, " bytes is not a whole number of ", DTypeName(dtype), " values");
  const auto count = static_cast<int64_t>(size / width);
  Shape one(shape);
  int unknown = -1;
  int64_t known = 1;
  for (int i = 0; i < one.rank(); ++i) {
    if (one[i] >= 0) {
      known *= one[i];
    } else if (unknown < 0) {
      unknown = i;
    } else {
      return InvalidArgumentError("decode_raw: shape ", shape, " has more than one -1");
    }
  }
  if (unknown >= 0 && known > 0 && count % known == 0) one[unknown] = count / known;
  if (one.NumElements() != count || (unknown >= 0 && one[unknown] < 0))
    return InvalidArgumentError("decode_raw: ", size, " bytes hold ", count, " ", DTypeName(dtype),
                                " values, which do not fit shape ", shape);
  Shape out = bytes.shape();
  for (int64_t d : one) out.PushBack(d);
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, out));
  auto* dst = static_cast<char*>(t.raw_data());
  for (size_t i = 0; i < strings.size(); ++i)
    if (size) std::memcpy(dst + i * size, strings[i].data(), size);
  return t;
}

MapFn DecodeRawFn(std::string input, std::string output, DType dtype, std::vector<int64_t> shape) {
  return [=](Element& e) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor t, e.Get(input));
    STRATA_ASSIGN_OR_RETURN(Tensor r, DecodeRaw(t, dtype, shape));
    if (output != input) e.Erase(input);
    e.Set(output, std::move(r));
    return Status::OK();
  };
}

}  // namespace strata::data
