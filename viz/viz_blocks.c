/*
 * viz/viz_blocks.c -- rows of many heads as layers x heads blocks: one block
 * per layer (its heads' rows over the sources), the blocks in the rows x
 * columns arrangement that gives the largest cells within the width and the
 * height budget, each named over it (L0, L1, ...), head names left of each
 * row of blocks, source labels under the lowest block of each column, and a
 * horizontal colour bar under them (issue 35: GPT-2's query row of 144 heads,
 * over the 128-row cap of one matrix, as 12 blocks of 12 heads).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz/viz_internal.h"

typedef struct {
    const float *m; /* [L * H, S] */
    size_t L, H, S;
    const char *const *col_labels;
    const char *title, *xlabel;
    double hmax;
} vz_blocks_args;

/* Every k-th label is drawn (k = every; every > n: none). */
static int shown_at(size_t i, size_t every) { return i % every == 0; }

static hs_status build_blocks(hs_viz_figure **out, const void *args, const hs_viz_options *o,
                              vz_fit *fit, hs_error *err)
{
    const vz_blocks_args *a = args;
    const size_t L = a->L, H = a->H, S = a->S;
    vz_ctx c;
    hs_status s = vz_ctx_init(&c, o, err);
    if (s) return s;
    c.fit = fit;
    vz_scale sc = {o->vmin, o->vmax, o->cmap == HS_VIZ_CMAP_DEFAULT ? HS_VIZ_CMAP_VIRIDIS : o->cmap,
                   o->value_label ? o->value_label : "attention weight"};
    if (o->range == HS_VIZ_RANGE_AUTO) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < L * H * S; i++) lo = fmin(lo, a->m[i]), hi = fmax(hi, a->m[i]);
        sc.vmin = vz_round_out(lo, hi - lo, 0);
        sc.vmax = vz_round_out(hi, hi - lo, 1);
        if (!(sc.vmax > sc.vmin)) sc.vmax = sc.vmin + 1.0;
    }
    char **cl = calloc(S, sizeof *cl), **hl = calloc(H, sizeof *hl);
    int cmax = 0, hmax_w = 0;
    if (!cl || !hl) s = HS_ERR_NOMEM;
    if (!s) s = vz_prepare_labels(&c, a->col_labels, S, cl, &cmax);
    for (size_t h = 0; h < H && !s; h++) {
        char b[32];
        snprintf(b, sizeof b, "H%zu", h);
        if (!(hl[h] = hs_strdup(b))) s = HS_ERR_NOMEM;
        else hmax_w = vz_imax(hmax_w, vz_text_len(&c, b, c.fpx));
    }
    if (s) goto done;
    const int m = c.margin, pad = c.pad, lh = c.lh, lw = c.lw;
    const int pitch = vz_imax(vz_label_pitch(&c, cl, S), vz_label_pitch(&c, hl, H));
    const int bgap = vz_imax(2 * pad, (int)lround(0.08 * c.o.dpi)) + 2 * lw; /* between blocks */
    const int head = lh + pad; /* a block's name over it */
    const int bh = vz_imax((int)lround(0.6 * lh), (int)lround(0.06 * c.o.dpi));
    const int cbar_h = 2 * pad + bh + lw + (int)lround(c.fpx * 0.3) + lh + pad + lh; /* ticks, label */
    const int W = (int)lround(c.o.width_in * c.o.dpi) - fit->extra, hbud = (int)lround(a->hmax * c.o.dpi);
    const int ylab_w = vz_text_len(&c, "head", c.fpx), xlab_w = a->xlabel ? vz_text_len(&c, a->xlabel, c.fpx) : 0;
    const int left = m + lh + pad + hmax_w + pad + lw;
    int title_w = 0, title_h = 0, cell = 0, Cb = 1, every = 1, tm = cmax;
    char note[256];
    const char *note0 = c.o.note;
    for (int pass = 0; pass < 3; pass++) {
        title_h = vz_title_block(&c, a->title, &title_w);
        const int top = m + title_h + head;
        const int below = lw + pad + tm + (xlab_w ? pad + lh : 0) + cbar_h + m;
        /* the arrangement with the largest cells */
        int best = 0, bestC = 1;
        for (size_t C = L; C >= 1; C--) {
            const size_t R = (L + C - 1) / C;
            if (R * C - L >= C) continue; /* no empty row of blocks */
            int cw = (W - left - lw - m - (int)(C - 1) * bgap) / (int)(C * S);
            int ch = (hbud - top - below - (int)(R - 1) * (bgap + head)) / (int)(R * H);
            int cc = vz_imin(cw, ch);
            if (cc > best) best = cc, bestC = (int)C;
        }
        cell = best, Cb = bestC;
        if (cell < 1) { /* no arrangement leaves a pixel a cell */
            cell = 1;
            fit->cramped = 1;
        }
        every = cell >= pitch ? 1 : (pitch + cell - 1) / cell;
        int t2 = 0;
        for (size_t j = 0; j < S; j += (size_t)every) t2 = vz_imax(t2, vz_text_len(&c, cl[j], c.fpx));
        c.o.note = note0;
        if (every > 1) {
            const char *sfx = every % 10 == 2 && every % 100 != 12 ? "nd"
                            : every % 10 == 3 && every % 100 != 13 ? "rd" : "th";
            snprintf(note, sizeof note, "%s%severy %d%s label shown", note0 ? note0 : "", note0 ? "; " : "",
                     every, sfx);
            c.o.note = note;
        }
        int th2 = vz_title_block(&c, a->title, &title_w);
        if (t2 == tm && th2 == title_h) break;
        tm = t2;
    }
    if (title_w + 2 * m > W) fit->cramped = 1;
    title_h = vz_title_block(&c, a->title, &title_w);
    const int top = m + title_h + head, Rb = (int)((L + (size_t)Cb - 1) / (size_t)Cb);
    const int BW = (int)S * cell, BH = (int)H * cell;
