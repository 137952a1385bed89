/* cli/expout.c -- see expout.h. */
#include "expout.h"

#include <stdio.h>

#include "util.h"

int cli_out_fig(const cli_fig_ctx *x, int kind, const char *stem, const float *m, size_t R, size_t C,
                const char *const *rl, const char *const *cl, const char *title, const char *xl,
                const char *yl, double vmax, const char *shows)
{
    const char *cmd = x->od->cmd;
    const cli_figopts *fo = x->od->fo;
    hs_error err = {0};
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    int rc = 0;
    const size_t cap = kind == 1 ? HS_VIZ_MAX_BARS : HS_VIZ_MAX_TOKENS;
    if (cli_figopts_images(fo)) {
        if (R > cap || C > HS_VIZ_MAX_TOKENS) {
            fprintf(stderr, "headscope %s: note: %s is %zu x %zu, over the figure cap; writing its JSON only\n",
                    cmd, stem, R, C);
        } else {
            hs_viz_options o = fo->viz;
            hs_status s;
            if (kind == 1) {
                s = hs_viz_bars_figure(&fig, m, R, rl, title, xl, &o, &err);
            } else {
                /* signed data: the diverging map (a sequential one would hide the sign);
                   non-negative data: viridis or the --cmap greys the user chose */
                if (kind == 0 && o.cmap != HS_VIZ_CMAP_DIVERGING) o.cmap = HS_VIZ_CMAP_DEFAULT;
                if (vmax > 0 && !(fo->range_set && o.range == HS_VIZ_RANGE_AUTO)) {
                    o.range = HS_VIZ_RANGE_FIXED;
                    o.vmin = 0.0;
                    o.vmax = vmax;
                } else {
                    o.range = HS_VIZ_RANGE_AUTO;
                }
                s = kind == 2 ? hs_viz_matrix_figure(&fig, m, R, C, rl, cl, title, xl, yl, &o, &err)
                              : hs_viz_signed_figure(&fig, m, R, C, rl, cl, title, xl, yl, &o, &err);
            }
            if (s != HS_OK) rc = cli_error(cmd, &err);
        }
    }
    if (!rc && fo->json) {
        hs_status s = kind == 1 ? hs_viz_bars_json(&j, m, R, rl, title, xl, &err)
                                : hs_viz_signed_json(&j, m, R, C, rl, cl, title, xl, yl, &err);
        if (s != HS_OK) {
            rc = cli_error(cmd, &err);
        } else {
            cJSON *cfg = cli_config_json(x->cfg);
            if (!cfg || !cJSON_AddItemToObject(j, "config", cfg) ||
                !cJSON_AddStringToObject(j, "model", x->model)) {
                if (cfg && !cJSON_GetObjectItem(j, "config")) cJSON_Delete(cfg);
                fprintf(stderr, "headscope %s: out of memory\n", cmd);
                rc = 1;
            }
        }
    }
    if (!rc) rc = cli_out_figure(x->od, stem, fig, j, shows);
    cJSON_Delete(j);
    hs_viz_figure_destroy(fig);
    return rc;
}

