/* The fake libcuda of tests/fake_cuda/fake_cuda.c, for launch-path tests without a GPU:
 * gj_fake_driver_open() points gridjit at it (GRIDJIT_DRIVER) and resolves its controls. */
#ifndef GJ_TEST_FAKE_DRIVER_H
#define GJ_TEST_FAKE_DRIVER_H

#include <cuda.h>
#include <stdint.h>

#define GJ_FAKE_NO_CARVEOUT (-1000)

typedef struct gj_fake_driver {
    void *handle;
    long (*count)(const char *name); /* calls of "cuNAME" since the last reset */
    long (*count_all)(void);
    void (*reset_counts)(void);
    CUcontext (*context_create)(int device);
    void (*context_renew)(CUcontext context);
    CUstream (*stream_create)(CUcontext context);
    CUcontext (*primary)(int device);
    void (*set_current)(CUcontext context);
    CUcontext (*current)(void); /* the calling thread's */
    void (*fail_next_launch)(CUresult error);
    unsigned (*last_grid_x)(void); /* the last successful launch's grid.x */
    unsigned (*last_grid_y)(void); /* its grid.y */
    unsigned (*last_block_x)(void); /* its block.x */
    unsigned (*last_shared)(void);  /* its dynamic shared memory */
    void (*set_capability)(int device, int major, int minor); /* 9.0 until set */
    void (*set_l2_bytes)(int bytes); /* what every device's L2 size reads; 0 (not said) until set */
    int (*last_carveout)(void);    /* the last PREFERRED_SHARED_MEMORY_CARVEOUT set, or GJ_FAKE_NO_CARVEOUT */
    void (*reset_carveout)(void);
    /* Later launches of a kernel whose name ends in suffix keep their grid.x and their argument
     * index (-1: none). */
    void (*capture_argument)(const char *suffix, int index);
    float (*captured_float)(void);     /* its first 4 bytes, as a float, of the last such launch */
    unsigned (*captured_grid_x)(void); /* the last such launch's grid.x (0: none yet) */
    /* The same for a pointer argument, all 8 bytes of it. */
    void (*capture_pointer)(const char *suffix, int index);
    uint64_t (*captured_pointer)(void);
    /* What cuStreamIsCapturing answers from now on (a CUstreamCaptureStatus; NONE at first). */
    void (*set_capturing)(int status);
    /* The stream order of what is queued from now on: trace() gives "memset(A) record(E1,A)
     * wait(B,E1) launch(KERNEL,B) ...", streams and events named in the order they appear. */
    void (*trace_start)(void);
    const char *(*trace)(void);
    int (*last_priority)(void); /* of the last cuStreamCreateWithPriority; the greatest is -5 */
} gj_fake_driver;

/* Loads $GRIDJIT_FAKE_DRIVER (set by tests/CMakeLists.txt) and sets GRIDJIT_DRIVER to it
 * for the gj_contexts made afterwards. 0, or -1 with the reason printed. */
int gj_fake_driver_open(gj_fake_driver *fake);
/* GRIDJIT_DRIVER back to what it was before gj_fake_driver_open (unset). */
void gj_fake_driver_close(gj_fake_driver *fake);

#endif
