/* The layers of src/ (docs/design.md, "Where this lives in the code") keep to their
 * direction, so the rule cannot rot:
 *   - every #include of a library header names its folder, and a file includes headers
 *     of its own layer and of the layers it may use only;
 *   - every call between object files goes from a layer to one it may use, and no files
 *     call each other in a loop (read from the symbol tables of the built objects);
 *   - the CLI (tools/) includes nothing from src/ or tests/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_env.h"

/* Each layer and the layers it may use (besides itself). */
static const struct layer {
    const char *name;
    const char *uses; /* space-separated */
} layers[] = {
    {"base", ""},
    {"model", "base"},
    {"codegen", "base model"},
    {"loader", "base"},
    {"store", "base"},
    {"compile", "base model codegen loader store"},
    {"runtime", "base model codegen loader store compile templates"},
    {"api", "base model codegen loader store compile runtime templates"},
};
#define N_LAYERS (sizeof layers / sizeof layers[0])

static int layer_index(const char *name, size_t n) {
    for (size_t i = 0; i < N_LAYERS; i++) {
        if (strlen(layers[i].name) == n && strncmp(layers[i].name, name, n) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static int may_use(int from, const char *to, size_t n) {
    if (layer_index(to, n) == from) {
        return 1;
    }
    const char *list = layers[from].uses;
    for (const char *p = list; *p;) {
        const size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, to, n) == 0) {
            return 1;
        }
        p += len + (p[len] == ' ');
    }
    return 0;
}

/* ------------------------------------------------------------- includes */

/* Checks the quoted includes of one file of layer `from`; returns the violations. */
static int check_includes(const char *path, int from, int is_tool) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    int bad = 0, number = 0;
    while (fgets(line, sizeof line, f)) {
        number++;
        const char *p = line;
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (strncmp(p, "#include \"", 10) != 0) {
            continue;
        }
        const char *name = p + 10;
        const size_t n = strcspn(name, "\"");
        const char *slash = memchr(name, '/', n);
        int ok;
        if (is_tool) { /* the public header and the tool's own headers only */
            ok = !slash && !strstr(name, "..");
        } else if (!slash) {
            ok = n == strlen("gridjit.h") && strncmp(name, "gridjit.h", n) == 0;
        } else {
            ok = may_use(from, name, (size_t)(slash - name));
        }
        if (!ok) {
            printf("%s:%d: includes \"%.*s\"%s\n", path, number, (int)n, name,
                   is_tool ? " (the CLI uses the public header and its own helpers)" : " (a layer it may not use)");
            bad++;
        }
    }
    fclose(f);
    return bad;
}

static int check_directory(const char *dir, int from, int is_tool) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int bad = 0, files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const size_t n = strlen(e->d_name);
        if (n > 2 && (strcmp(e->d_name + n - 2, ".c") == 0 || strcmp(e->d_name + n - 2, ".h") == 0)) {
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            bad += check_includes(path, from, is_tool);
            files++;
        }
    }
    closedir(d);
    assert_true(files > 0);
    return bad;
}

static void includes_point_down(void **state) {
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < N_LAYERS; i++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s", gj_test_source_path("src/"));
        strncat(dir, layers[i].name, sizeof dir - strlen(dir) - 1);
        bad += check_directory(dir, (int)i, 0);
    }
    /* src/ holds the layer folders and nothing else. */
    DIR *d = opendir(gj_test_source_path("src"));
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] != '.' && layer_index(e->d_name, strlen(e->d_name)) < 0) {
            printf("src/%s is not a layer folder\n", e->d_name);
            bad++;
        }
    }
    closedir(d);
    assert_int_equal(bad, 0);
}

static void the_cli_uses_the_public_header(void **state) {
    (void)state;
    int bad = check_directory(gj_test_source_path("tools"), -1, 1);
    bad += check_directory(gj_test_source_path("tools/reference"), -1, 1);
    assert_int_equal(bad, 0);
}

/* ------------------------------------------------------------- calls */

#define MAX_FILES 256
#define MAX_SYMBOLS 4096

typedef struct graph {
    char files[MAX_FILES][160]; /* "store/get.c" */
    int layer[MAX_FILES];
    size_t n_files;
    struct symbol {
        char name[128];
        int file;
    } defined[MAX_SYMBOLS];
    size_t n_defined;
    unsigned char edge[MAX_FILES][MAX_FILES];
} graph;