#define BX(k) (left + (int)((k) % (size_t)Cb) * (BW + bgap))
#define BY(k) (top + (int)((k) / (size_t)Cb) * (BH + bgap + head))
    char gid[32];
    for (size_t l = 0; l < L && !s; l++) {
        snprintf(gid, sizeof gid, "L%zu", l);
        s = vz_add_heatmap(&c, a->m + l * H * S, NULL, H, S, BX(l), BY(l), cell, &sc, 0, (int)l, NULL, gid);
    }
    if (!s) s = vz_begin_group(&c, "labels");
    int bottom = 0;
    for (size_t l = 0; l < L && !s; l++) {
        snprintf(gid, sizeof gid, "L%zu", l);
        int w = vz_text_len(&c, gid, c.fpx);
        s = vz_add_text(&c, gid, c.fpx, 0, BX(l) + BW / 2 - w / 2, BY(l) - lw - pad / 2 - lh, VZ_A_MIDDLE,
                        VZ_T_HEADER, VZ_BLACK);
        if (!s && l % (size_t)Cb == 0) /* head names left of each row of blocks */
            for (size_t h = 0; h < H && !s; h += (size_t)every)
                s = vz_add_text(&c, hl[h], c.fpx, 0, left - lw - pad - vz_text_len(&c, hl[h], c.fpx),
                                BY(l) + (int)h * cell + (cell - lh) / 2, VZ_A_END, VZ_T_YTICK, VZ_BLACK);
        if (!s && l + (size_t)Cb >= L) { /* the lowest block of its column: the sources under it */
            int yb = BY(l) + BH + lw + pad;
            for (size_t j = 0; j < S && !s; j++)
                if (shown_at(j, (size_t)every))
                    s = vz_add_text(&c, cl[j], c.fpx, 90, BX(l) + (int)j * cell + (cell - lh) / 2, yb,
                                    VZ_A_END, VZ_T_XTICK, VZ_BLACK);
            bottom = vz_imax(bottom, yb + tm);
        }
    }
    const int gridW = Cb * BW + (Cb - 1) * bgap, gridH = Rb * BH + (Rb - 1) * (bgap + head);
    if (!s) s = vz_begin_group(&c, "axes");
    if (!s && xlab_w) {
        s = vz_add_text(&c, a->xlabel, c.fpx, 0, left + gridW / 2 - xlab_w / 2, bottom + pad, VZ_A_MIDDLE,
                        VZ_T_AXIS, VZ_BLACK);
        bottom += pad + lh;
    }
    int yy = vz_imax(top, top + gridH / 2 - ylab_w / 2);
    if (!s) s = vz_add_text(&c, "head", c.fpx, 90, m, yy, VZ_A_MIDDLE, VZ_T_AXIS, VZ_BLACK);
    bottom = vz_imax(bottom, yy + ylab_w);
    int right = left + gridW + lw, cbr = 0, cbb = 0;
    const int cbw = vz_imax(vz_imin((int)lround(2.5 * c.o.dpi), gridW), vz_text_len(&c, sc.label, c.fpx));
    if (!s) s = vz_add_colorbar(&c, &sc, 0, left + vz_imax(0, (gridW - cbw) / 2), bottom + 2 * pad, cbw, bh,
                                &cbr, &cbb);
    right = vz_imax(right, cbr);
    bottom = vz_imax(bottom, cbb);
