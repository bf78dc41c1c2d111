// Einsum's equation: parsing and label resolution, shared by Einsum's inference and kernel (src/ops/defs/math/
// einsum.cc). Labels are numbered 0..51 for the letters a-z, A-Z and kEllipsisLabel + i for the i-th dimension covered
// by "..." (right-aligned across operands, so they broadcast as numpy's ellipsis does).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ops/op_util.h"

namespace strata::ops {

inline constexpr int kEllipsisLabel = 52;

// One comma-separated term of the equation, before the ranks are known.
struct EinsumTerm {
  std::vector<int> letters;  // label ids of the letters, in order
  int ellipsis_at = -1;      // index into `letters` where "..." sits, or -1
};

struct EinsumEquation {
  std::vector<EinsumTerm> inputs;
  bool explicit_output = false;
  EinsumTerm output;  // when explicit_output
};

// Parses "ij,jk->ik", "...ii->...i", "ij,ij" (spaces ignored). InvalidArgument names the offending character/term.
StatusOr<EinsumEquation> ParseEinsum(const Node& node, std::string_view equation, int num_inputs);

// Label ids per input axis and for the output, once every input's rank is known.
struct EinsumLabels {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
};
StatusOr<EinsumLabels> ResolveEinsumLabels(const Node& node, const EinsumEquation& eq, const std::vector<int>& ranks);

// The character a label id stands for ('a', 'Z', or '.' for ellipsis dimensions), for messages.
char EinsumLabelChar(int label);

}  // namespace strata::ops
