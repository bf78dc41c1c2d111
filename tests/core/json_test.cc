#include "core/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

namespace strata {
namespace {

TEST(JsonTest, ParsesAndDumpsRoundTrip) {
  auto j = Json::Parse(R"({"a": 1, "b": [true, null, 2.5, "x\ny"], "c": {"d": -7e2}, "e": "\u00e9\ud83d\ude00"})");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->Find("a")->as_int(), 1);
  EXPECT_TRUE(j->Find("a")->is_int());
  EXPECT_EQ((*j->Find("b"))[2].as_double(), 2.5);
  EXPECT_EQ((*j->Find("b"))[3].as_string(), "x\ny");
  EXPECT_EQ(j->Find("c")->Find("d")->as_double(), -700.0);
  EXPECT_EQ(j->Find("e")->as_string(), "\xc3\xa9\xf0\x9f\x98\x80");
  auto again = Json::Parse(j->Dump());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *j);
  EXPECT_EQ(Json(0.1).Dump(), "0.1");
  EXPECT_EQ(Json(3.0).Dump(), "3.0");
  EXPECT_EQ(Json(int64_t{1} << 53).Dump(), "9007199254740992");
}

TEST(JsonTest, ErrorsGiveLineAndColumn) {
  auto j = Json::Parse("{\n  \"a\": 1,\n  \"b\": tru\n}", "state.json");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("state.json:3:8"), std::string::npos) << j.status().message();
  EXPECT_FALSE(Json::Parse("[1, 2").ok());
  EXPECT_FALSE(Json::Parse("\"abc").ok());
  EXPECT_FALSE(Json::Parse("{} x").ok());
  EXPECT_FALSE(Json::Parse(std::string(1000, '[')).ok());  // nesting limit, no stack overflow
  auto obj = Json::Parse(R"({"n": "x"})");
  EXPECT_NE(obj->GetInt("n").status().message().find("key 'n' must be a integer, got a string"), std::string::npos);
  EXPECT_NE(obj->GetInt("m").status().message().find("missing key 'm'"), std::string::npos);
}

TEST(JsonTest, PythonReadsOurOutput) {
  Json o = Json::MakeObject();
  o.Set("pi", 3.141592653589793);
  o.Set("name", "a \"quoted\" \t value");
  o.Set("list", Json::MakeArray({Json(1), Json(2.5), Json(false)}));
  const std::string path = ::testing::TempDir() + "/json_test.json";
  std::ofstream(path) << o.Dump(2);
  const std::string cmd = "/usr/bin/python3 -c \"import json; d = json.load(open('" + path +
                          "')); assert d == {'pi': 3.141592653589793, 'name': 'a \\\"quoted\\\" \\t value', "
                          "'list': [1, 2.5, False]}, d\"";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

}  // namespace
}  // namespace strata
