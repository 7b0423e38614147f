/* `gridjit bench` of a network configuration (tools/bench_network.c). */
#ifndef GJ_BENCH_NETWORK_H
#define GJ_BENCH_NETWORK_H

/* Whether argv's --config (or -c) names a network or model configuration. */
int gj_cli_bench_is_network(int argc, char **argv);
/* The whole `gridjit bench` of a network or model: parses argv itself (docs/runtime.md). */
int gj_cli_bench_network(int argc, char **argv);

#endif
