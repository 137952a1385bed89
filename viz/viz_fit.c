/*
 * viz/viz_fit.c -- the width promise. A layout plans its cells for the
 * target width; when its labels need more than that it lays out at their
 * minimum and says so (cramped); the driver (vz_fit_width) then tries
 * smaller fonts down to font_min_pt, and otherwise refuses with the width
 * that fits, or, with no width asked, grows past the default and records
 * the default it outgrew. vz_finish holds a laid-out figure to the width
 * (centred when narrower) and the canvas cap and hands it out.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz/viz_internal.h"

/* Moves everything laid out so far dx px right. */
static void shift_items(vz_ctx *c, int dx)
{
    for (size_t i = 0; i < c->f->n_rects; i++) c->f->rects[i].x += dx;
    for (size_t i = 0; i < c->f->n_texts; i++) {
        c->f->texts[i].x += dx;
        c->f->texts[i].ix += dx;
    }
    for (size_t i = 0; i < c->f->n_curves; i++) {
        vz_curve *k = &c->f->curves[i];
        k->x0 += dx, k->x1 += dx, k->x2 += dx, k->x3 += dx;
    }
}

/* Finishes a figure: holds it to the target width (centred when narrower;
 * refused through fit->nofit when wider), checks the canvas cap, hands it out. */
hs_status vz_finish(vz_ctx *c, int W, int H, hs_viz_figure **out, hs_error *err)
{
    int target = (int)lround(c->o.width_in * c->o.dpi);
    if (c->fit) c->fit->W = W;
    if (c->o.width_in > 0 && W > target) {
        if (c->fit) c->fit->nofit = 1;
        hs_viz_figure_destroy(c->f);
        c->f = NULL;
        return hs_fail(err, HS_ERR_INPUT, "figure needs %.2f in, wider than %.2f in",
                       W / c->o.dpi, c->o.width_in);
    }
    if (c->o.width_in > 0 && W < target) {
        shift_items(c, (target - W) / 2);
        W = target;
    }
    /* the cap is the PNG's: a layout at VZ_VECTOR_DPI is scaled to its dpi */
    const double k = c->fit && c->fit->png_dpi > 0 ? c->fit->png_dpi / c->o.dpi : 1.0;
    const long pw = lround(W * k), ph = lround(H * k);
    if (pw > HS_VIZ_MAX_PX || ph > HS_VIZ_MAX_PX) {
        hs_viz_figure_destroy(c->f);
        c->f = NULL;
        return hs_fail(err, HS_ERR_INPUT,
                       "figure would be %ld x %ld px, over the %d px cap; "
                       "HINT: lower the dpi or the font size", pw, ph, HS_VIZ_MAX_PX);
    }
    c->f->width = W;
    c->f->height = H;
    c->f->width_in = c->o.width_in > 0 ? c->o.width_in : W / c->o.dpi;
    *out = c->f;
    c->f = NULL;
    return HS_OK;
}

hs_status vz_finish_titled(vz_ctx *c, const char *title, int title_w, int title_h, int right,
                           int bottom, hs_viz_figure **out, hs_error *err)
{
    int m = c->margin;
    int W = vz_imax(right + m, title_w + 2 * m);
    shift_items(c, (W - right - m) / 2); /* the body centred under a wider title */
    hs_status s = title_h ? vz_add_title(c, title, W) : HS_OK;
    if (s) return s;
    return vz_finish(c, W, bottom + m, out, err);
}

/* One font size: up to 4 layouts, each taking the previous one's excess off
 * its plan. HS_OK, or fit->nofit with fit->W the width the labels need. */
static hs_status try_font(hs_viz_figure **out, vz_build build, const void *args,
                          const hs_viz_options *o, vz_fit *fit, hs_error *err)
{
    int target = (int)lround(o->width_in * o->dpi);
    const double png_dpi = fit->png_dpi;
    memset(fit, 0, sizeof *fit);
    for (int k = 0; k < 4; k++) {
        int extra = fit->extra;
        memset(fit, 0, sizeof *fit);
        fit->extra = extra;
        fit->png_dpi = png_dpi;
        hs_status s = build(out, args, o, fit, err);
        if (s == HS_OK || !fit->nofit) return s;
        if (fit->cramped) return s;
        fit->extra += fit->W - target;
    }
    return HS_ERR_INPUT;
}

/* v's PNG copy at dpi: every coordinate times dpi / v->dpi, rectangle and
 * text-box edges rounded (monotone: what was apart stays apart, cells
 * still tile), a rectangle at least a pixel; v becomes its vec. */
