/*
 * cmd_convert_cpuprofile.h — `wtctl profile convert-cpuprofile IN [-o OUT]
 * [--type samples|cpu]`: a V8/Node .cpuprofile (raw or gzip) to folded
 * stacks, the seed's Node.js path (convert, then `wtctl profile upload`).
 * Offline; no global options are used.
 */
#ifndef WT_CLI_CMD_CONVERT_CPUPROFILE_H
#define WT_CLI_CMD_CONVERT_CPUPROFILE_H

/* argv[0] is the first argument after "convert-cpuprofile". Returns a
 * CLI_EXIT_* code; errors go to stderr. */
int cli_cmd_convert_cpuprofile(int argc, char **argv);

#endif
