// Helpers shared by the control-flow ops (If, Loop, Scan): reading body attributes, merging the types of values that
// may come from several places, and moving tensors between a body and the node's outputs.
#pragma once

#include <string_view>
#include <vector>

#include "ops/op_util.h"

namespace strata::ops::control {

// The graph held by attribute `name`, or InvalidArgument naming the node.
StatusOr<const graph::Graph*> RequireBody(const Node& node, std::string_view name);

// What a value may be when it comes from either of two places (If branches, a Loop's initial and carried values):
// dimensions both agree on are kept, others become unknown; different ranks give an unknown rank.
PartialShape MergeShapes(const PartialShape& a, const PartialShape& b);

// Checks a body's arity: `inputs` body inputs (-1: any) and `outputs` body outputs.
Status CheckBodyArity(const Node& node, const graph::Graph& body, std::string_view what, int inputs, int outputs);

// Hands a body result to output i: the tensor itself when nothing else holds its memory (a value the body
// computed), otherwise a copy (a body output that names an outer value, an initializer or a view of one).
Status EmitOutput(KernelContext& ctx, int i, const Tensor& t);

// The shape [0, d...] of a stacked output when the body never ran: `per_iteration` is the body output's declared
// shape (unknown dimensions become 0), with the new zero-length axis inserted at `axis`.
Shape EmptyStackShape(const PartialShape& per_iteration, int axis);

// Copies slice `index` of `src` along `axis` (the axis removed) into `dst`, whose shape is src's without the axis.
void CopySliceOut(const Tensor& src, int axis, int64_t index, Tensor* dst);
// Copies `src` into slice `index` along `axis` of `dst` (src's shape is dst's without the axis).
void CopySliceIn(const Tensor& src, int axis, int64_t index, Tensor* dst);

// src's shape with `axis` removed / with `length` inserted at `axis`.
Shape RemoveAxis(const Shape& s, int axis);
Shape InsertAxis(const Shape& s, int axis, int64_t length);
PartialShape RemoveAxis(const PartialShape& s, int axis);
PartialShape InsertAxis(const PartialShape& s, int axis, Dim length);

// Reads a 1-element bool tensor (Loop/If conditions); InvalidArgument naming `what` otherwise.
StatusOr<bool> ReadCondition(const Node& node, const Tensor& t, std::string_view what);

}  // namespace strata::ops::control
