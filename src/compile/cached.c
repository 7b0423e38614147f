/* The compile path through the disk cache (compiler.h): key, lookup, claim, NVRTC,
 * store. The store only stores; what a program is, how its key is made and what to say
 * when NVRTC is missing are decided here. */
#include "compile/compiler.h"

#include "base/clock.h"
#include "compile/hint.h"
#include "compile/key.h"
#include "compile/meta.h"
#include "compile/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long a process that misses waits for another that is compiling the same key. */
#define GJ__CLAIM_WAIT_MS 120000u
/* The note in which a cache directory remembers the NVRTC that last filled it. */
#define GJ__NVRTC_NOTE "nvrtc-identity"

void gj__compiler_init(gj__compiler *c, const gj__diag *diag, gj__nvrtc_loader *nvrtc, gj__store *store) {
    c->diag = diag;
    c->nvrtc = nvrtc;
    c->store = store;
    atomic_init(&c->lineinfo, -1);
}

int gj__lineinfo_from_env(void) {
    const char *env = getenv("GRIDJIT_LINEINFO");
    return env && env[0] && strcmp(env, "0") != 0 && strcmp(env, "off") != 0;
}

int gj__compiler_lineinfo(gj__compiler *c) {
    const int set = atomic_load(&c->lineinfo);
    return set >= 0 ? set : gj__lineinfo_from_env();
}

static unsigned claim_wait_ms(void) {
    const char *env = getenv("GRIDJIT_CACHE_WAIT_MS"); /* for tests of the timeout */
    return env && env[0] ? (unsigned)strtoul(env, NULL, 10) : GJ__CLAIM_WAIT_MS;
}

/* ------------------------------------------------------------- one request */

/* Everything derived from a request once: options, NVRTC, keys. */
typedef struct attempt {
    gj__compiler *c;
    const gj__compile_request *req;
    const char **options; /* gridjit's, then the request's extra ones */
    char options_buffer[GJ__COMPILE_OPTIONS_BUFFER];
    size_t n_options;
    const gj__nvrtc *nv; /* NULL: unavailable, why in nvrtc_error */
    char nvrtc_error[GJ__MESSAGE_MAX];
    gj__compile_key key;
    int searchable;
} attempt;

static void tag(gj_program *prog, gj_cache_status status, const char *hex, const char *config_hex) {
    prog->cache_status = status;
    snprintf(prog->key, sizeof prog->key, "%s", hex);
    snprintf(prog->config_key, sizeof prog->config_key, "%s", config_hex);
}

/* One lookup: the metadata of the entry accepted, decoded once and handed to the program. */
typedef struct lookup {
    const attempt *a;
    gj__program_meta meta;
    int have_meta;
} lookup;

/* An entry serves the request when it was made for the same target and kind with the
 * same kernels (the key already says so; this catches a file that lies about it). */
static const char *check_meta(const attempt *a, const gj__program_meta *meta) {
    if (strcmp(meta->target, a->req->arch.name) != 0 || meta->kind != a->req->arch.kind) {
        return "target mismatch";
    }
    if (meta->n_kernels != a->req->unit.n_names) {
        return "kernel list mismatch";
    }
    for (size_t i = 0; i < meta->n_kernels; i++) {
        if (strcmp(meta->names[i], a->req->unit.names[i]) != 0) {
            return "kernel list mismatch";
        }
    }
    return NULL;
}

/* The store's accept function: keeps the decoded metadata of the entry it accepts (the
 * store hands out the entry it last accepted; an earlier one is dropped). */
static const char *accept_entry(void *user, const void *bytes, size_t size) {
    lookup *l = user;
    gj__program_meta meta;
    if (gj__meta_decode(bytes, size, &meta) != 0) {
        return "malformed program metadata";
    }
    const char *why = check_meta(l->a, &meta);
    if (why) {
        gj__meta_free(&meta);
        return why;
    }
    gj__meta_free(&l->meta); /* zeroed, or an entry accepted before */
    l->meta = meta;
    l->have_meta = 1;
    return NULL;
}

/* Moves a checked entry and the metadata accepted with it into a new program; what is
 * left of l->meta is the caller's to free. */
