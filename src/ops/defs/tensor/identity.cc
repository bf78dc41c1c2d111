// Identity: output = input, as a view (no copy).
#include "ops/op_util.h"

namespace strata::ops {
namespace {

Status IdentityCompute(KernelContext& ctx) {
  ctx.SetOutput(0, ctx.input(0));
  return Status::OK();
}

}  // namespace

void RegisterIdentity(OpRegistry* r) {
  OpSchema s;
  s.name = "Identity";
  s.infer = InferSameAsInput0;
  s.reference = IdentityCompute;
  s.view_input = 0;
  r->Add(std::move(s));
}

}  // namespace strata::ops
