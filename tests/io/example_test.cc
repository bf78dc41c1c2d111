#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "core/file_util.h"
#include "io/tfrecord.h"
#include "strata/example.h"
#include "test_util.h"

namespace strata::io {
namespace {

namespace pb = google::protobuf;
using testing_util::RunPython;
using testing_util::TempPath;

std::string Hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size();) {
    if (hex[i] == ' ') {
      ++i;
      continue;
    }
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    i += 2;
  }
  return out;
}

// specs/tf-formats.md §2.3.
const std::string kSpecExample = Hex(
    "0a 3d 0a 18 0a 05 6c 61 62 65 6c 12 0f 1a 0d 0a 0b 07 ff ff ff ff ff ff ff ff ff 01"
    " 0a 0e 0a 04 6e 61 6d 65 12 06 0a 04 0a 02 61 62"
    " 0a 11 0a 01 78 12 0c 12 0a 0a 08 00 00 c0 3f 00 00 00 c0");
const std::string kSpecSequenceExample = Hex(
    "0a 0d 0a 0b 0a 02 69 64 12 05 1a 03 0a 01 05"
    " 12 18 0a 16 0a 03 74 6f 6b 12 0f 0a 06 1a 04 0a 02 01 02 0a 05 1a 03 0a 01 03");

Example SpecExample() {
  Example e;
  e.features["label"] = Feature::Int64s({7, -1});
  e.features["name"] = Feature::Bytes({"ab"});
  e.features["x"] = Feature::Floats({1.5f, -2.0f});
  return e;
}

TEST(ExampleTest, SpecWorkedExamplesRoundTripByteForByte) {
  EXPECT_EQ(kSpecExample.size(), 63u);
  EXPECT_EQ(SerializeExample(SpecExample()), kSpecExample);
  auto back = ParseExample(kSpecExample);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, SpecExample());

  SequenceExample s;
  s.context["id"] = Feature::Int64s({5});
  s.feature_lists["tok"] = {Feature::Int64s({1, 2}), Feature::Int64s({3})};
  EXPECT_EQ(kSpecSequenceExample.size(), 41u);
  EXPECT_EQ(SerializeSequenceExample(s), kSpecSequenceExample);
  auto sback = ParseSequenceExample(kSpecSequenceExample);
  ASSERT_TRUE(sback.ok());
  EXPECT_EQ(*sback, s);
}

TEST(ExampleTest, ParserAcceptsEverythingProto3Allows) {
  // Feature "a": unpacked int64 (08 varint, twice); feature "b": unpacked float (0d fixed32); map entry with the
  // value before the key; a feature with no kind; a map entry without a key; an unknown field (number 9, varint)
  // at top level and inside Features.
  const std::string a_value = Hex("1a 04 08 05 08 06");            // int64_list { 5, 6 } unpacked
  const std::string b_value = Hex("12 05 0d 00 00 80 3f");         // float_list { 1.0 } unpacked
  std::string features;
  features += Hex("0a 0b") + Hex("0a 01") + "a" + Hex("12 06") + a_value;
  features += Hex("0a 0c") + Hex("12 07") + b_value + Hex("0a 01") + "b";  // value first
  features += Hex("0a 05 0a 01") + "c" + Hex("12 00");               // kind not set
  features += Hex("0a 04 12 02 1a 00");                              // no key: ""
  features += Hex("48 01");                                          // unknown field 9 in Features
  std::string bytes = Hex("0a") + static_cast<char>(features.size()) + features + Hex("48 2a");
  auto e = ParseExample(bytes);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->features.at("a"), Feature::Int64s({5, 6}));
  EXPECT_EQ(e->features.at("b"), Feature::Floats({1.0f}));
  EXPECT_EQ(e->features.at("c").kind, Feature::Kind::kNone);
  EXPECT_EQ(e->features.at(""), Feature::Int64s({}));
  // A repeated key: the last entry wins.
  const std::string dup = Hex("0a 1a") + Hex("0a 0b 0a 01") + "k" + Hex("12 06 1a 04 0a 02 01 02") +
                          Hex("0a 0b 0a 01") + "k" + Hex("12 06 1a 04 0a 02 03 04");
  auto d = ParseExample(dup);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->features.at("k"), Feature::Int64s({3, 4}));
  EXPECT_FALSE(ParseExample(Hex("0a 05 0a 03")).ok());  // truncated
}

