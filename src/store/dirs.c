/* Where the cache lives (docs/cache.md, "Layers and environment"): the writable
 * directory and the read-only layers, chosen from the API settings and the environment,
 * checked before use; entry paths inside them; walking their shards. */
#include "store/store_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------- checking a directory */

static int make_dirs(const char *path) {
    char *copy = strdup(path);
    if (!copy) {
        return ENOMEM;
    }
    int err = 0;
    for (char *p = copy + 1; !err; p++) {
        int last = *p == '\0';
        if (*p != '/' && !last) {
            continue;
        }
        *p = '\0';
        if (mkdir(copy, 0700) != 0 && errno != EEXIST) {
            err = errno;
        }
        if (last) {
            break;
        }
        *p = '/';
    }
    free(copy);
    return err;
}

int gj__store_check_dir(const char *path, int create, int writable, char *why, size_t why_size) {
    int err = create ? make_dirs(path) : 0;
    struct stat st;
    if (!err && stat(path, &st) != 0) {
        err = errno;
    }
    if (!err && !S_ISDIR(st.st_mode)) {
        err = ENOTDIR;
    }
    if (err) {
        snprintf(why, why_size, "%s", strerror(err));
        return err;
    }
    /* Anyone who can write into the directory can plant a binary that we would run. */
    uid_t me = geteuid();
    if (st.st_uid != me && (writable || st.st_uid != 0)) {
        snprintf(why, why_size, "owned by uid %u, not by uid %u", (unsigned)st.st_uid, (unsigned)me);
        return EPERM;
    }
    if (st.st_mode & S_IWOTH) {
        snprintf(why, why_size, "world-writable (mode %03o)", (unsigned)(st.st_mode & 0777));
        return EPERM;
    }
    if (access(path, writable ? (R_OK | W_OK | X_OK) : (R_OK | X_OK)) != 0) {
        err = errno;
        snprintf(why, why_size, "%s", strerror(err));
        return err;
    }
    return 0;
}

/* ------------------------------------------------------------ environment */

static int env_true(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) {
        return 0;
    }
    return strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0 && strcasecmp(v, "no") != 0 &&
           strcasecmp(v, "off") != 0;
}

int gj__store_parse_bytes(const char *text, uint64_t *out) {
    if (!text || *text < '0' || *text > '9') {
        return -1;
    }
    errno = 0;
    char *end = NULL;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno) {
        return -1;
    }
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'I') {
        end++;
    }
    if (*end == 'b' || *end == 'B') {
        end++;
    }
    if (*end || (shift && n > (UINT64_MAX >> shift))) {
        return -1;
    }
    *out = (uint64_t)n << shift;
    return 0;
}

/* path made absolute against the working directory (without resolving symlinks), so
 * that messages, listings and a later chdir() all mean the same directory. */
static char *absolute(const char *path) {
    if (path[0] == '/') {
        return strdup(path);
    }
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) {
        return strdup(path);
    }
    while (path[0] == '.' && path[1] == '/') {
        path += 2;
    }
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *out = malloc(n);
    if (out) {
        snprintf(out, n, "%s/%s", cwd, strcmp(path, ".") == 0 ? "" : path);
        size_t len = strlen(out);
        if (len > 1 && out[len - 1] == '/') {
            out[len - 1] = '\0';
        }
    }
    return out;
}

/* The writable directory's path before checks; NULL with *why when there is none. */
static char *choose_root(const struct gj__store_state *c, const char **why) {
    if (c->set_dir) {
        return absolute(c->set_dir);
    }
    const char *dir = getenv("GRIDJIT_CACHE_DIR");
    if (dir && *dir) {
        return absolute(dir);
    }
    char buffer[4096];
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (xdg && xdg[0] == '/') { /* the XDG spec says to ignore a relative value */
        snprintf(buffer, sizeof buffer, "%s/gridjit", xdg);
    } else if (home && *home) {
        snprintf(buffer, sizeof buffer, "%s/.cache/gridjit", home);
    } else {
        *why = "neither GRIDJIT_CACHE_DIR, XDG_CACHE_HOME nor HOME is set";
        return NULL;
    }
    return strdup(buffer);
}

