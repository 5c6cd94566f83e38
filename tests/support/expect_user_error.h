// Test helper shared by every suite: assert that a statement fails with a UserError whose
// one-line message contains a given substring.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "vm/error.h"

// Expects `statement` to throw a dynvm::UserError whose message contains `substring`.
#define EXPECT_USER_ERROR(statement, substring)                                      \
  do {                                                                               \
    try {                                                                            \
      statement;                                                                     \
      ADD_FAILURE() << "expected a UserError containing \"" << (substring) << "\"";  \
    } catch (const ::dynvm::UserError& dynvm_error_) {                               \
      EXPECT_NE(std::string(dynvm_error_.what()).find(substring), std::string::npos) \
          << "the message was: " << dynvm_error_.what();                             \
    }                                                                                \
  } while (0)