/* "…/src/store/get.c.o" -> "store/get.c" and its layer. */
static int add_file(graph *g, const char *object) {
    const char *src = strstr(object, "/src/");
    assert_non_null(src);
    src += 5;
    size_t n = strlen(src);
    if (n > 2 && strcmp(src + n - 2, ".o") == 0) {
        n -= 2;
    }
    assert_true(g->n_files < MAX_FILES && n < sizeof g->files[0]);
    memcpy(g->files[g->n_files], src, n);
    g->files[g->n_files][n] = '\0';
    g->layer[g->n_files] = layer_index(src, strcspn(src, "/"));
    return (int)g->n_files++;
}

static void read_symbols(graph *g, const char *object, int file, int defined_pass) {
    char command[4200];
    snprintf(command, sizeof command, "nm -P '%s'", object);
    FILE *pipe = popen(command, "r");
    assert_non_null(pipe);
    char line[1024];
    while (fgets(line, sizeof line, pipe)) {
        char name[128], type[8];
        if (sscanf(line, "%127s %7s", name, type) != 2 || strncmp(name, "gj", 2) != 0) {
            continue;
        }
        if (defined_pass && strchr("TDBRC", type[0])) {
            assert_true(g->n_defined < MAX_SYMBOLS);
            memcpy(g->defined[g->n_defined].name, name, sizeof name);
            g->defined[g->n_defined++].file = file;
        } else if (!defined_pass && type[0] == 'U') {
            for (size_t i = 0; i < g->n_defined; i++) {
                if (strcmp(g->defined[i].name, name) == 0 && g->defined[i].file != file) {
                    g->edge[file][g->defined[i].file] = 1;
                }
            }
        }
    }
    pclose(pipe);
}

/* Tarjan's strongly connected components: every one with more than one file is a loop. */
typedef struct tarjan {
    const graph *g;
    int index[MAX_FILES], low[MAX_FILES], on_stack[MAX_FILES], stack[MAX_FILES];
    int next, top, loops;
} tarjan;

static void connect(tarjan *t, int v) {
    t->index[v] = t->low[v] = ++t->next;
    t->stack[t->top++] = v;
    t->on_stack[v] = 1;
    for (size_t w = 0; w < t->g->n_files; w++) {
        if (!t->g->edge[v][w]) {
            continue;
        }
        if (!t->index[w]) {
            connect(t, (int)w);
            t->low[v] = t->low[v] < t->low[w] ? t->low[v] : t->low[w];
        } else if (t->on_stack[w]) {
            t->low[v] = t->low[v] < t->index[w] ? t->low[v] : t->index[w];
        }
    }
    if (t->low[v] != t->index[v]) {
        return;
    }
    int size = 0;
    char members[2048] = "";
    for (int w = -1; w != v;) {
        w = t->stack[--t->top];
        t->on_stack[w] = 0;
        size++;
        strncat(members, " ", sizeof members - strlen(members) - 1);
        strncat(members, t->g->files[w], sizeof members - strlen(members) - 1);
    }
    if (size > 1) {
        printf("files calling each other in a loop:%s\n", members);
        t->loops++;
    }
}

static void calls_point_down_without_loops(void **state) {
    (void)state;
    const char *list = getenv("GRIDJIT_OBJECT_LIST");
    assert_non_null(list);
    FILE *f = fopen(list, "r");
    assert_non_null(f);
    static graph g;
    memset(&g, 0, sizeof g);
    static char objects[MAX_FILES][2048];
    char line[2048];
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strstr(line, "/src/")) { /* the embedded templates are generated data */
            snprintf(objects[n], sizeof objects[n], "%s", line);
            add_file(&g, objects[n]);
            n++;
        }
    }
    fclose(f);
    assert_true(n > 20);
    for (size_t i = 0; i < n; i++) {
        read_symbols(&g, objects[i], (int)i, 1);
    }
    for (size_t i = 0; i < n; i++) {
        read_symbols(&g, objects[i], (int)i, 0);
    }
    int bad = 0;
    for (size_t a = 0; a < n; a++) {
        for (size_t b = 0; b < n; b++) {
            const char *to = g.files[b];
            if (g.edge[a][b] && !may_use(g.layer[a], to, strcspn(to, "/"))) {
                printf("%s calls into %s (a layer it may not use)\n", g.files[a], to);
                bad++;
            }
        }
    }
    tarjan t = {.g = &g};
    for (size_t v = 0; v < n; v++) {
        if (!t.index[v]) {
            connect(&t, (int)v);
        }
    }
    assert_int_equal(bad, 0);
    assert_int_equal(t.loops, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(includes_point_down),
        cmocka_unit_test(the_cli_uses_the_public_header),
        cmocka_unit_test(calls_point_down_without_loops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
