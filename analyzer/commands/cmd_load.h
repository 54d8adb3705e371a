/* How every command loads its trace: with a progress bar on a terminal and
 * a warning before a full model that may not fit (cmd_load.c). */
#ifndef VT_CMD_LOAD_H
#define VT_CMD_LOAD_H

struct vt_model;

/* The trace in dir as a finished model (streaming: the streaming model),
 * or NULL after one line on stderr that names cmd. */
struct vt_model *vt_cmd_load(const char *cmd, const char *dir, int streaming);

/* Every trace of t as a full model into models[0..t->n): 0, or 1 after
 * one line on stderr (none left loaded). */
struct vt_cli_traces;
int vt_cmd_load_all(const char *cmd, const struct vt_cli_traces *t, struct vt_model **models);
void vt_cmd_free_all(struct vt_model **models, unsigned n);

#endif
