/* cli/cmd_pending.c -- subcommands whose modules have not landed yet say so
 * (exit 1, one line) instead of pretending. Each moves to its own file as it
 * lands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int pending(const char *name, int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: headscope %s ... (not available in this build yet)\n", name);
        return 0;
    }
    fprintf(stderr, "headscope %s: not available in this build yet\n", name);
    return 1;
}

int cmd_circuit(int argc, char **argv) { return pending("circuit", argc, argv); }