// ---- an independent schema loaded at run time (not our .proto, not our generated code) ----

class IndependentSchema {
 public:
  IndependentSchema() {
    auto text = ReadFile(testing_util::SourcePath("tests/io/testdata/tf_example_descriptor.textproto"));
    STRATA_CHECK(text.ok(), text.status().ToString());
    pb::FileDescriptorProto fdp;
    STRATA_CHECK(pb::TextFormat::ParseFromString(*text, &fdp), "bad descriptor text");
    file_ = pool_.BuildFile(fdp);
    STRATA_CHECK(file_ != nullptr, "descriptor does not build");
  }
  std::unique_ptr<pb::Message> New(const std::string& type) {
    return std::unique_ptr<pb::Message>(factory_.GetPrototype(pool_.FindMessageTypeByName(type))->New());
  }

 private:
  pb::DescriptorPool pool_;
  const pb::FileDescriptor* file_ = nullptr;
  pb::DynamicMessageFactory factory_;
};

// Reads map<string, Feature> entries of a dynamic Features message into key -> (kind field name, value count).
std::map<std::string, std::pair<std::string, int>> Summarise(const pb::Message& features) {
  std::map<std::string, std::pair<std::string, int>> out;
  const auto* map_field = features.GetDescriptor()->FindFieldByName("feature");
  const auto* refl = features.GetReflection();
  for (int i = 0; i < refl->FieldSize(features, map_field); ++i) {
    const pb::Message& entry = refl->GetRepeatedMessage(features, map_field, i);
    const auto* ed = entry.GetDescriptor();
    const std::string key = entry.GetReflection()->GetString(entry, ed->FindFieldByName("key"));
    const pb::Message& feature = entry.GetReflection()->GetMessage(entry, ed->FindFieldByName("value"));
    const auto* kind = feature.GetReflection()->GetOneofFieldDescriptor(feature, feature.GetDescriptor()->oneof_decl(0));
    int count = 0;
    if (kind) {
      const pb::Message& list = feature.GetReflection()->GetMessage(feature, kind);
      count = list.GetReflection()->FieldSize(list, list.GetDescriptor()->FindFieldByName("value"));
    }
    out[key] = {kind ? kind->name() : "none", count};
  }
  return out;
}

TEST(ExampleTest, ReflectionOfIndependentSchemaReadsOurBytesAndWritesBytesWeRead) {
  IndependentSchema schema;
  Example ours;
  ours.features["image/encoded"] = Feature::Bytes({std::string("\x89PNG\0\x01", 6), ""});
  ours.features["label"] = Feature::Int64s({-3, 1LL << 40});
  ours.features["w"] = Feature::Floats({0.25f, -1e30f, 3.0f});
  ours.features["empty"] = Feature::Floats({});
  auto msg = schema.New("tensorflow.Example");
  ASSERT_TRUE(msg->ParseFromString(SerializeExample(ours)));
  const auto* refl = msg->GetReflection();
  const pb::Message& features = refl->GetMessage(*msg, msg->GetDescriptor()->FindFieldByName("features"));
  auto summary = Summarise(features);
  EXPECT_EQ(summary["image/encoded"], std::make_pair(std::string("bytes_list"), 2));
  EXPECT_EQ(summary["label"], std::make_pair(std::string("int64_list"), 2));
  EXPECT_EQ(summary["w"], std::make_pair(std::string("float_list"), 3));
  EXPECT_EQ(summary["empty"], std::make_pair(std::string("float_list"), 0));
  // Text format through the independent schema shows the values themselves.
  std::string text;
  pb::TextFormat::PrintToString(*msg, &text);
  EXPECT_NE(text.find("value: -3"), std::string::npos) << text;
  EXPECT_NE(text.find("value: 1099511627776"), std::string::npos) << text;
  EXPECT_NE(text.find("value: -1e+30"), std::string::npos) << text;

  // The other way: the independent schema writes, we read.
  auto theirs = schema.New("tensorflow.SequenceExample");
  ASSERT_TRUE(pb::TextFormat::ParseFromString(
      "context { feature { key: 'id' value { bytes_list { value: 'seq-9' } } } }"
      "feature_lists { feature_list { key: 'frames' value {"
      "  feature { float_list { value: [1, 2] } } feature { float_list { value: [3] } } } } }",
      theirs.get()));
  auto seq = ParseSequenceExample(theirs->SerializeAsString());
  ASSERT_TRUE(seq.ok()) << seq.status().ToString();
  EXPECT_EQ(seq->context.at("id"), Feature::Bytes({"seq-9"}));
  ASSERT_EQ(seq->feature_lists.at("frames").size(), 2u);
  EXPECT_EQ(seq->feature_lists.at("frames")[1], Feature::Floats({3.0f}));
}

