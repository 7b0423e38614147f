/* The store's state: made, forgotten after a setter, released (see store_impl.h). */
#include "store/store_impl.h"

#include <stdlib.h>

static void free_layers(struct gj__store_state *st) {
    for (size_t i = 0; i < st->n_layers; i++) {
        free(st->layers[i]);
    }
    free(st->layers);
    st->layers = NULL;
    st->n_layers = 0;
}

void gj__store_unresolve(struct gj__store_state *st) {
    /* Counters made against the old directory belong to it. */
    gj__store_stats_flush(st);
    free(st->root);
    st->root = NULL;
    free_layers(st);
    st->resolved = 0;
    st->write_failed = 0;
}

int gj__store_init(gj__store *s) {
    s->state = calloc(1, sizeof *s->state);
    if (!s->state) {
        return -1;
    }
    s->state->set_enabled = -1;
    s->state->set_keep_sidecar = -1;
    pthread_mutex_init(&s->lock, NULL);
    return 0;
}

void gj__store_release(gj__store *s) {
    struct gj__store_state *st = s->state;
    if (!st) {
        return;
    }
    gj__store_unresolve(st); /* flushes the statistics */
    free(st->set_dir);
    free(st->set_path);
    free(st->skipped);
    free(st);
    s->state = NULL;
    pthread_mutex_destroy(&s->lock);
}

