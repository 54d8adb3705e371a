/* The hook table's rows (hooks.h), generated from hooks.def. */
#include "hooks.h"

/* Every row of api.def has a row in hooks.def and the other way round. */
enum {
#define VT_API(id, sym, cls) VT_APIDEF_ROW_##sym,
#include "vramtrace/api.def"
	VT_APIDEF_ROWS
};
_Static_assert((int)VT_APIDEF_ROWS == (int)VT_H_COUNT,
               "hooks.def and api.def must list the same symbols");

const struct vt_route vt_routes[VT_ROUTE_COUNT] = {
#define VT_HOOK(sym, base, ver, pt, params, args, describe)                                        \
	[VT_H_##sym] = {#sym, #base, ver, sizeof(#pt) > 1, VT_API_##sym},
#include "hooks.def"
    [VT_R_GETPROC] = {"cuGetProcAddress", "cuGetProcAddress", 11030, 0, 0},
    [VT_R_GETPROC_V2] = {"cuGetProcAddress_v2", "cuGetProcAddress", 12000, 0, 0},
};
