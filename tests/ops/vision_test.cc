// Table rows for the vision ops NonMaxSuppression, RoiAlign and GridSample. NonMaxSuppression rows are the ONNX
// spec's examples plus cases worked by hand; RoiAlign "avg" rows come from torchvision.ops.roi_align (aligned=True is
// half_pixel, False output_half_pixel) and GridSample rows from torch.nn.functional.grid_sample (PyTorch 1.13), on
// inputs drawn with numpy.random.RandomState(11).
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

// The six boxes of the spec's examples ([y1, x1, y2, x2]): two clusters of three overlapping boxes and one alone.
const Tensor kBoxes =
    F({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101}, {1, 6, 4});
const Tensor kScores = F({0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}, {1, 1, 6});

TEST(NonMaxSuppressionTest, SpecExamplesAndEdges) {
  RunOpCase({.label = "suppress by IoU",
             .op_type = "NonMaxSuppression",
             .inputs = {kBoxes, kScores, I64({3}, {1}), F({0.5f}, {1}), F({0}, {1})},
             .expected = {I64({0, 0, 3, 0, 0, 0, 0, 0, 5}, {3, 3})}});
  RunOpCase({.label = "and by score",
             .op_type = "NonMaxSuppression",
             .inputs = {kBoxes, kScores, I64({3}, {1}), F({0.5f}, {1}), F({0.4f}, {1})},
             .expected = {I64({0, 0, 3, 0, 0, 0}, {2, 3})}});
  RunOpCase({.label = "limit output size",
             .op_type = "NonMaxSuppression",
             .inputs = {kBoxes, kScores, I64({2}, {}), F({0.5f}, {}), F({0}, {})},
             .expected = {I64({0, 0, 3, 0, 0, 0}, {2, 3})}});
  RunOpCase(
      {.label = "flipped corners",
       .op_type = "NonMaxSuppression",
       .inputs = {F({1, 1, 0, 0, 0, 0.1f, 1, 1.1f, 0, 0.9f, 1, -0.1f, 0, 10, 1, 11, 1, 10.1f, 0, 11.1f, 1, 101, 0, 100},
                    {1, 6, 4}),
                  kScores, I64({3}, {1}), F({0.5f}, {1}), F({0}, {1})},
       .expected = {I64({0, 0, 3, 0, 0, 0, 0, 0, 5}, {3, 3})}});
  RunOpCase({.label = "center point boxes",
             .op_type = "NonMaxSuppression",
             .attrs = {{"center_point_box", AInt(1)}},
             .inputs = {F({0.5f, 0.5f,  1, 1, 0.5f, 0.6f,  1, 1, 0.5f, 0.4f,   1, 1,
                           0.5f, 10.5f, 1, 1, 0.5f, 10.6f, 1, 1, 0.5f, 100.5f, 1, 1},
                          {1, 6, 4}),
                        kScores, I64({3}, {1}), F({0.5f}, {1}), F({0}, {1})},
             .expected = {I64({0, 0, 3, 0, 0, 0, 0, 0, 5}, {3, 3})}});
  // Two batches, two classes (class 1 ranks the boxes the other way round); results batch-major, then class.
  RunOpCase(
      {.label = "two batches, two classes",
       .op_type = "NonMaxSuppression",
       .inputs = {F({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6, 0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6}, {2, 3, 4}),
                  F({0.9f, 0.8f, 0.1f, 0.2f, 0.8f, 0.9f, 0.9f, 0.8f, 0.1f, 0.2f, 0.8f, 0.9f}, {2, 2, 3}), I64({5}, {1}),
                  F({0.5f}, {1})},
       .expected = {I64({0, 0, 0, 0, 0, 2, 0, 1, 2, 0, 1, 1, 1, 0, 0, 1, 0, 2, 1, 1, 2, 1, 1, 1}, {8, 3})}});
  RunOpCase({.label = "threshold is strict, ties keep the lower index",
             .op_type = "NonMaxSuppression",
             .inputs = {F({0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1}, {1, 3, 4}), F({0.5f, 0.7f, 0.7f}, {1, 1, 3}),
                        I64({3}, {1}), F({1}, {1}), F({0.5f}, {1})},
             .expected = {I64({0, 0, 1, 0, 0, 2}, {2, 3})}});
  RunOpCase({.label = "defaults select nothing",
             .op_type = "NonMaxSuppression",
             .inputs = {kBoxes, kScores},
             .expected = {I64({}, {0, 3})}});
  RunOpCase({.label = "no boxes",
             .op_type = "NonMaxSuppression",
             .inputs = {F({}, {1, 0, 4}), F({}, {1, 2, 0}), I64({3}, {1})},
             .expected = {I64({}, {0, 3})}});
  RunOpCase({.label = "iou threshold above 1",
             .op_type = "NonMaxSuppression",
             .inputs = {kBoxes, kScores, I64({3}, {1}), F({1.5f}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "iou_threshold must be in [0, 1]"});
  RunOpCase({.label = "box coordinates",
             .op_type = "NonMaxSuppression",
             .inputs = {F({0, 0, 1}, {1, 1, 3}), F({1}, {1, 1, 1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "boxes must have shape"});
  RunOpCase({.label = "scores do not match",
             .op_type = "NonMaxSuppression",
             .inputs = {kBoxes, F({1, 2}, {1, 1, 2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "spatial_dimension"});
}

TEST(RoiAlignTest, MatchesTorchvision) {
  const Tensor x =
      F({0.986673355,  0.338054061,  0.239874676,  0.796435773,  0.0636864305, 0.364615649,  0.0700227991, 0.319367707,
         0.0703825951, 0.290263653,  0.790101111,  0.905400336,  0.792621374,  0.561818719,  0.616018414,  0.361483544,
         0.168817297,  0.436240941,  0.732825339,  0.0628876239, 0.0207329784, 0.770548046,  0.299952,     0.701164246,
         0.734667718,  0.932904601,  0.400328428,  0.358437926,  0.806566775,  0.764491081,  0.652614713,  0.810966551,
         0.642214835,  0.957444072,  0.333874434,  0.73825264,   0.949833333,  0.334364146,  0.611631989,  0.365670174,
         0.461540282,  0.0750019923, 0.0193433631, 0.759649456,  0.452759176,  0.622834027,  0.739951491,  0.418663442,
         0.367617637,  0.169028804,  0.793872416,  0.833037436,  0.734212995,  0.875294566,  0.648056448,  0.696066201,
         0.193018079,  0.767632246,  0.334082901,  0.437959194,  0.318870246,  0.568289697,  0.65869236,   0.575558543,
         0.318187207,  0.218003377,  0.844938517,  0.302164674,  0.43822068,   0.0914145857, 0.300979167,  0.0856948048,
         0.343713313,  0.709300995,  0.973968267,  0.625224829,  0.26930353,   0.656708777,  0.626997828,  0.825652242,
         0.533693969,  0.911121666,  0.415503681,  0.286044657,  0.519007742,  0.922450244,  0.723911285,  0.493912995,
         0.497496367,  0.648722172,  0.447771162,  0.550639451,  0.971175194,  0.932413697,  0.840685427,  0.127048254,
         0.556521118,  0.366427213,  0.911795497,  0.313679159,  0.930765927,  0.2383461,    0.420390785,  0.959962666,
         0.595486701,  0.932148635,  0.538850307,  0.228036866,  0.712962925,  0.521573484,  0.505473197,  0.136484519,
         0.144919455,  0.929605126,  0.956058264,  0.965930879,  0.357789248,  0.0458702035, 0.553927302,  0.736309469},
        {2, 2, 5, 6});
  const Tensor rois = F({0.5, 1, 4.5, 3.5, 1, 0, 5.5, 4.5, -1, -1, 2, 2, 3, 2, 3.20000005, 2.0999999}, {4, 4});
  const Tensor batch = I64({0, 1, 1, 0}, {4});
  RunOpCase({.label = "output_half_pixel, sampling_ratio 2, spatial_scale 1.0",
             .op_type = "RoiAlign",
             .attrs = {{"output_height", AInt(2)},
                       {"output_width", AInt(3)},
                       {"sampling_ratio", AInt(2)},
                       {"spatial_scale", AFloat(1.0f)},
                       {"coordinate_transformation_mode", AString("output_half_pixel")}},
             .inputs = {x, rois, batch},
             .expected = {F({0.460254878, 0.373090506, 0.402574539, 0.277869791, 0.414484352, 0.427210897, 0.558885515,
                             0.51936698,  0.579446733, 0.423965812, 0.721923769, 0.721735477, 0.599287629, 0.371754408,
                             0.305589467, 0.726917744, 0.609550834, 0.474997014, 0.742245018, 0.707125962, 0.38729462,
                             0.529392421, 0.249910966, 0.648334265, 0.35174951,  0.451703191, 0.5982849,   0.655426383,
                             0.55072701,  0.53272438,  0.454568028, 0.496847093, 0.753295064, 0.507183492, 0.535301924,
                             0.690040231, 0.42005825,  0.332675368, 0.245292425, 0.601429701, 0.467725158, 0.334020615,
                             0.685906827, 0.706950903, 0.727994859, 0.773013413, 0.758067071, 0.74312079},
                            {4, 2, 2, 3})}});
  RunOpCase({.label = "output_half_pixel, sampling_ratio 0, spatial_scale 0.5",
             .op_type = "RoiAlign",
             .attrs = {{"output_height", AInt(2)},
                       {"output_width", AInt(3)},
                       {"sampling_ratio", AInt(0)},
                       {"spatial_scale", AFloat(0.5f)},
                       {"coordinate_transformation_mode", AString("output_half_pixel")}},
             .inputs = {x, rois, batch},
             .expected = {F({0.289131135, 0.267694145, 0.12055476,  0.409073204, 0.396354556, 0.318793386, 0.619717777,
                             0.472136885, 0.601229668, 0.529725432, 0.52585113,  0.540316939, 0.443118036, 0.491146028,
                             0.447883487, 0.571855307, 0.722368598, 0.675995409, 0.454760432, 0.753741384, 0.805249631,
                             0.73553896,  0.724389315, 0.711037099, 0.318870246, 0.381225109, 0.505934834, 0.647662878,
                             0.586237609, 0.463386893, 0.447771162, 0.473488212, 0.524922371, 0.515739918, 0.495681614,
                             0.455565095, 0.264521182, 0.20679155,  0.240550607, 0.4868083,   0.47960946,  0.434299141,
                             0.528171003, 0.571913779, 0.524596214, 0.546094298, 0.492477387, 0.514499307},
                            {4, 2, 2, 3})}});
  RunOpCase({.label = "half_pixel, sampling_ratio 2, spatial_scale 1.0",
             .op_type = "RoiAlign",
             .attrs = {{"output_height", AInt(2)},
                       {"output_width", AInt(3)},
                       {"sampling_ratio", AInt(2)},
                       {"spatial_scale", AFloat(1.0f)},
                       {"coordinate_transformation_mode", AString("half_pixel")}},
             .inputs = {x, rois, batch},
             .expected = {F({0.354112864, 0.258328944, 0.430895746, 0.506545603,  0.41012466,  0.415919423, 0.554192662,
                             0.544743836, 0.488427043, 0.408759892, 0.593755603,  0.713706732, 0.510069847, 0.434316218,
                             0.277212203, 0.762971699, 0.702014208, 0.438587129,  0.632929206, 0.751162648, 0.631607652,
                             0.680052876, 0.424504519, 0.457437307, 0.0797175616, 0.175023839, 0.274206281, 0.32460779,
                             0.619410515, 0.456808299, 0.11194279,  0.230314851,  0.295173943, 0.257014304, 0.507411242,
                             0.523893535, 0.341274858, 0.339329004, 0.337383211,  0.355905533, 0.352378309, 0.348851115,
                             0.513534367, 0.511698246, 0.509862065, 0.516685069,  0.516235709, 0.51578629},
                            {4, 2, 2, 3})}});
  RunOpCase({.label = "half_pixel, sampling_ratio 0, spatial_scale 0.5",
             .op_type = "RoiAlign",
             .attrs = {{"output_height", AInt(2)},
                       {"output_width", AInt(3)},
                       {"sampling_ratio", AInt(0)},
                       {"spatial_scale", AFloat(0.5f)},
                       {"coordinate_transformation_mode", AString("half_pixel")}},
             .inputs = {x, rois, batch},
             .expected = {F({0.669552982, 0.424215943, 0.271670312, 0.143415302, 0.272230059, 0.220719039, 0.738539934,
                             0.682895124, 0.649790525, 0.883998334, 0.505928159, 0.468064964, 0.451761186, 0.53483063,
                             0.608517647, 0.593025923, 0.430569291, 0.553613782, 0.486155838, 0.574226856, 0.905720413,
                             0.517513216, 0.554956019, 0.799660087, 0.318870246, 0.318870246, 0.381225109, 0.384628773,
                             0.384628773, 0.422227621, 0.447771162, 0.447771162, 0.473488212, 0.461364925, 0.461364925,
                             0.47792691,  0.325552851, 0.319703937, 0.313855022, 0.325022817, 0.319048256, 0.313073695,
                             0.567705035, 0.569699466, 0.571693957, 0.555975854, 0.55834198,  0.560708106},
                            {4, 2, 2, 3})}});
}

TEST(RoiAlignTest, ModesAndErrors) {
  const Tensor x = F({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor roi = F({0, 0, 1, 1}, {1, 4});
  // One sample at (0.5, 0.5): every tap weighs 1/4. avg: 2.5; max takes the largest weighted tap, 4/4, as ONNX
  // Runtime does.
  RunOpCase({.label = "avg (opset 10)",
             .op_type = "RoiAlign",
             .opset = 10,
             .attrs = {{"sampling_ratio", AInt(1)}},
             .inputs = {x, roi, I64({0}, {1})},
             .expected = {F({2.5f}, {1, 1, 1, 1})}});
  RunOpCase({.label = "max",
             .op_type = "RoiAlign",
             .opset = 10,
             .attrs = {{"sampling_ratio", AInt(1)}, {"mode", AString("max")}},
             .inputs = {x, roi, I64({0}, {1})},
             .expected = {F({1}, {1, 1, 1, 1})}});
  RunOpCase({.label = "double, no rois",
             .op_type = "RoiAlign",
             .inputs = {D({1, 2, 3, 4}, {1, 1, 2, 2}), D({}, {0, 4}), I64({}, {0})},
             .expected = {D({}, {0, 1, 1, 1})}});
  RunOpCase({.label = "batch index out of range",
             .op_type = "RoiAlign",
             .inputs = {x, roi, I64({1}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "batch index 1 is out of range [0, 1)"});
  RunOpCase({.label = "bad mode",
             .op_type = "RoiAlign",
             .attrs = {{"mode", AString("median")}},
             .inputs = {x, roi, I64({0}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "mode must be avg or max"});
  RunOpCase({.label = "huge roi with adaptive sampling",
             .op_type = "RoiAlign",
             .inputs = {x, F({0, 0, 1e12f, 1e12f}, {1, 4}), I64({0}, {1})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "too large for sampling_ratio 0"});
}

TEST(GridSampleTest, MatchesPyTorch) {
  const Tensor x = F({-0.639460623, -0.961049497,  -0.0735629499, 0.449867845, -0.159592792, -0.0291458033,
                      -0.974438369, -0.0252567846, 0.883613288,   0.70159018,  0.45992893,   -0.782527864,
                      0.787808359,  0.7143085,     -0.669826746,  0.264668018, -0.959032774, -0.766525447,
                      -0.367265373, -0.684175372,  0.517959177,   0.636550725, -0.310751021, -0.362402409},
                     {1, 2, 3, 4});
  const Tensor grid = F({-1.00968075, -1.08172178, 0.553087413, 0.258812845, -1.1552484, -0.0525270663, -0.255641162,
                         0.9047454, 0.566407859, 0.265366524, 0.13619794, 1.1676662},
                        {1, 2, 3, 2});
  RunOpCase({.label = "bilinear zeros align_corners=0",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("bilinear")}, {"padding_mode", AString("zeros")}, {"align_corners", AInt(0)}},
             .inputs = {x, grid},
             .expected = {F({-0.115998983, -0.357974887, -0.0374082848, 0.452359825, -0.35488826, 0.12796104,
                             0.142909452, -0.475005329, -0.15565756, 0.40836674, -0.478498936, -0.0236426704},
                            {1, 2, 2, 3})}});
  RunOpCase({.label = "bilinear zeros align_corners=1",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("bilinear")}, {"padding_mode", AString("zeros")}, {"align_corners", AInt(1)}},
             .inputs = {x, grid},
             .expected = {F({-0.578675926, -0.477300525, -0.141764253, 0.596010506, -0.46529004, 0.442292988,
                             0.712922275, -0.434472233, -0.665311456, 0.407452226, -0.43845436, -0.0254951362},
                            {1, 2, 2, 3})}});
  RunOpCase({.label = "bilinear border align_corners=0",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("bilinear")}, {"padding_mode", AString("border")}, {"align_corners", AInt(0)}},
             .inputs = {x, grid},
             .expected = {F({-0.639460623, -0.357974887, -0.197401866, 0.703643799, -0.35488826, 0.514932036,
                             0.787808359, -0.475005329, -0.821398079, 0.635212719, -0.478498936, -0.0951412097},
                            {1, 2, 2, 3})}});
  RunOpCase({.label = "bilinear border align_corners=1",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("bilinear")}, {"padding_mode", AString("border")}, {"align_corners", AInt(1)}},
             .inputs = {x, grid},
             .expected = {F({-0.639460623, -0.477300525, -0.184798852, 0.596010506, -0.46529004, 0.531388938,
                             0.787808359, -0.434472233, -0.867276311, 0.407452226, -0.43845436, -0.0306308903},
                            {1, 2, 2, 3})}});
  RunOpCase(
      {.label = "bilinear reflection align_corners=0",
       .op_type = "GridSample",
       .attrs = {{"mode", AString("bilinear")}, {"padding_mode", AString("reflection")}, {"align_corners", AInt(0)}},
       .inputs = {x, grid},
       .expected = {F({-0.639460623, -0.357974887, -0.197401896, 0.703643799, -0.35488826, 0.514932036, 0.787808359,
                       -0.475005329, -0.82139802, 0.635212719, -0.478498936, -0.0951412097},
                      {1, 2, 2, 3})}});
  RunOpCase(
      {.label = "bilinear reflection align_corners=1",
       .op_type = "GridSample",
       .attrs = {{"mode", AString("bilinear")}, {"padding_mode", AString("reflection")}, {"align_corners", AInt(1)}},
       .inputs = {x, grid},
       .expected = {F({-0.604378402, -0.477300525, -0.159950674, 0.596010506, -0.46529004, 0.325779676, 0.644301713,
                       -0.434472233, -0.825700521, 0.407452226, -0.43845436, -0.1068682},
                      {1, 2, 2, 3})}});
  RunOpCase({.label = "nearest zeros align_corners=0",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("nearest")}, {"padding_mode", AString("zeros")}, {"align_corners", AInt(0)}},
             .inputs = {x, grid},
             .expected = {F(
                 {0, -0.0252567846, 0, 0.70159018, -0.0252567846, 0, 0, -0.684175372, 0, 0.636550725, -0.684175372, 0},
                 {1, 2, 2, 3})}});
  RunOpCase({.label = "nearest zeros align_corners=1",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("nearest")}, {"padding_mode", AString("zeros")}, {"align_corners", AInt(1)}},
             .inputs = {x, grid},
             .expected = {F({-0.639460623, -0.974438369, -0.159592792, 0.70159018, -0.974438369, 0.45992893,
                             0.787808359, -0.367265373, -0.959032774, 0.636550725, -0.367265373, -0.310751021},
                            {1, 2, 2, 3})}});
  RunOpCase(
      {.label = "nearest reflection align_corners=0",
       .op_type = "GridSample",
       .attrs = {{"mode", AString("nearest")}, {"padding_mode", AString("reflection")}, {"align_corners", AInt(0)}},
       .inputs = {x, grid},
       .expected = {F({-0.639460623, -0.0252567846, -0.159592792, 0.70159018, -0.0252567846, 0.45992893, 0.787808359,
                       -0.684175372, -0.959032774, 0.636550725, -0.684175372, -0.310751021},
                      {1, 2, 2, 3})}});
  RunOpCase(
      {.label = "nearest reflection align_corners=1",
       .op_type = "GridSample",
       .attrs = {{"mode", AString("nearest")}, {"padding_mode", AString("reflection")}, {"align_corners", AInt(1)}},
       .inputs = {x, grid},
       .expected = {F({-0.639460623, -0.974438369, -0.159592792, 0.70159018, -0.974438369, 0.45992893, 0.787808359,
                       -0.367265373, -0.959032774, 0.636550725, -0.367265373, -0.310751021},
                      {1, 2, 2, 3})}});
  RunOpCase({.label = "bicubic zeros align_corners=0",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("bicubic")}, {"padding_mode", AString("zeros")}, {"align_corners", AInt(0)}},
             .inputs = {x, grid},
             .expected = {F({-0.113064714, -0.556955814, -0.043139793, 0.545499384, -0.549935699, 0.194188043,
                             0.196321055, -0.629234552, -0.156113133, 0.58083117, -0.639823914, -0.0140328882},
                            {1, 2, 2, 3})}});
  RunOpCase({.label = "bicubic zeros align_corners=1",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("bicubic")}, {"padding_mode", AString("zeros")}, {"align_corners", AInt(1)}},
             .inputs = {x, grid},
             .expected = {F({-0.611743808, -0.705923617, -0.184676424, 0.659323096, -0.693560183, 0.687841773,
                             0.81781882, -0.467583716, -0.760393679, 0.479439735, -0.480287075, 0.000377955526},
                            {1, 2, 2, 3})}});
  RunOpCase({.label = "bicubic border align_corners=0",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("bicubic")}, {"padding_mode", AString("border")}, {"align_corners", AInt(0)}},
             .inputs = {x, grid},
             .expected = {F({-0.639734566, -0.489361554, -0.244944364, 0.785688162, -0.477267772, 0.682594776,
                             0.912201047, -0.525812089, -0.926083207, 0.799990714, -0.534926414, -0.0985088721},
                            {1, 2, 2, 3})}});
  RunOpCase({.label = "bicubic border align_corners=1",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("bicubic")}, {"padding_mode", AString("border")}, {"align_corners", AInt(1)}},
             .inputs = {x, grid},
             .expected = {F({-0.66061306, -0.692180991, -0.22896947, 0.619735062, -0.677028418, 0.782404721,
                             0.879013121, -0.411997557, -0.957884252, 0.447076917, -0.420432866, -0.00534669124},
                            {1, 2, 2, 3})}});
  RunOpCase(
      {.label = "bicubic reflection align_corners=0",
       .op_type = "GridSample",
       .attrs = {{"mode", AString("bicubic")}, {"padding_mode", AString("reflection")}, {"align_corners", AInt(0)}},
       .inputs = {x, grid},
       .expected = {F({-0.648906231, -0.489361554, -0.255906343, 0.830428839, -0.477267772, 0.840992868, 1.1181916,
                       -0.525812089, -0.942825437, 0.886992097, -0.534926414, -0.0667716935},
                      {1, 2, 2, 3})}});
  RunOpCase(
      {.label = "bicubic reflection align_corners=1",
       .op_type = "GridSample",
       .attrs = {{"mode", AString("bicubic")}, {"padding_mode", AString("reflection")}, {"align_corners", AInt(1)}},
       .inputs = {x, grid},
       .expected = {F({-0.637656987, -0.63956666, -0.176548928, 0.666357577, -0.624061108, 0.562883914, 0.756135225,
                       -0.433042079, -0.927565217, 0.5210706, -0.443072736, -0.0628394336},
                      {1, 2, 2, 3})}});
}

