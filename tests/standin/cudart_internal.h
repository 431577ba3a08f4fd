/* Inside the CUDA runtime stand-in: what the device, memory and stream
 * parts of libcudart.so.13 share. */
#ifndef FBSI_CUDART_INTERNAL_H
#define FBSI_CUDART_INTERNAL_H

#include <cuda_runtime.h>

/* Every entry point returns through this: it keeps the thread's last error
 * for cudaGetLastError, as the real runtime does. */
cudaError_t fbsi_cuda_ret(cudaError_t e);

/* The calling thread's current device (cudaSetDevice). */
int fbsi_current_device(void);

/* Whether [p, p + n) lies inside one live device allocation. */
int fbsi_is_device_span(const void *p, size_t n);

#endif
