// Every fast kernel, attached to its op in priority order (first that accepts a node wins; the reference kernel is
// the last resort). src/ops/dnnl/ is the only place that includes oneDNN.
#include "ops/op.h"

namespace strata::ops {

void RegisterAllKernels(OpRegistry* r) { (void)r; }

}  // namespace strata::ops
