/* cmd.h -- subcommands as data (tmux's cmd_entry): each src/cmd_*.c exports
 * one as_cmd, collected in main.c's table.  A command parses its options,
 * calls module APIs and prints results; it holds no algorithms.
 *
 * exec returns a process exit code (AS_EXIT_*).  Errors are printed once as
 * "autoshard: MSG" with as_cmd_fail(); usage errors print one usage line and
 * "Try 'autoshard CMD --help'." to stderr and return AS_EXIT_USAGE.
 */
#ifndef AS_CMD_H
#define AS_CMD_H

#include <stdio.h>

#include "autoshard.h"

struct as_cmd {
    const char *name;    /**< "solve" */
    const char *args;    /**< "[GRAPH] --mesh M [options]" */
    const char *summary; /**< one line for `autoshard help` */
    const char *help;    /**< full option text for --help */
    int (*exec)(int argc, char **argv);
};

extern const struct as_cmd as_cmd_gen, as_cmd_inspect, as_cmd_convert, as_cmd_hw, as_cmd_rules,
    as_cmd_strategies, as_cmd_solve, as_cmd_export, as_cmd_lower, as_cmd_simulate, as_cmd_rank,
    as_cmd_sweep;

/** Print "autoshard: MSG" for ERR and return the matching exit code. */
int as_cmd_fail(const as_err *err);
/** Print the usage line of CMD and a hint to stderr; return AS_EXIT_USAGE. */
int as_cmd_usage(const struct as_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Parse --OPT's count ARG (1..65536) into *OUT; a usage error (exit 2) otherwise. */
int as_cmd_count_opt(const struct as_cmd *cmd, const char *opt, const char *arg, int *out);
/** Print CMD's full help to FP. */
void as_cmd_help(const struct as_cmd *cmd, FILE *fp);

#endif /* AS_CMD_H */
