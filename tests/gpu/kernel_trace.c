/* The kernel timeline of a CUDA program, graphs included (issue 18): a CUPTI injection library.
 *
 *   CUDA_INJECTION64_PATH=librssm_kernel_trace.so RSSM_TRACE_OUT=trace.csv replayssm bench e2e ...
 *
 * The CUDA driver loads the library named by CUDA_INJECTION64_PATH at its initialisation and calls
 * InitializeInjection, which turns on CUPTI's concurrent-kernel activity records; at exit every
 * kernel's record is written as one CSV line: start, end (GPU ns), stream, graph node and graph
 * (0 outside graphs), grid and block sizes, name. Why: Nsight Compute times each kernel alone with
 * its caches flushed (281 us for the Mamba-2 fixture's step of 48 kernels, whose graph takes 144
 * us), and nsys is not on the device machine; the records of a graph replay are the step as it
 * runs, with Programmatic Dependent Launch overlapping each kernel's start with its predecessor,
 * so end(n) - end(n - 1) is what kernel n adds to the step (tests/gpu/kernel_trace.py sums it by
 * kernel). CUPTI is part of the CUDA toolkit (libcupti), not a Debian package. */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { BUF_BYTES = 8 << 20, BUF_ALIGN = 8 };

static FILE *trace_out; /* the CSV, open from InitializeInjection to the exit */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(BUF_ALIGN, BUF_BYTES);
  *size = *buffer ? BUF_BYTES : 0;
  *max_records = 0; /* as many as fit */
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                      size_t size, size_t valid) {
  (void)ctx, (void)stream_id, (void)size;
  CUpti_Activity *rec = NULL;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
    fprintf(trace_out, "%llu,%llu,%u,%llu,%u,%d,%d,%d,%d,\"%s\"\n", (unsigned long long)k->start,
            (unsigned long long)k->end, k->streamId, (unsigned long long)k->graphNodeId, k->graphId,
            k->gridX, k->gridY, k->gridZ, k->blockX, k->name ? k->name : "?");
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped > 0)
    fprintf(stderr, "kernel_trace: %zu records dropped\n", dropped);
  free(buffer);
}

static void trace_finish(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (trace_out) fclose(trace_out);
  trace_out = NULL;
}

int InitializeInjection(void) {
  const char *path = getenv("RSSM_TRACE_OUT");
  if (!path) path = "kernel_trace.csv";
  trace_out = fopen(path, "w");
  if (!trace_out) {
    fprintf(stderr, "kernel_trace: cannot write %s\n", path);
    return 0;
  }
  fprintf(trace_out, "start_ns,end_ns,stream,graph_node,graph,grid_x,grid_y,grid_z,block_x,name\n");
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    fprintf(stderr, "kernel_trace: CUPTI refused the kernel activity records\n");
    return 0;
  }
  atexit(trace_finish);
  return 1;
}
