/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvsim --html: one self-contained page (no network, no external scripts
 * or fonts) that draws each scheduler's per-die timeline side by side and
 * steps through the ticks. The page is kvsim-page.html with the results
 * inserted as JSON; the build turns it into the string kvsim_page[].
 */
#ifndef _KVSIM_HTML_H
#define _KVSIM_HTML_H

#include "kvsim-run.h"

extern const char kvsim_page[];

/* Write the page to @path. Returns 0, or -1 with a message in @err. */
int kvsim_write_html(const char *path, const struct kvsim_result *r,
		     char *err, size_t errlen);

#endif /* _KVSIM_HTML_H */
