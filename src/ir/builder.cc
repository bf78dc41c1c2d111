// graph::Builder (strata/graph_builder.h): nodes and constants under a name prefix, for user-emitted IR.
#include "strata/graph_builder.h"

namespace strata::graph {

std::string Builder::NextName(std::string_view stem) { return StrCat(prefix_, "/", stem, "_", counter_++); }

std::vector<std::string> Builder::Emit(std::string_view op, std::vector<std::string> inputs, AttributeMap attrs,
                                       int num_outputs, std::string_view domain) {
  Node n;
  n.op_type = std::string(op);
  n.domain = std::string(domain);
  n.opset = n.domain.empty() ? 17 : 1;
  n.name = NextName(op);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  for (int i = 0; i < num_outputs; ++i) n.outputs.push_back(num_outputs == 1 ? n.name : StrCat(n.name, ":", i));
  g_->nodes.push_back(std::move(n));
  return g_->nodes.back().outputs;
}

std::string Builder::Constant(Tensor value) {
  std::string name = NextName("const");
  g_->initializers[name] = std::move(value);
  return name;
}

std::string Builder::Scalar(float value) { return Constant(Tensor::Scalar<float>(value)); }

}  // namespace strata::graph