static void resolve_root(const gj__diag *d, struct gj__store_state *c) {
    const char *none = NULL;
    char *root = choose_root(c, &none);
    if (!root) {
        if (none) {
            gj__log(d, GJ_LOG_WARNING, "no cache directory (%s); working uncached", none);
        }
        return;
    }
    char why[256];
    if (gj__store_check_dir(root, 1, 1, why, sizeof why) != 0) {
        gj__log(d, GJ_LOG_WARNING, "cache directory %s is not used (%s); working uncached", root, why);
        free(root);
        return;
    }
    c->root = root;
    /* Tells backup and archiving tools that this is a cache (bford.info/cachedir). */
    char tag[4200];
    snprintf(tag, sizeof tag, "%s/CACHEDIR.TAG", root);
    int fd = open(tag, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        static const char text[] = "Signature: 8a477f597d28d172789f06886806bc55\n"
                                   "# This file is a cache directory tag created by gridjit.\n";
        ssize_t ignored = write(fd, text, sizeof text - 1);
        (void)ignored;
        close(fd);
    }
}

static int same_dir(const char *a, const char *b) {
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void add_layer(const gj__diag *d, struct gj__store_state *c, const char *path) {
    char why[256];
    int err = gj__store_check_dir(path, 0, 0, why, sizeof why);
    if (err) {
        gj__log(d, err == ENOENT ? GJ_LOG_INFO : GJ_LOG_WARNING, "read-only cache layer %s is not used (%s)", path,
                why);
        return;
    }
    if (same_dir(path, c->root)) {
        return; /* already searched as the writable directory */
    }
    char **layers = realloc(c->layers, (c->n_layers + 1) * sizeof *layers);
    char *copy = absolute(path);
    if (!layers || !copy) {
        free(copy);
        if (layers) {
            c->layers = layers;
        }
        return; /* out of memory: the layer is simply not searched */
    }
    c->layers = layers;
    c->layers[c->n_layers++] = copy;
}

static void resolve_layers(const gj__diag *d, struct gj__store_state *c) {
    const char *list = c->set_path ? c->set_path : getenv("GRIDJIT_CACHE_PATH");
    if (!list) {
        return;
    }
    char *copy = strdup(list);
    char *save = NULL;
    for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save)) {
        add_layer(d, c, p);
    }
    free(copy);
}

static uint64_t resolve_max_bytes(const gj__diag *d, const struct gj__store_state *c) {
    if (c->set_max_bytes) {
        return c->set_max_bytes;
    }
    const char *text = getenv("GRIDJIT_CACHE_MAX_BYTES");
    uint64_t n = 0;
    if (text && *text && (gj__store_parse_bytes(text, &n) != 0 || n == 0)) {
        gj__log(d, GJ_LOG_WARNING, "GRIDJIT_CACHE_MAX_BYTES=%s is not a positive byte count; using 1 GiB", text);
        n = 0;
    }
    return n ? n : GJ__STORE_DEFAULT_MAX_BYTES;
}

struct gj__store_state *gj__store_ready(gj__store *s, const gj__diag *d) {
    struct gj__store_state *c = s->state;
    if (c->resolved) {
        return c;
    }
    c->resolved = 1;
    c->enabled = c->set_enabled >= 0 ? c->set_enabled : !env_true("GRIDJIT_CACHE_DISABLE");
    c->keep_sidecar = c->set_keep_sidecar >= 0 ? c->set_keep_sidecar : env_true("GRIDJIT_CACHE_SOURCE");
    c->max_bytes = resolve_max_bytes(d, c);
    if (c->enabled) {
        resolve_root(d, c);
        resolve_layers(d, c);
    }
    return c;
}

/* ------------------------------------------------------------------ paths */

char *gj__store_shard_path(const char *dir, const char *config_hex) {
    size_t n = strlen(dir) + 4;
    char *path = malloc(n);
    if (path) {
        snprintf(path, n, "%s/%.2s", dir, config_hex);
    }
    return path;
}

char *gj__store_make_shard(const char *dir, const char *group_hex, int *err) {
    char *shard = gj__store_shard_path(dir, group_hex);
    *err = shard && mkdir(shard, 0700) != 0 && errno != EEXIST ? errno : 0;
    return shard;
}

