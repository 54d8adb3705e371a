/* The exported symbols and the one resolution table, both generated from
 * sim_exports.def.
 *
 * Every export is a GNU ifunc whose resolver returns the implementation, or
 * NULL while VT_SIM_MISSING / VT_SIM_DRIVER_VERSION hides it: that is how
 * dlsym(handle, "cuMemAllocAsync") fails like on an older driver while the
 * address it returns otherwise is exactly the table's `fn`. (A program that
 * links -lcuda and takes an address at load time binds before that check.) */
#include "sim_internal.h"
#include "vtsim.h"

#include <string.h>

#define VTSIM_EXPORT __attribute__((visibility("default")))

/* Compile-time check that each implementation converts to its PFN type
 * without a cast (its declaration already comes from that type). */
#define VTSIM(base, version, per_thread, symbol, pfn)                                                  \
	static const pfn vtsim_check_##symbol __attribute__((unused)) = sim_##symbol;
#include "sim_exports.def"
#undef VTSIM

#define VTSIM(base, version, per_thread, symbol, pfn)                                                  \
	VTSIM_NOSAN __attribute__((used)) static pfn vtsim_resolve_##symbol(void)                                          \
	{                                                                                              \
		return sim_env_hides(#base, #symbol, version) ? NULL : sim_##symbol;                   \
	}                                                                                              \
	VTSIM_EXPORT __typeof__(sim_##symbol) symbol __attribute__((ifunc("vtsim_resolve_" #symbol)));
#include "sim_exports.def"
#undef VTSIM

struct sim_row {
	const char *base;
	int version;
	int per_thread;
	const char *symbol;
	void *fn;
};

static const struct sim_row rows[] = {
#define VTSIM(base, version, per_thread, symbol, pfn) {#base, version, per_thread, #symbol, (void *)sim_##symbol},
#include "sim_exports.def"
#undef VTSIM
};

#define NROWS ((int)(sizeof rows / sizeof rows[0]))

static int row_hidden(const struct sim_row *r) { return sim_env_hides(r->base, r->symbol, r->version); }

/* The newest visible variant of `base` introduced at or before `version`;
 * with want_per_thread, the per-thread variant when it is at least as new as
 * the legacy one. *known says whether `base` exists at all; *symbol names
 * the row picked. */
VTSIM_HIDDEN void *sim_row_pick(const char *base, int version, int want_per_thread, int *known,
			       const char **symbol)
{
	const struct sim_row *legacy = NULL, *ptds = NULL;
	*known = 0;
	for (int i = 0; i < NROWS; i++) {
		const struct sim_row *r = &rows[i];
		if (strcmp(r->base, base) != 0 || row_hidden(r))
			continue;
		*known = 1;
		if (r->version > version)
			continue;
		if (!r->per_thread && (!legacy || r->version > legacy->version))
			legacy = r;
		if (r->per_thread && want_per_thread && (!ptds || r->version > ptds->version))
			ptds = r;
	}
	const struct sim_row *best = ptds && (!legacy || ptds->version >= legacy->version) ? ptds : legacy;
	*symbol = best ? best->symbol : NULL;
	return best ? best->fn : NULL;
}

VTSIM_EXPORT int vtsim_variant_count(void) { return NROWS; }

VTSIM_EXPORT int vtsim_variant_at(int i, vtsim_variant *out)
{
	if (i < 0 || i >= NROWS || !out)
		return -1;
	const struct sim_row *r = &rows[i];
	*out = (vtsim_variant){r->base, r->version, r->per_thread, r->symbol, r->fn, row_hidden(r)};
	return 0;
}

VTSIM_EXPORT int vtsim_variant_index(const char *symbol)
{
	for (int i = 0; symbol && i < NROWS; i++)
		if (strcmp(rows[i].symbol, symbol) == 0)
			return i;
	return -1;
}