static hs_status raster_copy(hs_viz_figure **out, hs_viz_figure *v, double dpi)
{
    const double k = dpi / v->dpi;
    hs_viz_figure *f = calloc(1, sizeof *f);
    if (!f) return HS_ERR_NOMEM;
    *out = f;
    f->vec = v;
    f->dpi = dpi;
    f->width = (int)lround(v->width * k);
    f->height = (int)lround(v->height * k);
    f->width_in = v->width_in;
    f->grown_from_in = v->grown_from_in;
    f->groups = calloc(v->n_groups ? v->n_groups : 1, sizeof *f->groups);
    f->rects = malloc((v->n_rects ? v->n_rects : 1) * sizeof *f->rects);
    f->texts = calloc(v->n_texts ? v->n_texts : 1, sizeof *f->texts);
    f->curves = malloc((v->n_curves ? v->n_curves : 1) * sizeof *f->curves);
    if (!f->groups || !f->rects || !f->texts || !f->curves) return HS_ERR_NOMEM;
    f->cap_rects = v->n_rects, f->cap_texts = v->n_texts, f->cap_curves = v->n_curves;
    for (; f->n_groups < v->n_groups; f->n_groups++)
        if (!(f->groups[f->n_groups] = hs_strdup(v->groups[f->n_groups]))) return HS_ERR_NOMEM;
    if ((v->title && !(f->title = hs_strdup(v->title))) || (v->desc && !(f->desc = hs_strdup(v->desc))) ||
        !(f->font_file = hs_strdup(v->font_file)))
        return HS_ERR_NOMEM;
    hs_error e = {0};
    if (vz_font_share(&f->font, v->font, &e)) return HS_ERR_NOMEM;
    for (size_t i = 0; i < v->n_rects; i++) {
        vz_rect r = v->rects[i];
        const long x0 = lround(r.x * k), y0 = lround(r.y * k);
        r.w = r.w > 0 ? (int)fmax(1, lround((r.x + r.w) * k) - x0) : 0;
        r.h = r.h > 0 ? (int)fmax(1, lround((r.y + r.h) * k) - y0) : 0;
        r.x = (int)x0, r.y = (int)y0;
        f->rects[f->n_rects++] = r;
    }
    for (size_t i = 0; i < v->n_curves; i++) {
        vz_curve q = v->curves[i];
        q.x0 *= k, q.y0 *= k, q.x1 *= k, q.y1 *= k, q.x2 *= k, q.y2 *= k, q.x3 *= k, q.y3 *= k;
        q.width *= k, q.dash_on *= k, q.dash_off *= k;
        f->curves[f->n_curves++] = q;
    }
    for (size_t i = 0; i < v->n_texts; i++) {
        const vz_text *a = &v->texts[i];
        vz_text *t = &f->texts[f->n_texts];
        *t = *a;
        t->s = NULL, t->run.g = NULL, t->run.n = 0;
        if (!(t->s = hs_strdup(a->s))) return HS_ERR_NOMEM;
        f->n_texts++;
        if (a->run.n) {
            if (!(t->run.g = malloc(a->run.n * sizeof *t->run.g))) return HS_ERR_NOMEM;
            for (size_t j = 0; j < a->run.n; j++) {
                t->run.g[j] = a->run.g[j];
                t->run.g[j].x *= k, t->run.g[j].y *= k;
            }
            t->run.n = a->run.n;
        }
        t->run.adv *= k, t->run.ink_l *= k, t->run.ink_r *= k, t->run.ink_t *= k, t->run.ink_b *= k;
        t->px *= k;
        const long x0 = lround(a->x * k), y0 = lround(a->y * k);
        t->w = (int)(lround((a->x + a->w) * k) - x0), t->h = (int)(lround((a->y + a->h) * k) - y0);
        t->x = (int)x0, t->y = (int)y0;
        const long ix = lround(a->ix * k), iy = lround(a->iy * k);
        t->iw = (int)(lround((a->ix + a->iw) * k) - ix), t->ih = (int)(lround((a->iy + a->ih) * k) - iy);
        t->ix = (int)ix, t->iy = (int)iy;
    }
    return HS_OK;
}

