/* A thread that compiles one of a network module's programs behind its passes (network_module.h;
 * the policy of when: network_tiers.c), and the waits for it. */
#include "api/network_module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GJ_TEST_HOOKS
#include <stdatomic.h>
#include <time.h>
/* 1: a thread started to compile waits until it is 0 again (tests catch the unfused passes
 * serving so); -1: it gives up without compiling (tests make a cache without its program). */
atomic_int gj__network_test_hold_background;
/* The parts made (1u << part) when the last thread was asked to start. */
atomic_uint gj__network_test_made_at_start;
#endif

/* The threads started and not joined yet, all modules', which exit() joins: a process that
 * ended while one compiles would run the compiler's and the driver's static destructors under
 * it. exit() runs the handlers registered last first, and NVRTC registers some of its
 * destructors on first use, so the handler is registered again at each start, after the
 * compiles and loads before it: a child process ending so crashed in NVRTC 2 times in 8
 * with one registration at the first start in the process, 0 in 16 with this (tests/
 * test_network_launch_path.c). Whoever takes a thread off the list joins it: its module (made
 * again, or destroyed) or the handler. */
typedef struct unjoined_thread {
    pthread_t thread;
    struct unjoined_thread *next;
} unjoined_thread;

static pthread_mutex_t unjoined_lock = PTHREAD_MUTEX_INITIALIZER;
static unjoined_thread *unjoined;

static void join_at_exit(void) {
    pthread_mutex_lock(&unjoined_lock);
    while (unjoined) {
        unjoined_thread *u = unjoined;
        unjoined = u->next;
        pthread_mutex_unlock(&unjoined_lock);
        pthread_join(u->thread, NULL);
        free(u);
        pthread_mutex_lock(&unjoined_lock);
    }
    pthread_mutex_unlock(&unjoined_lock);
}

/* Joins thread unless exit's handler has taken it (then it is joined there). */
static void join(pthread_t thread) {
    pthread_mutex_lock(&unjoined_lock);
    unjoined_thread **p = &unjoined;
    while (*p && !pthread_equal((*p)->thread, thread)) {
        p = &(*p)->next;
    }
    unjoined_thread *found = *p;
    if (found) {
        *p = found->next;
    }
    pthread_mutex_unlock(&unjoined_lock);
    if (found) {
        pthread_join(thread, NULL);
        free(found);
    }
}

void gj__network_background_init(gj__network_background *b) {
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->finished, NULL);
}