void gj__store_entry_name(const char *group_hex, const char *key_hex, const char *ext, char *out, size_t size) {
    snprintf(out, size, "%s-%s%s", group_hex, key_hex, ext);
}

char *gj__store_entry_path(const char *dir, const char *config_hex, const char *hex, const char *ext) {
    char name[GJ__STORE_NAME_MAX];
    gj__store_entry_name(config_hex, hex, ext, name, sizeof name);
    size_t n = strlen(dir) + 4 + strlen(name) + 1;
    char *path = malloc(n);
    if (path) {
        snprintf(path, n, "%s/%.2s/%s", dir, config_hex, name);
    }
    return path;
}

void gj__store_each_layer(const struct gj__store_state *st, gj__store_layer_fn fn, void *user) {
    if (!st->enabled) {
        return;
    }
    /* Read-only layers first: a shipped bundle wins over what this user compiled. */
    for (size_t i = 0; i < st->n_layers; i++) {
        if (fn(user, st->layers[i], (int)i + 1)) {
            return;
        }
    }
    if (st->root) {
        fn(user, st->root, 0);
    }
}

static int is_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

gj__store_file_kind gj__store_classify(const char *name, char *config_hex, char *hex) {
    if (strncmp(name, GJ__TEMP_PREFIX, strlen(GJ__TEMP_PREFIX)) == 0) {
        return GJ__FILE_TEMP;
    }
    if (strlen(name) < 65 || !is_hex(name, 32) || name[32] != '-' || !is_hex(name + 33, 32)) {
        return GJ__FILE_OTHER;
    }
    gj__store_file_kind kind = strcmp(name + 65, GJ__ENTRY_EXT) == 0    ? GJ__FILE_ENTRY
                               : strcmp(name + 65, GJ__SIDECAR_EXT) == 0 ? GJ__FILE_SIDECAR
                                                                        : GJ__FILE_OTHER;
    if (kind != GJ__FILE_OTHER && config_hex && hex) {
        memcpy(config_hex, name, 32);
        config_hex[32] = '\0';
        memcpy(hex, name + 33, 32);
        hex[32] = '\0';
    }
    return kind;
}

/* ---------------------------------------------------------------- walking */

static int walk_shard(const char *shard, gj__store_walk_fn fn, void *user) {
    DIR *d = opendir(shard);
    if (!d) {
        return errno == ENOENT ? 0 : errno;
    }
    int stop = 0;
    for (struct dirent *e; !stop && (e = readdir(d));) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) {
            continue;
        }
        char path[4400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", shard, e->d_name);
        if (lstat(path, &st) == 0) {
            stop = fn(user, path, e->d_name, &st);
        }
    }
    closedir(d);
    return stop ? -1 : 0;
}

int gj__store_walk_dir(const char *dir, const char *only_shard, gj__store_walk_fn fn, void *user) {
    char shard[4200];
    if (only_shard) {
        snprintf(shard, sizeof shard, "%s/%.2s", dir, only_shard);
        int r = walk_shard(shard, fn, user);
        return r < 0 ? 0 : r;
    }
    DIR *d = opendir(dir);
    if (!d) {
        return errno;
    }
    int err = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strlen(e->d_name) != 2 || !is_hex(e->d_name, 2)) {
            continue; /* only shards: the stats file, CACHEDIR.TAG and strangers are left alone */
        }
        snprintf(shard, sizeof shard, "%s/%s", dir, e->d_name);
        int r = walk_shard(shard, fn, user);
        if (r < 0) {
            break;
        }
        if (r && !err) {
            err = r;
        }
    }
    closedir(d);
    return err;
}

int gj__entry_matches_name(const gj__entry *e, const char *group_hex, const char *key_hex) {
    char a[33], b[33];
    gj__store_key_hex(&e->group, a);
    gj__store_key_hex(&e->key, b);
    return strcmp(a, group_hex) == 0 && strcmp(b, key_hex) == 0;
}

void gj__store_key_hex(const gj__store_key *key, char hex[33]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        hex[2 * i] = digits[key->bytes[i] >> 4];
        hex[2 * i + 1] = digits[key->bytes[i] & 15];
    }
    hex[32] = '\0';
}