static gj_status program_from_blob(const attempt *a, gj__blob *blob, lookup *l, gj_program **out) {
    gj__program_meta *meta = &l->meta;
    gj_program *prog = gj__program_new();
    char *source = strdup(a->req->unit.source);
    /* Without accepted metadata (the store always asks) this is the decode failure it
     * would have been. */
    if (!prog || !source || !l->have_meta) {
        free(source);
        gj_program_destroy(prog);
        return gj__fail(a->c->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory reading the cache");
    }
    free(prog->source);
    prog->source = source;
    prog->kind = meta->kind;
    snprintf(prog->arch, sizeof prog->arch, "%s", meta->target);
    prog->binary = blob->payload;
    prog->binary_size = blob->payload_size;
    prog->n_kernels = meta->n_kernels;
    prog->kernel_names = meta->names;
    prog->lowered_names = meta->lowered;
    free(prog->log);
    prog->log = meta->log;
    meta->log = NULL;
    meta->names = meta->lowered = NULL;
    meta->n_kernels = 0;
    blob->payload = NULL;
    prog->ref = blob->ref;
    char hex[33];
    gj__store_key_hex(&blob->ref.key, hex);
    tag(prog, GJ_CACHE_HIT, hex, a->key.config_hex);
    *out = prog;
    return GJ_OK;
}

/* GJ_OK with *out on a hit (its compile_ms: the time the lookup took), GJ_ERROR_NOT_FOUND
 * on a miss. */
/* "gridjit.cu (&NAME_forward) for sm_90, key 087231f8": what the log calls a's program. */
static void describe(const attempt *a, char *out, size_t size) {
    snprintf(out, size, "%s (%s) for %s, key %.8s", a->req->unit.file_name,
             a->req->unit.n_names ? a->req->unit.names[0] : "no kernels", a->req->arch.name, a->key.hex);
}

static gj_status look_up(const attempt *a, gj_program **out) {
    const double start = gj__now_ms();
    gj__blob blob;
    gj__store *s = a->c->store;
    lookup l = {.a = a};
    gj_status status = a->nv ? gj__store_get(s, a->c->diag, &a->key.key, &a->key.config, accept_entry, &l, &blob)
                             : gj__store_get_group(s, a->c->diag, &a->key.config, accept_entry, &l, &blob);
    if (status == GJ_OK) {
        status = program_from_blob(a, &blob, &l, out);
        gj__blob_free(&blob);
    }
    gj__meta_free(&l.meta);
    if (status == GJ_OK) {
        (*out)->compile_ms = gj__now_ms() - start;
        if (gj__log_enabled(a->c->diag, GJ_LOG_INFO)) {
            char what[512];
            describe(a, what, sizeof what);
            gj__log(a->c->diag, GJ_LOG_INFO, "found %s in the cache: %.1f ms (t=%.1f)", what, (*out)->compile_ms,
                    start);
        }
    } else if (status == GJ_ERROR_OUT_OF_MEMORY) {
        gj__fail(a->c->diag, status, "out of memory reading the cache");
    }
    return status;
}

static void store(const attempt *a, const gj_program *prog) {
    size_t meta_size = 0;
    uint8_t *meta = gj__meta_encode(prog, &a->nv->identity, &meta_size);
    if (!meta) {
        gj__log(a->c->diag, GJ_LOG_DEBUG, "cache: program without lowered names not stored");
        return;
    }
    gj__store_put(a->c->store, a->c->diag, &a->key.key, &a->key.config, meta, meta_size, prog->binary,
                  prog->binary_size, a->req->unit.source);
    free(meta);
    char note[160];
    snprintf(note, sizeof note, "%d.%d %s\n", a->nv->identity.major, a->nv->identity.minor, a->nv->identity.build);
    gj__store_note_put(a->c->store, a->c->diag, GJ__NVRTC_NOTE, note);
}

/* Without NVRTC the full key is unknown; with the NVRTC that last filled this directory it
 * is the key `gridjit compile --json` showed there. */
static void last_full_key(const attempt *a, char *out, size_t size) {
    char note[160];
    gj__nvrtc_identity last = {0};
    char build[sizeof last.build];
    out[0] = '\0';
    if (gj__store_note_get(a->c->store, a->c->diag, GJ__NVRTC_NOTE, note, sizeof note) != 0 ||
        sscanf(note, "%d.%d %95s", &last.major, &last.minor, build) != 3) {
        return;
    }
    snprintf(last.build, sizeof last.build, "%s", build);
    gj__key_request kr = {&a->req->unit, &a->req->arch, a->options, a->n_options, &last};
    gj__compile_key k;
    if (gj__compile_key_make(&kr, &k) == 0) {
        snprintf(out, size, " (key %s with NVRTC %d.%d, last used here)", k.hex, last.major, last.minor);
    }
}

static gj_status no_nvrtc(const attempt *a) {
    char dir[4096], full[120], command[2400];
    gj__store_dir(a->c->store, a->c->diag, dir, sizeof dir);
    last_full_key(a, full, sizeof full);
    gj__precompile_hint(a->req->enc, a->req->opts, a->req->module_program, &a->req->arch, dir, command,
                        sizeof command);
    return gj__fail(a->c->diag, GJ_ERROR_NO_NVRTC,
                    "no cache layer holds configuration key %s%s for %s%s, and NVRTC cannot compile it (%s); "
                    "make the entry where NVRTC is available with: %s",
                    a->key.config_hex, full, a->req->arch.name, gj__store_situation(a->c->store, a->c->diag),
                    a->nvrtc_error[0] ? a->nvrtc_error : "disabled", command);
}

static gj_status compile_now(const attempt *a, gj_program **out) {
    gj_status status = gj__nvrtc_check_arch(a->c->diag, a->nv, &a->req->arch);
    if (status != GJ_OK) {
        return status;
    }
    const double start = gj__now_ms();
    status = gj__nvrtc_compile(a->c->diag, a->nv, &a->req->unit, &a->req->arch, a->options, a->n_options, out);
    const double compiled = gj__now_ms();
    gj__store_count_fill(a->c->store, compiled - start);
    if (*out) {
        tag(*out, a->searchable ? GJ_CACHE_MISS : GJ_CACHE_OFF, a->key.hex, a->key.config_hex);
    }
    if (status == GJ_OK && a->searchable) {
        store(a, *out);
    }
    if (status == GJ_OK && gj__log_enabled(a->c->diag, GJ_LOG_INFO)) {
        /* What a slow first call waited for: each compile's own time, its store's, and when it
         * began (CLOCK_MONOTONIC, to line up compiles that ran side by side). */
        char what[512];
        describe(a, what, sizeof what);
        gj__log(a->c->diag, GJ_LOG_INFO, "compiled %s: NVRTC %.0f ms, stored in %.0f ms (t=%.1f)", what,
                compiled - start, gj__now_ms() - compiled, start);
    }
    return status;
}

/* A miss with NVRTC at hand: claim the key, look again (the process we waited for may have
 * published it), and compile only if it is still missing. */
static gj_status fill(const attempt *a, gj_program **out) {
    gj__store_claim claim;
    const int held = a->searchable && gj__store_claim_key(a->c->store, a->c->diag, &a->key.key, &a->key.config,
                                                          claim_wait_ms(), &claim);
    gj_status status = GJ_ERROR_NOT_FOUND;
    if (held) {
        status = look_up(a, out);
    }
    if (status == GJ_ERROR_NOT_FOUND) {
        status = compile_now(a, out);
    }
    if (held) {
        gj__store_unclaim(&claim);
    }
    return status;
}

static gj_status prepare(attempt *a) {
    gj__compiler *c = a->c;
    const size_t room = GJ__MAX_COMPILE_OPTIONS + a->req->n_extra_options;
    a->options = calloc(room, sizeof *a->options);
    if (!a->options) {
        return gj__fail(c->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    const unsigned flags = gj__compile_option_flags(gj__compiler_lineinfo(c), a->req->split);
    a->n_options = gj__compile_options(a->req->arch.name, flags, a->options,
                                       GJ__MAX_COMPILE_OPTIONS, a->options_buffer, sizeof a->options_buffer);
    if (a->n_options == 0) {
        return gj__fail(c->diag, GJ_ERROR_INTERNAL, "cannot state the compile options of %s", a->req->arch.name);
    }
    for (size_t i = 0; i < a->req->n_extra_options; i++) {
        a->options[a->n_options++] = a->req->extra_options[i];
    }
    a->options[a->n_options] = NULL;
    gj__nvrtc *nv = NULL;
    if (gj__nvrtc_get(c->nvrtc, c->diag, &nv) != GJ_OK) {
        snprintf(a->nvrtc_error, sizeof a->nvrtc_error, "%s", gj__diag_message(c->diag));
        gj__diag_clear(c->diag);
    }
    a->nv = nv;
    gj__key_request kr = {&a->req->unit, &a->req->arch, a->options, a->n_options, nv ? &nv->identity : NULL};
    if (gj__compile_key_make(&kr, &a->key) != 0) {
        return gj__fail(c->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory computing the cache key");
    }
    a->searchable = a->req->use_cache && gj__store_searchable(c->store, c->diag);
    return GJ_OK;
}

gj_status gj__compile(gj__compiler *c, const gj__compile_request *req, gj_program **out) {
    *out = NULL;
    attempt *a = calloc(1, sizeof *a);
    if (!a) {
        return gj__fail(c->diag, GJ_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    a->c = c;
    a->req = req;
    gj_status status = prepare(a);
    if (status == GJ_OK && a->searchable) {
        status = look_up(a, out);
        if (status == GJ_ERROR_NOT_FOUND && !req->cached_only) {
            gj__store_count_miss(c->store); /* a probe's is not one: the compile that follows counts */
        }
    } else if (status == GJ_OK) {
        status = GJ_ERROR_NOT_FOUND;
    }
    if (status == GJ_ERROR_NOT_FOUND && !req->cached_only) {
        status = a->nv ? fill(a, out) : no_nvrtc(a);
    }
    free(a->options);
    free(a);
    return status;
}

void gj__compile_invalidate(gj__compiler *c, const gj_program *prog, const char *reason) {
    if (prog && prog->cache_status == GJ_CACHE_HIT) {
        gj__store_forget(c->store, c->diag, &prog->ref, reason);
    }
}
