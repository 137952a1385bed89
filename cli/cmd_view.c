/*
 * cli/cmd_view.c -- `headscope view DIR [DIR...]`: one offline HTML page from
 * output folders headscope wrote (their index.json and the JSON files it
 * lists). Thin: parses the options, hs_view_run (output/) writes the page.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "figopts.h"
#include "util.h"
#include "viz/viz.h"

static const char VIEW_HELP[] =
    "usage: headscope view DIR [DIR...] [--out FILE [--force]] [--cmap viridis|greys]\n"
    "\n"
    "Turns output folders of inspect, circuit or weights (their index.json and the\n"
    "JSON files it lists) into one self-contained HTML page: data, script and style\n"
    "inline, no request to any server, opens from a file with no network. Two\n"
    "inspect folders (e.g. the chapter's tired and wet sentences) give a page that\n"
    "compares a pinned head across the two sentences.\n"
    "\n"
    "  --out FILE     the page (default DIR/index.html of the first DIR, then listed\n"
    "                 in its index.json with its size and hash; an index.html that\n"
    "                 index.json does not list so is never overwritten)\n"
    "  --force        replace an existing --out FILE, or a page of other folders\n"
    "                 in the first one (`view A B` over A's own page, or `view A`\n"
    "                 over the page of A and B; otherwise refused, untouched);\n"
    "                 the page of the same folders (the command run again) is\n"
    "                 simply written again\n"
    "  --cmap NAME    viridis (default) | greys, the attention colour map\n"
    "\n"
    "The page: the layers x heads grid, one head large, a token view (hover or focus\n"
    "a token for its attention row, as shading and lines), predictions and DLA bars,\n"
    "the circuit's verdicts and sortable per-head evidence, and every other figure's\n"
    "numbers, in the static figures' colour maps. Keyboard: Tab to a grid, arrows to\n"
    "move, Enter to select.\n"
    "\n"
    "Every file is checked as the page draws it (shapes, attention weights in\n"
    "[0, 1]) and refused in one line naming the file and field; a page holds at\n"
    "most 64 MiB of data, 1024 tokens, 1024 bars, 2048 x 2048 / 2^20 matrix cells\n"
    "and 20000 line-plot points per file, and only what the page reads.\n";

int cmd_view(int argc, char **argv)
{
    enum { O_OUT = 1, O_CMAP, O_HELP, O_FORCE };
    static const struct option opts[] = {{"out", required_argument, 0, O_OUT},
                                         {"force", no_argument, 0, O_FORCE},
                                         {"cmap", required_argument, 0, O_CMAP},
                                         {"help", no_argument, 0, O_HELP},
                                         {0, 0, 0, 0}};
    const char *C = "view", *out = NULL;
    hs_viz_cmap cmap = HS_VIZ_CMAP_VIRIDIS;
    int c, force = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_HELP: fputs(VIEW_HELP, stdout); return 0;
        case O_OUT: out = optarg; break;
        case O_FORCE: force = 1; break;
        case O_CMAP:
            if (strcmp(optarg, "viridis") == 0) cmap = HS_VIZ_CMAP_VIRIDIS;
            else if (strcmp(optarg, "greys") == 0 || strcmp(optarg, "grays") == 0)
                cmap = HS_VIZ_CMAP_GREYS;
            else return cli_usage_error(C, "unknown --cmap '%s' (viridis, greys)", optarg);
            break;
        default: return cli_usage_error(C, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) return cli_usage_error(C, "give one or more output folders (headscope view DIR)");
    hs_view_report r;
    hs_error err = {0};
    int rc = 0;
    if (hs_view_run((const char *const *)argv + optind, argc - optind, out, force, cmap, &r, &err) !=
        HS_OK)
        rc = cli_error(C, &err);
    else
        printf("wrote %s (open it in a browser; it needs no network)\n", r.path);
    hs_view_report_free(&r);
    return rc ? rc : fflush(stdout) != 0;
}
