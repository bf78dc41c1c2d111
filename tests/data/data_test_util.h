// Helpers for the data tests.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../io/test_util.h"
#include "strata/data.h"

namespace strata::data::testing {

using testing_util::RunPython;
using testing_util::SourcePath;
using testing_util::TempPath;

// Runs a dataset to the end (epoch `epoch`), failing the test on an error.
inline std::vector<Element> Collect(const Dataset& ds, int64_t epoch = 0) {
  std::vector<Element> out;
  auto it = ds.MakeIterator({.epoch = epoch});
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  if (!it.ok()) return out;
  for (;;) {
    Element e;
    auto more = (*it)->GetNext(&e);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) return out;
    out.push_back(std::move(e));
  }
}

// The int64 scalar (or each value of an int64 tensor) `name` of every element, in order.
inline std::vector<int64_t> Ints(const std::vector<Element>& elements, const std::string& name = "value") {
  std::vector<int64_t> out;
  for (const Element& e : elements) {
    auto t = e.Get(name);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (!t.ok()) continue;
    for (int64_t v : t->values<int64_t>()) out.push_back(v);
  }
  return out;
}

inline std::vector<int64_t> Iota(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

// Threads of this process (entries of /proc/self/task).
inline int ThreadCount() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

}  // namespace strata::data::testing
