/* Inside the CUDA runtime stand-in: what the device, memory and stream
 * parts of libcudart.so.13 share. */
#ifndef FBSI_CUDART_INTERNAL_H
#define FBSI_CUDART_INTERNAL_H

#include <cuda_runtime.h>
#include <stddef.h>

/* Every entry point returns through this: it keeps the thread's last error
 * for cudaGetLastError, as the real runtime does. */
cudaError_t fbsi_cuda_ret(cudaError_t e);

/* The calling thread's current device (cudaSetDevice). */
int fbsi_current_device(void);

/* Whether [p, p + n) lies inside one live device allocation. */
int fbsi_is_device_span(const void *p, size_t n);

/* The device of the live allocation [p, p + n) lies in, -1 if none. */
int fbsi_device_of_span(const void *p, size_t n);

/* Counts a copy's bytes by direction (FB_STANDIN_COPY_STATS). */
void fbsi_count_copy(const void *dst, const void *src, size_t n, enum cudaMemcpyKind kind);

/* The device a stream belongs to (NULL and the per-thread stream: the
 * current one); -1 if it cannot be made. */
int fbsi_stream_device(cudaStream_t stream);

/* A kernel's host twin queued on `stream`: run(args) in stream order on
 * the current device, `args` (malloc'd) owned and freed once run, or here
 * on failure. Refused on a stream of another device
 * (cudaErrorInvalidResourceHandle) and while the stream captures
 * (cudaErrorStreamCaptureUnsupported: the stand-in records no kernels). */
cudaError_t fbsi_launch_twin(cudaStream_t stream, void (*run)(void *), void *args);

/* Whether p lies inside a cudaMallocHost allocation. */
int fbsi_is_pinned(const void *p);

/* A potentially unsafe call (cudaMalloc, cudaFree, cudaMemcpy, cudaMemset,
 * cudaDeviceSynchronize, the legacy stream's query and sync) while a
 * capture forbids it: one in cudaStreamCaptureModeGlobal from any thread,
 * or in cudaStreamCaptureModeThreadLocal begun by this one. Such captures
 * are invalidated and the answer is cudaErrorStreamCaptureUnsupported;
 * otherwise cudaSuccess. */
cudaError_t fbsi_capture_unsafe(void);

/* Work queued on the current device's legacy stream, HELD: it runs only
 * once something orders work after that stream (see cudart_stream.c).
 * The copy's source `staged` is malloc'd memory the op owns (freed once it
 * ran, or here on failure). */
cudaError_t fbsi_legacy_copy_held(void *dst, void *staged, size_t n);
cudaError_t fbsi_legacy_set_held(void *dst, int value, size_t n);

/* Releases the held work of `device`'s legacy stream and waits for all its
 * work, as a synchronous cudaMemcpy does. */
void fbsi_legacy_sync(int device);

/* Releases and waits for every stream of `device` (-1: of every device),
 * the work queued so far; a capturing stream's recorded work is not waited
 * for (it is not running). The implicit sync of cudaFree and
 * cudaDeviceSynchronize. */
void fbsi_device_sync(int device);

#endif
