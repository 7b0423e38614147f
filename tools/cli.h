/* The gridjit command-line tool: one file per subcommand, each exporting one entry point.
 * Conventions: getopt_long; --help prints usage to stdout and returns 0; errors go to
 * stderr as "gridjit SUBCOMMAND: message" and return a non-zero code below 128; nothing
 * is printed on stdout when refusing. */
#ifndef GJ_CLI_H
#define GJ_CLI_H

/* Exit codes. */
#define GJ_CLI_OK 0
#define GJ_CLI_FAILURE 1 /* the operation failed (compile error, I/O error, bad config) */
#define GJ_CLI_USAGE 2   /* bad command line */

int gj_cli_info(int argc, char **argv);
int gj_cli_dump(int argc, char **argv);
int gj_cli_compile(int argc, char **argv);
int gj_cli_demo(int argc, char **argv);
int gj_cli_precompile(int argc, char **argv); /* cache issue */
int gj_cli_cache(int argc, char **argv);      /* cache issue */
int gj_cli_eval(int argc, char **argv);       /* runtime issue */
int gj_cli_bench(int argc, char **argv);      /* runtime issue */

#endif