TEST(ExampleTest, PythonProtobufReadsOurTfRecordsAndWritesOnesWeRead) {
  const std::string schema = testing_util::SourcePath("tests/io/testdata/tf_example_descriptor.textproto");
  const std::string ours = TempPath("ours_examples.tfrecord");
  {
    auto w = TfRecordWriter::Open(ours);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 20; ++i) {
      Example e;
      e.features["label"] = Feature::Int64s({i - 10});
      e.features["v"] = Feature::Floats({0.5f * i, -1.0f});
      e.features["s"] = Feature::Bytes({std::string(i, 'z')});
      ASSERT_TRUE((*w)->Write(SerializeExample(e)).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  const std::string theirs = TempPath("theirs_examples.tfrecord");
  ASSERT_EQ(RunPython(std::string(testing_util::kPythonTfRecord) +
                      "from google.protobuf import descriptor_pb2, descriptor_pool, text_format, message_factory\n"
                      "fdp = text_format.Parse(open('" + schema + "').read(), descriptor_pb2.FileDescriptorProto())\n"
                      "pool = descriptor_pool.DescriptorPool(); pool.Add(fdp)\n"
                      "f = message_factory.MessageFactory(pool)\n"
                      "Example = f.GetPrototype(pool.FindMessageTypeByName('tensorflow.Example'))\n"
                      "recs = unframe(open('" + ours + "', 'rb').read())\n"
                      "assert len(recs) == 20\n"
                      "for i, r in enumerate(recs):\n"
                      "    e = Example.FromString(r)\n"
                      "    ff = e.features.feature\n"
                      "    assert list(ff['label'].int64_list.value) == [i - 10], ff['label']\n"
                      "    assert list(ff['v'].float_list.value) == [0.5 * i, -1.0]\n"
                      "    assert ff['s'].bytes_list.value[0] == b'z' * i\n"
                      "out = []\n"
                      "for i in range(30):\n"
                      "    e = Example()\n"
                      "    e.features.feature['img'].bytes_list.value.append(bytes([i]) * 784)\n"
                      "    e.features.feature['label'].int64_list.value.append(i % 10)\n"
                      "    e.features.feature['shape'].int64_list.value.extend([28, 28, 1])\n"
                      "    out.append(frame(e.SerializeToString()))\n"
                      "open('" + theirs + "', 'wb').write(b''.join(out))\n"),
            0);
  auto r = TfRecordReader::Open(theirs);
  ASSERT_TRUE(r.ok());
  std::string rec;
  int n = 0;
  while (*(*r)->ReadRecord(&rec)) {
    auto e = ParseExample(rec);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->features.at("img").bytes_list.at(0), std::string(784, static_cast<char>(n)));
    EXPECT_EQ(e->features.at("label"), Feature::Int64s({n % 10}));
    EXPECT_EQ(e->features.at("shape"), Feature::Int64s({28, 28, 1}));
    ++n;
  }
  EXPECT_EQ(n, 30);
}

}  // namespace
}  // namespace strata::io
