/* User sources on the command line (see cli_source.h). */
#include "cli_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char gj_cli_source_help[] =
    "  -s, --source FILE\n"
    "                   a CUDA source of your own (docs/fusion.md) instead of --config\n"
    "  -e, --encoding NAME=CONFIG[:DIMS]\n"
    "                   offer an encoding to the source as the header NAME.cuh (its\n"
    "                   device functions NAME, NAME_bwd, NAME_bwdbwd); CONFIG is a file\n"
    "                   or inline JSON; repeat for several encodings\n"
    "      --network NAME=CONFIG[:IN:OUT]\n"
    "                   offer a network, or a model ({\"encoding\", \"network\"}), to the\n"
    "                   source as the header NAME.cuh (its warp-wide device functions\n"
    "                   NAME, NAME_fwd, NAME_bwd; a model's encoding as NAME_encoding);\n"
    "                   IN and OUT are its input and output widths (a model's IN: the\n"
    "                   encoding's dimensions), else its n_input_dims / n_output_dims\n"
    "                   keys; repeatable\n"
    "  -k, --kernel NAME\n"
    "                   a kernel (name expression) to compile and look up; repeatable\n"
    "  -O, --option OPT an extra NVRTC option (e.g. -DTILE=16); repeatable\n";

int gj_cli_source_add(const char *cmd, gj_cli_source *src, int which, const char *value) {
    if (which == 's') {
        src->file = value;
        return GJ_CLI_OK;
    }
    const int network = which == GJ_CLI_SOURCE_NETWORK;
    const char **list = which == 'e' ? src->encoding_specs
                        : network    ? src->network_specs
                        : which == 'k' ? src->kernels
                                       : src->options;
    size_t *n = which == 'e' ? &src->n_encoding_specs
                : network    ? &src->n_network_specs
                : which == 'k' ? &src->n_kernels
                               : &src->n_options;
    const size_t most = which == 'e' ? GJ_CLI_MAX_ENCODINGS
                        : network    ? GJ_CLI_MAX_NETWORKS
                        : which == 'k' ? GJ_CLI_MAX_KERNELS
                                       : GJ_CLI_MAX_OPTIONS;
    if (*n == most) {
        return gj_cli_usage_error(cmd, "at most %zu --%s options", most,
                                  which == 'e' ? "encoding" : network ? "network" : which == 'k' ? "kernel" : "option");
    }
    list[(*n)++] = value;
    return GJ_CLI_OK;
}

int gj_cli_source_check(const char *cmd, const gj_cli_source *src, int has_config, const char *one_of,
                        const char *need_kernel, const char *gradients) {
    if (!has_config == !src->file) {
        return gj_cli_usage_error(cmd, "%s", one_of);
    }
    if (need_kernel && src->file && !src->n_kernels) {
        return gj_cli_usage_error(cmd, "--source needs at least one --kernel%s", need_kernel);
    }
    if (src->file && gradients) {
        return gj_cli_usage_error(cmd, "--gradients goes with --config (a source of your own declares its own types)");
    }
    return GJ_CLI_OK;
}

/* The file named by --source; the messages say "source file" where --config's say
 * "configuration file", and a read error is not detailed. */
static int read_source(const char *cmd, const char *path, char **text) {
    int err = 0;
    const gj_cli_read_status read = gj_cli_read_text(path, SIZE_MAX, text, &err);
    if (read != GJ_CLI_READ_OK) {
        gj_cli_error(cmd, "cannot read source file '%s': %s", path,
                     read == GJ_CLI_READ_OPEN ? strerror(err) : read == GJ_CLI_READ_NO_MEMORY ? "out of memory"
                                                                                             : "read error");
        return GJ_CLI_FAILURE;
    }
    return GJ_CLI_OK;
}

/* The length of text without a trailing ":DIGITS" (a colon and digits only, so that a
 * colon inside inline JSON is not taken), and those digits' value in *number (or the
 * whole length and *found 0). */
static size_t strip_number(const char *text, size_t len, uint32_t *number, int *found) {
    *found = 0;
    size_t colon = len;
    while (colon > 0 && text[colon - 1] != ':') {
        --colon;
    }
    if (colon == 0 || colon == len || strspn(text + colon, "0123456789") != len - colon) {
        return len;
    }
    *found = 1;
    *number = (uint32_t)strtoul(text + colon, NULL, 10);
    return colon - 1;
}

/* "NAME=CONFIG" with up to `numbers` trailing ":N" (an encoding's ":DIMS", a network's
 * ":IN:OUT"): the name, the configuration argument (copied into config) and the numbers in
 * order (0 when not given). */
