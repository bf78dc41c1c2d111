// Structural JSON comparison for tests: objects compare as maps (key order free), arrays in order, integers and
// non-integers are different kinds, numbers compare with a relative tolerance of 1e-6.
#pragma once

#include <string>

namespace strata::serve::testing {

// Empty when equal; otherwise the JSON path of the first difference and what differs.
std::string JsonDiff(const std::string& actual, const std::string& expected);
// gtest assertion form.
#define ExpectJsonEq(actual, expected) ExpectJsonEqImpl(actual, expected, __FILE__, __LINE__)
void ExpectJsonEqImpl(const std::string& actual, const std::string& expected, const char* file, int line);

}  // namespace strata::serve::testing
