// A stand-in for PyTorch's headers with just what run.py's generated launchers use,
// so CI can compile every launcher with nvcc where torch is not installed. Not for linking.
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

namespace c10 {
struct Device {};
}  // namespace c10

namespace torch {
struct Tensor {
  bool is_cuda() const;
  bool is_contiguous() const;
  int64_t element_size() const;
  int64_t numel() const;
  void* data_ptr() const;
  c10::Device device() const;
};
}  // namespace torch

void kp_stub_fail(const char* what);
#define TORCH_CHECK(cond, ...) \
  do {                         \
    if (!(cond)) kp_stub_fail(#cond); \
  } while (0)
#define C10_CUDA_CHECK(expr) (void)(expr)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() (void)cudaGetLastError()