hs_status vz_fit_width(hs_viz_figure **out, vz_build build, const void *args,
                       const hs_viz_options *opt, double auto_in, const char *what, hs_error *err)
{
    *out = NULL;
    hs_viz_options o;
    if (opt) o = *opt;
    else hs_viz_options_default(&o);
    hs_status s = vz_check_options(&o, err);
    if (s) return s;
    char *font = NULL;
    if (!o.font) { /* resolved once for every layout tried */
        s = vz_font_find(o.font_path, &font, err);
        if (s) return s;
        o.font_path = font;
    }
    double fmax = o.font_pt;
    double fmin = o.font_min_pt > 0 && o.font_min_pt < fmax ? o.font_min_pt : fmax;
    int auto_w = !(o.width_in > 0);
    o.width_in = auto_w ? auto_in : o.width_in;
    /* laid out once at VZ_VECTOR_DPI; the PNG is its copy at the dpi asked */
    const double png_dpi = o.dpi;
    o.dpi = VZ_VECTOR_DPI;
    vz_fit fit = {.png_dpi = png_dpi};
    int need_min = 0; /* px the labels need at the smallest font tried */
    int target = (int)lround(o.width_in * o.dpi);
    for (double f = fmax; f >= fmin - 1e-9;) {
        o.font_pt = f;
        s = try_font(out, build, args, &o, &fit, err);
        if (s == HS_OK || !fit.nofit) goto done;
        need_min = fit.W;
        /* a figure's width scales about with its font: skip the sizes that
           cannot come close (a large grid would be laid out five times) */
        if (f > fmin && fit.W * (fmin / f) > 1.15 * target) f = fmin;
        else f -= 0.5;
    }
    if (auto_w) {
        /* no width asked: grow to what the labels need at the font size */
        o.font_pt = fmax;
        memset(&fit, 0, sizeof fit);
        fit.png_dpi = png_dpi;
        double w_in = need_min / o.dpi;
        /* a layout's width moves with its plan (tick counts, rounding), so
           each retry adds a little slack: it converges, centred */
        for (int k = 0; k < 8; k++) {
            /* a whole number of the PNG's pixels, so its width says the same */
            o.width_in = ceil(w_in * png_dpi - 1e-6) / png_dpi;
            if (o.width_in > HS_VIZ_GRID_MAX_IN) break;
            s = try_font(out, build, args, &o, &fit, err);
            if (s == HS_OK) (*out)->grown_from_in = auto_in;
            if (s == HS_OK || !fit.nofit) goto done;
            w_in = fit.W / o.dpi + 0.02 * (k + 1);
        }
        double need_in = ceil(vz_imax(need_min, fit.W) / o.dpi * 100.0 - 1e-9) / 100.0;
        if (o.width_in > HS_VIZ_GRID_MAX_IN)
            s = hs_fail(err, HS_ERR_INPUT,
                        "%s needs %.2f in to show every label at %g pt, over the %g in cap; "
                        "HINT: fewer tokens or heads, or --positions A:B", what, need_in, fmax,
                        HS_VIZ_GRID_MAX_IN);
        else
            s = hs_fail(err, HS_ERR_INPUT,
                        "%s needs %.2f in to show every label at %g pt, wider than its default "
                        "%.2f in; HINT: --width %.2f", what, need_in, fmax, auto_in, need_in);
        goto done;
    }
    /* the largest font size that fits the width asked, for the hint: never
       under the floor a paper can print */
    double fits = 0;
    for (double f = fmin - 0.5; f >= HS_VIZ_FONT_FLOOR_PT - 1e-9 && fits == 0; f -= 0.5) {
        o.font_pt = f;
        hs_error e2 = {0};
        hs_viz_figure *probe = NULL;
        if (try_font(&probe, build, args, &o, &fit, &e2) == HS_OK) fits = f;
        hs_viz_figure_destroy(probe);
    }
    char hint[96] = "";
    if (fits > 0) snprintf(hint, sizeof hint, " or --font-size %g", fits);
    double need_in = ceil(need_min / o.dpi * 100.0 - 1e-9) / 100.0; /* rounded up: it fits */
    s = hs_fail(err, HS_ERR_INPUT,
                "%s cannot show every label in %.2f in at %g pt: it needs %.2f in; "
                "HINT: --width %.2f%s", what, opt->width_in, fmin, need_in, need_in, hint);
done:
    if (s == HS_OK && png_dpi != VZ_VECTOR_DPI) {
        hs_viz_figure *v = *out;
        *out = NULL;
        hs_viz_figure *f = NULL;
        if (raster_copy(&f, v, png_dpi) == HS_OK) {
            *out = f;
        } else {
            hs_viz_figure_destroy(f); /* and v, its vec */
            if (!f) hs_viz_figure_destroy(v);
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory laying out a figure");
        }
    }
    free(font);
    return s;
}


