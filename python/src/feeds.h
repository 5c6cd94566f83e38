// Python values -> the entry function's arguments, without copying where the memory
// allows. A NumPy array (or anything with the buffer protocol that NumPy wraps) or a
// `__dlpack__` producer (a PyTorch tensor) whose data is C-contiguous, aligned to its
// element size, little-endian and of a dtype dynvm has is *borrowed*: the VM reads the
// caller's memory. Anything else (a strided view, a Python list or number, a big-endian
// array) is first copied into a fresh NumPy array; lists and numbers take the input's
// dtype. Sequences are Python lists or tuples of tensors; an optional is None or a value.
#pragma once

#include <pybind11/pybind11.h>

#include <utility>
#include <vector>

#include "vm/executable.h"
#include "vm/value.h"

namespace dynvm::python {

namespace py = pybind11;

// A byte range of caller memory the inputs borrow (outputs that overlap one are copied).
struct BorrowedRange {
  const char* begin;
  const char* end;
};

struct BoundFeeds {
  std::vector<vm::Value> values;  // the entry function's arguments, in signature order
  // What keeps the borrowed memory alive while the VM reads it: the arrays, or the DLPack
  // capsules whose destructors release the producer's tensors.
  std::vector<py::object> owners;
  std::vector<BorrowedRange> borrowed;
  size_t copies = 0;  // inputs (or elements) that had to be copied
};

// `feeds` is a mapping from input name to value, or a list or tuple in signature order.
// Throws UserError naming the input for an unknown, missing, duplicate or unconvertible
// one; dtype, rank and dim ranges are Program::check_inputs' to check, during the run.
BoundFeeds bind_feeds(const vm::Executable& exe, py::handle feeds);

}  // namespace dynvm::python
