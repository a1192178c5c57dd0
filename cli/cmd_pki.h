/*
 * cmd_pki.h — `wtctl pki ...`: the site PKI for edge→hub mutual TLS
 * (common/pki.h does the work; docs/operations.md "PKI and certificates"
 * describes the files and rotation).
 */
#ifndef WT_CLI_CMD_PKI_H
#define WT_CLI_CMD_PKI_H

/* argv[0] is the verb: init | issue-edge | issue-hub | show | help.
 * Offline (no hub needed). Returns 0, CLI_EXIT_FAIL (1) or CLI_EXIT_USAGE
 * (2); messages on stderr, written file names on stdout. */
int cli_cmd_pki(int argc, char **argv);

/* The usage text of the pki commands. */
extern const char cli_pki_usage[];

#endif
