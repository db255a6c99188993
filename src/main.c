/* main.c -- the autoshard command line: global options, the subcommand
 * table, and error printing.  Everything else lives in src/cmd_*.c and the
 * modules they call.
 */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "graph/reader_hlo.h"
#include "spmd/strategy.h"

/* In the order a user meets them: make a graph, look at it, plan, check the plan. */
static const struct as_cmd *const cmd_table[] = {
    &as_cmd_gen,     &as_cmd_inspect,  &as_cmd_convert, &as_cmd_hw,    &as_cmd_rules,
    &as_cmd_strategies, &as_cmd_solve, &as_cmd_export,  &as_cmd_lower, &as_cmd_simulate,
    &as_cmd_rank,    &as_cmd_sweep, NULL,
};

int
as_cmd_fail(const as_err *err)
{
    fprintf(stderr, "autoshard: %s\n", err->msg[0] ? err->msg : "unknown error");
    return as_status_exit(err->code);
}

int
as_cmd_usage(const struct as_cmd *cmd, const char *fmt, ...)
{
    va_list ap;

    if (fmt != NULL) {
        char raw[1024], line[1024];

        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        as_one_line(line, sizeof line, raw); /* an argument with a newline stays on one line */
        fprintf(stderr, "autoshard: %s\n", line);
    }
    fprintf(stderr, "usage: autoshard %s %s\n", cmd->name, cmd->args);
    fprintf(stderr, "Try 'autoshard %s --help'.\n", cmd->name);
    return AS_EXIT_USAGE;
}

int
as_cmd_count_opt(const struct as_cmd *cmd, const char *opt, const char *arg, int *out)
{
    char *end;
    long v = strtol(arg, &end, 10);

    if (end == arg || *end != '\0' || v < 1 || v > 65536)
        return as_cmd_usage(cmd, "--%s must be an integer in 1..65536, got '%s'", opt, arg);
    *out = (int)v;
    return AS_EXIT_OK;
}

void
as_cmd_help(const struct as_cmd *cmd, FILE *fp)
{
    fprintf(fp, "usage: autoshard %s %s\n\n%s\n", cmd->name, cmd->args, cmd->summary);
    if (cmd->help != NULL && cmd->help[0] != '\0')
        fprintf(fp, "\n%s", cmd->help);
    fprintf(fp, "\nExit status: 0 success, 1 runtime error, 2 usage or input error,\n"
                "3 solved but no plan fits the limits.\n");
}

static void
usage_main(FILE *fp)
{
    int i;

    fprintf(fp, "usage: autoshard [-q|-v] [--custom-call NAME=OP] [--strategy-space S] COMMAND "
                "[ARGS]\n\n"
                "Plan how to shard neural-network training over a device mesh.\n\n"
                "Commands:\n");
    for (i = 0; cmd_table[i] != NULL; i++)
        fprintf(fp, "  %-11s %s\n", cmd_table[i]->name, cmd_table[i]->summary);
    fprintf(fp, "  %-11s %s\n", "help", "show help for a command");
    fprintf(fp, "\nOptions:\n  -q, --quiet    only errors on stderr\n"
                "  -v, --verbose  more detail on stderr\n"
                "  --custom-call NAME=OP  import HLO custom calls NAME as registry op OP\n"
                "  --strategy-space default|alpa  alpa: no dim split over several mesh axes,\n"
                "                 no all-to-all resharding on meshes of 2+ axes, one-input ops\n"
                "                 follow their operand, Alpa's penalty (Alpa's space)\n"
                "  -V, --version  print the version\n"
                "  -h, --help     this text\n"
                "\nRun 'autoshard help COMMAND' for a command's options.\n");
}

static const struct as_cmd *
cmd_find(const char *name)
{
    int i;

    for (i = 0; cmd_table[i] != NULL; i++)
        if (strcmp(cmd_table[i]->name, name) == 0)
            return cmd_table[i];
    return NULL;
}

/* Unknown command: list the commands sharing its first letters. */
static int
cmd_unknown(const char *name)
{
    char shown[256];
    int i, n = 0;

    as_one_line(shown, sizeof shown, name);
    fprintf(stderr, "autoshard: unknown command '%s'", shown);
    for (i = 0; cmd_table[i] != NULL; i++)
        if (strncmp(cmd_table[i]->name, name, 2) == 0)
            fprintf(stderr, "%s%s", n++ ? ", " : " (did you mean: ", cmd_table[i]->name);
    fprintf(stderr, "%s\nTry 'autoshard help' for a list of commands.\n", n ? ")" : "");
    return AS_EXIT_USAGE;
}

/* --custom-call SPEC: exit status (2 with one line when SPEC is bad). */
static int
custom_call_opt(const char *spec)
{
    as_err err = {0};

    if (as_hlo_custom_call_add(spec, &err) != AS_OK) {
        fprintf(stderr, "autoshard: %s\n", err.msg);
        return AS_EXIT_USAGE;
    }
    return AS_EXIT_OK;
}

