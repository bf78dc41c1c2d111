#include "ops/defs/math/einsum_equation.h"

#include <algorithm>

namespace strata::ops {
namespace {

int LetterLabel(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// ASCII order of the letter a label stands for ('A' < 'Z' < 'a'), numpy's order for implicit outputs.
int LabelAsciiCode(int label) { return static_cast<unsigned char>(EinsumLabelChar(label)); }

StatusOr<EinsumTerm> ParseTerm(const Node& node, std::string_view term, std::string_view equation) {
  EinsumTerm t;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == '.') {
      if (term.substr(i, 3) != "..." || t.ellipsis_at >= 0)
        return InvalidArgumentError(node.Describe(), ": equation '", equation, "': term '", term,
                                    "' must have at most one '...' and no other '.'");
      t.ellipsis_at = static_cast<int>(t.letters.size());
      i += 2;
      continue;
    }
    const int label = LetterLabel(c);
    if (label < 0)
      return InvalidArgumentError(node.Describe(), ": equation '", equation, "' has the character '", c,
                                  "'; expected letters a-z/A-Z, '...', ',' and '->'");
    t.letters.push_back(label);
  }
  return t;
}

}  // namespace

char EinsumLabelChar(int label) {
  if (label < 26) return static_cast<char>('a' + label);
  if (label < kEllipsisLabel) return static_cast<char>('A' + label - 26);
  return '.';
}

StatusOr<EinsumEquation> ParseEinsum(const Node& node, std::string_view equation, int num_inputs) {
  std::string eq;
  for (char c : equation)
    if (c != ' ' && c != '\t' && c != '\n') eq.push_back(c);
  EinsumEquation out;
  std::string_view lhs = eq;
  const size_t arrow = eq.find("->");
  if (arrow != std::string::npos) {
    lhs = std::string_view(eq).substr(0, arrow);
    std::string_view rhs = std::string_view(eq).substr(arrow + 2);
    if (rhs.find(',') != std::string_view::npos || rhs.find("->") != std::string_view::npos)
      return InvalidArgumentError(node.Describe(), ": equation '", equation, "' must have one output term");
    out.explicit_output = true;
    STRATA_ASSIGN_OR_RETURN(out.output, ParseTerm(node, rhs, equation));
    for (size_t i = 0; i < out.output.letters.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (out.output.letters[i] == out.output.letters[j])
          return InvalidArgumentError(node.Describe(), ": equation '", equation, "': output label '",
                                      EinsumLabelChar(out.output.letters[i]), "' appears more than once");
  }
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    STRATA_ASSIGN_OR_RETURN(EinsumTerm t, ParseTerm(node, lhs.substr(start, comma - start), equation));
    out.inputs.push_back(std::move(t));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (static_cast<int>(out.inputs.size()) != num_inputs)
    return InvalidArgumentError(node.Describe(), ": equation '", equation, "' has ", out.inputs.size(),
                                " input terms but the node has ", num_inputs, " inputs");
  if (out.explicit_output) {
    for (int label : out.output.letters) {
      bool found = false;
      for (const EinsumTerm& t : out.inputs)
        found |= std::find(t.letters.begin(), t.letters.end(), label) != t.letters.end();
      if (!found)
        return InvalidArgumentError(node.Describe(), ": equation '", equation, "': output label '",
                                    EinsumLabelChar(label), "' does not appear in any input term");
    }
  }
  return out;
}

StatusOr<EinsumLabels> ResolveEinsumLabels(const Node& node, const EinsumEquation& eq, const std::vector<int>& ranks) {
  EinsumLabels out;
  int ell = 0;  // dimensions covered by "..." after broadcasting
  for (size_t k = 0; k < eq.inputs.size(); ++k) {
    const EinsumTerm& t = eq.inputs[k];
    const int letters = static_cast<int>(t.letters.size());
    if (t.ellipsis_at < 0 ? ranks[k] != letters : ranks[k] < letters)
      return InvalidArgumentError(node.Describe(), ": input ", k, " has rank ", ranks[k], " but its equation term has ",
                                  letters, " label(s)", t.ellipsis_at < 0 ? "" : " and '...'");
    if (t.ellipsis_at >= 0) ell = std::max(ell, ranks[k] - letters);
  }
  std::vector<int> count(kEllipsisLabel, 0);
  for (size_t k = 0; k < eq.inputs.size(); ++k) {
    const EinsumTerm& t = eq.inputs[k];
    const int e = ranks[k] - static_cast<int>(t.letters.size());
    std::vector<int> labels;
    for (int i = 0; i <= static_cast<int>(t.letters.size()); ++i) {
      if (i == t.ellipsis_at)
        for (int j = 0; j < e; ++j) labels.push_back(kEllipsisLabel + ell - e + j);
      if (i < static_cast<int>(t.letters.size())) {
        labels.push_back(t.letters[i]);
        ++count[t.letters[i]];
      }
    }
    out.inputs.push_back(std::move(labels));
  }
  if (eq.explicit_output) {
    const EinsumTerm& t = eq.output;
    for (int i = 0; i <= static_cast<int>(t.letters.size()); ++i) {
      if (i == t.ellipsis_at)
        for (int j = 0; j < ell; ++j) out.output.push_back(kEllipsisLabel + j);
      if (i < static_cast<int>(t.letters.size())) out.output.push_back(t.letters[i]);
    }
  } else {
    // Implicit output: the ellipsis dimensions, then the letters used exactly once, in ASCII order.
    for (int j = 0; j < ell; ++j) out.output.push_back(kEllipsisLabel + j);
    std::vector<int> once;
    for (int label = 0; label < kEllipsisLabel; ++label)
      if (count[label] == 1) once.push_back(label);
    std::sort(once.begin(), once.end(), [](int a, int b) { return LabelAsciiCode(a) < LabelAsciiCode(b); });
    out.output.insert(out.output.end(), once.begin(), once.end());
  }
  return out;
}

}  // namespace strata::ops
