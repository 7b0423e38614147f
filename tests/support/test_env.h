/* Small helpers shared by the tests. */
#ifndef GJ_TEST_ENV_H
#define GJ_TEST_ENV_H

#include "gridjit.h"

/* 1 if NVRTC can be loaded; otherwise prints "SKIPPED: <reason>" once and returns 0. */
int gj_test_have_nvrtc(void);

/* Reads a whole file; NULL if it cannot. *size receives its length. */
char *gj_test_read_file(const char *path, size_t *size);
/* Writes a whole file (creating directories is the caller's job); 0 on success. */
int gj_test_write_file(const char *path, const char *data, size_t size);
/* GRIDJIT_SOURCE_DIR/relative. Static buffer. */
const char *gj_test_source_path(const char *relative);

/* The arguments SHARD N_SHARDS of a *_sharded test (none: shard 0 of 1) into *shard and
 * *n_shards; 0, or -1 after printing the usage to stderr (main then returns 2). */
int gj_test_shard_args(int argc, char **argv, int *shard, int *n_shards);

#endif
