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
  if (bytes.dtype() != DType::kString || bytes.num_elements() != 1)
    return InvalidArgumentError("decode_raw expects a string scalar, got ", bytes.TypeString());
  if (dtype == DType::kString || DTypeSize(dtype) == 0)
    return InvalidArgumentError("decode_raw cannot produce ", DTypeName(dtype));
  const std::string& s = bytes.data<std::string>()[0];
  const size_t width = DTypeSize(dtype);
  if (s.size() % width != 0)
    return InvalidArgumentError("decode_raw: ", s.size(), " bytes is not a whole number of ", DTypeName(dtype), " values");
  const auto count = static_cast<int64_t>(s.size() / width);
  Shape out(shape);
  int unknown = -1;
  int64_t known = 1;
  for (int i = 0; i < out.rank(); ++i) {
    if (out[i] >= 0) {
      known *= out[i];
    } else if (unknown < 0) {
      unknown = i;
    } else {
      return InvalidArgumentError("decode_raw: shape ", shape, " has more than one -1");
    }
  }
  if (unknown >= 0 && known > 0 && count % known == 0) out[unknown] = count / known;
  if (out.NumElements() != count || (unknown >= 0 && out[unknown] < 0))
    return InvalidArgumentError("decode_raw: ", s.size(), " bytes hold ", count, " ", DTypeName(dtype),
                                " values, which do not fit shape ", shape);
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, out));
  if (!s.empty()) std::memcpy(t.raw_data(), s.data(), s.size());
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