/* --strategy-space NAME: exit status. */
static int
space_opt(const char *name)
{
    if (strcmp(name, "default") == 0)
        as_strat_set_space(AS_SPACE_DEFAULT);
    else if (strcmp(name, "alpa") == 0)
        as_strat_set_space(AS_SPACE_ALPA);
    else {
        char shown[128];
        as_one_line(shown, sizeof shown, name);
        fprintf(stderr, "autoshard: --strategy-space takes default or alpa, got '%s'\n", shown);
        return AS_EXIT_USAGE;
    }
    return AS_EXIT_OK;
}

/*
 * Global options after the command, up to "--": -q/--quiet, -v/--verbose and
 * --custom-call NAME=OP (or =NAME=OP) are taken and removed from ARGV; -h/--help anywhere
 * asks for the command's help (*HELP).  Exit status.
 */
static int
take_global_opts(int *argc, char **argv, int *help)
{
    int i, j = 1, rc;

    *help = 0;
    for (i = 1; i < *argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            while (i < *argc)
                argv[j++] = argv[i++];
            break;
        }
        if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            as_verbosity = 0;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            as_verbosity = 2;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            *help = 1;
        } else if (strcmp(a, "--custom-call") == 0) {
            if (i + 1 == *argc) {
                fprintf(stderr, "autoshard: --custom-call needs NAME=OP\n");
                return AS_EXIT_USAGE;
            }
            if ((rc = custom_call_opt(argv[++i])) != AS_EXIT_OK)
                return rc;
        } else if (strncmp(a, "--custom-call=", 14) == 0) {
            if ((rc = custom_call_opt(a + 14)) != AS_EXIT_OK)
                return rc;
        } else if (strcmp(a, "--strategy-space") == 0) {
            if (i + 1 == *argc) {
                fprintf(stderr, "autoshard: --strategy-space needs default or alpa\n");
                return AS_EXIT_USAGE;
            }
            if ((rc = space_opt(argv[++i])) != AS_EXIT_OK)
                return rc;
        } else if (strncmp(a, "--strategy-space=", 17) == 0) {
            if ((rc = space_opt(a + 17)) != AS_EXIT_OK)
                return rc;
        } else {
            argv[j++] = argv[i];
        }
    }
    argv[j] = NULL;
    *argc = j;
    return AS_EXIT_OK;
}

static int run(int argc, char **argv);

int
main(int argc, char **argv)
{
    int rc = as_stdout_finish(run(argc, argv));

    as_hlo_custom_call_clear();
    return rc;
}

static int
run(int argc, char **argv)
{
    static const struct option opts[] = {{"quiet", no_argument, NULL, 'q'},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {"version", no_argument, NULL, 'V'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"custom-call", required_argument, NULL, 'C'},
                                         {"strategy-space", required_argument, NULL, 'S'},
                                         {NULL, 0, NULL, 0}};
    const struct as_cmd *cmd;
    int c;

    as_lib_hooks_install();
    as_install_signal_cleanup();
    argv[0] = (char *)"autoshard"; /* for getopt's messages */
    while ((c = getopt_long(argc, argv, "+qvVh", opts, NULL)) != -1) {
        switch (c) {
        case 'q':
            as_verbosity = 0;
            break;
        case 'v':
            as_verbosity = 2;
            break;
        case 'V':
            printf("autoshard %s\n", PACKAGE_VERSION);
            return AS_EXIT_OK;
        case 'h':
            usage_main(stdout);
            return AS_EXIT_OK;
        case 'C':
            if ((c = custom_call_opt(optarg)) != AS_EXIT_OK)
                return c;
            break;
        case 'S':
            if ((c = space_opt(optarg)) != AS_EXIT_OK)
                return c;
            break;
        default:
            fprintf(stderr, "Try 'autoshard help'.\n");
            return AS_EXIT_USAGE;
        }
    }
    if (optind == argc) {
        usage_main(stderr);
        return AS_EXIT_USAGE;
    }
    if (strcmp(argv[optind], "help") == 0) {
        if (optind + 1 == argc || strcmp(argv[optind + 1], "help") == 0) {
            usage_main(stdout);
            return AS_EXIT_OK;
        }
        if ((cmd = cmd_find(argv[optind + 1])) == NULL)
            return cmd_unknown(argv[optind + 1]);
        as_cmd_help(cmd, stdout);
        return AS_EXIT_OK;
    }
    if ((cmd = cmd_find(argv[optind])) == NULL)
        return cmd_unknown(argv[optind]);
    argc -= optind;
    argv += optind;
    {
        /* getopt names argv[0] in its messages: "autoshard solve: unrecognized option" */
        static char self[64];
        snprintf(self, sizeof self, "autoshard %s", cmd->name);
        argv[0] = self;
    }
    {
        int help, rc = take_global_opts(&argc, argv, &help);
        if (rc != AS_EXIT_OK)
            return rc;
        if (help) { /* `autoshard solve FILE --help` too */
            as_cmd_help(cmd, stdout);
            return AS_EXIT_OK;
        }
    }
    optind = 0; /* glibc: full re-initialisation, so options after operands are parsed */
    return cmd->exec(argc, argv);
}
