// Every op strata knows, in one explicit list (no static registration). Keep each family sorted by name.
#include "ops/op.h"

namespace strata::ops {

// generator
void RegisterConstant(OpRegistry* r);
// math
void RegisterAdd(OpRegistry* r);
void RegisterDiv(OpRegistry* r);
void RegisterMatMul(OpRegistry* r);
void RegisterMul(OpRegistry* r);
void RegisterSub(OpRegistry* r);
// nn
void RegisterRelu(OpRegistry* r);
// tensor
void RegisterIdentity(OpRegistry* r);
void RegisterReshape(OpRegistry* r);
void RegisterShape(OpRegistry* r);
void RegisterSize(OpRegistry* r);

void RegisterAllOps(OpRegistry* r) {
  // generator
  RegisterConstant(r);
  // math
  RegisterAdd(r);
  RegisterDiv(r);
  RegisterMatMul(r);
  RegisterMul(r);
  RegisterSub(r);
  // nn
  RegisterRelu(r);
  // tensor
  RegisterIdentity(r);
  RegisterReshape(r);
  RegisterShape(r);
  RegisterSize(r);
}

}  // namespace strata::ops
