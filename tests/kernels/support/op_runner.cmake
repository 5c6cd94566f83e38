# dynvm_op_runner: TEST-ONLY harness that compiles OpInstances for the host, loads the
# library through the runtime's loader and calls kernels on vm::Tensors with a TBB backend.
add_library(dynvm_op_runner STATIC op_runner.cc)
target_link_libraries(dynvm_op_runner PUBLIC dynvm_ops dynvm_codegen dynvm_runtime)
