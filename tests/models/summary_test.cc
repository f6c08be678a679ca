// The --mode=summary table.
#include "models/summary.h"

#include <gtest/gtest.h>

#include <sstream>

#include "models/model.h"
#include "models/model_test_util.h"

namespace ic {
namespace {

using testing::build_or_die;
using testing::options_for;

TEST(Summary, RowsCoverEveryParameterAndMultiplyAdd) {
  ModelOptions o = options_for("inception_v3");
  o.batch_size = 4;
  const Graph g = build_or_die(o);
  const std::vector<SummaryRow> rows = summary_rows(g);
  ASSERT_EQ(rows.size(), g.endpoints.size());
  int64_t params = 0, macs = 0;
  for (const SummaryRow& row : rows) {
    params += row.parameters;
    macs += row.multiply_adds;
  }
  EXPECT_EQ(params, 27145970);
  EXPECT_EQ(macs * 4, g.multiply_adds());

  // Conv2d_1a_3x3: 3x3x3x32 kernel + 32 beta; 149*149*32 outputs of 27 multiply-adds each.
  EXPECT_EQ(rows[0].endpoint, "Conv2d_1a_3x3");
  EXPECT_EQ(rows[0].shape, (Shape{149, 149, 32}));
  EXPECT_EQ(rows[0].parameters, 3 * 3 * 3 * 32 + 32);
  EXPECT_EQ(rows[0].multiply_adds, 149 * 149 * 32 * 27);
  // MaxPool_3a_3x3 has neither.
  EXPECT_EQ(rows[3].endpoint, "MaxPool_3a_3x3");
  EXPECT_EQ(rows[3].parameters, 0);
  EXPECT_EQ(rows[3].multiply_adds, 0);
  // Logits: the 1x1 conv with biases (the pool and dropout rows come before it).
  EXPECT_EQ(rows.back().endpoint, "Logits");
  EXPECT_EQ(rows.back().parameters, 2048 * 1001 + 1001);
  EXPECT_EQ(rows.back().multiply_adds, 2048 * 1001);
}

TEST(Summary, PrintsTheTableAndTotals) {
  ModelOptions o = options_for("inception_v3");
  o.aux_logits = false;
  o.batch_size = 1;
  std::ostringstream out;
  print_summary(build_or_die(o), out);
  const std::string text = out.str();
  EXPECT_NE(text.find("Mixed_6e"), std::string::npos);
  EXPECT_NE(text.find("17x17x768"), std::string::npos);
  EXPECT_NE(text.find("\ntrainable parameters: 23819401\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nnon-trainable parameters: 34432\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmultiply-adds: 5713218144\n"), std::string::npos) << text;
}

TEST(Summary, TotalsArePerImage) {
  ModelOptions o = options_for("resnet50");
  o.batch_size = 3;
  std::ostringstream out;
  print_summary(build_or_die(o), out);
  EXPECT_NE(out.str().find("\ntrainable parameters: 25557032\n"), std::string::npos);
  EXPECT_NE(out.str().find("\nmultiply-adds: 4089184256\n"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace ic
