/* The replay driver: links with one fuzz target in place of libFuzzer and runs it once
 * on every file given, or on every file of every directory given (sorted, not
 * recursive), the way zstd's regression driver does. Used by the ctests of label "fuzz"
 * in every build, so that the corpus (tests/fuzz/corpus/TARGET) is a regression suite
 * even without clang. Exit 0 when every input ran; a broken check aborts. */
#include "fuzz_common.h"

#include <dirent.h>
#include <sys/stat.h>

static int run_file(const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        perror(path);
        return -1;
    }
    uint8_t *data = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *grown = realloc(data, cap);
            if (!grown) {
                abort();
            }
            data = grown;
        }
        size_t got = fread(data + size, 1, cap - size, file);
        size += got;
        if (got == 0) {
            break;
        }
    }
    const int failed = ferror(file);
    fclose(file);
    if (failed) {
        perror(path);
        free(data);
        return -1;
    }
    /* An exact-size copy, so that ASan sees a read past the input's end. */
    uint8_t *exact = malloc(size ? size : 1);
    if (!exact) {
        abort();
    }
    memcpy(exact, data, size);
    free(data);
    LLVMFuzzerTestOneInput(exact, size);
    free(exact);
    return 0;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, size_t *count) {
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        if (entry->d_name[0] == '.') {
            continue;
        }
        char **grown = realloc(names, (n + 1) * sizeof *names);
        if (!grown || !(grown[n] = strdup(entry->d_name))) {
            abort();
        }
        names = grown;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, compare_names);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            rc |= run_file(path);
            ++*count;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argv[0]);
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    size_t count = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            rc = -1;
        } else if (S_ISDIR(st.st_mode)) {
            rc |= run_dir(argv[i], &count);
        } else {
            rc |= run_file(argv[i]);
            count++;
        }
    }
    fprintf(stderr, "%s: ran %zu inputs\n", argv[0], count);
    return rc == 0 && count > 0 ? 0 : 1;
}
