/*
 * output/figopts.c -- figure options (output.h): defaults, what each kind of
 * figure gets from them, its colour scale as JSON, the font opened once
 * (or on the pool while a model runs); a figure that cannot be drawn
 * (hs_outdir_unfit); and figure labels.
 */
#include "output/output.h"

#include <stdarg.h>
#include <string.h>

void hs_figopts_default(hs_figopts *fo, double dpi)
{
    memset(fo, 0, sizeof *fo);
    hs_viz_options_default(&fo->viz);
    fo->viz.dpi = dpi;
    fo->png = fo->svg = fo->json = 1;
    fo->pdf = 0;
    fo->font_ticket = -1;
}

int hs_figopts_images(const hs_figopts *fo) { return fo->png || fo->svg || fo->pdf; }

int hs_figopts_data(const hs_figopts *fo) { return fo->json || fo->html; }

hs_status hs_figopts_add_scale(cJSON *j, const hs_figopts *fo, hs_fig_kind kind, double lim,
                               hs_error *err)
{
    const hs_viz_options v = hs_figopts_for(fo, kind, lim);
    const int fixed = v.range == HS_VIZ_RANGE_FIXED || kind == HS_FIG_ATTENTION;
    const char *name = kind == HS_FIG_SIGNED ? "diverging"
                       : v.cmap == HS_VIZ_CMAP_GREYS ? "greys" : "viridis";
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "cmap", name) &&
             cJSON_AddStringToObject(o, "range", fixed ? "fixed" : "auto");
    if (ok && fixed)
        ok = cJSON_AddNumberToObject(o, "vmin", v.vmin) && cJSON_AddNumberToObject(o, "vmax", v.vmax);
    if (!ok || !cJSON_AddItemToObject(j, "colour_scale", o)) {
        cJSON_Delete(o);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

hs_status hs_figopts_font_open(hs_figopts *fo, hs_error *err)
{
    if (!hs_figopts_images(fo) || fo->vfont) return HS_OK;
    if (!fo->font) {
        hs_status s = hs_viz_font_path(fo->viz.font_path, &fo->font, err);
        if (s != HS_OK) return s;
        fo->viz.font_path = fo->font;
    }
    hs_status s = hs_viz_font_open(fo->font, &fo->vfont, err);
    if (s == HS_OK) fo->viz.font = fo->vfont;
    return s;
}

/* The lane job of hs_figopts_font_start: arg holds fo's pointer. */
static void font_job(void *arg)
{
    hs_figopts *fo;
    memcpy(&fo, arg, sizeof fo);
    fo->font_st = hs_figopts_font_open(fo, &fo->font_err);
}

void hs_figopts_font_start(hs_figopts *fo, hs_pool *pool)
{
    fo->font_st = HS_OK;
    fo->font_ticket = hs_pool_async(pool, font_job, &fo, sizeof fo);
}

hs_status hs_figopts_font_wait(hs_figopts *fo, hs_pool *pool, hs_error *err)
{
    if (fo->font_ticket < 0) return hs_figopts_font_open(fo, err);
    hs_pool_wait(pool, fo->font_ticket);
    fo->font_ticket = -1;
    if (fo->font_st != HS_OK && err) *err = fo->font_err;
    return fo->font_st;
}

void hs_figopts_free(hs_figopts *fo)
{
    hs_viz_font_close(fo->vfont);
    fo->vfont = NULL;
    fo->viz.font = NULL;
    free(fo->font);
    fo->font = NULL;
    fo->viz.font_path = NULL;
}

hs_viz_options hs_figopts_for(const hs_figopts *fo, hs_fig_kind kind, double lim)
{
    hs_viz_options o = fo->viz;
    /* signed data: the diverging map (a sequential one would hide the sign) */
    if (kind == HS_FIG_SIGNED && o.cmap != HS_VIZ_CMAP_DIVERGING) {
        o.grey_accents = o.cmap == HS_VIZ_CMAP_GREYS; /* --cmap greys: the rest of it grey */
        o.cmap = HS_VIZ_CMAP_DEFAULT;
    }
    if (kind == HS_FIG_BARS || kind == HS_FIG_BARS_MAGNITUDE || kind == HS_FIG_BARS_SUM)
        o.cmap = HS_VIZ_CMAP_DEFAULT;
    o.magnitude = kind == HS_FIG_BARS_MAGNITUDE;
    o.bars_add_up = kind == HS_FIG_BARS_SUM;
    int own = fo->range_set && fo->viz.range == HS_VIZ_RANGE_AUTO;
    if (kind == HS_FIG_ATTENTION) {
        if (!fo->vmin_set) o.vmin = 0.0;
        if (!fo->vmax_set) o.vmax = 1.0;
        return o;
    }
    if (lim > 0 && !own) {
        /* a limit from the data ends its colour bar at a round value, as an
         * auto range does (4.63 -> 4.7), never at the raw maximum */
        lim = hs_viz_round_limit(lim);
        o.range = HS_VIZ_RANGE_FIXED;
        o.vmin = kind == HS_FIG_NONNEG ? 0.0 : -lim;
        o.vmax = lim;
    } else {
        o.range = HS_VIZ_RANGE_AUTO;
    }
    if (fo->vmin_set || fo->vmax_set) {
        o.range = HS_VIZ_RANGE_FIXED;
        if (fo->vmin_set) o.vmin = fo->viz.vmin;
        if (fo->vmax_set) o.vmax = fo->viz.vmax;
        if (kind == HS_FIG_SIGNED && !fo->vmin_set) o.vmin = -o.vmax;
        if (kind == HS_FIG_SIGNED && !fo->vmax_set) o.vmax = -o.vmin;
    }
    return o;
}

hs_status hs_outdir_unfit(hs_outdir *o, const char *stem, hs_status s, const hs_error *fe,
                          hs_error *err)
{
    if (s == HS_OK) return HS_OK;
    if (s != HS_ERR_INPUT) {
        if (err && fe != err) *err = *fe;
        return s;
    }
    const hs_figopts *fo = o->fo;
    const char *ext[3] = {fo->png ? "png" : NULL, fo->svg ? "svg" : NULL, fo->pdf ? "pdf" : NULL};
    hs_buf b = {0};
    for (int k = 0; k < 3; k++)
        if (ext[k]) hs_buf_printf(&b, "%s%s.%s", b.len ? ", " : "", stem, ext[k]);
    char *why = hs_viz_title_plain(fe->msg); /* a typeset title as text: W_E, not W_{E} */
    hs_note(&o->notes, HS_NOTE_CMD, "note: %s not written: %s", b.s ? b.s : stem,
            why ? why : fe->msg);
    free(why);
    hs_buf_free(&b);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Labels                                                                    */

void hs_labels_init(hs_labels *l, size_t n)
{
    l->s = calloc(n ? n : 1, sizeof *l->s);
    l->at = calloc(n ? n : 1, sizeof *l->at);
    l->n = n;
    l->oom = !l->s || !l->at;
}

void hs_labels_set(hs_labels *l, size_t i, const char *fmt, ...)
{
    HS_ASSERT(i < l->n);
    if (l->oom) return;
    va_list ap;
    va_start(ap, fmt);
    hs_buf b = {0};
    hs_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    char *s = hs_buf_take(&b); /* NULL on OOM */
    if (!s) {
        l->oom = 1;
        return;
    }
    free(l->s[i]);
    l->s[i] = s;
    l->at[i] = s;
}

void hs_labels_free(hs_labels *l)
{
    if (l->s)
        for (size_t i = 0; i < l->n; i++) free(l->s[i]);
    free(l->s);
    free((void *)l->at);
    memset(l, 0, sizeof *l);
}