#undef BX
#undef BY
    if (!s) s = vz_finish_titled(&c, a->title, title_w, title_h, right, bottom, out, err);
done:
    vz_free_labels(cl, S);
    vz_free_labels(hl, H);
    hs_viz_figure_destroy(c.f);
    if (s == HS_ERR_NOMEM) hs_fail(err, s, "out of memory laying out a figure");
    return s;
}

hs_status hs_viz_rows_blocks_figure(hs_viz_figure **out, const float *rows, size_t L, size_t H,
                                    size_t S, const char *const *col_labels, const char *title,
                                    const char *xlabel, const hs_viz_options *opt, hs_error *err)
{
    *out = NULL;
    if (rows == NULL) return hs_fail(err, HS_ERR_INPUT, "rows blocks: NULL values");
    if (L < 1 || L > HS_VIZ_MAX_LAYERS || H < 1 || H > HS_VIZ_MAX_HEADS || S < 1 || S > HS_VIZ_MAX_TOKENS)
        return hs_fail(err, HS_ERR_INPUT, "rows blocks of %zu layers x %zu heads x %zu sources: a figure "
                       "takes 1..%d x 1..%d x 1..%d", L, H, S, HS_VIZ_MAX_LAYERS, HS_VIZ_MAX_HEADS,
                       HS_VIZ_MAX_TOKENS);
    for (size_t i = 0; i < L * H * S; i++)
        if (!isfinite(rows[i]))
            return hs_fail(err, HS_ERR_NUMERIC, "row value [%zu, %zu] is not finite (%g)", i / S, i % S,
                           (double)rows[i]);
    hs_status s = vz_check_labels(col_labels, S, "column labels", err);
    if (!s) s = vz_check_title(title, "title", err);
    if (!s) s = vz_check_title(xlabel, "x label", err);
    if (s) return s;
    hs_viz_options o;
    if (opt) o = *opt;
    else hs_viz_options_default(&o);
    if (o.range == HS_VIZ_RANGE_FIXED && !(o.vmax > o.vmin))
        return hs_fail(err, HS_ERR_INPUT, "fixed value range [%g, %g] is empty", o.vmin, o.vmax);
    vz_blocks_args a = {rows, L, H, S, col_labels, title, xlabel,
                        o.max_height_in > 0 ? o.max_height_in : HS_VIZ_MAX_HEIGHT_IN};
    if (!(o.width_in > 0)) o.width_in = HS_VIZ_PAGE_IN;
    return vz_fit_width(out, build_blocks, &a, &o, HS_VIZ_PAGE_IN, "rows blocks", err);
}