static void *compile_behind(void *arg) {
    gj_network_module *m = arg;
    gj__network_background *b = &m->background;
    gj__driver *drv = NULL;
    if (b->context && gj__driver_get(m->ctx->runtime.driver, &m->ctx->diag, &drv) == GJ_OK) {
        drv->CtxSetCurrent(b->context); /* the device the starting thread compiled for */
    }
#ifdef GJ_TEST_HOOKS
    /* At most a minute: a test that fails while holding must not hang its process's exit. */
    for (int ms = 0; atomic_load(&gj__network_test_hold_background) > 0 && ms < 60000; ++ms) {
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    const int abandon = atomic_load(&gj__network_test_hold_background) < 0;
#else
    const int abandon = 0;
#endif
    char message[GJ__MESSAGE_MAX] = "abandoned (a test's hook)";
    const gj_status status = abandon ? GJ_ERROR_INTERNAL : b->make(m, b->part, message, sizeof message);
    pthread_mutex_lock(&b->lock);
    b->status = status;
    snprintf(b->message, sizeof b->message, "%s", message);
    b->running = 0;
    pthread_cond_broadcast(&b->finished);
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

int gj__network_background_start(gj_network_module *m, gj__network_part part, gj__network_make_fn make) {
#ifdef GJ_TEST_HOOKS
    uint32_t made = 0; /* what the tests see of when the thread starts */
    for (int p = 0; p < GJ__NETWORK_PART_COUNT; ++p) {
        made |= gj__network_made(m, (const gj__network_part[]){(gj__network_part)p}, 1) ? 1u << p : 0u;
    }
    atomic_store(&gj__network_test_made_at_start, made);
#endif
    gj__driver *drv = NULL;
    CUcontext context = NULL;
    /* None current: the thread has none either, and compiles where the starting thread would
     * (runtime/scope.h's rule: device 0's primary context). */
    if (gj__driver_get(m->ctx->runtime.driver, &m->ctx->diag, &drv) != GJ_OK ||
        drv->CtxGetCurrent(&context) != CUDA_SUCCESS) {
        gj__diag_clear(&m->ctx->diag);
        return 0;
    }
    gj__network_background *b = &m->background;
    pthread_mutex_lock(&b->lock);
    int started = 0;
    if (!b->running && !(b->tried & 1u << part)) {
        if (b->joinable) {
            join(b->thread); /* one that has finished */
            b->joinable = 0;
        }
        b->part = part;
        b->make = make;
        b->context = context;
        b->tried |= 1u << part;
        b->status = GJ_OK;
        b->message[0] = '\0';
        b->running = 1;
        atexit(join_at_exit); /* again: after what the compiler and driver registered since */
        unjoined_thread *u = malloc(sizeof *u);
        started = u && pthread_create(&b->thread, NULL, compile_behind, m) == 0;
        if (started) {
            pthread_mutex_lock(&unjoined_lock);
            u->thread = b->thread;
            u->next = unjoined;
            unjoined = u;
            pthread_mutex_unlock(&unjoined_lock);
        } else {
            free(u);
        }
        b->running = started;
        b->joinable = started;
    }
    pthread_mutex_unlock(&b->lock);
    return started;
}

void gj__network_background_wait_parts(gj_network_module *m, const gj__network_part *parts, size_t n) {
    gj__network_background *b = &m->background;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        int wanted = 0;
        for (size_t i = 0; b->running && i < n; ++i) {
            wanted |= parts[i] == b->part;
        }
        if (!wanted) {
            break;
        }
        pthread_cond_wait(&b->finished, &b->lock);
    }
    pthread_mutex_unlock(&b->lock);
}

int gj__network_background_compiling(gj_network_module *m, gj__network_part part) {
    gj__network_background *b = &m->background;
    pthread_mutex_lock(&b->lock);
    const int compiling = b->running && b->part == part;
    pthread_mutex_unlock(&b->lock);
    return compiling;
}

int gj__network_background_busy(gj_network_module *m) {
    gj__network_background *b = &m->background;
    pthread_mutex_lock(&b->lock);
    const int running = b->running;
    pthread_mutex_unlock(&b->lock);
    return running;
}

int gj__network_background_tried(gj_network_module *m, gj__network_part part) {
    gj__network_background *b = &m->background;
    pthread_mutex_lock(&b->lock);
    const int tried = (b->tried & 1u << part) != 0;
    pthread_mutex_unlock(&b->lock);
    return tried;
}

void gj__network_background_join(gj_network_module *m) {
    gj__network_background *b = &m->background;
    pthread_mutex_lock(&b->lock);
    while (b->running) {
        pthread_cond_wait(&b->finished, &b->lock);
    }
    if (b->joinable) {
        join(b->thread);
        b->joinable = 0;
    }
    pthread_mutex_unlock(&b->lock);
    pthread_cond_destroy(&b->finished);
    pthread_mutex_destroy(&b->lock);
}

gj_status gj_network_module_wait_compiles(gj_network_module *module) {
    if (!module) {
        return GJ_ERROR_INVALID_ARGUMENT;
    }
    gj__diag_clear(&module->ctx->diag);
    gj__network_background *b = &module->background;
    pthread_mutex_lock(&b->lock);
    while (b->running) {
        pthread_cond_wait(&b->finished, &b->lock);
    }
    gj_status status = b->status;
    const gj__network_part part = b->part;
    char message[GJ__MESSAGE_MAX];
    snprintf(message, sizeof message, "%s", b->message);
    pthread_mutex_unlock(&b->lock);
    if (status == GJ_OK) {
        return GJ_OK;
    }
    if (gj__network_made(module, &part, 1)) {
        return GJ_OK; /* since, by a pass that needed it */
    }
    return gj__fail(&module->ctx->diag, status,
                    "gj_network_module_wait_compiles: the program compiled behind the passes failed (the passes "
                    "that need it compile it again): %s",
                    message);
}