static int split_spec(const char *cmd, const char *option, const char *form, const char *spec, char *name,
                      size_t name_size, char **config, uint32_t *values, int numbers) {
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || (size_t)(eq - spec) >= name_size) {
        return gj_cli_usage_error(cmd, "--%s: expected %s (got '%s')", option, form, spec);
    }
    memcpy(name, spec, (size_t)(eq - spec));
    name[eq - spec] = '\0';
    const char *rest = eq + 1;
    size_t len = strlen(rest);
    int found = 0, count = 0;
    uint32_t got[2] = {0, 0};
    while (count < numbers) {
        len = strip_number(rest, len, &got[count], &found);
        if (!found) {
            break;
        }
        ++count;
    }
    for (int i = 0; i < numbers; ++i) {
        values[i] = 0;
    }
    if (count && count != numbers) {
        return gj_cli_usage_error(cmd, "--%s %s: expected %s (got one number)", option, name, form);
    }
    for (int i = 0; i < count; ++i) {
        values[i] = got[count - 1 - i]; /* stripped from the end: the last one first */
        if (values[i] == 0) {
            return gj_cli_usage_error(cmd, "--%s %s: %s must be at least 1", option, name,
                                      numbers == 1 ? "DIMS" : i == 0 ? "IN" : "OUT");
        }
    }
    *config = strndup(rest, len);
    return *config ? GJ_CLI_OK : GJ_CLI_FAILURE;
}

/* One --encoding or --network spec: its name into name, the configuration's JSON into
 * *json (malloc()ed), its trailing numbers into values (see split_spec). */
static int read_spec(const char *cmd, const char *option, const char *form, const char *spec, char *name,
                     size_t name_size, char **json, uint32_t *values, int numbers) {
    char *config = NULL;
    *json = NULL;
    int rc = split_spec(cmd, option, form, spec, name, name_size, &config, values, numbers);
    if (rc == GJ_CLI_OK) {
        rc = gj_cli_read_config(cmd, config, json);
    }
    free(config);
    return rc;
}

/* The message of a refused --encoding or --network NAME. */
static int refused(const char *cmd, gj_context *ctx, gj_status status, const char *option, const char *name) {
    char what[128];
    snprintf(what, sizeof what, "--%s %s: %s", option, name, gj_status_message(status));
    return gj_cli_status_error(cmd, ctx, status, what);
}

int gj_cli_source_open(const char *cmd, gj_context *ctx, gj_cli_source *src) {
    int rc = read_source(cmd, src->file, &src->text);
    for (size_t i = 0; rc == GJ_CLI_OK && i < src->n_encoding_specs; ++i) {
        char *json = NULL;
        uint32_t dims = 0;
        rc = read_spec(cmd, "encoding", "NAME=CONFIG[:DIMS]", src->encoding_specs[i], src->names[i],
                       sizeof src->names[i], &json, &dims, 1);
        gj_status status = GJ_OK;
        if (rc == GJ_CLI_OK && (status = gj_encoding_create(ctx, json, dims, &src->encodings[i])) != GJ_OK) {
            rc = refused(cmd, ctx, status, "encoding", src->names[i]);
        }
        free(json);
        src->offered[i] = (gj_source_encoding){src->names[i], src->encodings[i], NULL};
    }
    for (size_t i = 0; rc == GJ_CLI_OK && i < src->n_network_specs; ++i) {
        char *json = NULL;
        uint32_t widths[2] = {0, 0};
        rc = read_spec(cmd, "network", "NAME=CONFIG[:IN:OUT]", src->network_specs[i], src->network_names[i],
                       sizeof src->network_names[i], &json, widths, 2);
        gj_status status = GJ_OK;
        if (rc == GJ_CLI_OK &&
            (status = gj_network_create(ctx, json, widths[0], widths[1], &src->networks[i])) != GJ_OK) {
            rc = refused(cmd, ctx, status, "network", src->network_names[i]);
        }
        free(json);
        src->offered_networks[i] = (gj_source_network){src->network_names[i], src->networks[i], NULL};
    }
    if (rc != GJ_CLI_OK) {
        return rc;
    }
    gj_source_desc_init(&src->desc);
    src->desc.source = src->text;
    const char *base = strrchr(src->file, '/');
    src->desc.file_name = base ? base + 1 : src->file;
    src->desc.encodings = src->offered;
    src->desc.n_encodings = src->n_encoding_specs;
    src->desc.networks = src->offered_networks;
    src->desc.n_networks = src->n_network_specs;
    src->desc.kernels = src->kernels;
    src->desc.n_kernels = src->n_kernels;
    src->desc.options = src->options;
    src->desc.n_options = src->n_options;
    return GJ_CLI_OK;
}

int gj_cli_source_open_context(const char *cmd, gj_context **ctx, gj_cli_source *src) {
    *ctx = NULL;
    const gj_status status = gj_context_create(ctx);
    if (status != GJ_OK) {
        return gj_cli_status_error(cmd, NULL, status, "cannot create a context");
    }
    return gj_cli_source_open(cmd, *ctx, src);
}

void gj_cli_source_close(gj_cli_source *src) {
    for (size_t i = 0; i < GJ_CLI_MAX_ENCODINGS; ++i) {
        gj_encoding_destroy(src->encodings[i]);
        src->encodings[i] = NULL;
    }
    for (size_t i = 0; i < GJ_CLI_MAX_NETWORKS; ++i) {
        gj_network_destroy(src->networks[i]);
        src->networks[i] = NULL;
    }
    free(src->text);
    src->text = NULL;
}
