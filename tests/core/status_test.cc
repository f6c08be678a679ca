#include "core/status.h"

#include <gtest/gtest.h>

#include <string>

#include "core/exit_code.h"

namespace ic {
namespace {

TEST(Status, SuccessHasCodeOkAndMessageOk) {
  const Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), StatusCode::ok);
  EXPECT_EQ(ok.message(), "OK");
}

TEST(Status, AnErrorWithoutACodeIsInternal) {
  const Status failed = error("bad value ", 7, " for --mode");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.code(), StatusCode::internal);
  EXPECT_EQ(failed.message(), "bad value 7 for --mode");
  EXPECT_EQ(Status::error("plain").code(), StatusCode::internal);
}

TEST(Status, TheShortFormsCarryTheirCodes) {
  const struct {
    Status status;
    StatusCode code;
  } cases[] = {
      {invalid_argument("a"), StatusCode::invalid_argument},
      {not_found("a"), StatusCode::not_found},
      {already_exists("a"), StatusCode::already_exists},
      {resource_exhausted("a"), StatusCode::resource_exhausted},
      {unavailable("a"), StatusCode::unavailable},
      {data_loss("a"), StatusCode::data_loss},
      {cancelled("a"), StatusCode::cancelled},
      {error(StatusCode::internal, "a"), StatusCode::internal},
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(c.status.ok()) << status_code_name(c.code);
    EXPECT_EQ(c.status.code(), c.code) << status_code_name(c.code);
    EXPECT_EQ(c.status.message(), "a");
  }
  EXPECT_EQ(not_found("x", 1, ": ", 2.5).message(), "x1: 2.5");
}

TEST(Status, AnOkCodeNeverMakesAnErrorOk) {
  const Status status(StatusCode::ok, "something failed");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::internal);
  EXPECT_FALSE(error(StatusCode::ok, "x").ok());
}

TEST(Status, NamesAreGrpcs) {
  EXPECT_STREQ(status_code_name(StatusCode::ok), "OK");
  EXPECT_STREQ(status_code_name(StatusCode::invalid_argument), "INVALID_ARGUMENT");
  EXPECT_STREQ(status_code_name(StatusCode::not_found), "NOT_FOUND");
  EXPECT_STREQ(status_code_name(StatusCode::already_exists), "ALREADY_EXISTS");
  EXPECT_STREQ(status_code_name(StatusCode::resource_exhausted), "RESOURCE_EXHAUSTED");
  EXPECT_STREQ(status_code_name(StatusCode::unavailable), "UNAVAILABLE");
  EXPECT_STREQ(status_code_name(StatusCode::data_loss), "DATA_LOSS");
  EXPECT_STREQ(status_code_name(StatusCode::internal), "INTERNAL");
  EXPECT_STREQ(status_code_name(StatusCode::cancelled), "CANCELLED");
}

TEST(Status, WithContextKeepsTheCode) {
  const Status status = data_loss("corrupt record at byte 12").with_context("train-00003");
  EXPECT_EQ(status.code(), StatusCode::data_loss);
  EXPECT_EQ(status.message(), "train-00003: corrupt record at byte 12");
  EXPECT_TRUE(Status().with_context("ignored").ok());
  EXPECT_EQ(Status().with_context("ignored").message(), "OK");
}

Result<int> find(bool present) {
  if (!present) return not_found("no such thing");
  return 42;
}

Result<int> twice(bool present) {
  IC_ASSIGN_OR_RETURN(const int value, find(present));
  return 2 * value;
}

Status check(bool present) {
  IC_RETURN_IF_ERROR(find(present).status());
  return Status();
}

TEST(Status, ResultAndTheMacrosPassTheCodeThrough) {
  const Result<int> missing = find(false);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::not_found);
  EXPECT_EQ(missing.status().message(), "no such thing");
  EXPECT_EQ(twice(false).status().code(), StatusCode::not_found);
  EXPECT_EQ(check(false).code(), StatusCode::not_found);
  ASSERT_TRUE(twice(true).ok());
  EXPECT_EQ(*twice(true), 84);
  EXPECT_EQ(twice(true).status().code(), StatusCode::ok);
}

TEST(ExitCode, BadCommandLinesExit2AndOtherFailures1) {
  EXPECT_EQ(exit_code_for(Status()), 0);
  EXPECT_EQ(exit_code_for(invalid_argument("--top_k=-1")), 2);
  for (const Status& failure : {not_found("x"), already_exists("x"), resource_exhausted("x"),
                                unavailable("x"), data_loss("x"), error("x"), cancelled("x")}) {
    EXPECT_EQ(exit_code_for(failure), 1) << status_code_name(failure.code());
  }
}

}  // namespace
}  // namespace ic