TEST(GridSampleTest, EdgesAndErrors) {
  const Tensor x = F({1, 2, 3, 4}, {1, 1, 2, 2});
  // The grid's corners: align_corners = 1 hits the corner pixels exactly.
  RunOpCase({.label = "corners, align_corners",
             .op_type = "GridSample",
             .attrs = {{"align_corners", AInt(1)}},
             .inputs = {x, F({-1, -1, 1, -1, -1, 1, 1, 1}, {1, 2, 2, 2})},
             .expected = {F({1, 2, 3, 4}, {1, 1, 2, 2})}});
  // Without align_corners -1 is the outer edge: half of each corner pixel blends with zero padding.
  RunOpCase({.label = "corners, zeros padding",
             .op_type = "GridSample",
             .inputs = {x, F({-1, -1, 1, 1}, {1, 1, 2, 2})},
             .expected = {F({0.25f, 1}, {1, 1, 1, 2})}});
  RunOpCase({.label = "far outside is zero",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("bicubic")}},
             .inputs = {x, F({1e30f, 0, 0, -1e30f}, {1, 1, 2, 2})},
             .expected = {F({0, 0}, {1, 1, 1, 2})}});
  RunOpCase({.label = "far outside, border",
             .op_type = "GridSample",
             .attrs = {{"padding_mode", AString("border")}},
             .inputs = {x, F({1e30f, -1e30f}, {1, 1, 1, 2})},
             .expected = {F({2}, {1, 1, 1, 1})}});
  RunOpCase({.label = "float64, empty grid",
             .op_type = "GridSample",
             .inputs = {D({1, 2, 3, 4}, {1, 1, 2, 2}), D({}, {1, 0, 3, 2})},
             .expected = {D({}, {1, 1, 0, 3})}});
  RunOpCase({.label = "bad mode",
             .op_type = "GridSample",
             .attrs = {{"mode", AString("cubic")}},
             .inputs = {x, F({0, 0}, {1, 1, 1, 2})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "mode must be bilinear, nearest or bicubic"});
  RunOpCase({.label = "grid last dimension",
             .op_type = "GridSample",
             .inputs = {x, F({0, 0, 0}, {1, 1, 1, 3})},
             .expect_error = StatusCode::kInvalidArgument,
             .error_substr = "grid must have shape [N, H_out, W_out, 2]"});
}

}  // namespace
}  // namespace strata::testing
