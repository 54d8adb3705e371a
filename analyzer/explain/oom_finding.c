/* The out-of-memory finding (see oom_finding.h): the post-mortem of the
 * first event (oom.c), kept in brief. */
#include "oom_finding.h"

#include <stdio.h>
#include <string.h>

#include "oom.h"
#include "oom_context.h"
#include "record_text.h"

static void copy_event(const struct vt_oom_report *r, struct vt_oom_finding *f)
{
	f->source = r->source;
	f->events = r->source == VT_OOM_DRIVER ? r->driver_count : r->framework_count;
	f->device = r->device;
	f->t_ns = r->t_ns;
	f->request_bytes = r->request_bytes;
	snprintf(f->site, sizeof f->site, "%s", r->site);
	if (r->source == VT_OOM_DRIVER) {
		const char *api = vt_api_name(r->failed->api);
		snprintf(f->api, sizeof f->api, "%s", api ? api : "allocation");
		f->pid = r->m->procs[r->failed->proc].pid;
	} else {
		snprintf(f->api, sizeof f->api, "%s",
		         r->fw_parsed ? vt_oom_framework_name(r->fw.framework) : "framework");
		snprintf(f->message, sizeof f->message, "%s", r->fw_mark->text);
		f->pid = r->m->procs[r->fw_proc].pid;
	}
}

static void copy_state(const struct vt_oom_report *r, struct vt_oom_finding *f)
{
	f->have_free = r->have_meminfo;
	f->free_estimated = r->free_estimated;
	f->free_bytes = r->free_bytes;
	f->total_bytes = r->total_bytes;
	f->live_bytes = r->tracked_bytes;
	snprintf(f->likely_cause, sizeof f->likely_cause, "%s", r->likely_cause);
	memcpy(f->cats, r->cats, sizeof f->cats);
	for (uint32_t i = 0; i < r->nsites && f->nholders < VT_OOM_FINDING_SITES; i++) {
		struct vt_oom_holder *h = &f->holders[f->nholders++];
		snprintf(h->site, sizeof h->site, "%s", r->sites[i].name);
		h->category = r->sites[i].category;
		h->bytes = r->sites[i].bytes;
	}
}

void vt_oom_finding_find(struct vt_model *m, struct vt_findings *findings,
                         struct vt_oom_finding *out)
{
	memset(out, 0, sizeof *out);
	out->device = -1;
	struct vt_oom_report r;
	char err[256];
	if (vt_oom_build_classified(&r, m, 1, err, sizeof err) != 0)
		return; /* index 1 always exists: no event gives source none */
	if (r.source != VT_OOM_NONE) {
		out->present = 1;
		copy_event(&r, out);
		copy_state(&r, out);
		vt_findings_before_oom(m, r.failed ? r.failed->proc : r.fw_proc, r.t_ns, findings);
	}
	vt_oom_free(&r);
}

int vt_oom_finding_main_category(const struct vt_oom_finding *f)
{
	int best = VT_CAT_UNKNOWN;
	for (int c = 0; c < VT_CAT_COUNT; c++)
		if (f->cats[c] > f->cats[best])
			best = c;
	return best;
}

/* Characters a POSIX shell leaves alone in a word. */
static int shell_plain(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!strchr(
		        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:,@%=",
		        *s))
			return 0;
	return 1;
}

void vt_oom_finding_command(const char *dir, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "vramtrace oom ");
	if (o >= len)
		return;
	if (shell_plain(dir)) {
		snprintf(buf + o, len - o, "%s", dir);
		return;
	}
	/* 'a'\''b': a single quote ends the quoting, is escaped, and reopens it */
	buf[o++] = '\'';
	for (const char *c = dir; *c && o + 5 < len; c++) {
		if (*c == '\'') {
			memcpy(buf + o, "'\\''", 4);
			o += 4;
		} else {
			buf[o++] = *c;
		}
	}
	if (o + 1 < len)
		buf[o++] = '\'';
	buf[o] = '\0';
}
